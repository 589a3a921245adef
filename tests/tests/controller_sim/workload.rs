//! The seeded workload: clients sending random controller operations to random voters
//! (mostly the one they believe leads), and brokers registering and heartbeating as real
//! brokers would. Every operation carries a unique value (topic name, ACL principal, SCRAM
//! salt, config value) so the checks can find its records in the committed log.

use std::collections::BTreeMap;

use bytes::Bytes;
use kraftd_controller::control::ControllerResult;
use kraftd_controller::quorum_controller::{ops, WriteOp};
use kraftd_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kraftd_protocol::messages::broker_registration_request::{Feature, Listener};
use kraftd_protocol::messages::create_acls_request::AclCreation;
use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kraftd_protocol::messages::{
    AllocateProducerIdsRequest, AlterUserScramCredentialsRequest, BrokerHeartbeatRequest,
    BrokerRegistrationRequest, CreateAclsRequest, CreateTopicsRequest, DeleteTopicsRequest,
    IncrementalAlterConfigsRequest,
};
use kraftd_protocol::metadata::FeatureLevelRecord;
use kraftd_protocol::{MetadataRecord, Uuid};
use kraftd_raft::core::rng::Rng;

use crate::cluster::{Cluster, OpKind, Outcome, Resp, CLUSTER_ID};

pub const METADATA_VERSION: i16 = 25;
pub const BROKERS: [i32; 4] = [1, 2, 3, 4];
/// Broker-level (cluster default) configs the workload sets.
pub const CONFIG_KEYS: [&str; 3] = ["log.retention.ms", "log.roll.ms", "message.max.bytes"];
const BROKER_RESOURCE: i8 = 4;
const OP_SET: i8 = 0;

#[derive(Debug, Default)]
struct BrokerAgent {
    /// The epoch of its acknowledged registration, while it holds.
    epoch: Option<i64>,
    /// Bumped after each acknowledged registration (a broker restart).
    incarnation: u8,
}

/// What the clients believe, from acknowledgements.
#[derive(Debug)]
pub struct Workload {
    rng: Rng,
    brokers: BTreeMap<i32, BrokerAgent>,
    bootstrapped: bool,
    /// Topics created (acknowledged) and not yet sent to deletion.
    topics: Vec<String>,
    next: u64,
    last_heartbeats_ms: u64,
}

fn registration(broker: i32, incarnation: u8) -> BrokerRegistrationRequest {
    let mut incarnation_id = Uuid([0u8; 16]);
    incarnation_id.0[0] = 0xB0;
    incarnation_id.0[1] = broker as u8;
    incarnation_id.0[2] = incarnation;
    BrokerRegistrationRequest {
        broker_id: broker,
        cluster_id: CLUSTER_ID.into(),
        incarnation_id,
        listeners: vec![Listener {
            name: "PLAINTEXT".into(),
            host: "localhost".into(),
            port: 9092 + broker as u16,
            security_protocol: 0,
            ..Default::default()
        }],
        features: vec![Feature {
            name: "metadata.version".into(),
            min_supported_version: 1,
            max_supported_version: METADATA_VERSION,
            ..Default::default()
        }],
        rack: None,
        previous_broker_epoch: -1,
        ..Default::default()
    }
}

pub fn bootstrap_op() -> WriteOp<Resp> {
    WriteOp::new(|_ctx| {
        ControllerResult::atomic_of(
            vec![MetadataRecord::FeatureLevel(FeatureLevelRecord {
                name: "metadata.version".into(),
                feature_level: METADATA_VERSION,
                ..Default::default()
            })],
            Resp::Done,
        )
    })
}

impl Workload {
    pub fn new(seed: u64) -> Workload {
        Workload {
            rng: Rng::new(seed ^ 0x00c0_ffee_0000_0000),
            brokers: BROKERS
                .iter()
                .map(|b| (*b, BrokerAgent::default()))
                .collect(),
            bootstrapped: false,
            topics: Vec::new(),
            next: 0,
            last_heartbeats_ms: 0,
        }
    }

