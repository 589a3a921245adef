//! Compaction: a model-based property test (keyed appends with tombstones, rolls, cleans,
//! crashes at every step of a segment swap, reopens) against the full history of what was
//! appended, and unit tests of multi-pass cleaning, the producer's last batch and the
//! delete horizon. Appends use every codec: a compressed batch that loses records is
//! rebuilt with its own codec.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use bytes::{Bytes, BytesMut};
use kraftd_log::cleaner::{CleanedSegments, OffsetMap};
use kraftd_log::config::CleanupPolicy;
use kraftd_log::{CleanCommit, Log, LogConfig};
use kraftd_protocol::records::{Compression, RecordBatch, RecordBatchBuilder};
use proptest::prelude::*;

use crate::common::{read_all, tempdir};

/// One record as appended: key, value (`None`: a tombstone).
type Kv = (u8, Option<u16>);

fn compact_config(retention: i64) -> LogConfig {
    LogConfig {
        segment_bytes: 700,
        index_interval_bytes: 100,
        retention_ms: -1,
        cleanup_policy: CleanupPolicy::COMPACT,
        delete_retention_ms: retention,
        ..LogConfig::default()
    }
}

fn keyed_batch(records: &[Kv], ts: i64, producer: Option<(i64, i32)>) -> BytesMut {
    compressed_batch(records, ts, producer, Compression::None)
}

fn compressed_batch(
    records: &[Kv],
    ts: i64,
    producer: Option<(i64, i32)>,
    codec: Compression,
) -> BytesMut {
    let mut b = RecordBatchBuilder::new(0).compression(codec);
    if let Some((pid, seq)) = producer {
        b = b.producer(pid, 0, seq);
    }
    for (k, v) in records {
        b.append(
            ts,
            Some(Bytes::from(format!("key-{k}"))),
            v.map(|v| Bytes::from(format!("value-{v}"))),
            Vec::new(),
        )
        .unwrap();
    }
    BytesMut::from(&b.build().unwrap()[..])
}

/// Every record in the log: offset → (key, value).
fn records(log: &Log) -> BTreeMap<i64, (Option<Bytes>, Option<Bytes>)> {
    let mut out = BTreeMap::new();
    let mut prev = -1;
    for batch in read_all(log) {
        batch.validate_crc().unwrap();
        for r in batch.records().unwrap() {
            let r = r.unwrap();
            let o = r.offset(&batch);
            assert!(o > prev, "offsets increase: {o} after {prev}");
            prev = o;
            out.insert(o, (r.key, r.value));
        }
    }
    out
}

fn clean(log: &mut Log, map: &mut OffsetMap, now: i64, dirty: i64) -> Option<CleanedSegments> {
    let plan = log.plan_clean(now, dirty, i64::MAX, HashMap::new())?;
    Some(plan.execute(map, 4096, &mut |_| true).unwrap())
}

/// The history: every record appended, by offset, and when the first clean after it ran.
#[derive(Default)]
struct History {
    records: BTreeMap<i64, (u8, Option<u16>)>,
    /// The codec of the batch each record was appended in.
    codecs: BTreeMap<i64, Compression>,
    first_clean_after: BTreeMap<i64, i64>,
    /// Where the dirty section starts (the checkpoint).
    cleaned_to: i64,
    last_clean_ms: i64,
}

