//! `ProducerStateManager` unit tests: the checks, snapshots in Kafka's format, expiry and reload.

use super::*;

const PID: i64 = 1000;
const EXPIRATION_MS: i64 = DEFAULT_PRODUCER_ID_EXPIRATION_MS;

fn batch(first_seq: i32, last_seq: i32, first_offset: i64, timestamp: i64) -> BatchMetadata {
    let records = i64::from(last_seq.wrapping_sub(first_seq)) + 1;
    let records = if records <= 0 {
        // Wrapped: count from first_seq up to i32::MAX, then 0..=last_seq.
        i64::from(i32::MAX) - i64::from(first_seq) + 1 + i64::from(last_seq) + 1
    } else {
        records
    };
    BatchMetadata {
        first_seq,
        last_seq,
        first_offset,
        last_offset: first_offset + records - 1,
        timestamp,
    }
}

/// Checks then records a batch as a leader does, returning where it landed.
fn append(
    psm: &mut ProducerStateManager,
    epoch: i16,
    first_seq: i32,
    last_seq: i32,
    first_offset: i64,
) -> BatchMetadata {
    assert_eq!(
        psm.check(PID, epoch, first_seq, last_seq),
        Ok(ProducerCheck::Append)
    );
    let b = batch(first_seq, last_seq, first_offset, 1_000);
    psm.update(PID, epoch, b);
    psm.set_map_end_offset(b.last_offset + 1);
    b
}

fn manager(dir: &Path) -> ProducerStateManager {
    ProducerStateManager::new(dir.to_path_buf(), EXPIRATION_MS)
}

#[test]
fn crc32c_matches_the_castagnoli_check_value() {
    assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    assert_eq!(crc32c(b""), 0);
}

#[test]
fn crc32c_agrees_with_the_record_batch_crc() {
    let mut builder = kraftd_protocol::records::RecordBatchBuilder::new(0);
    builder
        .append(
            0,
            None,
            Some(bytes::Bytes::from_static(b"value")),
            Vec::new(),
        )
        .unwrap();
    let batch = builder.build().unwrap();
    // RecordBatch v2: crc (u32) at 17 covers everything from the attributes at 21 on.
    let stored = u32::from_be_bytes(batch[17..21].try_into().unwrap());
    assert_eq!(crc32c(&batch[21..]), stored);
}

proptest::proptest! {
    #[test]
    fn producer_state_snapshot_entries_round_trip(
        raw in proptest::collection::vec(
            (0i64..i64::MAX, 0i16..i16::MAX, 0i32..i32::MAX, 0i64..1 << 40, 0i32..1000,
             proptest::num::i64::ANY, proptest::num::i32::ANY, proptest::option::of(0i64..1 << 40)),
            0..20,
        )
    ) {
        let entries: Vec<ProducerStateEntry> = raw
            .into_iter()
            .map(|(producer_id, epoch, last_seq, first_offset, delta, timestamp, coordinator_epoch, txn)| {
                ProducerStateEntry {
                    producer_id,
                    producer_epoch: epoch,
                    batches: VecDeque::from([BatchMetadata {
                        first_seq: decrement_sequence(last_seq, delta),
                        last_seq,
                        first_offset,
                        last_offset: first_offset + i64::from(delta),
                        timestamp,
                    }]),
                    last_timestamp: timestamp,
                    coordinator_epoch,
                    current_txn_first_offset: txn,
                }
            })
            .collect();
        let bytes = encode_snapshot(entries.iter());
        proptest::prop_assert_eq!(decode_snapshot(&bytes).unwrap(), entries);
    }

    #[test]
    fn producer_state_decode_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
        let _ = decode_snapshot(&bytes);
    }
}

