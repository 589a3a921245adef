//! The share partition's rules, one test each, and a property test against a plain model.

use super::*;
use kraftd_protocol::messages::read_share_group_state_response::StateBatch as ReadStateBatch;
use proptest::prelude::*;

const TOPIC: Uuid = Uuid([7; 16]);

pub(super) fn config() -> SharePartitionConfig {
    SharePartitionConfig {
        max_in_flight_records: 100,
        max_delivery_count: 3,
        record_lock_duration_ms: 1_000,
        renew_acknowledge_enabled: true,
        dlq_enabled: false,
    }
}

fn loaded(start_offset: i64, batches: Vec<ReadStateBatch>) -> SharePartition {
    let mut sp = SharePartition::new("g".into(), TOPIC, 0, 5);
    let read = sp.begin_initialize().expect("a read");
    assert_eq!(read.topics[0].partitions[0].leader_epoch, 5);
    let answer = PartitionResult {
        partition: 0,
        start_offset,
        state_epoch: 2,
        state_batches: batches,
        ..Default::default()
    };
    sp.complete_initialize(Ok(&answer), || 0).expect("loads");
    sp
}

pub(super) fn fresh() -> SharePartition {
    loaded(0, Vec::new())
}

pub(super) fn batch(base: i64, last: i64) -> FetchedBatch {
    FetchedBatch {
        base_offset: base,
        last_offset: last,
        producer_id: -1,
        is_transactional: false,
        is_abort_marker: false,
    }
}

fn acquire(
    sp: &mut SharePartition,
    member: &str,
    max: i32,
    batches: &[FetchedBatch],
    now: i64,
) -> Vec<(i64, i64, i16)> {
    let fetch_offset = sp.next_fetch_offset();
    sp.acquire(
        member,
        &config(),
        ShareAcquireMode::BatchOptimized,
        max,
        fetch_offset,
        batches,
        None,
        now,
    )
    .acquired_records
    .iter()
    .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
    .collect()
}

pub(super) fn ack(first: i64, last: i64, types: &[i8]) -> AcknowledgementBatch {
    AcknowledgementBatch {
        first_offset: first,
        last_offset: last,
        acknowledge_types: types.to_vec(),
    }
}

pub(super) fn commit(
    sp: &mut SharePartition,
    w: Option<StateWrite>,
) -> WriteShareGroupStateRequest {
    let w = w.expect("a write");
    let request = w.request.clone();
    sp.complete_write(w.write_id, Ok(()));
    request
}

#[test]
fn uninitialized_state_starts_at_the_reset_offset() {
    let mut sp = SharePartition::new("g".into(), TOPIC, 0, 1);
    sp.begin_initialize().expect("a read");
    assert!(sp.begin_initialize().is_none(), "one load at a time");
    let answer = PartitionResult {
        start_offset: UNINITIALIZED_START_OFFSET,
        ..Default::default()
    };
    sp.complete_initialize(Ok(&answer), || 42).expect("loads");
    assert_eq!(sp.start_offset(), 42);
    assert_eq!(sp.next_fetch_offset(), 42);
}

#[test]
fn a_persister_error_fails_the_load() {
    let mut sp = SharePartition::new("g".into(), TOPIC, 0, 1);
    sp.begin_initialize().expect("a read");
    let answer = PartitionResult {
        error_code: ErrorCode::FencedStateEpoch.code(),
        ..Default::default()
    };
    assert_eq!(
        sp.complete_initialize(Ok(&answer), || 0),
        Err(ErrorCode::FencedStateEpoch)
    );
    assert_eq!(
        sp.state(),
        SharePartitionState::Failed(ErrorCode::FencedStateEpoch)
    );
    assert_eq!(
        sp.acknowledge("m", &config(), &[ack(0, 0, &[1])], 0),
        Err(ErrorCode::FencedStateEpoch)
    );
}

#[test]
fn loaded_state_keeps_gaps_available_and_moves_over_terminal_records() {
    let sb = |f, l, s, c| ReadStateBatch {
        first_offset: f,
        last_offset: l,
        delivery_state: s,
        delivery_count: c,
        ..Default::default()
    };
    // 10-11 acknowledged, 12 archived, 13-14 never delivered (a gap), 15-16 available twice.
    let sp = loaded(
        10,
        vec![sb(10, 11, 2, 1), sb(12, 12, 4, 3), sb(15, 16, 0, 2)],
    );
    assert_eq!(sp.start_offset(), 13);
    assert_eq!(sp.end_offset(), 17);
    assert_eq!(sp.record_state(13), Some((RecordState::Available, 0)));
    assert_eq!(sp.record_state(15), Some((RecordState::Available, 2)));
    assert_eq!(sp.next_fetch_offset(), 13);
    assert_eq!(sp.state_epoch(), 2);
}