impl History {
    /// Below the cleaned point: exactly each key's latest record below it (a tombstone may
    /// be gone once a clean ran `retention` after the first clean that followed it); above:
    /// everything; all at their original offsets.
    fn check(&self, log: &Log, retention: i64, final_pass: bool) {
        let got = records(log);
        let c = self.cleaned_to;
        let mut latest: BTreeMap<u8, i64> = BTreeMap::new();
        for (&o, &(k, _)) in self.records.range(..c) {
            latest.insert(k, o);
        }
        for (&o, &(k, v)) in &self.records {
            let expected_key = Bytes::from(format!("key-{k}"));
            let present = got.get(&o);
            if let Some((key, value)) = present {
                assert_eq!(key.as_ref(), Some(&expected_key), "key at {o}");
                assert_eq!(
                    value.clone(),
                    v.map(|v| Bytes::from(format!("value-{v}"))),
                    "value at {o}"
                );
            }
            if o >= c {
                assert!(
                    present.is_some(),
                    "record {o} above the cleaned point {c} lost"
                );
            } else if latest[&k] != o {
                assert!(
                    present.is_none(),
                    "superseded record {o} (key {k}) kept below {c}"
                );
            } else if v.is_some() {
                assert!(present.is_some(), "latest value {o} (key {k}) lost");
            } else if present.is_none() {
                let first = self.first_clean_after[&o];
                assert!(
                    self.last_clean_ms >= first + retention,
                    "tombstone {o} dropped at {} before {first} + {retention}",
                    self.last_clean_ms
                );
            } else if final_pass {
                panic!("tombstone {o} outlived its delete horizon");
            }
        }
        assert!(got.keys().all(|o| self.records.contains_key(o)));
        // A batch kept whole or rebuilt keeps its producer's codec.
        for batch in read_all(log) {
            for r in batch.records().unwrap() {
                let o = r.unwrap().offset(&batch);
                assert_eq!(
                    batch.compression(),
                    self.codecs[&o],
                    "codec of the batch at {o}"
                );
            }
        }
        log.verify().unwrap();
    }
}

#[derive(Debug, Clone)]
enum Op {
    Append(Vec<Kv>, Compression),
    Roll,
    /// A clean at time `+advance`, with an offset map of `entries` entries.
    Clean {
        advance: u16,
        entries: u8,
    },
    /// A clean whose swap stops after `step` of its file operations, then a reopen.
    CrashInSwap {
        entries: u8,
        step: u16,
    },
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    let kv = (0u8..12, proptest::option::weighted(0.8, any::<u16>()));
    prop_oneof![
        6 => (proptest::collection::vec(kv, 1..6), proptest::sample::select(&Compression::ALL[..]))
            .prop_map(|(kvs, codec)| Op::Append(kvs, codec)),
        2 => Just(Op::Roll),
        3 => (0u16..400, 2u8..40).prop_map(|(advance, entries)| Op::Clean { advance, entries }),
        2 => (2u8..40, any::<u16>()).prop_map(|(entries, step)| Op::CrashInSwap { entries, step }),
        1 => Just(Op::Reopen),
    ]
}

/// The file operations [`Log::commit_clean`] performs, in order, as a crash would cut them.
fn swap_steps(dir: &Path, cleaned: &CleanedSegments) -> Vec<(String, Option<String>)> {
    let name = |b: i64, s: &str| format!("{b:020}.{s}");
    let mut steps = Vec::new();
    for &b in cleaned.base_offsets().iter().rev() {
        for s in ["index", "timeindex", "log"] {
            steps.push((
                name(b, &format!("{s}.cleaned")),
                Some(name(b, &format!("{s}.swap"))),
            ));
        }
    }
    for &b in &cleaned.replaced_base_offsets() {
        for s in ["log", "index", "timeindex"] {
            steps.push((name(b, s), None));
        }
    }
    for &b in &cleaned.base_offsets() {
        for s in ["log", "index", "timeindex"] {
            steps.push((name(b, &format!("{s}.swap")), Some(name(b, s))));
        }
    }
    let _ = dir;
    steps
}

const RETENTION: i64 = 300;

