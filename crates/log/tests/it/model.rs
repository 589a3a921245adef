//! Model-based property test: random sequences of appends (leader and follower), reads,
//! truncations, rolls, retention, flushes, log start increments (DeleteRecords) and reopens
//! against the log and a simple in-memory model (a list of batches, the first segment's
//! base offset and the log start offset), compared after every step.

use bytes::{Bytes, BytesMut};
use kraftd_log::{Log, LogConfig, LogError};
use kraftd_protocol::records::{Batches, RecordBatch, RecordBatchMut, TimestampType};
use proptest::prelude::*;

use crate::common::*;
use crate::crash::expected_epochs;

#[derive(Debug, Clone)]
enum Op {
    /// One produce request: batches of (records, value length, first timestamp).
    Leader {
        batches: Vec<(usize, usize, i64)>,
        bump: i32,
    },
    /// A leader append with an epoch below the log's latest: refused, nothing changes.
    StaleLeader,
    /// A follower append that does not start at the log end: refused.
    FollowerGap {
        gap: i64,
    },
    Follower {
        batches: Vec<(usize, i64)>,
        bump: i32,
        cut_tail: bool,
    },
    Read {
        offset: u16,
        max_bytes: u16,
        hw: u16,
    },
    Truncate {
        offset: u16,
    },
    TruncateFully {
        delta: u8,
    },
    Roll,
    RetentionBytes {
        bytes: u16,
    },
    RetentionTime {
        age: u16,
        hw: u16,
    },
    DeleteBefore {
        offset: u16,
    },
    /// DeleteRecords: the log start moves forward, bounded by a high watermark.
    IncrementStart {
        offset: u16,
        hw: u16,
    },
    Flush,
    /// The process dies and the machine loses part of what was not flushed: the active
    /// segment is cut somewhere at or after the flushed offset's position, then reopened.
    Crash {
        keep: u16,
    },
    Reopen {
        clean: bool,
    },
    TimeLookup {
        ts: u16,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (proptest::collection::vec((1usize..5, 0usize..120, 0i64..5000), 1..4), 0i32..2)
            .prop_map(|(batches, bump)| Op::Leader { batches, bump }),
        1 => Just(Op::StaleLeader),
        1 => prop_oneof![-3i64..0, 1i64..3].prop_map(|gap| Op::FollowerGap { gap }),
        3 => (proptest::collection::vec((1usize..4, 0i64..5000), 1..4), 0i32..2, any::<bool>())
            .prop_map(|(batches, bump, cut_tail)| Op::Follower { batches, bump, cut_tail }),
        4 => (any::<u16>(), 1u16..3000, any::<u16>())
            .prop_map(|(offset, max_bytes, hw)| Op::Read { offset, max_bytes, hw }),
        2 => any::<u16>().prop_map(|offset| Op::Truncate { offset }),
        1 => any::<u8>().prop_map(|delta| Op::TruncateFully { delta }),
        1 => Just(Op::Roll),
        1 => (0u16..4000).prop_map(|bytes| Op::RetentionBytes { bytes }),
        1 => (0u16..7000, any::<u16>()).prop_map(|(age, hw)| Op::RetentionTime { age, hw }),
        1 => any::<u16>().prop_map(|offset| Op::DeleteBefore { offset }),
        2 => (any::<u16>(), any::<u16>()).prop_map(|(offset, hw)| Op::IncrementStart { offset, hw }),
        1 => Just(Op::Flush),
        2 => any::<bool>().prop_map(|clean| Op::Reopen { clean }),
        2 => any::<u16>().prop_map(|keep| Op::Crash { keep }),
        2 => (0u16..5200).prop_map(|ts| Op::TimeLookup { ts }),
    ]
}

struct Model {
    /// The first segment's base offset: `batches` start here.
    start: i64,
    /// The log start offset, at or above `start` (inside a batch after DeleteRecords).
    log_start: i64,
    batches: Vec<RecordBatch>,
}

impl Model {
    fn end(&self) -> i64 {
        self.batches.last().map_or(self.start, |b| b.next_offset())
    }