#[test]
fn a_corrupt_loaded_state_fails_the_load() {
    let mut sp = SharePartition::new("g".into(), TOPIC, 0, 1);
    sp.begin_initialize().expect("a read");
    let bad = ReadStateBatch {
        first_offset: 3,
        last_offset: 4,
        delivery_state: 2,
        delivery_count: 1,
        ..Default::default()
    };
    let answer = PartitionResult {
        start_offset: 5,
        state_batches: vec![bad],
        ..Default::default()
    };
    assert!(sp.complete_initialize(Ok(&answer), || 0).is_err());
}

#[test]
fn acquisition_takes_whole_batches_and_counts_deliveries() {
    let mut sp = fresh();
    // Max records 3 is soft: the whole first batch (5 records) goes, the second does not.
    let got = acquire(&mut sp, "a", 3, &[batch(0, 4), batch(5, 9)], 0);
    assert_eq!(got, vec![(0, 4, 1)]);
    assert_eq!(sp.record_owner(2), Some("a"));
    assert_eq!(sp.next_fetch_offset(), 5);
    // Another member gets the rest; what "a" holds is not acquirable.
    let got = acquire(&mut sp, "b", 100, &[batch(5, 9)], 0);
    assert_eq!(got, vec![(5, 9, 1)]);
    assert!(acquire(&mut sp, "b", 100, &[batch(0, 4)], 0).is_empty());
}

#[test]
fn record_limit_mode_stops_at_max_records() {
    let mut sp = fresh();
    let r = sp.acquire(
        "a",
        &config(),
        ShareAcquireMode::RecordLimit,
        3,
        0,
        &[batch(0, 9)],
        None,
        0,
    );
    assert_eq!(r.count, 3);
    assert_eq!(sp.end_offset(), 3);
    assert_eq!(sp.next_fetch_offset(), 3);
}

#[test]
fn the_in_flight_limit_caps_new_records() {
    let mut sp = fresh();
    let cfg = SharePartitionConfig {
        max_in_flight_records: 4,
        ..config()
    };
    let r = sp.acquire(
        "a",
        &cfg,
        ShareAcquireMode::RecordLimit,
        100,
        0,
        &[batch(0, 9)],
        None,
        0,
    );
    assert_eq!(r.count, 4);
    assert!(!sp.can_acquire_records(&cfg));
    let r = sp.acquire(
        "a",
        &cfg,
        ShareAcquireMode::RecordLimit,
        100,
        4,
        &[batch(4, 9)],
        None,
        0,
    );
    assert_eq!(
        r.count, 0,
        "at the in-flight limit nothing past the end is acquired"
    );
    // A released record inside the window is still acquirable at the limit.
    let w = sp
        .acknowledge("a", &cfg, &[ack(1, 1, &[2])], 0)
        .expect("ack");
    commit(&mut sp, w);
    assert!(sp.can_acquire_records(&cfg));
    let r = sp.acquire(
        "b",
        &cfg,
        ShareAcquireMode::RecordLimit,
        100,
        1,
        &[batch(0, 9)],
        None,
        0,
    );
    assert_eq!(r.count, 1);
    assert_eq!(sp.record_owner(1), Some("b"));
}

#[test]
fn accept_and_reject_move_the_start_offset_after_the_write() {
    let mut sp = fresh();
    acquire(&mut sp, "a", 100, &[batch(0, 4)], 0);
    let w = sp
        .acknowledge("a", &config(), &[ack(0, 1, &[1]), ack(2, 2, &[3])], 0)
        .expect("ack");
    assert_eq!(
        sp.start_offset(),
        0,
        "nothing moves before the write is answered"
    );
    let request = commit(&mut sp, w);
    let p = &request.topics[0].partitions[0];
    assert_eq!(p.start_offset, 3);
    assert_eq!(p.state_batches.len(), 2);
    assert_eq!(
        (
            p.state_batches[0].first_offset,
            p.state_batches[0].last_offset,
            p.state_batches[0].delivery_state
        ),
        (0, 1, 2)
    );
    assert_eq!(
        (
            p.state_batches[1].first_offset,
            p.state_batches[1].delivery_state
        ),
        (2, 4)
    );
    assert_eq!(sp.start_offset(), 3);
}

