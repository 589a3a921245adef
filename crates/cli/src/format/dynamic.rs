//! The dynamic quorum (KIP-853) at format time, as Kafka 4.4's `kafka-storage format`:
//! `--standalone`, `--initial-controllers id@host:port:directoryId,...` and
//! `--no-initial-controllers`, Kafka's refusals for them, and the bootstrap snapshot
//! `__cluster_metadata-0/00000000000000000000-0000000000.checkpoint` a controller's metadata
//! log directory gets: a control batch (SnapshotHeaderRecord, KRaftVersionRecord
//! `kraft.version=1`, and VotersRecord when the initial voters are known), then the
//! SnapshotFooterRecord. The Raft layer reads the voter set and `kraft.version` from it;
//! the feature levels and `--add-scram` credentials stay in `bootstrap.checkpoint`, which the
//! first active controller writes to the log (Kafka 4.4 also copies them between the two
//! control batches of this file).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use kraftd_protocol::messages::{
    voters_record::{Endpoint, KRaftVersionFeature, Voter},
    KRaftVersionRecord, SnapshotFooterRecord, SnapshotHeaderRecord, VotersRecord,
};
use kraftd_protocol::records::{ControlRecord, RecordBatchBuilder};
use kraftd_protocol::Uuid;

use crate::config::NodeConfig;

/// The directory of `__cluster_metadata` partition 0 inside the metadata log directory.
pub const CLUSTER_METADATA_DIR: &str = "__cluster_metadata-0";
/// Kafka's `Snapshots.BOOTSTRAP_SNAPSHOT_ID` (end offset 0, epoch 0) as a file name.
pub const BOOTSTRAP_SNAPSHOT: &str = "00000000000000000000-0000000000.checkpoint";
/// The `kraft.version` a dynamic quorum is formatted at.
pub const KRAFT_VERSION_DYNAMIC: i16 = 1;
pub use kraftd_broker::server::KRAFT_VERSION_SUPPORTED;

/// Which of Kafka's three mutually exclusive quorum flags was given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum QuorumFlag {
    /// None: a static quorum (`controller.quorum.voters`), or a broker.
    #[default]
    None,
    /// `--standalone`: this controller alone is the first voter.
    Standalone,
    /// `--initial-controllers`: the first voters, each with its directory id.
    InitialControllers(String),
    /// `--no-initial-controllers`: this node joins a quorum formatted elsewhere.
    NoInitialControllers,
}

/// One `id@host:port:directoryId` entry of `--initial-controllers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitialController {
    pub id: i32,
    /// As given; an IPv6 literal keeps its brackets.
    pub host: String,
    pub port: u16,
    pub directory_id: Uuid,
}

/// Parses `--initial-controllers` as Kafka's `DynamicVoters.parse`: a comma-separated list
/// of `id@host:port:directoryId`, no id twice. Errors are one line naming the entry.
pub fn parse_initial_controllers(value: &str) -> Result<Vec<InitialController>> {
    let mut out: Vec<InitialController> = Vec::new();
    for raw in value.split(',') {
        let entry = raw.trim();
        let bad = |why: &str| anyhow!("--initial-controllers entry {entry:?}: {why}");
        if entry.is_empty() {
            bail!("--initial-controllers {value:?} has an empty entry");
        }
        let (id, rest) = entry
            .split_once('@')
            .ok_or_else(|| bad("expected id@host:port:directoryId"))?;
        let id: i32 = id
            .trim()
            .parse()
            .ok()
            .filter(|id| *id >= 0)
            .ok_or_else(|| bad("the node id is not a non-negative integer"))?;
        let (host, rest) = if let Some(bracketed) = rest.strip_prefix('[') {
            let (inner, after) = bracketed
                .split_once(']')
                .ok_or_else(|| bad("no ']' closes the IPv6 address"))?;
            let after = after
                .strip_prefix(':')
                .ok_or_else(|| bad("expected ':' and a port after the host"))?;
            (format!("[{inner}]"), after)
        } else {
            let (host, after) = rest
                .split_once(':')
                .ok_or_else(|| bad("expected id@host:port:directoryId"))?;
            (host.to_string(), after)
        };
        if host.is_empty() || host == "[]" {
            return Err(bad("the host is empty"));
        }
        let (port, directory) = rest.split_once(':').ok_or_else(|| {
            bad("no colon following the port (expected id@host:port:directoryId)")
        })?;
        let port: u16 = port
            .parse()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?;
        let directory_id = Uuid::from_base64(directory)
            .filter(|u| u.0 != [0; 16])
            .ok_or_else(|| bad("the directory id is not a 22-character URL-safe base64 uuid"))?;
        if out.iter().any(|c| c.id == id) {
            bail!("--initial-controllers {value:?}: node id {id} was specified more than once");
        }
        out.push(InitialController {
            id,
            host,
            port,
            directory_id,
        });
    }
    Ok(out)
}

