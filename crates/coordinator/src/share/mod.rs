//! The share coordinator (Kafka's `share-coordinator` module, KIP-932), sans IO: the state of
//! every share partition (a share group's progress through one topic partition: its start
//! offset and the delivery states of its in-flight records) in `__share_group_state`.
//!
//! One [`ShareCoordinatorShard`] is the state machine of one `__share_group_state` partition:
//! the share partitions whose key (`"<group>:<topic id>:<partition>"`,
//! [`SharePartitionKey::coordinator_key`]) hashes to it ([`partition_for`]). It is driven as
//! the group and transaction shards are ([`crate::shard::CoordinatorShard`]).
//!
//! The rooms:
//! - [`config`]: `ShareCoordinatorConfig`, Kafka's `share.coordinator.*` settings;
//! - [`offset`]: a share partition's state (`ShareGroupOffset`) and the merge of state
//!   batches (Kafka's `PersisterStateBatchCombiner`);
//! - [`records`]: ShareSnapshot / ShareUpdate records as the shard writes and replays them;
//! - [`shard`]: the shard, the five state APIs with Kafka's fencing and error codes.

pub mod config;
mod coordinator_shard;
pub mod offset;
pub mod records;
pub mod shard;

#[cfg(test)]
mod tests;

use kraftd_protocol::Uuid;

pub use config::ShareCoordinatorConfig;
pub use coordinator_shard::{SHARE_GROUP_STATE_TOPIC_NAME, SHARE_VERSION_FEATURE};
pub use offset::{PersisterStateBatch, ShareGroupOffset};
pub use records::ShareCoordinatorRecord;
pub use shard::{ShareCoordinatorShard, ShareShardRequest, ShareShardResponse, ShareWork};

/// A share partition: a share group's view of one topic partition (Kafka's
/// `SharePartitionKey`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharePartitionKey {
    pub group_id: String,
    pub topic_id: Uuid,
    pub partition: i32,
}

impl SharePartitionKey {
    pub fn new(group_id: &str, topic_id: Uuid, partition: i32) -> Self {
        SharePartitionKey {
            group_id: group_id.to_string(),
            topic_id,
            partition,
        }
    }

    /// Reads a coordinator key (`"<group>:<topic id>:<partition>"`, the group id may hold
    /// colons) as Kafka's `SharePartitionKey.getInstance(String)` does; `None` where Kafka
    /// throws (FindCoordinator then answers INVALID_REQUEST).
    pub fn parse(key: &str) -> Option<Self> {
        let mut tokens: Vec<&str> = key.split(':').collect();
        // Java's String.split drops trailing empty strings.
        while tokens.last().is_some_and(|t| t.is_empty()) {
            tokens.pop();
        }
        if tokens.len() < 3 {
            return None;
        }
        let last = tokens.len() - 1;
        let partition: i32 = tokens[last].parse().ok()?;
        let topic_id = Uuid::from_base64(tokens[last - 1])?;
        let group_id = tokens[..last - 1].join(":");
        if group_id.trim().is_empty() {
            return None;
        }
        Some(SharePartitionKey {
            group_id,
            topic_id,
            partition,
        })
    }

    /// The key FindCoordinator (key type SHARE) and the coordinator's partitioner use:
    /// `"<group>:<topic id>:<partition>"` (Kafka's `asCoordinatorKey`, the topic id in
    /// Kafka's base64 form).
    pub fn coordinator_key(&self) -> String {
        format!("{}:{}:{}", self.group_id, self.topic_id, self.partition)
    }
}

/// The `__share_group_state` partition coordinating `key` among `partitions` (> 0): Java's
/// `Utils.abs(key.asCoordinatorKey().hashCode()) % n`, as Kafka's `ShareCoordinatorService`.
pub fn partition_for(key: &SharePartitionKey, partitions: i32) -> i32 {
    crate::partitioner::partition_for(&key.coordinator_key(), partitions)
}