#[test]
fn a_failed_write_rolls_the_acknowledgement_back() {
    let mut sp = fresh();
    acquire(&mut sp, "a", 100, &[batch(0, 1)], 0);
    let w = sp
        .acknowledge("a", &config(), &[ack(0, 1, &[1])], 0)
        .expect("ack")
        .expect("a write");
    // In transition: a second acknowledgement is refused.
    assert_eq!(
        sp.acknowledge("a", &config(), &[ack(0, 0, &[1])], 0),
        Err(ErrorCode::InvalidRecordState)
    );
    sp.complete_write(w.write_id, Err(ErrorCode::CoordinatorNotAvailable));
    assert_eq!(sp.record_state(0), Some((RecordState::Acquired, 1)));
    assert_eq!(sp.record_owner(0), Some("a"));
    assert_eq!(sp.start_offset(), 0);
}

#[test]
fn release_makes_records_available_with_their_delivery_count() {
    let mut sp = fresh();
    acquire(&mut sp, "a", 100, &[batch(0, 2)], 0);
    let w = sp
        .acknowledge("a", &config(), &[ack(0, 2, &[1, 2, 1])], 0)
        .expect("ack");
    commit(&mut sp, w);
    assert_eq!(sp.start_offset(), 1);
    assert_eq!(sp.next_fetch_offset(), 1);
    let got = acquire(&mut sp, "b", 100, &[batch(0, 2)], 0);
    assert_eq!(got, vec![(1, 1, 2)]);
}

#[test]
fn the_delivery_count_limit_archives_records() {
    let mut sp = fresh();
    for round in 1..=3 {
        let got = acquire(&mut sp, "a", 100, &[batch(0, 0)], 0);
        assert_eq!(got, vec![(0, 0, round)]);
        let w = sp
            .acknowledge("a", &config(), &[ack(0, 0, &[2])], 0)
            .expect("ack");
        commit(&mut sp, w);
    }
    // Released at the third delivery (the limit): archived, and the SPSO moves on.
    assert_eq!(sp.start_offset(), 1);
    assert!(acquire(&mut sp, "a", 100, &[batch(0, 0)], 0).is_empty());
}

#[test]
fn an_expired_lock_makes_records_available_again() {
    let mut sp = fresh();
    acquire(&mut sp, "a", 100, &[batch(0, 1)], 10);
    assert_eq!(sp.next_lock_expiry_ms(), Some(1_010));
    assert!(sp.expire_acquisition_locks(&config(), 1_009).is_none());
    let w = sp
        .expire_acquisition_locks(&config(), 1_010)
        .expect("a write");
    assert_eq!(
        w.request.topics[0].partitions[0].state_batches[0].delivery_state,
        0
    );
    assert_eq!(sp.record_state(0), Some((RecordState::Available, 1)));
    // The old owner's acknowledgement now fails; another member gets the records.
    assert_eq!(
        sp.acknowledge("a", &config(), &[ack(0, 1, &[1])], 0),
        Err(ErrorCode::InvalidRecordState)
    );
    assert_eq!(
        acquire(&mut sp, "b", 100, &[batch(0, 1)], 2_000),
        vec![(0, 1, 2)]
    );
}

#[test]
fn an_expired_lock_at_the_delivery_limit_archives() {
    let mut sp = fresh();
    for now in [0, 2_000, 4_000] {
        acquire(&mut sp, "a", 100, &[batch(0, 0)], now);
        sp.expire_acquisition_locks(&config(), now + 1_000)
            .expect("a write");
    }
    assert_eq!(sp.start_offset(), 1);
}

#[test]
fn renew_extends_the_lock_without_a_write() {
    let mut sp = fresh();
    acquire(&mut sp, "a", 100, &[batch(0, 0)], 0);
    assert_eq!(
        sp.acknowledge("a", &config(), &[ack(0, 0, &[4])], 900),
        Ok(None)
    );
    assert!(sp.expire_acquisition_locks(&config(), 1_000).is_none());
    assert_eq!(sp.next_lock_expiry_ms(), Some(1_900));
    let off = SharePartitionConfig {
        renew_acknowledge_enabled: false,
        ..config()
    };
    assert_eq!(
        sp.acknowledge("a", &off, &[ack(0, 0, &[4])], 900),
        Err(ErrorCode::InvalidRecordState)
    );
}

