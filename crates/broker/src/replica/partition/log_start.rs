//! What moves a partition's log start: retention, DeleteRecords on the leader (and the low
//! watermark it waits for), and a follower following the leader's log start.

use tracing::{info, warn};

use super::{Partition, PartitionError, Role};

impl Partition {
    /// Retention as the topic configures it, never past the HW; a leader re-assigns its
    /// epoch if retention emptied the cache. Returns how many segments went.
    pub fn apply_retention(&mut self, now_ms: i64) -> Result<usize, PartitionError> {
        let deleted = self.log.apply_retention(now_ms, self.high_watermark)?;
        if deleted > 0 {
            if self.role == Role::Leader {
                self.log.assign_epoch_start_offset(self.leader_epoch)?;
            }
            let start = self.log.log_start_offset();
            let _ = self.log.producer_state_mut().delete_snapshots_before(start);
        }
        Ok(deleted)
    }

    /// DeleteRecords on the leader (Kafka's `Partition.deleteRecordsOnLeader`): moves the
    /// log start offset up to `offset`, -1 meaning the high watermark; past the HW (or
    /// negative otherwise) is OFFSET_OUT_OF_RANGE. Returns the low watermark, which reaches
    /// `offset` once every follower's log start has (see [`Partition::low_watermark`]).
    pub fn delete_records_on_leader(&mut self, offset: i64) -> Result<i64, PartitionError> {
        self.require_leader()?;
        let converted = if offset == -1 {
            self.high_watermark
        } else {
            offset
        };
        if converted < 0 {
            return Err(PartitionError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log.log_start_offset(),
                log_end_offset: self.log.log_end_offset(),
            });
        }
        if self
            .log
            .maybe_increment_log_start_offset(converted, self.high_watermark)?
        {
            info!(
                topic = %self.tp.topic, partition = self.tp.partition,
                log_start_offset = converted, "deleted records"
            );
            self.after_log_start_increment()?;
        }
        Ok(self.low_watermark())
    }

    /// A follower's log start follows the leader's, as the Fetch response carries it
    /// (Kafka's `ReplicaFetcherThread.processPartitionData`:
    /// `log.maybeIncrementLogStartOffset(leaderLogStartOffset)`), bounded by our HW so it
    /// never passes what we know committed. Failures are logged: the next fetch retries.
    pub fn maybe_follow_leader_log_start(&mut self, leader_log_start: i64) {
        if self.role == Role::Leader {
            return;
        }
        let target = leader_log_start.min(self.high_watermark);
        if target <= self.log.log_start_offset() {
            return;
        }
        let result = self
            .log
            .maybe_increment_log_start_offset(target, self.high_watermark)
            .map_err(PartitionError::from)
            .and_then(|changed| {
                if changed {
                    self.after_log_start_increment()
                } else {
                    Ok(())
                }
            });
        if let Err(e) = result {
            warn!(
                topic = %self.tp.topic, partition = self.tp.partition, leader_log_start,
                error = %e, "following the leader's log start failed"
            );
        }
    }

    /// Kafka's `lowWatermarkIfLeader`: the smallest log start among the leader and its
    /// in-sync followers (-1 for one that has not fetched in this leader epoch). Kafka
    /// counts every live replica; the ISR is the set this broker knows to be alive and
    /// following, and one outside it would hold a DeleteRecords to its timeout.
    pub fn low_watermark(&self) -> i64 {
        let leader = self.log.log_start_offset();
        self.isr
            .iter()
            .filter(|&&b| b != self.local_broker)
            .map(|b| self.followers.get(b).map_or(-1, |f| f.log_start_offset))
            .fold(leader, i64::min)
    }

    /// What follows a log start increment: a leader whose epoch cache it emptied assigns
    /// its epoch again (as after retention); producer snapshots below the start go.
    fn after_log_start_increment(&mut self) -> Result<(), PartitionError> {
        if self.role == Role::Leader {
            self.log.assign_epoch_start_offset(self.leader_epoch)?;
        }
        let start = self.log.log_start_offset();
        let _ = self.log.producer_state_mut().delete_snapshots_before(start);
        Ok(())
    }
}
