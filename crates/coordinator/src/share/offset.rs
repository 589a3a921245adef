//! A share partition's state as the share coordinator keeps it (Kafka's `ShareGroupOffset`
//! and `PersisterStateBatch`), and the merge of new state batches into old ones (Kafka's
//! `PersisterStateBatchCombiner`): the shortest non-overlapping cover of both, clipped at the
//! start offset, where an offset covered twice takes the batch with the higher delivery
//! count, then the higher delivery state.

use std::collections::BTreeMap;

use kraftd_protocol::coordinator::share_snapshot_value::StateBatch as SnapshotBatch;
use kraftd_protocol::coordinator::share_update_value::StateBatch as UpdateBatch;
use kraftd_protocol::messages::read_share_group_state_response::StateBatch as ReadBatch;
use kraftd_protocol::messages::write_share_group_state_request::StateBatch as WriteBatch;

/// Kafka's `ShareGroupOffset.UNINITIALIZED_START_OFFSET`: no record consumed yet.
pub const UNINITIALIZED_START_OFFSET: i64 = -1;
/// Kafka's `UNINITIALIZED_DELIVERY_COMPLETE_COUNT`: lag cannot be computed yet.
pub const UNINITIALIZED_DELIVERY_COMPLETE_COUNT: i32 = -1;
/// Kafka's `UNINITIALIZED_EPOCH` / `DEFAULT_EPOCH`.
pub const UNINITIALIZED_EPOCH: i32 = 0;

/// The delivery state and count of a range of in-flight records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PersisterStateBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    pub delivery_state: i8,
    pub delivery_count: i16,
}

/// The state batches of the share records and state APIs (ShareSnapshot, ShareUpdate,
/// WriteShareGroupState, ReadShareGroupState) carry the same four fields as
/// [`PersisterStateBatch`]: one conversion each way serves them all.
macro_rules! state_batch_conversions {
    ($($ty:ident),* $(,)?) => {$(
        impl From<&$ty> for PersisterStateBatch {
            fn from(b: &$ty) -> Self {
                PersisterStateBatch {
                    first_offset: b.first_offset,
                    last_offset: b.last_offset,
                    delivery_state: b.delivery_state,
                    delivery_count: b.delivery_count,
                }
            }
        }

        impl From<&PersisterStateBatch> for $ty {
            fn from(b: &PersisterStateBatch) -> Self {
                $ty {
                    first_offset: b.first_offset,
                    last_offset: b.last_offset,
                    delivery_state: b.delivery_state,
                    delivery_count: b.delivery_count,
                    ..Default::default()
                }
            }
        }
    )*};
}

state_batch_conversions!(SnapshotBatch, UpdateBatch, WriteBatch, ReadBatch);

/// One share partition's state: the last snapshot with every update since replayed onto it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareGroupOffset {
    pub snapshot_epoch: i32,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    pub delivery_complete_count: i32,
    pub state_batches: Vec<PersisterStateBatch>,
    /// When the snapshot was first written; with `write_timestamp` it tells a cold snapshot
    /// (a rewrite of an unchanged state) from a written one.
    pub create_timestamp: i64,
    pub write_timestamp: i64,
}

impl ShareGroupOffset {
    /// Applies an update record's fields (Kafka's `ShareCoordinatorShard.merge`): a start
    /// offset or leader epoch of -1 keeps the current one, the batches merge, the snapshot's
    /// epochs and timestamps stay.
    pub fn merge_update(
        &self,
        start_offset: i64,
        leader_epoch: i32,
        delivery_complete_count: i32,
        batches: &[PersisterStateBatch],
    ) -> ShareGroupOffset {
        let start_offset = if start_offset == -1 {
            self.start_offset
        } else {
            start_offset
        };
        let leader_epoch = if leader_epoch == -1 {
            self.leader_epoch
        } else {
            leader_epoch
        };
        ShareGroupOffset {
            snapshot_epoch: self.snapshot_epoch,
            state_epoch: self.state_epoch,
            leader_epoch,
            start_offset,
            delivery_complete_count,
            state_batches: combine_state_batches(&self.state_batches, batches, start_offset),
            create_timestamp: self.create_timestamp,
            write_timestamp: self.write_timestamp,
        }
    }
}

/// Kafka's `PersisterStateBatchCombiner.combineStateBatches`: `so_far` and `new` merged into
/// sorted, non-overlapping batches, ranges below `start_offset` (unless it is -1) dropped or
/// clipped, neighbours with the same state and count joined. Where batches overlap, the
/// higher delivery count wins, then the higher delivery state.
pub fn combine_state_batches(
    so_far: &[PersisterStateBatch],
    new: &[PersisterStateBatch],
    start_offset: i64,
) -> Vec<PersisterStateBatch> {
    let pruned: Vec<PersisterStateBatch> = so_far
        .iter()
        .chain(new)
        .filter(|b| start_offset == -1 || b.last_offset >= start_offset)
        .map(|b| {
            if start_offset == -1 || b.first_offset >= start_offset {
                *b
            } else {
                PersisterStateBatch {
                    first_offset: start_offset,
                    ..*b
                }
            }
        })
        .collect();
    if pruned.len() <= 1 {
        return pruned;
    }
    sweep_merge(&pruned)
}