#[test]
fn acknowledgements_are_checked_before_anything_changes() {
    let mut sp = fresh();
    acquire(&mut sp, "a", 100, &[batch(0, 4)], 0);
    let cfg = config();
    // Not the owner.
    assert_eq!(
        sp.acknowledge("b", &cfg, &[ack(0, 0, &[1])], 0),
        Err(ErrorCode::InvalidRecordState)
    );
    // Past the in-flight records.
    assert_eq!(
        sp.acknowledge("a", &cfg, &[ack(3, 7, &[1])], 0),
        Err(ErrorCode::InvalidRequest)
    );
    // Malformed: inverted range, wrong type count, unknown type.
    assert_eq!(
        sp.acknowledge("a", &cfg, &[ack(2, 1, &[1])], 0),
        Err(ErrorCode::InvalidRequest)
    );
    assert_eq!(
        sp.acknowledge("a", &cfg, &[ack(0, 2, &[1, 1])], 0),
        Err(ErrorCode::InvalidRequest)
    );
    assert_eq!(
        sp.acknowledge("a", &cfg, &[ack(0, 0, &[9])], 0),
        Err(ErrorCode::InvalidRequest)
    );
    // Overlapping batches: out of order is malformed, sharing one offset finds it in transition.
    assert_eq!(
        sp.acknowledge("a", &cfg, &[ack(1, 2, &[1]), ack(0, 0, &[1])], 0),
        Err(ErrorCode::InvalidRequest)
    );
    assert_eq!(
        sp.acknowledge("a", &cfg, &[ack(0, 1, &[1]), ack(1, 2, &[1])], 0),
        Err(ErrorCode::InvalidRecordState)
    );
    for offset in 0..5 {
        assert_eq!(sp.record_state(offset), Some((RecordState::Acquired, 1)));
    }
}

#[test]
fn a_refused_acknowledgement_leaves_every_record_as_it_was() {
    let mut sp = fresh();
    acquire(&mut sp, "a", 100, &[batch(0, 4)], 0);
    let refused = sp.acknowledge(
        "a",
        &config(),
        &[ack(0, 1, &[1]), ack(2, 2, &[1]), ack(4, 9, &[1])],
        0,
    );
    assert_eq!(refused, Err(ErrorCode::InvalidRequest));
    for offset in 0..5 {
        assert_eq!(sp.record_state(offset), Some((RecordState::Acquired, 1)));
    }
}

#[test]
fn acknowledging_below_the_start_offset_is_ignored() {
    let mut sp = fresh();
    acquire(&mut sp, "a", 100, &[batch(0, 1)], 0);
    let w = sp
        .acknowledge("a", &config(), &[ack(0, 1, &[1])], 0)
        .expect("ack");
    commit(&mut sp, w);
    assert_eq!(
        sp.acknowledge("a", &config(), &[ack(0, 1, &[1])], 0),
        Ok(None)
    );
}

#[test]
fn a_closed_session_releases_the_members_records() {
    let mut sp = fresh();
    acquire(&mut sp, "a", 100, &[batch(0, 1)], 0);
    acquire(&mut sp, "b", 100, &[batch(2, 3)], 0);
    let w = sp.release_acquired_records("a", &config());
    let request = commit(&mut sp, w);
    assert_eq!(
        request.topics[0].partitions[0].state_batches[0].last_offset,
        1
    );
    assert_eq!(sp.record_state(0), Some((RecordState::Available, 1)));
    assert_eq!(sp.record_owner(2), Some("b"));
    assert!(sp.release_acquired_records("a", &config()).is_none());
}

#[test]
fn read_committed_archives_aborted_transactions() {
    let mut sp = fresh();
    let txn = |base, last, marker| FetchedBatch {
        base_offset: base,
        last_offset: last,
        producer_id: 9,
        is_transactional: true,
        is_abort_marker: marker,
    };
    // 0-1 plain, 2-4 an aborted transaction of producer 9, 5 its ABORT marker, 6-7 plain.
    let batches = [batch(0, 1), txn(2, 4, false), txn(5, 5, true), batch(6, 7)];
    let r = sp.acquire(
        "a",
        &config(),
        ShareAcquireMode::BatchOptimized,
        100,
        0,
        &batches,
        Some(&[(9, 2)]),
        0,
    );
    let got: Vec<_> = r
        .acquired_records
        .iter()
        .map(|a| (a.first_offset, a.last_offset))
        .collect();
    assert_eq!(got, vec![(0, 1), (5, 7)]);
    assert_eq!(sp.record_state(3), Some((RecordState::Archived, 1)));
    // The client acknowledges the marker as a gap; everything settles.
    let w = sp
        .acknowledge("a", &config(), &[ack(0, 1, &[1]), ack(5, 7, &[0, 1, 1])], 0)
        .expect("ack");
    commit(&mut sp, w);
    assert_eq!(sp.start_offset(), 8);
}

