//! The requests `bench add-voter` sends a controller itself, on its controller listener, at
//! the highest version both sides speak (from its ApiVersions): BrokerRegistration and
//! BrokerHeartbeat of stand-in brokers (ids and directory ids only, no process behind them:
//! the controller needs registered, unfenced brokers to place replicas on, not running
//! ones), AddRaftVoter, and DescribeQuorum. The same bytes work on kraftd and Kafka 4.4.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::messages::add_raft_voter_request::Listener as VoterListener;
use kraftd_protocol::messages::broker_registration_request::{Feature, Listener};
use kraftd_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
use kraftd_protocol::messages::describe_quorum_response;
use kraftd_protocol::messages::{
    AddRaftVoterRequest, ApiVersionsRequest, BrokerHeartbeatRequest, BrokerRegistrationRequest,
    DescribeQuorumRequest,
};
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody, Uuid};

use super::scale_client::Conn;

/// ApiVersions v3: every server since Kafka 2.4 answers it.
const API_VERSIONS_VERSION: i16 = 3;

/// The feature ranges kraftd's brokers register with.
const KRAFTD_BROKER_FEATURES: [(&str, i16, i16); 4] = [
    ("metadata.version", 7, 25),
    ("eligible.leader.replicas.version", 0, 1),
    ("transaction.version", 0, 2),
    ("group.version", 0, 1),
];

/// One connection to a controller and the versions it speaks.
pub(super) struct QuorumConn {
    pub(super) conn: Conn,
    /// The server's highest version per api key.
    server_max: BTreeMap<i16, i16>,
    /// The features the server supports and has finalized (name → min, max): a stand-in
    /// broker declares these, so its registration is refused for nothing else.
    features: BTreeMap<String, (i16, i16)>,
}

impl QuorumConn {
    pub(super) fn connect(port: u16) -> Result<QuorumConn> {
        let mut conn = Conn::connect(port)?;
        let body = RequestBody::ApiVersions(ApiVersionsRequest {
            client_software_name: "kraftd-xtask".into(),
            client_software_version: "1".into(),
            ..Default::default()
        });
        let ResponseBody::ApiVersions(response) = conn.call(API_VERSIONS_VERSION, body)? else {
            bail!("not an ApiVersions response");
        };
        if response.error_code != 0 {
            bail!("ApiVersions: error {}", response.error_code);
        }
        let server_max = response
            .api_keys
            .iter()
            .map(|k| (k.api_key, k.max_version))
            .collect();
        let mut features: BTreeMap<String, (i16, i16)> = response
            .supported_features
            .iter()
            .map(|f| (f.name.clone(), (f.min_version, f.max_version)))
            .collect();
        for f in &response.finalized_features {
            let range = features
                .entry(f.name.clone())
                .or_insert((f.max_version_level, f.max_version_level));
            range.0 = range.0.min(f.max_version_level);
            range.1 = range.1.max(f.max_version_level);
        }
        if features.is_empty() {
            // kraftd's controller listener lists no features (Kafka's does): declare what
            // kraftd's own brokers do (`kraftd_broker::server::supported_features`).
            features = KRAFTD_BROKER_FEATURES
                .iter()
                .map(|(name, min, max)| (name.to_string(), (*min, *max)))
                .collect();
        }
        Ok(QuorumConn {
            conn,
            server_max,
            features,
        })
    }

    /// The highest version of `key` both sides speak.
    fn version(&self, key: ApiKey) -> Result<i16> {
        let ours = supported_range(key).max;
        let theirs = self
            .server_max
            .get(&key.code())
            .with_context(|| format!("the controller does not advertise {key:?}"))?;
        Ok(ours.min(*theirs))
    }

    fn call(&mut self, body: RequestBody) -> Result<ResponseBody> {
        let version = self.version(body.key())?;
        self.conn.call(version, body)
    }

