//! Integration tests of kraftd-controller: replaying Kafka's metadata records into images.

mod common;
mod kip966;
mod replay;
mod replay_props;
mod replay_robustness;