#[test]
fn offsets_missing_from_the_log_are_archived() {
    let mut sp = fresh();
    // A read from 0 whose first batch starts at 3 (compacted), with a hole between batches.
    let got = acquire(&mut sp, "a", 100, &[batch(3, 4), batch(7, 8)], 0);
    assert_eq!(got, vec![(3, 4, 1), (7, 8, 1)]);
    assert_eq!(sp.record_state(5), Some((RecordState::Archived, 0)));
    assert_eq!(sp.start_offset(), 3);
}

#[test]
fn the_log_start_offset_drags_the_start_offset() {
    let mut sp = fresh();
    acquire(&mut sp, "a", 100, &[batch(0, 3)], 0);
    sp.expire_acquisition_locks(&config(), 5_000)
        .expect("a write");
    sp.update_log_start_offset(2);
    assert_eq!(sp.start_offset(), 2);
    let mut empty = fresh();
    empty.update_log_start_offset(50);
    assert_eq!(empty.next_fetch_offset(), 50);
}

#[test]
fn a_fenced_partition_acquires_nothing() {
    let mut sp = fresh();
    sp.mark_fenced();
    assert!(acquire(&mut sp, "a", 100, &[batch(0, 3)], 0).is_empty());
    assert_eq!(
        sp.acknowledge("a", &config(), &[ack(0, 0, &[1])], 0),
        Err(ErrorCode::FencedStateEpoch)
    );
}

/// One step of the property test.
#[derive(Debug, Clone)]
enum Op {
    Acquire {
        member: u8,
        max: i32,
        len: i64,
    },
    Ack {
        member: u8,
        offset: i64,
        ack_type: i8,
    },
    Expire {
        advance: i64,
    },
    /// Answers one of the unanswered writes, in any order.
    Complete {
        ok: bool,
        pick: usize,
    },
    Release {
        member: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..3, 1i32..8, 1i64..6).prop_map(|(member, max, len)| Op::Acquire { member, max, len }),
        (0u8..3, 0i64..40, 0i8..5).prop_map(|(member, offset, ack_type)| Op::Ack {
            member,
            offset,
            ack_type
        }),
        (0i64..1_500).prop_map(|advance| Op::Expire { advance }),
        (any::<bool>(), 0usize..8).prop_map(|(ok, pick)| Op::Complete { ok, pick }),
        (0u8..3).prop_map(|member| Op::Release { member }),
    ]
}

/// An unanswered write of the property test: its id, start offset and acknowledgements.
type PendingWrite = (u64, i64, Vec<(i64, i8)>);

