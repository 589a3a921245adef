//! [`QuorumConfig`]: how a node takes part in the controller quorum — where the voters listen
//! (`controller.quorum.voters`), whom to ask when no leader is known
//! (`controller.quorum.bootstrap.servers`), the core's `controller.quorum.*` settings and the
//! metadata log's directory. A controller (a voter) and a broker (an observer) need the same
//! four, and the [`DriverConfig`](super::DriverConfig) starts from them: one struct, written
//! once, that the broker's and the controller's configs both hold.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::voters::VoterEndpoint;
use crate::RaftConfig;

/// The node's view of the controller quorum; Kafka's names in the field docs.
#[derive(Debug, Clone)]
pub struct QuorumConfig {
    /// `controller.quorum.voters`, parsed by [`parse_voters`](super::parse_voters); empty
    /// for a dynamic quorum (KIP-853), whose voters come from the metadata log.
    pub voters: BTreeMap<i32, VoterEndpoint>,
    /// `controller.quorum.bootstrap.servers`, parsed by
    /// [`parse_bootstrap_servers`](super::parse_bootstrap_servers): each entry the voter it
    /// names or a negative id with its own endpoint. When not empty, its ids replace
    /// `raft.bootstrap_servers` (empty: the core asks the voters).
    pub bootstrap_servers: Vec<VoterEndpoint>,
    /// `controller.quorum.*`: the core's timeouts and identity.
    pub raft: RaftConfig,
    /// The metadata log's directory (`<metadata.log.dir>/__cluster_metadata-0`).
    pub metadata_log_dir: PathBuf,
}

impl QuorumConfig {
    /// Kafka's defaults for a member of cluster `cluster_id` whose quorum is `voters`,
    /// keeping its copy of the metadata log in `metadata_log_dir`; no bootstrap servers.
    pub fn new(
        cluster_id: &str,
        voters: BTreeMap<i32, VoterEndpoint>,
        metadata_log_dir: PathBuf,
    ) -> Self {
        QuorumConfig {
            voters,
            bootstrap_servers: Vec::new(),
            raft: RaftConfig::new(cluster_id),
            metadata_log_dir,
        }
    }
}