#[test]
fn producer_state_duplicates_among_last_five_answered_with_original_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let mut psm = manager(dir.path());
    let mut appended = Vec::new();
    for i in 0..NUM_BATCHES_TO_RETAIN as i32 {
        // Three records per batch, with other producers' data between them.
        appended.push(append(
            &mut psm,
            0,
            i * 3,
            i * 3 + 2,
            100 + i64::from(i) * 10,
        ));
    }
    for original in &appended {
        assert_eq!(
            psm.check(PID, 0, original.first_seq, original.last_seq),
            Ok(ProducerCheck::Duplicate(*original))
        );
    }
    let Ok(ProducerCheck::Duplicate(first)) = psm.check(PID, 0, 0, 2) else {
        panic!("the oldest retained batch is a duplicate");
    };
    assert_eq!(first.first_offset, 100);
    assert_eq!(first.last_offset, 102);
    // A partial overlap is not a duplicate: it is out of order.
    assert_eq!(
        psm.check(PID, 0, 0, 1).unwrap_err().error_code(),
        ErrorCode::OutOfOrderSequenceNumber
    );
    // The same range from another epoch is no retry.
    assert!(matches!(psm.check(PID, 1, 0, 2), Ok(ProducerCheck::Append)));
}

#[test]
fn producer_state_sixth_oldest_batch_is_no_longer_a_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let mut psm = manager(dir.path());
    for i in 0..=NUM_BATCHES_TO_RETAIN as i32 {
        append(&mut psm, 0, i, i, i64::from(i));
    }
    let entry = psm.last_entry(PID).unwrap();
    assert_eq!(entry.batches.len(), NUM_BATCHES_TO_RETAIN);
    assert_eq!(entry.first_seq(), 1);
    assert_eq!(entry.last_seq(), 5);
    let err = psm.check(PID, 0, 0, 0).unwrap_err();
    assert_eq!(
        err,
        ProducerStateError::OutOfOrderSequence {
            producer_id: PID,
            producer_epoch: 0,
            first_seq: 0,
            current_epoch: 0,
            current_last_seq: 5,
        }
    );
    assert_eq!(err.error_code(), ErrorCode::OutOfOrderSequenceNumber);
    assert_eq!(
        psm.check(PID, 0, 1, 1),
        Ok(ProducerCheck::Duplicate(batch(1, 1, 1, 1_000)))
    );
}

#[test]
fn producer_state_sequence_gap_is_out_of_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut psm = manager(dir.path());
    append(&mut psm, 0, 0, 4, 0);
    let err = psm.check(PID, 0, 6, 6).unwrap_err();
    assert_eq!(err.error_code(), ErrorCode::OutOfOrderSequenceNumber);
    // Going backwards past the retained range is out of order too.
    assert_eq!(
        psm.check(PID, 0, 3, 4).unwrap_err().error_code(),
        ErrorCode::OutOfOrderSequenceNumber
    );
    assert_eq!(psm.check(PID, 0, 5, 9), Ok(ProducerCheck::Append));
    // A refused check changes nothing.
    assert_eq!(psm.last_entry(PID).unwrap().last_seq(), 4);
}

#[test]
fn producer_state_stale_epoch_is_invalid_producer_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let mut psm = manager(dir.path());
    append(&mut psm, 3, 0, 0, 0);
    let err = psm.check(PID, 2, 1, 1).unwrap_err();
    assert_eq!(
        err,
        ProducerStateError::InvalidProducerEpoch {
            producer_id: PID,
            producer_epoch: 2,
            current_epoch: 3,
        }
    );
    assert_eq!(err.error_code(), ErrorCode::InvalidProducerEpoch);
    // Even a retry of an old epoch's batch is fenced, not answered as a duplicate.
    assert_eq!(
        psm.check(PID, 2, 0, 0).unwrap_err().error_code(),
        ErrorCode::InvalidProducerEpoch
    );
}

#[test]
fn producer_state_epoch_bump_must_restart_at_sequence_zero() {
    let dir = tempfile::tempdir().unwrap();
    let mut psm = manager(dir.path());
    append(&mut psm, 0, 0, 9, 0);
    assert_eq!(
        psm.check(PID, 1, 10, 10).unwrap_err().error_code(),
        ErrorCode::OutOfOrderSequenceNumber
    );
    append(&mut psm, 1, 0, 0, 10);
    let entry = psm.last_entry(PID).unwrap();
    assert_eq!(entry.producer_epoch, 1);
    assert_eq!(
        entry.batches.len(),
        1,
        "a new epoch forgets the old batches"
    );
    assert_eq!(
        psm.check(PID, 0, 10, 10).unwrap_err().error_code(),
        ErrorCode::InvalidProducerEpoch
    );
    assert_eq!(psm.check(PID, 1, 1, 1), Ok(ProducerCheck::Append));
}

