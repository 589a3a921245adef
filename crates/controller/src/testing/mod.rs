//! Test support shared by this crate's tests and the broker's (behind the `testing` feature;
//! never needed in production): metadata record builders ([`records`]), authorizers fed
//! test ACLs ([`acls`]), [`ControlHarness`],
//! the real control managers driven sans IO with their records replayed into a
//! [`MetadataImage`](crate::MetadataImage), and [`start_controller_node`], a real
//! [`ControllerNode`](crate::node::ControllerNode) on loopback.

pub mod acls;
mod harness;
mod node;
pub mod records;

pub use harness::{
    alter_partition_request, broker_registration, ControlHarness, CLUSTER_ID, METADATA_VERSION,
    TOPIC, TOPIC_ID,
};
pub use node::{start_controller_node, start_controller_node_with};