proptest! {
    /// Against a log of 40 single-record batches: no record is ever held by two members,
    /// nothing accepted is delivered again, no delivery count passes the limit, and the SPSO
    /// never passes a record that is not acknowledged or archived.
    #[test]
    fn share_partition_keeps_its_invariants(ops in prop::collection::vec(op(), 1..80)) {
        let cfg = SharePartitionConfig { max_in_flight_records: 12, ..config() };
        let mut sp = fresh();
        let mut now = 0;
        let mut accepted = std::collections::BTreeSet::new();
        // Each unanswered write: its id, the start offset it carries, its acknowledgements.
        let mut pending: Vec<PendingWrite> = Vec::new();
        // The share coordinator's start offset: the last answered write's.
        let mut persisted_start = 0;
        for op in ops {
            match op {
                Op::Acquire { member, max, len } => {
                    let from = sp.next_fetch_offset();
                    let batches: Vec<_> = (from..(from + len).min(40)).map(|o| batch(o, o)).collect();
                    let r = sp.acquire(&member.to_string(), &cfg, ShareAcquireMode::BatchOptimized, max, from, &batches, None, now);
                    for a in r.acquired_records {
                        prop_assert!(a.delivery_count <= cfg.max_delivery_count);
                        for o in a.first_offset..=a.last_offset {
                            prop_assert!(!accepted.contains(&o), "offset {} redelivered after accept", o);
                        }
                    }
                }
                Op::Ack { member, offset, ack_type } => {
                    let owner = sp.record_owner(offset).map(str::to_owned);
                    let result = sp.acknowledge(&member.to_string(), &cfg, &[ack(offset, offset, &[ack_type])], now);
                    if offset >= sp.start_offset() && owner.as_deref() != Some(member.to_string().as_str()) {
                        prop_assert!(result.is_err());
                    }
                    if let Ok(Some(w)) = result {
                        let start = w.request.topics[0].partitions[0].start_offset;
                        pending.push((w.write_id, start, vec![(offset, ack_type)]));
                    }
                }
                Op::Expire { advance } => {
                    now += advance;
                    if let Some(w) = sp.expire_acquisition_locks(&cfg, now) {
                        persisted_start = w.request.topics[0].partitions[0].start_offset;
                        sp.complete_write(w.write_id, Ok(()));
                    }
                }
                Op::Complete { ok, pick } => {
                    if !pending.is_empty() {
                        let (id, start, acks) = pending.remove(pick % pending.len());
                        let result = if ok { Ok(()) } else { Err(ErrorCode::CoordinatorNotAvailable) };
                        sp.complete_write(id, result);
                        if ok {
                            persisted_start = start;
                            accepted.extend(acks.iter().filter(|(_, t)| *t == 1).map(|(o, _)| *o));
                        }
                    }
                }
                Op::Release { member } => {
                    if let Some(w) = sp.release_acquired_records(&member.to_string(), &cfg) {
                        let start = w.request.topics[0].partitions[0].start_offset;
                        pending.push((w.write_id, start, Vec::new()));
                    }
                }
            }
            prop_assert!(sp.in_flight_records() <= cfg.max_in_flight_records + 6);
            for o in sp.start_offset()..sp.end_offset() {
                let (state, count) = sp.record_state(o).expect("in flight");
                prop_assert!(count <= cfg.max_delivery_count);
                prop_assert_eq!(state == RecordState::Acquired, sp.record_owner(o).is_some());
                if accepted.contains(&o) {
                    prop_assert_eq!(state, RecordState::Acknowledged);
                }
            }
            // What the share coordinator holds never passes a record still in play: after a
            // failover nothing unsettled would be lost.
            for o in sp.start_offset()..persisted_start {
                let (state, _) = sp.record_state(o).expect("in flight");
                prop_assert!(state.is_terminal(), "persisted start {} passes live offset {}", persisted_start, o);
            }
            // The SPSO stops only at a live record or one whose change is not yet persisted.
            if let Some((state, _)) = sp.record_state(sp.start_offset()) {
                prop_assert!(!state.is_terminal() || !pending.is_empty());
            }
        }
    }
}

#[test]
fn kafka_apis_acknowledgement_batch_checks() {
    let ok = [ack(0, 1, &[1]), ack(1, 3, &[1, 2, 3])];
    assert_eq!(validate_acknowledgement_batches(&ok, true, false), Ok(()));
    assert_eq!(
        validate_acknowledgement_batches(&[ack(2, 3, &[1]), ack(0, 1, &[1])], true, false),
        Err(ErrorCode::InvalidRequest)
    );
    assert_eq!(
        validate_acknowledgement_batches(&[ack(0, 0, &[])], true, false),
        Err(ErrorCode::InvalidRequest)
    );
    assert_eq!(
        validate_acknowledgement_batches(&[ack(0, 0, &[4])], false, true),
        Err(ErrorCode::InvalidRequest)
    );
    assert_eq!(
        validate_acknowledgement_batches(&[ack(0, 0, &[4])], true, false),
        Err(ErrorCode::InvalidRequest)
    );
    assert_eq!(
        validate_acknowledgement_batches(&[ack(0, 0, &[4])], true, true),
        Ok(())
    );
}

#[test]
fn records_delivered_often_are_delivered_in_smaller_groups() {
    let cfg = SharePartitionConfig {
        max_delivery_count: 5,
        ..config()
    };
    let mut sp = fresh();
    let whole = [batch(0, 7)];
    let take = |sp: &mut SharePartition, member: &str| -> Vec<(i64, i64, i16)> {
        let from = sp.next_fetch_offset();
        sp.acquire(
            member,
            &cfg,
            ShareAcquireMode::BatchOptimized,
            100,
            from,
            &whole,
            None,
            0,
        )
        .acquired_records
        .iter()
        .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
        .collect()
    };
    let release_all = |sp: &mut SharePartition, member: &str, first: i64, last: i64| {
        let w = sp
            .acknowledge(member, &cfg, &[ack(first, last, &[2])], 0)
            .expect("release");
        commit(sp, w);
    };
    for round in 1..=3 {
        assert_eq!(take(&mut sp, "a"), vec![(0, 7, round)]);
        release_all(&mut sp, "a", 0, 7);
    }
    // At the throttle limit (3 of 5): half the batch at a time.
    assert_eq!(take(&mut sp, "a"), vec![(0, 3, 4)]);
    assert_eq!(take(&mut sp, "b"), vec![(4, 7, 4)]);
    release_all(&mut sp, "a", 0, 3);
    release_all(&mut sp, "b", 4, 7);
    // The last delivery goes alone.
    assert_eq!(take(&mut sp, "a"), vec![(0, 0, 5)]);
    assert_eq!(take(&mut sp, "b"), vec![(1, 1, 5)]);
    assert_eq!(throttle_records_delivery_limit(5), 3);
    assert_eq!(throttle_records_delivery_limit(2), 2);
    assert_eq!(throttle_records_delivery_limit(10), 5);
}

