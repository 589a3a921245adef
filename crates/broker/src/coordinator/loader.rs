//! Loading a shard (Kafka's `CoordinatorLoaderImpl`): every record of the partition, from
//! its log start to its log end, replayed in offset order into a fresh shard. Runs on a
//! blocking thread; the partition keeps serving its followers meanwhile.

use std::sync::Arc;

use crate::group_coordinator::shard::ReplayError;
use crate::group_coordinator::{
    CoordinatorRecord, GroupCoordinatorConfig, GroupCoordinatorShard, TopicMetadata,
};
use kraftd_protocol::records::Batches;
use kraftd_protocol::{DecodeErrorKind, ErrorCode, Uuid};
use tracing::warn;

use crate::replica::replica_manager::ReplicaManager;

/// How much one read of the log brings in while loading.
const LOAD_READ_BYTES: usize = 8 * 1024 * 1024;

/// A loaded shard with where its log stood.
#[derive(Debug)]
pub struct Loaded {
    pub shard: GroupCoordinatorShard,
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
    #[error(transparent)]
    Replay(#[from] ReplayError),
}

/// Replays `__consumer_offsets-<partition>` into a new shard.
pub fn load_shard(
    replica_manager: &ReplicaManager,
    topic_id: Uuid,
    partition: i32,
    leader_epoch: i32,
    config: Arc<GroupCoordinatorConfig>,
    metadata: Arc<dyn TopicMetadata>,
) -> Result<Loaded, LoadError> {
    let mut shard = GroupCoordinatorShard::new(partition, config, metadata);
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
            if batch.last_offset() < offset || batch.is_control() {
                offset = offset.max(next);
                continue;
            }
            let producer_id = if batch.is_transactional() {
                batch.producer_id()
            } else {
                -1
            };
            let base = batch.base_offset();
            let iter = batch
                .records()
                .map_err(|e| LoadError::Corrupt(format!("batch at {base}: {e}")))?;
            for record in iter {
                let record =
                    record.map_err(|e| LoadError::Corrupt(format!("batch at {base}: {e}")))?;
                let at = base + i64::from(record.offset_delta);
                if at < offset {
                    continue;
                }
                let Some(key) = record.key else {
                    return Err(LoadError::Corrupt(format!("record at {at} has no key")));
                };
                match CoordinatorRecord::decode(key, record.value) {
                    Ok(r) => shard.replay(at, producer_id, r)?,
                    Err(e) if matches!(e.kind, DecodeErrorKind::UnknownApiKey(_)) => {
                        // A record type this coordinator does not know (a newer Kafka's):
                        // skipped, as Kafka's loader skips unknown record types.
                        warn!(partition, offset = at, error = %e, "skipping unknown coordinator record type");
                    }
                    Err(e) => {
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
