//! Integration tests of kraftd-controller: replaying Kafka's metadata records into images.

mod auth;
mod control_acl;
mod control_cluster;
mod control_configuration;
mod control_features;
mod control_kip966;
mod control_producer_ids;
mod control_props;
mod control_quotas;
mod control_reassignment;
mod control_replication;
mod control_scram;
mod control_topics;
mod kip966;
mod node;
mod node_authz;
mod publisher;
mod quorum_controller;
mod quorum_controller_props;
mod replay;
mod replay_props;
mod replay_robustness;
mod snapshot;