/// A batch's precedence: the greatest key wins an overlap.
type Priority = (i16, i8);

/// The sweep over begin and end events (ends first at one offset, so touching ranges of the
/// same state join), keeping a count of each active priority.
fn sweep_merge(batches: &[PersisterStateBatch]) -> Vec<PersisterStateBatch> {
    // (offset, is_begin, priority): `false < true` sorts ends before begins.
    let mut events: Vec<(i64, bool, Priority)> = Vec::with_capacity(batches.len() * 2);
    for b in batches {
        let priority = (b.delivery_count, b.delivery_state);
        events.push((b.first_offset, true, priority));
        events.push((b.last_offset.saturating_add(1), false, priority));
    }
    events.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));

    let mut active: BTreeMap<Priority, usize> = BTreeMap::new();
    let mut out: Vec<PersisterStateBatch> = Vec::new();
    let mut open: Option<(i64, Priority)> = None;
    let mut i = 0;
    while i < events.len() {
        let offset = events[i].0;
        if let Some((from, winner)) = open {
            if offset > from {
                append_coalesced(&mut out, from, offset - 1, winner);
            }
        }
        while i < events.len() && events[i].0 == offset {
            let (_, begin, priority) = events[i];
            i += 1;
            if begin {
                *active.entry(priority).or_insert(0) += 1;
            } else if let Some(n) = active.get_mut(&priority) {
                *n -= 1;
                if *n == 0 {
                    active.remove(&priority);
                }
            }
        }
        open = active.keys().next_back().map(|p| (offset, *p));
    }
    out
}

fn append_coalesced(out: &mut Vec<PersisterStateBatch>, from: i64, to: i64, winner: Priority) {
    let (delivery_count, delivery_state) = winner;
    if let Some(tail) = out.last_mut() {
        if tail.last_offset + 1 == from
            && tail.delivery_state == delivery_state
            && tail.delivery_count == delivery_count
        {
            tail.last_offset = to;
            return;
        }
    }
    out.push(PersisterStateBatch {
        first_offset: from,
        last_offset: to,
        delivery_state,
        delivery_count,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(first: i64, last: i64, state: i8, count: i16) -> PersisterStateBatch {
        PersisterStateBatch {
            first_offset: first,
            last_offset: last,
            delivery_state: state,
            delivery_count: count,
        }
    }

    #[test]
    fn overlaps_take_the_higher_count_then_the_higher_state() {
        // Cases of Kafka's PersisterStateBatchCombinerTest.
        assert_eq!(
            combine_state_batches(&[b(100, 110, 0, 1)], &[b(105, 108, 2, 2)], -1),
            vec![b(100, 104, 0, 1), b(105, 108, 2, 2), b(109, 110, 0, 1)]
        );
        assert_eq!(
            combine_state_batches(&[b(100, 110, 2, 1)], &[b(100, 110, 0, 1)], -1),
            vec![b(100, 110, 2, 1)]
        );
        // A lower count never overrides a higher one, whichever came first.
        assert_eq!(
            combine_state_batches(&[b(100, 110, 1, 3)], &[b(100, 105, 2, 2)], -1),
            vec![b(100, 110, 1, 3)]
        );
    }

    #[test]
    fn touching_ranges_of_one_state_join_and_the_start_offset_clips() {
        assert_eq!(
            combine_state_batches(&[b(100, 104, 0, 1)], &[b(105, 110, 0, 1)], -1),
            vec![b(100, 110, 0, 1)]
        );
        assert_eq!(
            combine_state_batches(
                &[b(100, 104, 0, 1), b(105, 109, 2, 1)],
                &[b(110, 120, 0, 2)],
                107
            ),
            vec![b(107, 109, 2, 1), b(110, 120, 0, 2)]
        );
        assert!(combine_state_batches(&[b(1, 5, 0, 1)], &[], 6).is_empty());
        // Gaps stay gaps.
        assert_eq!(
            combine_state_batches(&[b(1, 5, 0, 1)], &[b(8, 9, 0, 1)], -1),
            vec![b(1, 5, 0, 1), b(8, 9, 0, 1)]
        );
    }

    #[test]
    fn an_update_keeps_what_it_leaves_at_minus_one() {
        let base = ShareGroupOffset {
            snapshot_epoch: 3,
            state_epoch: 1,
            leader_epoch: 5,
            start_offset: 10,
            delivery_complete_count: 0,
            state_batches: vec![b(10, 20, 0, 1)],
            create_timestamp: 7,
            write_timestamp: 8,
        };
        let merged = base.merge_update(-1, -1, 4, &[b(15, 16, 2, 1)]);
        assert_eq!(
            (
                merged.start_offset,
                merged.leader_epoch,
                merged.snapshot_epoch
            ),
            (10, 5, 3)
        );
        assert_eq!(merged.delivery_complete_count, 4);
        assert_eq!(
            merged.state_batches,
            vec![b(10, 14, 0, 1), b(15, 16, 2, 1), b(17, 20, 0, 1)]
        );
        let moved = base.merge_update(18, 6, 0, &[]);
        assert_eq!(moved.state_batches, vec![b(18, 20, 0, 1)]);
        assert_eq!(moved.leader_epoch, 6);
    }
}