fn run(ops: Vec<Op>) {
    let dir = tempdir();
    let config = compact_config(RETENTION);
    let mut log = Log::open(dir.path(), config.clone(), 0).unwrap();
    let mut h = History::default();
    let mut now = 1_000i64;
    let mut pending_first_clean: Vec<i64> = Vec::new();
    for op in ops {
        match op {
            Op::Append(kvs, codec) => {
                let info = log
                    .append_as_leader(compressed_batch(&kvs, now, None, codec), 0, now)
                    .unwrap();
                for (i, kv) in kvs.iter().enumerate() {
                    let o = info.first_offset + i as i64;
                    h.records.insert(o, *kv);
                    h.codecs.insert(o, codec);
                    pending_first_clean.push(o);
                }
            }
            Op::Roll => log.roll().unwrap(),
            Op::Clean { advance, entries } => {
                now += i64::from(advance);
                let mut map = OffsetMap::new(24 * usize::from(entries), 1.0).unwrap();
                if let Some(cleaned) = clean(&mut log, &mut map, now, h.cleaned_to) {
                    match log.commit_clean(cleaned).unwrap() {
                        CleanCommit::Swapped {
                            next_dirty_offset, ..
                        } => {
                            h.cleaned_to = next_dirty_offset;
                        }
                        CleanCommit::Discarded => panic!("nothing changed, yet discarded"),
                    }
                }
                for o in pending_first_clean.drain(..) {
                    h.first_clean_after.insert(o, now);
                }
                h.last_clean_ms = now;
            }
            Op::CrashInSwap { entries, step } => {
                now += 1;
                let mut map = OffsetMap::new(24 * usize::from(entries), 1.0).unwrap();
                if let Some(cleaned) = clean(&mut log, &mut map, now, h.cleaned_to) {
                    let steps = swap_steps(dir.path(), &cleaned);
                    let n = usize::from(step) % (steps.len() + 1);
                    let completes = n >= 3 * cleaned.base_offsets().len();
                    let next = cleaned.next_dirty_offset();
                    std::mem::forget(cleaned);
                    drop(log);
                    for (from, to) in &steps[..n] {
                        let from = dir.path().join(from);
                        match to {
                            Some(to) => std::fs::rename(&from, dir.path().join(to)).unwrap(),
                            None => {
                                let _ = std::fs::remove_file(&from);
                            }
                        }
                    }
                    log = Log::open(dir.path(), config.clone(), now).unwrap();
                    if completes {
                        h.cleaned_to = next;
                    }
                    for o in pending_first_clean.drain(..) {
                        h.first_clean_after.insert(o, now);
                    }
                    h.last_clean_ms = now;
                    let names: Vec<String> = std::fs::read_dir(dir.path())
                        .unwrap()
                        .map(|e| e.unwrap().file_name().into_string().unwrap())
                        .collect();
                    assert!(
                        names
                            .iter()
                            .all(|n| !n.ends_with(".cleaned") && !n.ends_with(".swap")),
                        "{names:?}"
                    );
                }
            }
            Op::Reopen => {
                drop(log);
                log = Log::open(dir.path(), config.clone(), now).unwrap();
            }
        }
        h.check(&log, RETENTION, false);
    }
    // Everything cleanable is cleaned, twice past every horizon: no superseded record and
    // no tombstone is left below the cleaned point.
    log.roll().unwrap();
    let info = log
        .append_as_leader(keyed_batch(&[(99, Some(0))], now, None), 0, now)
        .unwrap();
    h.records.insert(info.first_offset, (99, Some(0)));
    h.codecs.insert(info.first_offset, Compression::None);
    pending_first_clean.push(info.first_offset);
    for _ in 0..2 {
        now += 10 * RETENTION;
        let mut map = OffsetMap::new(24 * 1000, 1.0).unwrap();
        while let Some(cleaned) = clean(&mut log, &mut map, now, h.cleaned_to) {
            match log.commit_clean(cleaned).unwrap() {
                CleanCommit::Swapped {
                    next_dirty_offset, ..
                } => {
                    let done = next_dirty_offset == h.cleaned_to;
                    h.cleaned_to = next_dirty_offset;
                    if done {
                        break;
                    }
                }
                CleanCommit::Discarded => unreachable!(),
            }
        }
        for o in pending_first_clean.drain(..) {
            h.first_clean_after.insert(o, now);
        }
        h.last_clean_ms = now;
        // A later round finds the dirty section empty: the delete horizons are passed by
        // giving it new data to clean.
        let info = log
            .append_as_leader(keyed_batch(&[(98, Some(0))], now, None), 0, now)
            .unwrap();
        log.roll().unwrap();
        h.records.insert(info.first_offset, (98, Some(0)));
        h.codecs.insert(info.first_offset, Compression::None);
        pending_first_clean.push(info.first_offset);
    }
    h.check(&log, RETENTION, true);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn cleaning_keeps_the_latest_value_per_key(ops in proptest::collection::vec(op(), 1..60)) {
        run(ops);
    }
}

