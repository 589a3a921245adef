//! Loading a shard (Kafka's `CoordinatorLoaderImpl`): every record of the partition, from
//! its log start to its log end, replayed in offset order into a fresh shard, transaction
//! markers included. Runs on a blocking thread; the partition keeps serving its followers
//! meanwhile.

use std::sync::Arc;

use kraftd_protocol::records::{Batches, ControlRecordType};
use kraftd_protocol::{ErrorCode, Uuid};
use tracing::warn;

use crate::replica::replica_manager::ReplicaManager;
use kraftd_coordinator::context::TopicMetadata;
use kraftd_coordinator::shard::{CoordinatorShard, ReplayFailure};

/// How much one read of the log brings in while loading.
const LOAD_READ_BYTES: usize = 8 * 1024 * 1024;

/// A loaded shard with where its log stood.
#[derive(Debug)]
pub struct Loaded<S> {
    pub shard: S,
    pub log_end_offset: i64,
    pub high_watermark: i64,
    pub records: u64,
}

/// Why a load failed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Leadership moved or the partition is gone: nothing to retry.
    #[error("partition no longer led here: {0:?}")]
    NotLeader(ErrorCode),
    #[error("reading the log: {0:?}")]
    Read(ErrorCode),
    #[error("{0}")]
    Corrupt(String),
}

/// Replays `<S::TOPIC>-<partition>` into a new shard.
pub fn load_shard<S: CoordinatorShard>(
    replica_manager: &ReplicaManager,
    topic_id: Uuid,
    partition: i32,
    leader_epoch: i32,
    config: Arc<S::Config>,
    metadata: Arc<dyn TopicMetadata>,
) -> Result<Loaded<S>, LoadError> {
    let mut shard = S::new(partition, leader_epoch, config, metadata);
    let (start, _, end) = replica_manager
        .coordinator_log_bounds(topic_id, partition, leader_epoch)
        .map_err(LoadError::NotLeader)?;
    let mut offset = start;
    let mut high_watermark = 0;
    let mut records = 0u64;
    while offset < end {
        let (read, hw) = replica_manager
            .read_coordinator_log(topic_id, partition, leader_epoch, offset, LOAD_READ_BYTES)
            .map_err(|e| match e {
                ErrorCode::NotLeaderOrFollower | ErrorCode::FencedLeaderEpoch => {
                    LoadError::NotLeader(e)
                }
                other => LoadError::Read(other),
            })?;
        high_watermark = hw;
        if read.bytes.is_empty() {
            break;
        }
        for batch in Batches::new(read.bytes) {
            let batch = batch.map_err(|e| LoadError::Corrupt(format!("batch at {offset}: {e}")))?;
            let next = batch.next_offset();
            let base = batch.base_offset();
            if batch.last_offset() < offset {
                continue;
            }
            let corrupt =
                |e: &dyn std::fmt::Display| LoadError::Corrupt(format!("batch at {base}: {e}"));
            if batch.is_control() {
                for record in batch.records().map_err(|e| corrupt(&e))? {
                    let record = record.map_err(|e| corrupt(&e))?;
                    let key = record.key.unwrap_or_default();
                    match ControlRecordType::decode_key(&key) {
                        Ok(ControlRecordType::Commit) => {
                            shard.replay_end_txn(base, batch.producer_id(), true)
                        }
                        Ok(ControlRecordType::Abort) => {
                            shard.replay_end_txn(base, batch.producer_id(), false)
                        }
                        _ => {}
                    }
                }
                offset = offset.max(next);
                continue;
            }
            let producer = batch
                .is_transactional()
                .then(|| (batch.producer_id(), batch.producer_epoch()));
            for record in batch.records().map_err(|e| corrupt(&e))? {
                let record = record.map_err(|e| corrupt(&e))?;
                let at = base + i64::from(record.offset_delta);
                if at < offset {
                    continue;
                }
                let Some(key) = record.key else {
                    return Err(LoadError::Corrupt(format!("record at {at} has no key")));
                };
                match shard.replay(at, producer, key, record.value) {
                    Ok(()) => {}
                    Err(ReplayFailure::UnknownType(e)) => {
                        warn!(topic = S::TOPIC, partition, offset = at, error = %e, "skipping unknown coordinator record type");
                    }
                    Err(ReplayFailure::Corrupt(e)) => {
                        return Err(LoadError::Corrupt(format!("record at {at}: {e}")));
                    }
                }
                records += 1;
            }
            offset = offset.max(next);
        }
        offset = offset.max(read.next_offset);
    }
    Ok(Loaded {
        shard,
        log_end_offset: end.max(offset),
        high_watermark,
        records,
    })
}
