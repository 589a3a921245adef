//! The vocabulary every coordinator shares with the runtime that drives it: who sent a
//! request ([`RequestContext`]), the handle on a reply a shard owes ([`ReplyId`]) and the
//! cluster's topics as a shard sees them ([`TopicMetadata`]).

use std::fmt::Debug;

use kraftd_protocol::Uuid;

/// The group coordinator's topic, where committed offsets live: every coordinator names
/// it (a transaction adds its partitions for TxnOffsetCommit).
pub const GROUP_METADATA_TOPIC_NAME: &str = "__consumer_offsets";

/// The runtime's handle on a reply the shard owes.
pub type ReplyId = u64;

/// The topics the cluster has, as the shard needs them (KIP-848 assignment, regex
/// subscriptions, topic ids in OffsetCommit v10). The broker implements it over its
/// metadata image.
pub trait TopicMetadata: Debug + Send + Sync {
    /// (topic id, partition count) of a topic by name.
    fn topic_by_name(&self, name: &str) -> Option<(Uuid, i32)>;
    /// (name, partition count) of a topic by id.
    fn topic_by_id(&self, id: Uuid) -> Option<(String, i32)>;
    /// Every topic name, sorted.
    fn topic_names(&self) -> Vec<String>;
    /// The racks of the brokers holding `partition`'s replicas, in replica order, brokers
    /// without a rack left out (Kafka's `TopicMetadata.partitionRacks`): part of the group
    /// metadata hash.
    fn partition_racks(&self, _topic: &str, _partition: i32) -> Vec<String> {
        Vec::new()
    }
    /// A feature's finalized level (0 when not finalized).
    fn feature_level(&self, _name: &str) -> i16 {
        0
    }
    /// Every group's dynamic configs (ConfigResource GROUP, Kafka's `GroupConfig` keys), by
    /// group id: the group coordinator runs each group by its own
    /// (`GroupCoordinatorShard::set_group_configs`), as Kafka's `GroupConfigManager`.
    fn group_configs(&self) -> Vec<(String, std::collections::BTreeMap<String, String>)> {
        Vec::new()
    }
}

/// No topics: a shard before the broker has given it metadata, and tests.
#[derive(Debug, Default)]
pub struct NoTopics;

impl TopicMetadata for NoTopics {
    fn topic_by_name(&self, _: &str) -> Option<(Uuid, i32)> {
        None
    }
    fn topic_by_id(&self, _: Uuid) -> Option<(String, i32)> {
        None
    }
    fn topic_names(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Who sent a request: what DescribeGroups reports and JoinGroup records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestContext {
    pub api_version: i16,
    pub client_id: String,
    /// The client's address as Kafka prints it (`/127.0.0.1`).
    pub client_host: String,
}
