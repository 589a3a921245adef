//! `TopicIdPartition`, the replica layer's key for a partition (Kafka's): what fetch
//! sessions, the ReplicaManager, partitions and the fetcher name partitions by.

use kraftd_protocol::Uuid;

/// A partition as a fetch names it: topic id (ZERO when the request uses names), topic name
/// (resolved; empty when the id is unknown), partition.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicIdPartition {
    pub topic_id: Uuid,
    pub topic: String,
    pub partition: i32,
}