#[test]
fn compressed_batches_are_cleaned_and_keep_their_codec() {
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let dir = tempdir();
        let mut log = Log::open(dir.path(), compact_config(500), 0).unwrap();
        let append = |log: &mut Log, kvs: &[Kv], ts: i64| {
            let info = log
                .append_as_leader(compressed_batch(kvs, ts, Some((7, 0)), codec), 0, 0)
                .unwrap();
            (info.first_offset, info.last_offset)
        };
        // 0..=2: keys 1 and 2 superseded below, key 7 stays: rebuilt around one record.
        assert_eq!(
            append(&mut log, &[(1, Some(0)), (2, Some(0)), (7, Some(0))], 10),
            (0, 2)
        );
        // 3..=4: untouched, copied byte for byte.
        assert_eq!(append(&mut log, &[(5, Some(0)), (6, Some(0))], 11), (3, 4));
        let untouched = read_all(&log)[1].as_bytes().clone();
        // 5..=7: new values and a tombstone: rebuilt with a delete horizon.
        assert_eq!(
            append(&mut log, &[(1, Some(1)), (2, Some(1)), (3, None)], 12),
            (5, 7)
        );
        // 8: a newer value for key 1 in a plain batch: the tombstone batch loses key 1.
        log.append_as_leader(keyed_batch(&[(1, Some(2))], 13, None), 0, 0)
            .unwrap();
        log.roll().unwrap();
        let mut map = OffsetMap::new(24 * 100, 0.9).unwrap();
        let cleaned = clean(&mut log, &mut map, 1_000, 0).unwrap();
        assert!(matches!(
            log.commit_clean(cleaned).unwrap(),
            CleanCommit::Swapped { .. }
        ));
        for reopen in [false, true] {
            if reopen {
                drop(log);
                log = Log::open(dir.path(), compact_config(500), 1_000).unwrap();
            }
            let batches = read_all(&log);
            assert_eq!(batches.len(), 4, "{codec:?}: {batches:?}");
            let rebuilt = &batches[0];
            assert_eq!(rebuilt.compression(), codec);
            assert_eq!((rebuilt.base_offset(), rebuilt.last_offset()), (0, 2));
            assert_eq!((rebuilt.producer_id(), rebuilt.base_sequence()), (7, 0));
            assert_eq!(rebuilt.record_count(), 1);
            assert_eq!(rebuilt.max_timestamp(), 10);
            assert_eq!(batches[1].as_bytes(), &untouched, "{codec:?}: kept whole");
            let horizon = &batches[2];
            assert_eq!(horizon.compression(), codec);
            assert_eq!(horizon.delete_horizon_ms(), Some(1_500));
            assert_eq!((horizon.base_offset(), horizon.last_offset()), (5, 7));
            assert_eq!(horizon.record_count(), 2);
            assert_eq!(batches[3].compression(), Compression::None);
            let got: Vec<(i64, Option<Bytes>)> = records(&log)
                .into_iter()
                .map(|(o, (_, v))| (o, v))
                .collect();
            let v = |s: &'static str| Some(Bytes::from_static(s.as_bytes()));
            assert_eq!(
                got,
                vec![
                    (2, v("value-0")),
                    (3, v("value-0")),
                    (4, v("value-0")),
                    (6, v("value-1")),
                    (7, None),
                    (8, v("value-2")),
                ],
                "{codec:?}"
            );
            log.verify().unwrap();
        }
    }
}

