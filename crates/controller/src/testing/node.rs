//! A real controller node in process.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use kraftd_raft::driver::{QuorumConfig, VoterEndpoint};

use super::records::feature;
use super::METADATA_VERSION;
use crate::node::{ControllerNode, ControllerNodeConfig};
use crate::publisher::AuthorizerConfig;

/// Controller 1, the only voter, on 127.0.0.1 with its metadata log under `dir`, once it is
/// active and has written the bootstrap metadata (metadata.version 25); and its port. No
/// authorizer.
pub async fn start_controller_node(dir: &Path, cluster_id: &str) -> (ControllerNode, u16) {
    start_controller_node_with(dir, cluster_id, AuthorizerConfig::default()).await
}

/// [`start_controller_node`] with `authorizer` (`enabled` for Kafka's StandardAuthorizer).
pub async fn start_controller_node_with(
    dir: &Path,
    cluster_id: &str,
    authorizer: AuthorizerConfig,
) -> (ControllerNode, u16) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let voters = BTreeMap::from([(
        1,
        VoterEndpoint {
            id: 1,
            host: "127.0.0.1".into(),
            port,
        },
    )]);
    let quorum = QuorumConfig::new(cluster_id, voters, dir.join("__cluster_metadata-0"));
    let mut config = ControllerNodeConfig::new(1, quorum);
    config.bootstrap_records = vec![feature("metadata.version", METADATA_VERSION)];
    config.authorizer = authorizer;
    let node = ControllerNode::start(config, listener).await.unwrap();
    let mut status = node.status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(status.borrow().active
        && status.borrow().image.features.metadata_version == Some(METADATA_VERSION))
    {
        assert!(
            Instant::now() < deadline,
            "no active controller with bootstrap metadata"
        );
        let _ = tokio::time::timeout(Duration::from_millis(200), status.changed()).await;
    }
    (node, port)
}
