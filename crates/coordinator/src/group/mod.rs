//! The group coordinator (Kafka's `group-coordinator` module), sans IO.
//!
//! One [`GroupCoordinatorShard`] is the state machine of one `__consumer_offsets`
//! partition: the groups whose id hashes to it ([`crate::partitioner`]) and their committed
//! offsets. It is deterministic: the caller hands it the time, the requests and the
//! partition's records; it hands back records to append and replies to send, and says when
//! its next timer is due. The broker's runtime (`kraftd_broker::coordinator`) owns
//! the IO: it loads a shard by replaying the partition's log when this broker becomes its
//! leader, appends the records a request produced, and releases the replies only once those
//! records are committed.
//!
//! The rooms:
//! - [`config`]: `GroupCoordinatorConfig`, Kafka's `group.*` and `offsets.*` settings;
//! - [`record`]: a coordinator record as the shard writes and replays it;
//! - [`timer`]: what the shard's timers are for (session expiry, rebalance and join delays);
//! - [`shard`]: the shard, its request and reply types, dispatch and replay;
//! - [`classic`]: classic groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup);
//! - [`consumer`]: KIP-848 consumer groups (ConsumerGroupHeartbeat, server-side assignors);
//! - [`share`]: KIP-932 share groups (ShareGroupHeartbeat, the `simple` assignor);
//! - [`streams`]: KIP-1071 streams groups (StreamsGroupHeartbeat, the `sticky` task assignor);
//! - [`offsets`]: committed offsets (OffsetCommit, OffsetFetch, OffsetDelete, expiry).

pub mod classic;
pub mod commit_api;
pub mod config;
pub mod consumer;
mod coordinator_shard;
pub mod offsets;
pub mod record;
pub mod shard;
pub mod share;
pub mod streams;
pub mod timer;
mod txn_offsets;

pub use crate::context::GROUP_METADATA_TOPIC_NAME;
pub use crate::partitioner::partition_for;
pub use config::GroupCoordinatorConfig;
pub use record::CoordinatorRecord;
pub use shard::{GroupCoordinatorShard, GroupWork, ShardOutput, ShardRequest, ShardResponse};