#[test]
fn a_write_never_moves_the_start_offset_over_another_unanswered_write() {
    let mut sp = fresh();
    acquire(&mut sp, "a", 100, &[batch(0, 1)], 0);
    let first = sp
        .acknowledge("a", &config(), &[ack(0, 0, &[1])], 0)
        .expect("ack")
        .expect("a write");
    let second = sp
        .acknowledge("a", &config(), &[ack(1, 1, &[1])], 0)
        .expect("ack")
        .expect("a write");
    assert_eq!(first.request.topics[0].partitions[0].start_offset, 1);
    // The second must not claim offset 0 settled: the first may still fail.
    assert_eq!(second.request.topics[0].partitions[0].start_offset, 0);
    sp.complete_write(first.write_id, Err(ErrorCode::CoordinatorNotAvailable));
    sp.complete_write(second.write_id, Ok(()));
    assert_eq!(sp.start_offset(), 0);
    assert_eq!(sp.record_state(0), Some((RecordState::Acquired, 1)));
    assert_eq!(sp.record_state(1), Some((RecordState::Acknowledged, 1)));
}

/// Kafka's `createBatches`: a long acquired range is cut at log batch boundaries once
/// `batch_size` records are reached, never inside a batch; short ranges stay whole.
#[test]
fn acquired_ranges_are_cut_at_batch_boundaries_by_batch_size() {
    let range = |first: i64, last: i64| AcquiredRecords {
        first_offset: first,
        last_offset: last,
        delivery_count: 1,
        ..Default::default()
    };
    let cut = |r: Vec<AcquiredRecords>, size: i32| -> Vec<(i64, i64)> {
        split_by_batch_size(
            r,
            &[batch(0, 4), batch(5, 9), batch(10, 14), batch(15, 29)],
            size,
        )
        .iter()
        .map(|a| (a.first_offset, a.last_offset))
        .collect()
    };
    assert_eq!(cut(vec![range(0, 29)], 10), vec![(0, 9), (10, 29)]);
    assert_eq!(
        cut(vec![range(0, 29)], 5),
        vec![(0, 4), (5, 9), (10, 14), (15, 29)]
    );
    // A batch longer than the size is not cut inside.
    assert_eq!(
        cut(vec![range(0, 29)], 3),
        vec![(0, 4), (5, 9), (10, 14), (15, 29)]
    );
    assert_eq!(cut(vec![range(0, 29)], 30), vec![(0, 29)]);
    assert_eq!(cut(vec![range(0, 29)], 0), vec![(0, 29)]);
    // A range starting inside a batch is cut at the next boundaries.
    assert_eq!(cut(vec![range(7, 29)], 5), vec![(7, 14), (15, 29)]);
}

fn dlq_config() -> SharePartitionConfig {
    SharePartitionConfig {
        dlq_enabled: true,
        ..config()
    }
}

fn states(w: &WriteShareGroupStateRequest) -> Vec<(i64, i64, i8, i16)> {
    w.topics[0].partitions[0]
        .state_batches
        .iter()
        .map(|b| {
            (
                b.first_offset,
                b.last_offset,
                b.delivery_state,
                b.delivery_count,
            )
        })
        .collect()
}