    /// An offset around the live range (a little below the start and past the end).
    fn pick(&self, x: u16) -> i64 {
        let span = self.end() - self.start + 5;
        (self.start - 2 + i64::from(x) % span).max(0)
    }

    fn drop_below(&mut self, new_start: i64) {
        assert!(new_start >= self.start);
        assert!(
            new_start == self.end() || self.batches.iter().any(|b| b.base_offset() == new_start),
            "log start {new_start} is not a batch boundary"
        );
        self.batches.retain(|b| b.base_offset() >= new_start);
        self.start = new_start;
        self.log_start = self.log_start.max(new_start);
    }

    /// The batches a reader sees: from the one holding the log start on.
    fn visible(&self) -> Vec<RecordBatch> {
        self.batches
            .iter()
            .filter(|b| b.last_offset() >= self.log_start)
            .cloned()
            .collect()
    }

    /// The leader-epoch cache the log should hold: the visible batches' epochs, the first
    /// starting at the log start (Kafka's `truncateFromStart`).
    fn epochs(&self) -> Vec<kraftd_log::EpochEntry> {
        let mut epochs = expected_epochs(&self.visible());
        if let Some(first) = epochs.first_mut() {
            first.start_offset = first.start_offset.max(self.log_start);
        }
        epochs
    }

    /// An epoch no lower than any batch's in the log, visible or not (epochs never go
    /// down in a real log; the cache alone may have forgotten them after DeleteRecords).
    fn next_epoch(&self, log: &Log) -> i32 {
        self.batches
            .iter()
            .map(|b| b.partition_leader_epoch())
            .chain(log.latest_epoch())
            .max()
            .unwrap_or(0)
    }
}

fn check(log: &Log, model: &Model) {
    assert_eq!(log.log_start_offset(), model.log_start);
    assert!(model.start <= model.log_start && model.log_start <= model.end());
    assert_eq!(log.log_end_offset(), model.end());
    assert!(log.flushed_offset() <= log.log_end_offset());
    // Rolled segments are flushed: only the active one can hold unflushed data.
    assert!(log.flushed_offset() >= *log.segment_base_offsets().last().unwrap());
    let got = read_all(log);
    let visible = model.visible();
    assert_eq!(got.len(), visible.len());
    for (g, e) in got.iter().zip(&visible) {
        assert_eq!(g.as_bytes(), e.as_bytes());
    }
    let size: usize = model.batches.iter().map(|b| b.size_in_bytes()).sum();
    assert_eq!(log.size_in_bytes(), size as u64);
    let bases = log.segment_base_offsets();
    assert_eq!(bases[0], model.start);
    for b in &bases {
        assert!(*b == model.end() || model.batches.iter().any(|x| x.base_offset() == *b));
    }
    let epochs = model.epochs();
    assert_eq!(log.epoch_entries(), epochs.as_slice());
    if let Some(last) = epochs.last() {
        assert_eq!(
            log.end_offset_for_epoch(last.epoch),
            Some((last.epoch, model.end()))
        );
    }
}

/// The log's configuration for one run.
#[derive(Debug, Clone)]
struct Setup {
    segment_bytes: u64,
    index_interval_bytes: u64,
    segment_ms: i64,
    log_append_time: bool,
    flush_each: bool,
}