#[test]
fn producer_state_unknown_producer_accepts_any_sequence_as_kafka_does_since_kip_360() {
    let dir = tempfile::tempdir().unwrap();
    let psm = manager(dir.path());
    assert_eq!(psm.check(PID, 4, 17, 20), Ok(ProducerCheck::Append));
    assert_eq!(psm.check(-1, -1, -1, -1), Ok(ProducerCheck::Append));
    assert_eq!(
        ProducerStateError::UnknownProducerId { producer_id: PID }.error_code(),
        ErrorCode::UnknownProducerId
    );
}

#[test]
fn producer_state_sequence_wraps_around_at_i32_max() {
    let dir = tempfile::tempdir().unwrap();
    let mut psm = manager(dir.path());
    psm.update(PID, 0, batch(i32::MAX - 2, i32::MAX, 0, 1));
    assert_eq!(psm.check(PID, 0, 0, 4), Ok(ProducerCheck::Append));
    assert_eq!(
        psm.check(PID, 0, 1, 4).unwrap_err().error_code(),
        ErrorCode::OutOfOrderSequenceNumber
    );
    // A batch whose own range wraps.
    let mut psm = manager(dir.path());
    psm.update(PID, 0, batch(i32::MAX - 5, i32::MAX - 1, 0, 1));
    let wrapped = append(&mut psm, 0, i32::MAX, 2, 5);
    assert_eq!(wrapped.last_offset, 8);
    assert_eq!(psm.check(PID, 0, 3, 3), Ok(ProducerCheck::Append));
    assert_eq!(
        psm.check(PID, 0, i32::MAX, 2),
        Ok(ProducerCheck::Duplicate(wrapped))
    );
}

#[test]
fn producer_state_snapshot_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut psm = manager(dir.path());
    append(&mut psm, 2, 0, 4, 0);
    append(&mut psm, 2, 5, 7, 20);
    psm.update(7, 0, batch(i32::MAX - 1, 1, 30, 2_000));
    psm.set_map_end_offset(40);
    psm.take_snapshot().unwrap();
    let path = snapshot_file(dir.path(), 40);
    assert!(path.ends_with("00000000000000000040.snapshot"));
    assert_eq!(psm.snapshot_offsets().unwrap(), vec![40]);
    // Kafka's layout: version, crc, count, two 46-byte entries.
    let bytes = fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 2 + 4 + 4 + 2 * SNAPSHOT_ENTRY_BYTES);
    assert_eq!(&bytes[..2], &1i16.to_be_bytes());
    assert_eq!(&bytes[2..6], &crc32c(&bytes[6..]).to_be_bytes());

    let mut reloaded = manager(dir.path());
    reloaded.load_latest_snapshot(40, 1_000).unwrap();
    assert_eq!(reloaded.map_end_offset(), 40);
    assert_eq!(reloaded.active_producer_count(), 2);
    let entry = reloaded.last_entry(PID).unwrap();
    assert_eq!(entry.producer_epoch, 2);
    assert_eq!(entry.batches, VecDeque::from([batch(5, 7, 20, 1_000)]));
    assert_eq!(entry.last_timestamp, 1_000);
    assert_eq!(entry.current_txn_first_offset, None);
    assert_eq!(entry.coordinator_epoch, -1);
    let wrapped = reloaded.last_entry(7).unwrap();
    assert_eq!(
        wrapped.batches,
        VecDeque::from([batch(i32::MAX - 1, 1, 30, 2_000)])
    );
    // Only the last batch survives, as in Kafka.
    assert_eq!(
        reloaded.check(PID, 2, 5, 7),
        Ok(ProducerCheck::Duplicate(batch(5, 7, 20, 1_000)))
    );
    assert_eq!(
        reloaded.check(PID, 2, 0, 4).unwrap_err().error_code(),
        ErrorCode::OutOfOrderSequenceNumber
    );
    assert_eq!(reloaded.check(PID, 2, 8, 8), Ok(ProducerCheck::Append));
    // No second snapshot at an offset already covered.
    reloaded.take_snapshot().unwrap();
    assert_eq!(reloaded.snapshot_offsets().unwrap(), vec![40]);
}

