//! How a share partition's changes become durable (Kafka's `SharePartition`
//! `writeShareGroupState` and `rollbackOrProcessStateUpdates`): each change leaves as a
//! WriteShareGroupState of the changed records' runs, carrying the start offset it would
//! leave; the records stay in transition until the persister answers, then stand or roll
//! back, and the SPSO moves over what is settled.

use kraftd_protocol::messages::write_share_group_state_request::{
    PartitionData as WritePartitionData, StateBatch, WriteStateData,
};
use kraftd_protocol::messages::WriteShareGroupStateRequest;
use kraftd_protocol::ErrorCode;

use super::{InFlightRecord, RecordState, SharePartition, StateWrite};

impl SharePartition {
    /// The persister answered `write_id`: on success the changes stand (and the SPSO moves
    /// over what is now terminal), on failure they are rolled back. The answer: whether
    /// records became available (waiting fetches may now acquire).
    pub fn complete_write(&mut self, write_id: u64, result: Result<(), ErrorCode>) -> bool {
        let Some(previous) = self.pending_writes.remove(&write_id) else {
            return false;
        };
        let mut available = false;
        for (offset, before) in previous {
            let Some(r) = self.record_mut(offset) else {
                continue;
            };
            if r.in_transition != Some(write_id) {
                continue;
            }
            match result {
                Ok(()) => {
                    r.in_transition = None;
                    available |= r.state == RecordState::Available;
                }
                Err(_) => {
                    *r = InFlightRecord {
                        in_transition: None,
                        ..before
                    }
                }
            }
        }
        self.move_start_offset();
        available || (result.is_ok() && self.records.iter().any(InFlightRecord::acquirable))
    }

    pub(super) fn take_write_id(&mut self) -> u64 {
        let id = self.next_write_id;
        self.next_write_id += 1;
        id
    }

    /// Registers a write of the records changed from `previous`; None when nothing changed.
    pub(super) fn write_for(
        &mut self,
        write_id: u64,
        previous: Vec<(i64, InFlightRecord)>,
    ) -> Option<StateWrite> {
        if previous.is_empty() {
            return None;
        }
        let batches = self.state_batches(previous.iter().map(|(o, _)| *o));
        let request = self.write_request(write_id, batches);
        self.pending_writes.insert(write_id, previous);
        Some(StateWrite { write_id, request })
    }

    /// The changed offsets as state batches: runs of contiguous offsets with one state and
    /// delivery count.
    pub(super) fn state_batches(&self, offsets: impl Iterator<Item = i64>) -> Vec<StateBatch> {
        let mut offsets: Vec<i64> = offsets.collect();
        offsets.sort_unstable();
        offsets.dedup();
        let mut out: Vec<StateBatch> = Vec::new();
        for offset in offsets {
            let r = self.record(offset).expect("changed offset in flight");
            let state = r.state.id();
            if let Some(last) = out.last_mut() {
                if last.last_offset + 1 == offset
                    && last.delivery_state == state
                    && last.delivery_count == r.delivery_count
                {
                    last.last_offset = offset;
                    continue;
                }
            }
            out.push(StateBatch {
                first_offset: offset,
                last_offset: offset,
                delivery_state: state,
                delivery_count: r.delivery_count,
                ..Default::default()
            });
        }
        out
    }

    pub(super) fn write_request(
        &self,
        write_id: u64,
        state_batches: Vec<StateBatch>,
    ) -> WriteShareGroupStateRequest {
        // Kafka's deliveryCompleteCount: the terminal records within the in-flight window,
        // i.e. at or past the start offset this write carries (the summary's lag subtracts
        // it from end offset less start offset).
        let start_offset = self.prospective_start_offset(write_id);
        let delivery_complete_count = self
            .records
            .iter()
            .skip((start_offset - self.start_offset) as usize)
            .filter(|r| r.state.is_terminal())
            .count() as i32;
        WriteShareGroupStateRequest {
            group_id: self.group_id.clone(),
            topics: vec![WriteStateData {
                topic_id: self.topic_id,
                partitions: vec![WritePartitionData {
                    partition: self.partition,
                    state_epoch: self.state_epoch,
                    leader_epoch: self.leader_epoch,
                    start_offset,
                    delivery_complete_count,
                    state_batches,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// The SPSO once this write commits: past the terminal records at the front that are
    /// settled or settled by this write. A change of another unanswered write does not
    /// count, since that write may fail and roll back; the write carries the result so the
    /// share coordinator need not keep the terminal records below it.
    pub(super) fn prospective_start_offset(&self, write_id: u64) -> i64 {
        let done = self
            .records
            .iter()
            .take_while(|r| {
                r.state.is_terminal() && r.in_transition.is_none_or(|pending| pending == write_id)
            })
            .count();
        self.start_offset + done as i64
    }

    /// Moves the SPSO over the terminal records at the front.
    pub(super) fn move_start_offset(&mut self) {
        while let Some(front) = self.records.front() {
            if !front.state.is_terminal() || front.in_transition.is_some() {
                break;
            }
            self.records.pop_front();
            self.start_offset += 1;
        }
    }
}
