//! The follower side of a partition: becoming follower, appending what the leader sent,
//! following its HW, and truncating on divergence (R3/R4) or to start over.

use bytes::Bytes;
use kraftd_log::AppendInfo;
use tracing::{debug, info, warn};

use super::{Partition, PartitionError, PartitionState, Role};

impl Partition {
    /// Applies the metadata's state when another broker (or nobody) leads. Returns whether
    /// the leader or epoch changed (the fetcher must move).
    pub fn make_follower(&mut self, state: &PartitionState) -> bool {
        if self.role != Role::Leader
            && state.leader_epoch < self.leader_epoch
            && self.leader_epoch >= 0
        {
            return false;
        }
        let role = if state.leader >= 0 {
            Role::Follower {
                leader: state.leader,
            }
        } else {
            Role::None
        };
        let changed = role != self.role || state.leader_epoch != self.leader_epoch;
        if changed {
            // An epoch this replica started as leader without writing anything describes
            // no data: dropped, so the next fetch names the epoch of its last batch and the
            // new leader's batches of older epochs can follow (Kafka's follower append
            // overwrites such entries; our log refuses a decreasing epoch instead).
            let end = self.log.log_end_offset();
            if let Err(e) = self.log.truncate_to(end) {
                warn!(topic = %self.tp.topic, partition = self.tp.partition, error = %e, "dropping an empty leader epoch failed");
            }
        }
        self.role = role;
        self.leader_epoch = state.leader_epoch;
        self.partition_epoch = state.partition_epoch;
        self.leader_recovery_state = state.leader_recovery_state;
        self.replicas = state.replicas.clone();
        self.isr = state.isr.clone();
        self.pending_isr = None;
        self.followers.clear();
        if changed {
            debug!(
                topic = %self.tp.topic, partition = self.tp.partition, epoch = self.leader_epoch,
                leader = state.leader, log_end_offset = self.log.log_end_offset(),
                "became follower"
            );
        }
        changed
    }

    /// Where the follower fetches next: (fetch offset = log end, last fetched epoch or -1).
    pub fn fetch_position(&self) -> (i64, i32) {
        (
            self.log.log_end_offset(),
            self.log.latest_epoch().unwrap_or(-1),
        )
    }

    /// Appends records fetched from the leader and records their producers. The HW follows
    /// the leader's, bounded by our log end.
    pub fn append_as_follower(
        &mut self,
        records: Bytes,
        leader_high_watermark: i64,
        now_ms: i64,
    ) -> Result<AppendInfo, PartitionError> {
        let segments = self.log.segment_count();
        // The log updates the producer state, markers included (transactions complete on
        // followers as on the leader).
        let info = self.log.append_as_follower(records, now_ms)?;
        self.snapshot_producers_if_rolled(segments);
        self.update_follower_high_watermark(leader_high_watermark);
        Ok(info)
    }

    /// A follower's HW is the leader's, bounded by its own log end; it never moves back
    /// except by truncation.
    pub fn update_follower_high_watermark(&mut self, leader_high_watermark: i64) -> bool {
        let hw = leader_high_watermark.min(self.log.log_end_offset());
        if hw > self.high_watermark {
            self.high_watermark = hw;
            self.log.note_high_watermark(hw);
            self.producers_follow_high_watermark();
            true
        } else {
            false
        }
    }

    /// The leader said our log diverges after `(epoch, end_offset)`; truncate as Kafka's
    /// follower does (KIP-279): if we hold that epoch, to the smaller of its end on both
    /// sides; otherwise to the end of the largest epoch we hold at or below it (the next
    /// fetch, with that epoch as last fetched, settles the rest). Returns the new log end.
    pub fn truncate_on_divergence(
        &mut self,
        epoch: i32,
        end_offset: i64,
        now_ms: i64,
    ) -> Result<i64, PartitionError> {
        let local = self.log.end_offset_for_epoch(epoch);
        let target = match local {
            Some((e, local_end)) if e == epoch => local_end.min(end_offset),
            Some((_, local_end)) => local_end,
            None => end_offset.min(self.log.log_end_offset()),
        };
        self.truncate_to(target.max(0), now_ms)?;
        Ok(self.log.log_end_offset())
    }

    /// Removes every batch from `offset` on (divergence, or a fresh fetch from a new leader
    /// whose log is shorter). Truncating below the HW is allowed for data partitions (the
    /// HW follows), unlike the metadata log. Producer state is rebuilt to match.
    pub fn truncate_to(&mut self, offset: i64, now_ms: i64) -> Result<(), PartitionError> {
        if offset >= self.log.log_end_offset() {
            // Nothing to remove but an epoch assigned at the end with no data in it.
            self.log.truncate_to(offset)?;
            return Ok(());
        }
        info!(
            topic = %self.tp.topic, partition = self.tp.partition, from = self.log.log_end_offset(),
            to = offset, hw = self.high_watermark, "truncating"
        );
        self.log.truncate_to(offset)?;
        self.high_watermark = self.high_watermark.min(self.log.log_end_offset());
        self.log.note_high_watermark(self.high_watermark);
        self.truncate_future_with_current(now_ms);
        self.rebuild_producer_state(now_ms)
    }

    /// The leader's log starts where ours never had data: start over at `offset`.
    pub fn truncate_fully_and_start_at(
        &mut self,
        offset: i64,
        now_ms: i64,
    ) -> Result<(), PartitionError> {
        self.log.truncate_fully_and_start_at(offset)?;
        self.high_watermark = offset;
        self.log.note_high_watermark(offset);
        self.truncate_future_with_current(now_ms);
        self.rebuild_producer_state(now_ms)
    }
}