#[test]
fn producer_state_expired_producers_are_dropped_and_not_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let mut psm = ProducerStateManager::new(dir.path().to_path_buf(), 100);
    psm.update(1, 0, batch(0, 0, 0, 1_000));
    psm.update(2, 0, batch(0, 0, 1, 1_050));
    psm.set_map_end_offset(2);
    psm.take_snapshot().unwrap();
    psm.remove_expired_producers(1_099);
    assert_eq!(psm.active_producer_count(), 2);
    psm.remove_expired_producers(1_100);
    assert_eq!(psm.active_producer_count(), 1);
    assert!(psm.last_entry(1).is_none());

    let mut reloaded = ProducerStateManager::new(dir.path().to_path_buf(), 100);
    reloaded.load_latest_snapshot(2, 1_100).unwrap();
    assert_eq!(reloaded.active_producer_count(), 1);
    assert!(reloaded.last_entry(2).is_some());
}

#[test]
fn producer_state_expiry_spares_an_open_transaction_and_follows_a_changed_expiration() {
    let dir = tempfile::tempdir().unwrap();
    let mut psm = ProducerStateManager::new(dir.path().to_path_buf(), 1_000);
    psm.update(1, 0, batch(0, 0, 0, 1_000));
    psm.update(2, 0, batch(0, 0, 1, 1_000));
    psm.update_txn_data(2, 1);
    psm.update(3, 0, batch(0, 0, 2, 1_500));
    psm.set_map_end_offset(3);
    // Not idle long enough: nothing goes.
    assert_eq!(psm.remove_expired_producers(1_999), 0);
    // Producer 1 idle for the expiration; 2 as long, but its transaction is open.
    assert_eq!(psm.remove_expired_producers(2_000), 1);
    assert!(psm.last_entry(1).is_none());
    assert!(psm.last_entry(2).is_some());
    assert!(psm.last_entry(3).is_some());
    // A shorter expiration (set dynamically in Kafka) applies at the next check.
    psm.set_producer_id_expiration_ms(100);
    assert_eq!(psm.producer_id_expiration_ms(), 100);
    assert_eq!(psm.remove_expired_producers(1_600), 1);
    assert!(psm.last_entry(3).is_none());
    assert!(
        psm.last_entry(2).is_some(),
        "an open transaction never expires"
    );
}

#[test]
fn producer_state_corrupt_or_truncated_snapshot_is_deleted_and_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let mut psm = manager(dir.path());
    append(&mut psm, 0, 0, 0, 0);
    psm.take_snapshot().unwrap(); // at 1
    append(&mut psm, 0, 1, 1, 1);
    psm.take_snapshot().unwrap(); // at 2
    append(&mut psm, 0, 2, 2, 2);
    psm.take_snapshot().unwrap(); // at 3
    assert_eq!(psm.snapshot_offsets().unwrap(), vec![1, 2, 3]);

    // Newest truncated, the next one with a flipped byte.
    let at_3 = snapshot_file(dir.path(), 3);
    let bytes = fs::read(&at_3).unwrap();
    fs::write(&at_3, &bytes[..bytes.len() - 3]).unwrap();
    let at_2 = snapshot_file(dir.path(), 2);
    let mut bytes = fs::read(&at_2).unwrap();
    *bytes.last_mut().unwrap() ^= 0x01;
    fs::write(&at_2, &bytes).unwrap();
    // Junk with the suffix but no offset name is not ours.
    fs::write(dir.path().join("junk.snapshot"), b"x").unwrap();

    let mut reloaded = manager(dir.path());
    reloaded.load_latest_snapshot(3, 1_000).unwrap();
    assert_eq!(reloaded.map_end_offset(), 1);
    assert_eq!(reloaded.last_entry(PID).unwrap().last_seq(), 0);
    assert_eq!(reloaded.snapshot_offsets().unwrap(), vec![1]);
    assert!(!at_3.exists());
    assert!(!at_2.exists());
    assert!(dir.path().join("junk.snapshot").exists());

    // Every snapshot unreadable: empty state from the start.
    fs::write(snapshot_file(dir.path(), 1), b"").unwrap();
    let mut empty = manager(dir.path());
    empty.load_latest_snapshot(3, 1_000).unwrap();
    assert_eq!(empty.map_end_offset(), 0);
    assert_eq!(empty.active_producer_count(), 0);
    assert!(empty.snapshot_offsets().unwrap().is_empty());
}