/// A follower fetching from a cleaned leader gets batches past the gaps compaction left:
/// under `compact` it appends them (its log end jumps, as Kafka's follower's does) and
/// keeps them across a reopen; under `delete` a gap is still refused.
#[test]
fn a_follower_appends_across_a_cleaned_leaders_gaps() {
    let leader_dir = tempdir();
    let mut leader = Log::open(leader_dir.path(), compact_config(0), 0).unwrap();
    for v in 0..30u16 {
        leader
            .append_as_leader(keyed_batch(&[((v % 3) as u8, Some(v))], 0, None), 0, 0)
            .unwrap();
    }
    leader.roll().unwrap();
    let mut map = OffsetMap::new(24 * 100, 0.9).unwrap();
    let cleaned = clean(&mut leader, &mut map, 0, 0).unwrap();
    leader.commit_clean(cleaned).unwrap();
    let fetched: Vec<Bytes> = read_all(&leader)
        .iter()
        .map(|b| b.as_bytes().clone())
        .collect();
    assert!(fetched.len() < 30);
    let all = Bytes::from(fetched.concat());
    // A compacted log, or a data log of any policy (its topic may have been compacted
    // before), takes the gaps; a log that never has gaps (the metadata log) refuses them.
    for (policy, offset_gaps, accepted) in [
        (CleanupPolicy::COMPACT, false, true),
        (CleanupPolicy::DELETE, true, true),
        (CleanupPolicy::DELETE, false, false),
    ] {
        let dir = tempdir();
        let mut config = compact_config(0);
        config.cleanup_policy = policy;
        config.offset_gaps = offset_gaps;
        let mut follower = Log::open(dir.path(), config.clone(), 0).unwrap();
        let appended = follower.append_as_follower(all.clone(), 0);
        assert_eq!(appended.is_ok(), accepted, "{policy:?}: {appended:?}");
        if !accepted {
            assert_eq!(follower.log_end_offset(), 0);
            continue;
        }
        let info = appended.unwrap();
        assert_eq!(info.first_offset, read_all(&leader)[0].base_offset());
        assert_eq!(follower.log_end_offset(), 30);
        drop(follower);
        let follower = Log::open(dir.path(), config, 0).unwrap();
        assert_eq!(follower.log_end_offset(), 30);
        assert_eq!(records(&follower), records(&leader));
    }
}

#[test]
fn a_log_larger_than_the_offset_map_is_cleaned_in_several_passes() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), compact_config(0), 0).unwrap();
    for round in 0..4u16 {
        for k in 0..12u8 {
            log.append_as_leader(keyed_batch(&[(k, Some(round))], 0, None), 0, 0)
                .unwrap();
        }
    }
    log.roll().unwrap();
    let size_before = log.size_in_bytes();
    // Ten entries: each pass maps at most ten records.
    let mut map = OffsetMap::new(24 * 10, 1.0).unwrap();
    let mut dirty = 0;
    let mut passes = 0;
    while let Some(cleaned) = clean(&mut log, &mut map, 0, dirty) {
        passes += 1;
        match log.commit_clean(cleaned).unwrap() {
            CleanCommit::Swapped {
                next_dirty_offset, ..
            } => {
                assert!(next_dirty_offset > dirty);
                dirty = next_dirty_offset;
            }
            CleanCommit::Discarded => unreachable!(),
        }
    }
    assert!(passes >= 4, "{passes} passes");
    assert_eq!(dirty, 48);
    let got = records(&log);
    assert_eq!(got.len(), 12, "{got:?}");
    for (i, (&o, (_, v))) in got.iter().enumerate() {
        assert_eq!(o, 36 + i as i64);
        assert_eq!(v.as_deref(), Some(&b"value-3"[..]));
    }
    assert!(log.size_in_bytes() < size_before);
    drop(log);
    let log = Log::open(dir.path(), compact_config(0), 0).unwrap();
    assert_eq!(records(&log).len(), 12);
}