/// What `format` does about the quorum, decided from the config and the flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuorumPlan {
    /// A static quorum or a broker: no bootstrap snapshot.
    Static,
    /// A dynamic quorum's controller: the bootstrap snapshot with these initial voters
    /// (none for `--no-initial-controllers`), named after the controller listener.
    Dynamic {
        voters: Option<Vec<InitialController>>,
        listener_name: String,
    },
    /// A broker of a dynamic quorum: nothing to write beyond `meta.properties`.
    DynamicBroker,
}

impl QuorumPlan {
    /// This node's directory id for its metadata log directory, when the initial voters
    /// name it (Kafka takes it from this node's own entry).
    pub fn own_directory_id(&self, node_id: i32) -> Option<Uuid> {
        match self {
            QuorumPlan::Dynamic {
                voters: Some(voters),
                ..
            } => voters
                .iter()
                .find(|v| v.id == node_id)
                .map(|v| v.directory_id),
            _ => None,
        }
    }
}

/// Kafka 4.4's checks on the quorum flags (`StorageTool.runFormatCommand`), with its
/// messages; `random_uuid` draws `--standalone`'s directory id.
pub fn plan(
    config: &NodeConfig,
    flag: &QuorumFlag,
    random_uuid: impl FnOnce() -> Result<Uuid>,
) -> Result<QuorumPlan> {
    let static_voters = !config.voters.is_empty();
    if static_voters
        && matches!(
            flag,
            QuorumFlag::Standalone | QuorumFlag::InitialControllers(_)
        )
    {
        bail!(
            "You cannot specify controller.quorum.voters and format the node with \
             --initial-controllers or --standalone. If you want to use dynamic quorum, please \
             remove controller.quorum.voters and specify controller.quorum.bootstrap.servers \
             instead."
        );
    }
    if *flag == QuorumFlag::Standalone && !config.is_controller() {
        bail!("You can only use --standalone on a controller.");
    }
    if static_voters {
        return Ok(QuorumPlan::Static);
    }
    if !config.is_controller() {
        if let QuorumFlag::InitialControllers(value) = flag {
            parse_initial_controllers(value)?;
        }
        return Ok(QuorumPlan::DynamicBroker);
    }
    let listener_name = config
        .controller_listener_names
        .first()
        .cloned()
        .ok_or_else(|| anyhow!("controller.listener.names is not set"))?;
    let voters = match flag {
        QuorumFlag::None => bail!(
            "Because controller.quorum.voters is not set on this controller, you must specify \
             one of the following: --standalone, --initial-controllers, or \
             --no-initial-controllers."
        ),
        QuorumFlag::NoInitialControllers => None,
        QuorumFlag::InitialControllers(value) => Some(parse_initial_controllers(value)?),
        QuorumFlag::Standalone => {
            let (host, port) = advertised_controller_endpoint(config)?;
            Some(vec![InitialController {
                id: config.node_id,
                host,
                port,
                directory_id: random_uuid()?,
            }])
        }
    };
    Ok(QuorumPlan::Dynamic {
        voters,
        listener_name,
    })
}

/// The first controller listener as advertised (`advertised.listeners` by name, else
/// `listeners`); an empty host is `localhost`, as Kafka's `createStandaloneDynamicVoters`.
pub fn advertised_controller_endpoint(config: &NodeConfig) -> Result<(String, u16)> {
    let listener = config
        .controller_listener()
        .ok_or_else(|| anyhow!("No controller listeners found."))?;
    let advertised = config
        .advertised_listeners
        .iter()
        .find(|l| l.name == listener.name)
        .unwrap_or(listener);
    let host = if advertised.host.is_empty() {
        "localhost".to_string()
    } else {
        advertised.host.clone()
    };
    Ok((host, advertised.port))
}