#[test]
fn decrement_sequence_wraps_like_kafka() {
    assert_eq!(decrement_sequence(10, 3), 7);
    assert_eq!(decrement_sequence(1, 3), i32::MAX - 1);
    assert_eq!(decrement_sequence(0, 0), 0);
    // Garbage from a snapshot must not overflow.
    assert_eq!(decrement_sequence(i32::MIN, 1000), -1000);
}

#[test]
fn producer_state_decode_rejects_wrong_version_and_lying_count() {
    let entry = ProducerStateEntry {
        batches: VecDeque::from([batch(0, 0, 0, 1)]),
        producer_epoch: 0,
        last_timestamp: 1,
        ..ProducerStateEntry::empty(PID)
    };
    let good = encode_snapshot([&entry].into_iter());
    assert_eq!(decode_snapshot(&good).unwrap(), vec![entry]);

    let mut wrong_version = good.clone();
    wrong_version[..2].copy_from_slice(&2i16.to_be_bytes());
    assert!(decode_snapshot(&wrong_version).is_err());

    // A huge count with a valid crc must fail before reserving anything.
    let mut lying = good.clone();
    lying[6..10].copy_from_slice(&i32::MAX.to_be_bytes());
    let crc = crc32c(&lying[6..]);
    lying[2..6].copy_from_slice(&crc.to_be_bytes());
    assert!(decode_snapshot(&lying).is_err());
    let mut negative = good;
    negative[6..10].copy_from_slice(&(-1i32).to_be_bytes());
    let crc = crc32c(&negative[6..]);
    negative[2..6].copy_from_slice(&crc.to_be_bytes());
    assert!(decode_snapshot(&negative).is_err());
}

#[test]
fn producer_state_truncate_and_reload_picks_snapshot_and_deletes_later_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut psm = manager(dir.path());
    for i in 0..4 {
        append(&mut psm, 0, i, i, i64::from(i) * 10);
        psm.set_map_end_offset(i64::from(i + 1) * 10);
        psm.take_snapshot().unwrap();
    }
    assert_eq!(psm.snapshot_offsets().unwrap(), vec![10, 20, 30, 40]);
    assert_eq!(psm.last_entry(PID).unwrap().last_seq(), 3);

    // The log was truncated to 25: state from the snapshot at 20, replay from there.
    psm.truncate_and_reload(0, 25, 1_000).unwrap();
    assert_eq!(psm.snapshot_offsets().unwrap(), vec![10, 20]);
    assert_eq!(psm.map_end_offset(), 20);
    assert_eq!(psm.last_entry(PID).unwrap().last_seq(), 1);
    assert_eq!(psm.check(PID, 0, 2, 2), Ok(ProducerCheck::Append));

    // Replay what is left of the log, then a snapshot at 25 is new.
    append(&mut psm, 0, 2, 2, 20);
    psm.set_map_end_offset(25);
    psm.take_snapshot().unwrap();
    assert_eq!(psm.snapshot_offsets().unwrap(), vec![10, 20, 25]);

    // Already at the log end: only snapshots not past the new log start go.
    psm.truncate_and_reload(10, 25, 1_000).unwrap();
    assert_eq!(psm.snapshot_offsets().unwrap(), vec![20, 25]);
    assert_eq!(psm.map_end_offset(), 25);
    assert_eq!(psm.last_entry(PID).unwrap().last_seq(), 2);

    // Truncated below every snapshot: empty state at the log start.
    psm.truncate_and_reload(5, 15, 1_000).unwrap();
    assert!(psm.snapshot_offsets().unwrap().is_empty());
    assert_eq!(psm.map_end_offset(), 5);
    assert_eq!(psm.active_producer_count(), 0);
}

