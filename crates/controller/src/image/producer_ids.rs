//! The producer id allocation state in the metadata image, as Kafka's `ProducerIdsImage`:
//! the first id of the next block to hand out. Blocks only move forward, so a replayed
//! `ProducerIdsRecord` must raise it.

/// The next producer id block. Tiny, so a plain value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerIdsImage {
    /// The first id of the next block; -1 before any block was allocated.
    pub next_producer_id: i64,
}

impl Default for ProducerIdsImage {
    fn default() -> Self {
        ProducerIdsImage {
            next_producer_id: -1,
        }
    }
}
