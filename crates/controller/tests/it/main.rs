//! Integration tests of kraftd-controller: replaying Kafka's metadata records into images.

mod common;
mod control_cluster;
mod control_harness;
mod control_kip966;
mod control_props;
mod control_replication;
mod kip966;
mod replay;
mod replay_props;
mod replay_robustness;