#[test]
fn the_producers_last_batch_is_kept_empty() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), compact_config(0), 0).unwrap();
    let first = log
        .append_as_leader(
            keyed_batch(&[(1, Some(1)), (2, Some(1))], 5, Some((77, 10))),
            0,
            0,
        )
        .unwrap();
    // An older batch of the same producer, then a batch of another producer, emptied too.
    log.append_as_leader(keyed_batch(&[(3, Some(1))], 5, Some((88, 0))), 0, 0)
        .unwrap();
    log.append_as_leader(
        keyed_batch(&[(1, Some(2)), (2, Some(2)), (3, Some(2))], 6, None),
        0,
        0,
    )
    .unwrap();
    log.roll().unwrap();
    let mut map = OffsetMap::new(24 * 100, 0.9).unwrap();
    let plan = log
        .plan_clean(0, 0, i64::MAX, HashMap::from([(77, first.last_offset)]))
        .unwrap();
    let cleaned = plan.execute(&mut map, 4096, &mut |_| true).unwrap();
    assert!(matches!(
        log.commit_clean(cleaned).unwrap(),
        CleanCommit::Swapped { .. }
    ));
    let batches: Vec<RecordBatch> = read_all(&log);
    assert_eq!(batches.len(), 2, "{batches:?}");
    let empty = &batches[0];
    assert_eq!(empty.record_count(), 0);
    assert_eq!((empty.base_offset(), empty.last_offset()), (0, 1));
    assert_eq!((empty.producer_id(), empty.base_sequence()), (77, 10));
    assert_eq!(empty.last_sequence(), 11);
    assert_eq!(empty.max_timestamp(), 5);
    empty.validate_crc().unwrap();
    assert_eq!(batches[1].base_offset(), 3);
    assert_eq!(batches[1].record_count(), 3);
    assert_eq!(records(&log).len(), 3);
}

#[test]
fn a_tombstone_gets_a_delete_horizon_then_goes() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), compact_config(500), 0).unwrap();
    log.append_as_leader(keyed_batch(&[(1, Some(1)), (2, Some(1))], 5, None), 0, 0)
        .unwrap();
    log.append_as_leader(keyed_batch(&[(1, None), (2, Some(2))], 6, None), 0, 0)
        .unwrap();
    log.roll().unwrap();
    let mut map = OffsetMap::new(24 * 100, 0.9).unwrap();
    let first = clean(&mut log, &mut map, 1_000, 0).unwrap();
    let CleanCommit::Swapped {
        next_dirty_offset,
        stats,
    } = log.commit_clean(first).unwrap()
    else {
        panic!("discarded")
    };
    assert_eq!(stats.messages_read, 4);
    assert_eq!(stats.messages_written, 2);
    let batches = read_all(&log);
    // The first batch is all superseded and not the last of its segment group: gone.
    assert_eq!(batches.len(), 1);
    let b = &batches[0];
    assert_eq!(b.delete_horizon_ms(), Some(1_500));
    assert_eq!(b.base_timestamp(), 1_500);
    assert_eq!(b.max_timestamp(), 6);
    assert_eq!((b.base_offset(), b.last_offset()), (2, 3));
    let recs: Vec<_> = b.records().unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(recs.len(), 2);
    assert_eq!(
        recs[0].timestamp(b),
        6,
        "record timestamps survive the new base"
    );
    assert!(recs[0].value.is_none());
    // New dirty data, cleaned before the horizon: the tombstone stays, the batch as it was.
    log.append_as_leader(keyed_batch(&[(3, Some(1))], 7, None), 0, 0)
        .unwrap();
    log.roll().unwrap();
    let c = clean(&mut log, &mut map, 1_400, next_dirty_offset).unwrap();
    let CleanCommit::Swapped {
        next_dirty_offset, ..
    } = log.commit_clean(c).unwrap()
    else {
        panic!()
    };
    assert_eq!(read_all(&log)[0].as_bytes(), b.as_bytes());
    // After the horizon the next clean drops it.
    log.append_as_leader(keyed_batch(&[(4, Some(1))], 8, None), 0, 0)
        .unwrap();
    log.roll().unwrap();
    let c = clean(&mut log, &mut map, 1_500, next_dirty_offset).unwrap();
    log.commit_clean(c).unwrap();
    let got = records(&log);
    assert!(!got.contains_key(&2), "{got:?}");
    assert!(got.contains_key(&3));
}