#[test]
fn with_a_dlq_a_rejected_record_is_archiving_until_the_dlq_writer_is_done() {
    let cfg = dlq_config();
    let mut sp = fresh();
    acquire(&mut sp, "a", 10, &[batch(0, 2)], 0);
    let w = sp.acknowledge("a", &cfg, &[ack(0, 2, &[1, 3, 3])], 10);
    // Phase 1: ARCHIVING (3) is persisted; nothing goes to the DLQ before it is.
    let w = w.unwrap().expect("a write");
    assert_eq!(states(&w.request), vec![(0, 0, 2, 1), (1, 2, 3, 1)]);
    assert!(sp.take_dlq_batches(&cfg).is_empty(), "not persisted yet");
    sp.complete_write(w.write_id, Ok(()));
    assert_eq!(sp.record_state(1), Some((RecordState::Archiving, 1)));
    // ARCHIVING is not terminal: the SPSO waits, and the records are not acquirable.
    assert_eq!(sp.start_offset(), 1);
    assert_eq!(sp.next_fetch_offset(), 3);
    let batches = sp.take_dlq_batches(&cfg);
    assert_eq!(
        batches,
        vec![DlqBatch {
            first_offset: 1,
            last_offset: 2,
            delivery_count: 1,
            cause: DlqCause::ClientReject,
        }]
    );
    assert!(sp.take_dlq_batches(&cfg).is_empty(), "handed over once");
    // Phase 2: ARCHIVED (4) is persisted and the SPSO moves over it.
    let w = sp.complete_dlq(&batches[0]).expect("a write");
    assert_eq!(states(&w.request), vec![(1, 2, 4, 1)]);
    assert_eq!(w.request.topics[0].partitions[0].start_offset, 3);
    assert_eq!(sp.start_offset(), 3);
    sp.complete_write(w.write_id, Ok(()));
    assert!(sp.complete_dlq(&batches[0]).is_none());
}

#[test]
fn with_a_dlq_the_delivery_count_limit_sends_records_there_on_release_and_expiry() {
    let cfg = dlq_config();
    let mut sp = fresh();
    for round in 1..=3 {
        let now = round * 10_000;
        let from = sp.next_fetch_offset();
        let got = sp.acquire(
            "a",
            &cfg,
            ShareAcquireMode::BatchOptimized,
            10,
            from,
            &[batch(0, 0)],
            None,
            now,
        );
        assert_eq!(got.count, 1, "round {round}");
        if round < 3 {
            let w = sp.release_acquired_records("a", &cfg);
            commit(&mut sp, w);
        }
    }
    // The third delivery's lock expires: the limit (3) is reached.
    let w = sp.expire_acquisition_locks(&cfg, 100_000).expect("a write");
    assert_eq!(states(&w.request), vec![(0, 0, 3, 3)]);
    sp.complete_write(w.write_id, Ok(()));
    assert_eq!(
        sp.take_dlq_batches(&cfg),
        vec![DlqBatch {
            first_offset: 0,
            last_offset: 0,
            delivery_count: 3,
            cause: DlqCause::DeliveryCountExceeded,
        }]
    );
    // Without a DLQ the same records are archived at once.
    let mut plain = fresh();
    acquire(&mut plain, "a", 10, &[batch(0, 0)], 0);
    let w = plain.acknowledge("a", &config(), &[ack(0, 0, &[3])], 1);
    assert_eq!(states(&w.unwrap().unwrap().request), vec![(0, 0, 4, 1)]);
}

#[test]
fn a_failed_archiving_write_rolls_back_and_sends_nothing_to_the_dlq() {
    let cfg = dlq_config();
    let mut sp = fresh();
    acquire(&mut sp, "a", 10, &[batch(0, 0)], 0);
    let w = sp
        .acknowledge("a", &cfg, &[ack(0, 0, &[3])], 1)
        .unwrap()
        .unwrap();
    sp.complete_write(w.write_id, Err(ErrorCode::UnknownServerError));
    assert_eq!(sp.record_state(0), Some((RecordState::Acquired, 1)));
    assert!(sp.take_dlq_batches(&cfg).is_empty());
}

#[test]
fn records_loaded_in_archiving_resume_their_way_to_the_dlq() {
    let sb = |f, l, s, c| ReadStateBatch {
        first_offset: f,
        last_offset: l,
        delivery_state: s,
        delivery_count: c,
        ..Default::default()
    };
    let mut sp = loaded(5, vec![sb(5, 5, 3, 1), sb(6, 7, 3, 3), sb(8, 8, 2, 1)]);
    assert_eq!(sp.start_offset(), 5);
    // Resumed whatever the group's configuration is now; the cause from the count.
    let batches = sp.take_dlq_batches(&config());
    assert_eq!(
        batches,
        vec![
            DlqBatch {
                first_offset: 5,
                last_offset: 5,
                delivery_count: 1,
                cause: DlqCause::ClientReject,
            },
            DlqBatch {
                first_offset: 6,
                last_offset: 7,
                delivery_count: 3,
                cause: DlqCause::DeliveryCountExceeded,
            },
        ]
    );
    sp.complete_dlq(&batches[1]);
    assert_eq!(sp.start_offset(), 5);
    sp.complete_dlq(&batches[0]);
    assert_eq!(sp.start_offset(), 9);
}