    fn unique(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// The node a client sends to: the leader it sees, or any voter.
    fn target(&mut self, cluster: &Cluster) -> i32 {
        let voters = &cluster.sim.cfg.voters;
        match cluster.sim.leader() {
            Some(l) if self.rng.below(10) < 8 => l,
            _ => voters[self.rng.below(voters.len() as u64) as usize],
        }
    }

    /// Learns from what completed.
    pub fn observe(&mut self, cluster: &mut Cluster) {
        for index in cluster.take_resolved() {
            let op = &cluster.ops[index];
            let Outcome::Ok(resp) = &op.outcome else {
                continue;
            };
            match (&op.kind, resp) {
                (OpKind::Bootstrap, _) => self.bootstrapped = true,
                (OpKind::Register { broker }, Resp::Registration(r)) if r.error_code == 0 => {
                    let agent = self.brokers.get_mut(broker).expect("known broker");
                    agent.epoch = Some(r.broker_epoch);
                    agent.incarnation = agent.incarnation.wrapping_add(1);
                }
                (OpKind::Heartbeat { broker }, Resp::Heartbeat(r)) if r.error_code != 0 => {
                    self.brokers.get_mut(broker).expect("known broker").epoch = None;
                }
                (OpKind::CreateTopic { name }, Resp::CreateTopics(r))
                    if r.topics.first().is_some_and(|t| t.error_code == 0) =>
                {
                    self.topics.push(name.clone());
                }
                _ => {}
            }
        }
    }

    /// Brokers heartbeat to the leader about every 500 ms; unregistered ones register.
    fn brokers_act(&mut self, cluster: &mut Cluster) {
        let now = cluster.now();
        if now < self.last_heartbeats_ms + 500 {
            return;
        }
        self.last_heartbeats_ms = now;
        if !self.bootstrapped {
            let node = self.target(cluster);
            cluster.submit(node, OpKind::Bootstrap, bootstrap_op());
            self.observe(cluster);
            return;
        }
        for broker in BROKERS {
            let node = self.target(cluster);
            let agent = &self.brokers[&broker];
            match agent.epoch {
                None => {
                    let request = registration(broker, agent.incarnation);
                    cluster.submit(
                        node,
                        OpKind::Register { broker },
                        ops::register_broker(3, request, 0).map(Resp::Registration),
                    );
                }
                Some(epoch) => {
                    let offset = cluster
                        .controllers
                        .get(&node)
                        .map_or(-1, |c| c.committed_offset());
                    let request = BrokerHeartbeatRequest {
                        broker_id: broker,
                        broker_epoch: epoch,
                        current_metadata_offset: offset,
                        want_fence: false,
                        ..Default::default()
                    };
                    cluster.submit(
                        node,
                        OpKind::Heartbeat { broker },
                        ops::broker_heartbeat(request).map(Resp::Heartbeat),
                    );
                }
            }
            self.observe(cluster);
        }
    }

    /// One client action (and the brokers' periodic ones).
    pub fn act(&mut self, cluster: &mut Cluster) {
        self.observe(cluster);
        self.brokers_act(cluster);
        if !self.bootstrapped {
            return;
        }
        let node = self.target(cluster);
        let n = self.unique();
        let (kind, op) = match self.rng.below(100) {
            0..=29 => {
                let name = format!("topic-{n}");
                let request = CreateTopicsRequest {
                    topics: vec![CreatableTopic {
                        name: name.clone(),
                        num_partitions: 1 + self.rng.below(3) as i32,
                        replication_factor: 1 + self.rng.below(3) as i16,
                        ..Default::default()
                    }],
                    ..Default::default()
                };
                (
                    OpKind::CreateTopic { name },
                    ops::create_topics(request).map(Resp::CreateTopics),
                )
            }
            30..=39 if !self.topics.is_empty() => {
                let i = self.rng.below(self.topics.len() as u64) as usize;
                let name = self.topics.swap_remove(i);
                let request = DeleteTopicsRequest {
                    topic_names: vec![name.clone()],
                    ..Default::default()
                };
                (
                    OpKind::DeleteTopic { name },
                    ops::delete_topics(request).map(Resp::DeleteTopics),
                )
            }
            30..=54 => {
                let key = CONFIG_KEYS[self.rng.below(CONFIG_KEYS.len() as u64) as usize];
                let value = (1_000_000 + n).to_string();
                let request = IncrementalAlterConfigsRequest {
                    resources: vec![AlterConfigsResource {
                        resource_type: BROKER_RESOURCE,
                        resource_name: String::new(),
                        configs: vec![AlterableConfig {
                            name: key.into(),
                            config_operation: OP_SET,
                            value: Some(value.clone()),
                            ..Default::default()
                        }],
                        ..Default::default()
                    }],
                    ..Default::default()
                };
                (
                    OpKind::SetConfig {
                        key: key.into(),
                        value,
                    },
                    ops::incremental_alter_configs(request, false).map(Resp::Configs),
                )
            }
            55..=69 => {
                let principal = format!("User:client-{n}");
                let request = CreateAclsRequest {
                    creations: vec![AclCreation {
                        resource_type: 2,
                        resource_name: format!("topic-{}", self.rng.below(50)),
                        resource_pattern_type: 3,
                        principal: principal.clone(),
                        host: "*".into(),
                        operation: 3,
                        permission_type: 3,
                        ..Default::default()
                    }],
                    ..Default::default()
                };
                (
                    OpKind::CreateAcl { principal },
                    ops::create_acls(request).map(Resp::Acls),
                )
            }
            70..=84 => {
                let user = format!("user-{n}");
                let salt = Bytes::from(format!("salt-{n}"));
                let request = AlterUserScramCredentialsRequest {
                    upsertions: vec![ScramCredentialUpsertion {
                        name: user.clone(),
                        mechanism: 1,
                        iterations: 4096,
                        salt: salt.clone(),
                        salted_password: Bytes::from(vec![n as u8; 32]),
                        ..Default::default()
                    }],
                    ..Default::default()
                };
                (
                    OpKind::Scram { user, salt },
                    ops::alter_user_scram_credentials(request).map(Resp::Scram),
                )
            }
            _ => {
                let broker = BROKERS[self.rng.below(BROKERS.len() as u64) as usize];
                let Some(epoch) = self.brokers[&broker].epoch else {
                    return;
                };
                let request = AllocateProducerIdsRequest {
                    broker_id: broker,
                    broker_epoch: epoch,
                    ..Default::default()
                };
                (
                    OpKind::ProducerIds { broker },
                    ops::allocate_producer_ids(request).map(Resp::ProducerIds),
                )
            }
        };
        cluster.submit(node, kind, op);
        self.observe(cluster);
    }
}