fn run(ops: Vec<Op>, setup: Setup) {
    crate::handles::tiny_pool();
    let dir = tempdir();
    let segment_bytes = setup.segment_bytes;
    let config = LogConfig {
        segment_bytes,
        index_interval_bytes: setup.index_interval_bytes,
        segment_ms: setup.segment_ms,
        retention_ms: -1,
        flush_messages: if setup.flush_each { 1 } else { i64::MAX },
        message_timestamp_type: if setup.log_append_time {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        },
        ..LogConfig::default()
    };
    // The clock advances 7 ms per operation, so segment.ms rolls happen.
    let mut now = 0i64;
    let mut log = Log::open(dir.path(), config.clone(), now).unwrap();
    let mut model = Model {
        start: 0,
        log_start: 0,
        batches: Vec::new(),
    };
    for op in ops {
        now += 7;
        match op {
            Op::Leader { batches, bump } => {
                let epoch = model.next_epoch(&log) + bump;
                let mut input = BytesMut::new();
                let mut expected = Vec::new();
                let mut next = model.end();
                for (records, value_len, ts) in batches {
                    let b = producer_batch(records, value_len, ts);
                    let mut stamped = b.clone();
                    let mut m = RecordBatchMut::new(&mut stamped).unwrap();
                    m.set_base_offset(next);
                    m.set_partition_leader_epoch(epoch);
                    if setup.log_append_time {
                        m.set_max_timestamp(TimestampType::LogAppendTime, now);
                    }
                    next += records as i64;
                    expected.push(RecordBatch::parse(stamped.freeze()).unwrap());
                    input.extend_from_slice(&b);
                }
                let result = log.append_as_leader(input.clone(), epoch, now);
                if input.len() as u64 > segment_bytes {
                    assert!(
                        matches!(result, Err(LogError::AppendTooLarge { .. })),
                        "{result:?}"
                    );
                } else {
                    let info = result.unwrap();
                    assert_eq!(info.first_offset, model.end());
                    assert_eq!(info.last_offset, next - 1);
                    // One produce request lands in one segment.
                    let bases = log.segment_base_offsets();
                    assert!(bases.iter().all(|&b| b <= model.end() || b >= next));
                    model.batches.extend(expected);
                }
            }
            Op::StaleLeader => {
                if let Some(latest) = log.latest_epoch().filter(|&e| e > 0) {
                    let r = log.append_as_leader(producer_batch(1, 1, 0), latest - 1, 0);
                    assert!(matches!(r, Err(LogError::EpochDecreased { .. })), "{r:?}");
                }
            }
            Op::FollowerGap { gap } => {
                let base = model.end() + gap;
                if base >= 0 {
                    let epoch = log.latest_epoch().unwrap_or(0);
                    let r = log.append_as_follower(leader_batch(base, epoch, 1, 0), 0);
                    assert!(
                        matches!(r, Err(LogError::NonContiguousOffset { .. })),
                        "{r:?}"
                    );
                }
            }
            Op::Follower {
                batches,
                bump,
                cut_tail,
            } => {
                let epoch = model.next_epoch(&log) + bump;
                let mut data = BytesMut::new();
                let mut next = model.end();
                let mut expected = Vec::new();
                for (n, ts) in batches {
                    let b = leader_batch(next, epoch, n, ts);
                    next += n as i64;
                    data.extend_from_slice(&b);
                    expected.push(RecordBatch::parse(b).unwrap());
                }
                if cut_tail {
                    let extra = leader_batch(next, epoch, 2, 0);
                    data.extend_from_slice(&extra[..extra.len() / 2]);
                }
                let info = log.append_as_follower(data.freeze(), now).unwrap();
                assert_eq!(info.first_offset, model.end());
                assert_eq!(info.last_offset, next - 1);
                model.batches.extend(expected);
            }
            Op::Read {
                offset,
                max_bytes,
                hw,
            } => {
                let offset = model.pick(offset);
                let hw = model.pick(hw);
                let max_bytes = usize::from(max_bytes);
                let result = log.read(offset, max_bytes, hw);
                if offset < model.log_start || offset > model.end() {
                    assert!(result.unwrap_err().is_offset_out_of_range());
                    continue;
                }
                let r = result.unwrap();
                let got: Vec<RecordBatch> =
                    Batches::new(r.bytes.clone()).map(|b| b.unwrap()).collect();
                let first = model.batches.iter().position(|b| b.last_offset() >= offset);
                let upper = hw.min(model.end());
                let Some(first) = first.filter(|&i| model.batches[i].last_offset() < upper) else {
                    assert!(got.is_empty());
                    continue;
                };
                assert!(!got.is_empty(), "at least one batch");
                let mut total = 0;
                for (i, g) in got.iter().enumerate() {
                    let e = &model.batches[first + i];
                    assert_eq!(g.as_bytes(), e.as_bytes());
                    assert!(e.last_offset() < upper);
                    total += g.size_in_bytes();
                }
                assert!(got.len() == 1 || total <= max_bytes);
                assert_eq!(r.next_offset, got.last().unwrap().next_offset());
                // It stopped for a reason: the byte limit, the bound, the end, or a segment.
                if let Some(next) = model.batches.get(first + got.len()) {
                    assert!(
                        total + next.size_in_bytes() > max_bytes
                            || next.last_offset() >= upper
                            || log.segment_base_offsets().contains(&next.base_offset()),
                        "read stopped early"
                    );
                }
            }
            Op::Truncate { offset } => {
                let offset = model.pick(offset);
                log.truncate_to(offset).unwrap();
                if offset < model.log_start {
                    model.start = offset;
                    model.log_start = offset;
                    model.batches.clear();
                } else {
                    model.batches.retain(|b| b.last_offset() < offset);
                    model.log_start = model.log_start.min(model.end());
                }
            }
            Op::TruncateFully { delta } => {
                let offset = (model.end() + i64::from(delta) - 5).max(0);
                log.truncate_fully_and_start_at(offset).unwrap();
                model.start = offset;
                model.log_start = offset;
                model.batches.clear();
            }
            Op::Roll => log.roll().unwrap(),
            Op::RetentionBytes { bytes } => {
                let before = log.segment_base_offsets();
                let c = LogConfig {
                    retention_bytes: i64::from(bytes),
                    ..config.clone()
                };
                log.set_config(c).unwrap();
                // Segments a roll left entirely below the log start go whatever the limit.
                let breached = before
                    .windows(2)
                    .take_while(|w| w[1] <= model.log_start)
                    .count();
                let n = log.apply_retention(0, model.end()).unwrap();
                log.set_config(config.clone()).unwrap();
                let start = log.segment_base_offsets()[0];
                assert!(before.contains(&start));
                assert!(n >= breached);
                if n > breached {
                    assert!(log.size_in_bytes() >= u64::from(bytes));
                }
                model.drop_below(start);
            }
            Op::RetentionTime { age, hw } => {
                let now = 6000;
                let hw = model.pick(hw);
                let c = LogConfig {
                    retention_ms: i64::from(age),
                    ..config.clone()
                };
                log.set_config(c).unwrap();
                log.apply_retention(now, hw).unwrap();
                log.set_config(config.clone()).unwrap();
                let start = log.segment_base_offsets()[0];
                for b in model
                    .batches
                    .iter()
                    .filter(|b| b.base_offset() < start && b.last_offset() >= model.log_start)
                {
                    assert!(now - b.max_timestamp() > i64::from(age));
                    assert!(b.last_offset() < hw);
                }
                model.drop_below(start);
            }
            Op::DeleteBefore { offset } => {
                let offset = model.pick(offset);
                let before = log.segment_base_offsets();
                log.delete_segments_before(offset).unwrap();
                let start = log.segment_base_offsets()[0];
                assert!(before.contains(&start));
                assert!(start <= offset.max(model.start));
                model.drop_below(start);
            }
            Op::IncrementStart { offset, hw } => {
                let offset = model.pick(offset);
                let hw = model.pick(hw);
                let result = log.maybe_increment_log_start_offset(offset, hw);
                if offset > hw.min(model.end()) {
                    assert!(result.unwrap_err().is_offset_out_of_range());
                } else if offset <= model.log_start {
                    assert!(!result.unwrap());
                } else {
                    assert!(result.unwrap());
                    model.log_start = offset;
                    model.drop_below(log.segment_base_offsets()[0]);
                    // No segment but the active one is left entirely below the start (a
                    // roll may leave one later; the next retention pass deletes it).
                    let bases = log.segment_base_offsets();
                    assert!(bases.get(1).is_none_or(|&b| b > offset));
                }
            }
            Op::Flush => {
                log.flush().unwrap();
                assert_eq!(log.flushed_offset(), model.end());
            }
            Op::Reopen { clean } => {
                // A clean close lets the owner skip the active segment's recovery.
                if clean {
                    log.close().unwrap();
                    log = Log::open_after_clean_shutdown(dir.path(), config.clone(), now).unwrap();
                    assert_eq!(log.stats().segments_recovered, 0);
                } else {
                    drop(log);
                    log = Log::open(dir.path(), config.clone(), now).unwrap();
                }
                assert_eq!(log.stats().recovery_truncations, 0);
                // Open deletes segments a roll left entirely below the log start.
                let first = log.segment_base_offsets()[0];
                assert!(first <= model.log_start);
                model.drop_below(first);
            }
            Op::Crash { keep } => {
                let flushed = log.flushed_offset();
                let active_base = *log.segment_base_offsets().last().unwrap();
                drop(log);
                let active: Vec<usize> = model
                    .batches
                    .iter()
                    .filter(|b| b.base_offset() >= active_base)
                    .map(|b| b.size_in_bytes())
                    .collect();
                let durable: usize = model
                    .batches
                    .iter()
                    .filter(|b| b.base_offset() >= active_base && b.last_offset() < flushed)
                    .map(|b| b.size_in_bytes())
                    .sum();
                let total: usize = active.iter().sum();
                let cut = durable + usize::from(keep) % (total - durable + 1);
                let path = dir.path().join(format!("{active_base:020}.log"));
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .unwrap()
                    .set_len(cut as u64)
                    .unwrap();
                let mut end = 0;
                let mut kept = 0;
                for size in &active {
                    if end + size > cut {
                        break;
                    }
                    end += size;
                    kept += 1;
                }
                let drop_from = model.batches.len() - active.len() + kept;
                model.batches.truncate(drop_from);
                log = Log::open(dir.path(), config.clone(), now).unwrap();
                if model.end() < model.log_start {
                    // Recovery cut below the stored log start: the log restarts there.
                    model.start = model.log_start;
                    model.batches.clear();
                }
                let first = log.segment_base_offsets()[0];
                assert!(first <= model.log_start);
                model.drop_below(first);
                assert_eq!(log.stats().recovery_truncated_bytes, (cut - end) as u64);
            }
            Op::TimeLookup { ts } => {
                let ts = i64::from(ts);
                let expected = model.batches.iter().find_map(|b| {
                    b.records()
                        .unwrap()
                        .map(|r| r.unwrap())
                        .filter(|r| r.offset(b) >= model.log_start)
                        .find_map(|r| (r.timestamp(b) >= ts).then(|| (r.offset(b), r.timestamp(b))))
                });
                assert_eq!(log.offset_for_timestamp(ts).unwrap(), expected);
            }
        }
        check(&log, &model);
        if setup.flush_each {
            assert_eq!(log.flushed_offset(), log.log_end_offset());
        }
    }
    if std::env::var("MODEL_DEBUG").is_ok() {
        eprintln!(
            "end={} start={} segments={} batches={}",
            model.end(),
            model.start,
            log.segment_count(),
            model.batches.len()
        );
    }
}

/// Operations per case: 60, or `MODEL_OPS` for deeper soaks.
fn max_ops() -> usize {
    std::env::var("MODEL_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60)
}

proptest! {
    // 48 cases keep the suite fast; PROPTEST_CASES=5000 for a soak.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn log_matches_model(
        ops in proptest::collection::vec(op(), 1..max_ops()),
        segment_bytes in 200u64..1500,
        index_interval_bytes in 0u64..300,
        segment_ms in prop_oneof![Just(i64::MAX / 2), 20i64..400],
        log_append_time in any::<bool>(),
        flush_each in any::<bool>(),
    ) {
        run(ops, Setup { segment_bytes, index_interval_bytes, segment_ms, log_append_time, flush_each });
    }
}

#[test]
fn empty_follower_append_is_a_no_op() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), LogConfig::default(), 0).unwrap();
    let info = log.append_as_follower(Bytes::new(), 0).unwrap();
    assert_eq!(
        (info.first_offset, info.last_offset, info.batch_count),
        (0, -1, 0)
    );
}