/// The VotersRecord of the initial voters: each with one endpoint named after the
/// controller listener (IPv6 without brackets, as Java's `getHostString`) and kraftd's
/// supported `kraft.version` range.
pub fn voters_record(voters: &[InitialController], listener_name: &str) -> VotersRecord {
    VotersRecord {
        version: 0,
        voters: voters
            .iter()
            .map(|v| Voter {
                voter_id: v.id,
                voter_directory_id: v.directory_id,
                endpoints: vec![Endpoint {
                    name: listener_name.to_string(),
                    host: v
                        .host
                        .trim_start_matches('[')
                        .trim_end_matches(']')
                        .to_string(),
                    port: v.port,
                    ..Default::default()
                }],
                k_raft_version_feature: KRaftVersionFeature {
                    min_supported_version: KRAFT_VERSION_SUPPORTED.0,
                    max_supported_version: KRAFT_VERSION_SUPPORTED.1,
                    ..Default::default()
                },
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// The bootstrap snapshot's bytes: the control batch at offset 0 (header, `kraft.version`,
/// the voters if known), then the footer batch at the next offset, every batch in epoch 0
/// and timestamped `now_ms`, as Kafka's `RecordsSnapshotWriter` lays them out.
pub fn bootstrap_snapshot(voters: Option<&VotersRecord>, now_ms: i64) -> Result<Bytes> {
    let mut control = vec![
        ControlRecord::SnapshotHeader(SnapshotHeaderRecord {
            version: 0,
            last_contained_log_timestamp: now_ms,
            ..Default::default()
        }),
        ControlRecord::KRaftVersion(KRaftVersionRecord {
            version: 0,
            k_raft_version: KRAFT_VERSION_DYNAMIC,
            ..Default::default()
        }),
    ];
    if let Some(v) = voters {
        control.push(ControlRecord::KRaftVoters(v.clone()));
    }
    let footer = [ControlRecord::SnapshotFooter(SnapshotFooterRecord {
        version: 0,
        ..Default::default()
    })];
    let mut out = Vec::new();
    let mut offset = 0i64;
    for records in [&control[..], &footer[..]] {
        let mut batch = RecordBatchBuilder::new(offset)
            .partition_leader_epoch(0)
            .control(true);
        for record in records {
            let value = record
                .encode_value()
                .map_err(|e| anyhow!("encoding a bootstrap snapshot control record: {e}"))?;
            batch
                .append(now_ms, Some(record.key()), Some(value), Vec::new())
                .map_err(|e| anyhow!("building the bootstrap snapshot: {e}"))?;
        }
        offset += records.len() as i64;
        out.extend_from_slice(
            &batch
                .build()
                .map_err(|e| anyhow!("building the bootstrap snapshot: {e}"))?,
        );
    }
    Ok(Bytes::from(out))
}

/// The bootstrap snapshot's path in a metadata log directory.
pub fn bootstrap_snapshot_path(metadata_log_dir: &Path) -> PathBuf {
    metadata_log_dir
        .join(CLUSTER_METADATA_DIR)
        .join(BOOTSTRAP_SNAPSHOT)
}

/// Writes the bootstrap snapshot of `plan` (a dynamic controller's) into `dir`.
pub fn write_bootstrap_snapshot(dir: &Path, plan: &QuorumPlan) -> Result<()> {
    let QuorumPlan::Dynamic {
        voters,
        listener_name,
    } = plan
    else {
        return Ok(());
    };
    let record = voters.as_ref().map(|v| voters_record(v, listener_name));
    let bytes = bootstrap_snapshot(record.as_ref(), kraftd_log::clock::unix_ms())?;
    let path = bootstrap_snapshot_path(dir);
    let parent = path.parent().expect("the snapshot path has a parent");
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    super::write_atomically(&path, &bytes)
}

#[cfg(test)]
mod tests;