#[test]
fn a_clean_overtaken_by_a_truncation_is_discarded() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), compact_config(0), 0).unwrap();
    for v in 0..20u16 {
        log.append_as_leader(keyed_batch(&[(1, Some(v))], 0, None), 0, 0)
            .unwrap();
    }
    log.roll().unwrap();
    log.append_as_leader(keyed_batch(&[(2, Some(0))], 0, None), 0, 0)
        .unwrap();
    let mut map = OffsetMap::new(24 * 100, 0.9).unwrap();
    let cleaned = clean(&mut log, &mut map, 0, 0).unwrap();
    log.truncate_to(5).unwrap();
    let before = records(&log);
    assert_eq!(log.commit_clean(cleaned).unwrap(), CleanCommit::Discarded);
    assert_eq!(records(&log), before);
    let leftovers = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".cleaned")
        })
        .count();
    assert_eq!(leftovers, 0);
}

#[test]
fn a_delete_only_or_compact_only_policy_gates_the_two_cleanups() {
    let dir = tempdir();
    let mut config = compact_config(0);
    config.retention_ms = 1;
    let mut log = Log::open(dir.path(), config.clone(), 0).unwrap();
    for v in 0..20u16 {
        log.append_as_leader(keyed_batch(&[(1, Some(v))], 0, None), 0, 0)
            .unwrap();
    }
    log.roll().unwrap();
    assert_eq!(
        log.apply_retention(1_000_000, i64::MAX).unwrap(),
        0,
        "compact keeps"
    );
    config.cleanup_policy = CleanupPolicy::DELETE;
    log.set_config(config).unwrap();
    assert!(log.plan_clean(0, 0, i64::MAX, HashMap::new()).is_none());
    let cleanable = log.cleanable(0, None, i64::MAX).unwrap();
    assert_eq!(cleanable.first_dirty_offset, 0);
    assert!(cleanable.cleanable_ratio > 0.99);
    assert!(
        log.apply_retention(1_000_000, i64::MAX).unwrap() > 0,
        "delete deletes"
    );
}

/// A batch whose CRC does not match is never rebuilt (a fresh CRC would launder the bit
/// flip into data that reads as valid): the clean fails with the file and position named,
/// and the log is left as it was.
#[test]
fn a_corrupt_batch_fails_the_clean_instead_of_being_rewritten() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), compact_config(0), 0).unwrap();
    for v in 0..20u16 {
        log.append_as_leader(keyed_batch(&[(1, Some(v))], 0, None), 0, 0)
            .unwrap();
    }
    log.roll().unwrap();
    log.append_as_leader(keyed_batch(&[(2, Some(0))], 0, None), 0, 0)
        .unwrap();
    let first = dir.path().join("00000000000000000000.log");
    let mut bytes = std::fs::read(&first).unwrap();
    // The byte before the last of the first batch is in its record's value (the last is
    // the headers count): flip it, so the batch still parses but its CRC does not match.
    let first_batch_len = 12 + u32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize;
    bytes[first_batch_len - 2] ^= 0x01;
    std::fs::write(&first, &bytes).unwrap();
    let mut map = OffsetMap::new(24 * 100, 0.9).unwrap();
    let plan = log.plan_clean(0, 0, i64::MAX, HashMap::new()).unwrap();
    let err = plan.execute(&mut map, 4096, &mut |_| true).unwrap_err();
    assert!(
        err.to_string().contains("00000000000000000000.log"),
        "the error names the file: {err}"
    );
    assert_eq!(
        std::fs::read(&first).unwrap(),
        bytes,
        "the segment is untouched"
    );
}