#[test]
fn producer_state_delete_snapshots_before_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut psm = manager(dir.path());
    for offset in [5, 10, 15] {
        psm.set_map_end_offset(offset);
        psm.take_snapshot().unwrap();
    }
    psm.delete_snapshots_before(10).unwrap();
    assert_eq!(psm.snapshot_offsets().unwrap(), vec![10, 15]);
    assert_eq!(psm.latest_snapshot_offset().unwrap(), Some(15));
}

/// KIP-890's verification state (Kafka's `VerificationStateEntry`): a transactions V2
/// producer this partition knows nothing of starts at sequence 0, and no batch starts past
/// the lowest sequence whose verification began. Found by Kafka's transactional
/// `kafka-producer-perf-test` on kraftd: its first batch's verification was refused
/// (CONCURRENT_TRANSACTIONS, answered NOT_ENOUGH_REPLICAS), a later in-flight batch's
/// passed and was appended at sequence 450, and the retried first batch was out of order
/// for good.
#[test]
fn a_batch_verified_later_cannot_get_in_ahead_of_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut psm = manager(dir.path());
    // V2: the first batch (0..149) starts verifying, then a later one (450..601).
    psm.start_verification(PID, 0, 2, true, 1_000);
    psm.start_verification(PID, 450, 2, true, 1_000);
    assert_eq!(
        psm.check(PID, 2, 450, 601).unwrap_err().error_code(),
        ErrorCode::OutOfOrderSequenceNumber,
        "a later batch may not be appended ahead of the first"
    );
    // The first, retried, goes in; its append ends the verification; the rest follow.
    append(&mut psm, 2, 0, 149, 0);
    assert!(psm.verification(PID).is_none());
    append(&mut psm, 2, 150, 449, 150);
    append(&mut psm, 2, 450, 601, 450);

    // V2 and no state here: only sequence 0 starts.
    let mut psm = manager(dir.path());
    psm.start_verification(PID, 7, 0, true, 1_000);
    assert_eq!(
        psm.check(PID, 0, 7, 9).unwrap_err().error_code(),
        ErrorCode::OutOfOrderSequenceNumber
    );
    // V1 (no epoch bump): a producer without state may start anywhere (KIP-360) as long as
    // no lower sequence is being verified.
    let mut psm = manager(dir.path());
    psm.start_verification(PID, 7, 0, false, 1_000);
    assert_eq!(psm.check(PID, 0, 7, 9), Ok(ProducerCheck::Append));
    // A newer epoch's verification replaces the lowest sequence.
    psm.start_verification(PID, 3, 1, false, 1_000);
    assert_eq!(
        psm.verification(PID).map(|v| (v.epoch, v.lowest_seq)),
        Some((1, 3))
    );
    // Verifications expire with the idle producers.
    psm.remove_expired_producers(1_000 + EXPIRATION_MS);
    assert!(psm.verification(PID).is_none());
}

/// A marker ends a verification, except a transactions V2 marker at the verification's
/// epoch: the next transaction (the bumped epoch) already started verifying.
#[test]
fn a_marker_ends_a_verification_unless_the_next_v2_transaction_started_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut psm = manager(dir.path());
    psm.start_verification(PID, 0, 1, false, 1_000);
    psm.append_end_txn_marker(PID, 1, 0, false, 10, 1_000);
    assert!(psm.verification(PID).is_none());
    psm.start_verification(PID, 0, 3, true, 1_000);
    psm.append_end_txn_marker(PID, 3, 0, false, 11, 1_000);
    assert!(psm.verification(PID).is_some());
    psm.append_end_txn_marker(PID, 2, 0, false, 12, 1_000);
    assert!(psm.verification(PID).is_none());
}