    /// Registers stand-in broker `id` (one fake listener, one log directory) and returns
    /// its broker epoch.
    pub(super) fn register_broker(&mut self, cluster_id: &str, id: i32) -> Result<i64> {
        let tag = id.to_be_bytes();
        let features = self
            .features
            .iter()
            .map(|(name, (min, max))| Feature {
                name: name.clone(),
                min_supported_version: *min,
                max_supported_version: *max,
                ..Default::default()
            })
            .collect();
        let body = RequestBody::BrokerRegistration(BrokerRegistrationRequest {
            broker_id: id,
            cluster_id: cluster_id.to_string(),
            incarnation_id: stand_in_uuid(0x11, tag),
            listeners: vec![Listener {
                name: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9,
                security_protocol: 0,
                ..Default::default()
            }],
            features,
            log_dirs: vec![stand_in_uuid(0x22, tag)],
            previous_broker_epoch: -1,
            ..Default::default()
        });
        let ResponseBody::BrokerRegistration(response) = self.call(body)? else {
            bail!("not a BrokerRegistration response");
        };
        if response.error_code != 0 {
            bail!("BrokerRegistration {id}: error {}", response.error_code);
        }
        Ok(response.broker_epoch)
    }

    /// A heartbeat of stand-in broker `id` claiming to have replayed the metadata up to its
    /// own registration (what unfences it); whether it is still fenced.
    pub(super) fn heartbeat(&mut self, id: i32, epoch: i64) -> Result<bool> {
        let body = RequestBody::BrokerHeartbeat(BrokerHeartbeatRequest {
            broker_id: id,
            broker_epoch: epoch,
            current_metadata_offset: epoch,
            ..Default::default()
        });
        let ResponseBody::BrokerHeartbeat(response) = self.call(body)? else {
            bail!("not a BrokerHeartbeat response");
        };
        if response.error_code != 0 {
            bail!("BrokerHeartbeat {id}: error {}", response.error_code);
        }
        Ok(response.is_fenced)
    }

    /// AddRaftVoter of controller `id` (directory `directory_id`, listener `CONTROLLER` on
    /// 127.0.0.1:`port`), acknowledged once the new voter set is committed, as kraftd's and
    /// Kafka's `add-controller` send it. `Ok(Err(..))` is the leader's refusal.
    pub(super) fn add_raft_voter(
        &mut self,
        cluster_id: &str,
        id: i32,
        directory_id: Uuid,
        port: u16,
        timeout_ms: i32,
    ) -> Result<std::result::Result<(), String>> {
        let body = RequestBody::AddRaftVoter(AddRaftVoterRequest {
            cluster_id: Some(cluster_id.to_string()),
            timeout_ms,
            voter_id: id,
            voter_directory_id: directory_id,
            listeners: vec![VoterListener {
                name: "CONTROLLER".into(),
                host: "127.0.0.1".into(),
                port,
                ..Default::default()
            }],
            ack_when_committed: true,
            ..Default::default()
        });
        let ResponseBody::AddRaftVoter(response) = self.call(body)? else {
            bail!("not an AddRaftVoter response");
        };
        Ok(if response.error_code == 0 {
            Ok(())
        } else {
            Err(format!(
                "error {} {}",
                response.error_code,
                response.error_message.unwrap_or_default()
            ))
        })
    }

    /// DescribeQuorum of `__cluster_metadata`: the partition's state as its leader sees it.
    pub(super) fn describe_quorum(&mut self) -> Result<describe_quorum_response::PartitionData> {
        let body = RequestBody::DescribeQuorum(DescribeQuorumRequest {
            topics: vec![TopicData {
                topic_name: "__cluster_metadata".into(),
                partitions: vec![PartitionData {
                    partition_index: 0,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        });
        let ResponseBody::DescribeQuorum(response) = self.call(body)? else {
            bail!("not a DescribeQuorum response");
        };
        if response.error_code != 0 {
            bail!("DescribeQuorum: error {}", response.error_code);
        }
        let partition = response
            .topics
            .into_iter()
            .flat_map(|t| t.partitions)
            .next()
            .context("DescribeQuorum: no partition")?;
        if partition.error_code != 0 {
            bail!("DescribeQuorum: partition error {}", partition.error_code);
        }
        Ok(partition)
    }
}

/// A fixed uuid for a stand-in broker: `kind`, then the broker id, never one of Kafka's
/// reserved directory ids (all of which start with fifteen zero bytes).
fn stand_in_uuid(kind: u8, id: [u8; 4]) -> Uuid {
    let mut bytes = [kind; 16];
    bytes[12..].copy_from_slice(&id);
    Uuid(bytes)
}
