//! Transactions on the log, checked against a model: interleaved transactional producers
//! committing and aborting, the last stable offset after each step, the aborted
//! transactions of ranges, the `.txnindex` files byte for byte in Kafka's format; crash and
//! reopen, truncation, and cleaning.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use bytes::{Bytes, BytesMut};
use kraftd_log::cleaner::OffsetMap;
use kraftd_log::config::CleanupPolicy;
use kraftd_log::producer_state::AbortedTxn;
use kraftd_log::{Log, LogConfig};
use kraftd_protocol::messages::EndTxnMarker;
use kraftd_protocol::records::{ControlRecord, RecordBatchBuilder};

use crate::common::{read_all, small_config, tempdir};

/// One appended batch, as the model remembers it.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// A data batch of `pid` (transactional or not) at `offset`, `n` records.
    Data { pid: i64, txn: bool, offset: i64 },
    /// A marker of `pid` at `offset`.
    Marker { pid: i64, abort: bool, offset: i64 },
}

/// What the model says after a prefix of the ops.
#[derive(Debug, Default)]
struct Model {
    open: BTreeMap<i64, i64>, // pid -> first offset
    aborted: Vec<AbortedTxn>,
}

fn model(ops: &[Op], end: i64) -> Model {
    let mut m = Model::default();
    for op in ops {
        match *op {
            Op::Data { pid, txn, offset } if offset < end && txn => {
                m.open.entry(pid).or_insert(offset);
            }
            Op::Marker { pid, abort, offset } if offset < end => {
                if let Some(first) = m.open.remove(&pid) {
                    if abort {
                        let lso = m.open.values().min().copied().unwrap_or(offset + 1);
                        m.aborted.push(AbortedTxn {
                            producer_id: pid,
                            first_offset: first,
                            last_offset: offset,
                            last_stable_offset: lso,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    m
}

/// Kafka's collection, over the flat list of entries in marker order.
fn expected_collect(aborted: &[AbortedTxn], start: i64, upper: i64) -> Vec<AbortedTxn> {
    let mut out = Vec::new();
    for t in aborted {
        if t.last_offset >= start && t.first_offset < upper {
            out.push(*t);
        }
        if t.last_stable_offset >= upper {
            break;
        }
    }
    out
}

fn data_batch(pid: i64, seq: i32, txn: bool, n: i64, key: u32, ts: i64) -> BytesMut {
    let mut b = RecordBatchBuilder::new(0)
        .producer(pid, 0, seq)
        .transactional(txn);
    for i in 0..n {
        b.append(
            ts,
            Some(Bytes::from(format!("k{}", key + i as u32))),
            Some(Bytes::from(format!("p{pid}-s{seq}-{i}"))),
            Vec::new(),
        )
        .unwrap();
    }
    BytesMut::from(&b.build().unwrap()[..])
}

fn marker(pid: i64, abort: bool, coordinator_epoch: i32, ts: i64) -> BytesMut {
    let m = EndTxnMarker { coordinator_epoch };
    let record = if abort {
        ControlRecord::Abort(m)
    } else {
        ControlRecord::Commit(m)
    };
    let mut b = RecordBatchBuilder::new(0)
        .producer(pid, 0, -1)
        .transactional(true)
        .control(true);
    b.append(
        ts,
        Some(record.key()),
        Some(record.encode_value().unwrap()),
        Vec::new(),
    )
    .unwrap();
    BytesMut::from(&b.build().unwrap()[..])
}

/// Kafka's AbortedTxn layout, written out by hand.
fn kafka_entry(t: &AbortedTxn) -> Vec<u8> {
    let mut v = vec![0u8, 0u8]; // version 0
    for x in [
        t.producer_id,
        t.first_offset,
        t.last_offset,
        t.last_stable_offset,
    ] {
        v.extend_from_slice(&x.to_be_bytes());
    }
    assert_eq!(v.len(), 34);
    v
}

/// Every `.txnindex` file must hold exactly the model's entries whose marker is in that
/// segment, in Kafka's bytes; segments without entries have no file.
fn check_txn_index_files(dir: &Path, log: &Log, aborted: &[AbortedTxn]) {
    let bases = log.segment_base_offsets();
    for (i, base) in bases.iter().enumerate() {
        let end = bases.get(i + 1).copied().unwrap_or(i64::MAX);
        let expected: Vec<u8> = aborted
            .iter()
            .filter(|t| t.last_offset >= *base && t.last_offset < end)
            .flat_map(kafka_entry)
            .collect();
        let path = dir.join(format!("{base:020}.txnindex"));
        let actual = std::fs::read(&path).unwrap_or_default();
        assert_eq!(actual, expected, "{}", path.display());
    }
    let files = std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_str()
                .unwrap()
                .ends_with(".txnindex")
        })
        .count();
    let with_entries = bases
        .iter()
        .enumerate()
        .filter(|(i, b)| {
            let end = bases.get(i + 1).copied().unwrap_or(i64::MAX);
            aborted
                .iter()
                .any(|t| t.last_offset >= **b && t.last_offset < end)
        })
        .count();
    assert_eq!(files, with_entries, "no stray .txnindex files");
}

fn check(dir: &Path, log: &mut Log, ops: &[Op]) {
    let end = log.log_end_offset();
    let m = model(ops, end);
    // The HW at the log end: every completed transaction is replicated.
    log.producer_state_mut().on_high_watermark_updated(end);
    let first_open = m.open.values().min().copied();
    assert_eq!(log.first_unstable_offset(), first_open, "ops {ops:?}");
    assert_eq!(log.last_stable_offset(end), first_open.unwrap_or(end));
    assert_eq!(log.last_stable_offset(0), 0);
    for start in (0..end).step_by(7) {
        for upper in [start + 1, start + 10, end] {
            assert_eq!(
                log.collect_aborted_transactions(start, upper),
                expected_collect(&m.aborted, start, upper),
                "collect({start}, {upper})"
            );
        }
    }
    let index: Vec<AbortedTxn> = log
        .aborted_txn_index()
        .into_iter()
        .flat_map(|(_, e)| e)
        .collect();
    assert_eq!(index, m.aborted);
    check_txn_index_files(dir, log, &m.aborted);
}

/// Appends a random history, checking after each step; returns the ops.
fn run(log: &mut Log, dir: &Path, seed: u64, steps: usize) -> Vec<Op> {
    let mut rng = seed;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut ops = Vec::new();
    let mut seqs: HashMap<i64, i32> = HashMap::new();
    let mut open: HashMap<i64, bool> = HashMap::new();
    for step in 0..steps {
        let pid = 1 + (next() % 3) as i64;
        let roll = next() % 4;
        let ts = step as i64;
        let offset = log.log_end_offset();
        if roll == 0 && open.get(&pid).copied().unwrap_or(false) {
            let abort = next() % 2 == 0;
            log.append_as_leader(marker(pid, abort, 0, ts), 0, ts)
                .unwrap();
            open.insert(pid, false);
            ops.push(Op::Marker { pid, abort, offset });
        } else if roll == 1 {
            // A non-transactional idempotent producer between the transactions.
            let seq = seqs.entry(99).or_default();
            log.append_as_leader(data_batch(99, *seq, false, 2, 1000, ts), 0, ts)
                .unwrap();
            *seq += 2;
            ops.push(Op::Data {
                pid: 99,
                txn: false,
                offset,
            });
        } else {
            let n = 1 + (next() % 3) as i64;
            let seq = seqs.entry(pid).or_default();
            let key = (next() % 20) as u32;
            log.append_as_leader(data_batch(pid, *seq, true, n, key, ts), 0, ts)
                .unwrap();
            *seq += n as i32;
            open.insert(pid, true);
            ops.push(Op::Data {
                pid,
                txn: true,
                offset,
            });
        }
        if step == steps / 2 {
            log.take_producer_snapshot().unwrap();
        }
        check(dir, log, &ops);
    }
    ops
}

fn open(dir: &Path, config: LogConfig) -> Log {
    let mut log = Log::open(dir, config, 0).unwrap();
    log.load_producer_state(0).unwrap();
    // The owner tells the producer state where the HW is once it knows it.
    let end = log.log_end_offset();
    log.producer_state_mut().on_high_watermark_updated(end);
    log
}

#[test]
fn transactions_model_lso_aborted_and_txn_index() {
    for seed in [1u64, 7, 42, 1234] {
        let dir = tempdir();
        let mut log = open(dir.path(), small_config());
        let ops = run(&mut log, dir.path(), seed, 80);
        assert!(log.segment_count() > 2, "the history spans segments");
        assert!(
            !model(&ops, log.log_end_offset()).aborted.is_empty(),
            "seed {seed} aborts something"
        );
        // A clean reopen rebuilds the same state.
        log.close().unwrap();
        let mut log = open(dir.path(), small_config());
        check(dir.path(), &mut log, &ops);
    }
}

#[test]
fn transactions_crash_cut_rebuilds_txn_index_and_producer_state() {
    for seed in [3u64, 5, 11] {
        let dir = tempdir();
        let mut log = open(dir.path(), small_config());
        let ops = run(&mut log, dir.path(), seed, 60);
        let active = *log.segment_base_offsets().last().unwrap();
        drop(log);
        // Cut the active segment at every few bytes from its end, reopening each time.
        let path = dir.path().join(format!("{active:020}.log"));
        let len = std::fs::metadata(&path).unwrap().len();
        for cut in [1u64, 30, 90, 200] {
            let Some(new_len) = len.checked_sub(cut) else {
                break;
            };
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .unwrap()
                .set_len(new_len)
                .unwrap();
            let mut log = open(dir.path(), small_config());
            check(dir.path(), &mut log, &ops);
            drop(log);
        }
        // Losing the active segment's txn index entirely: rebuilt by the replay.
        let txn = dir.path().join(format!("{active:020}.txnindex"));
        let _ = std::fs::remove_file(&txn);
        for snapshot in std::fs::read_dir(dir.path()).unwrap() {
            let p = snapshot.unwrap().path();
            if p.extension().is_some_and(|e| e == "snapshot") {
                std::fs::remove_file(p).unwrap();
            }
        }
        let mut log = open(dir.path(), small_config());
        check(dir.path(), &mut log, &ops);
    }
}

#[test]
fn transactions_truncation_removes_txn_index_entries_above_the_cut() {
    let dir = tempdir();
    let mut log = open(dir.path(), small_config());
    let ops = run(&mut log, dir.path(), 99, 80);
    let mut end = log.log_end_offset();
    while end > 4 {
        end = end * 2 / 3;
        log.truncate_to(end).unwrap();
        check(dir.path(), &mut log, &ops);
        end = log.log_end_offset();
    }
}

#[test]
fn transactions_coordinator_fenced_and_markers_complete_on_follower() {
    let dir = tempdir();
    let mut leader = open(dir.path(), small_config());
    leader
        .append_as_leader(data_batch(5, 0, true, 2, 0, 0), 0, 0)
        .unwrap();
    leader
        .append_as_leader(marker(5, true, 3, 1), 0, 1)
        .unwrap();
    let ps = leader.producer_state();
    assert_eq!(ps.last_entry(5).unwrap().coordinator_epoch, 3);
    assert_eq!(
        ps.check_end_txn(5, 0, 2).unwrap_err().error_code(),
        kraftd_protocol::ErrorCode::TransactionCoordinatorFenced
    );
    // A follower replicating the leader's bytes ends in the same state.
    let fdir = tempdir();
    let mut follower = open(fdir.path(), small_config());
    let bytes = leader.read(0, 1 << 20, i64::MAX).unwrap().bytes;
    follower.append_as_follower(bytes, 0).unwrap();
    let end = follower.log_end_offset();
    follower.producer_state_mut().on_high_watermark_updated(end);
    assert_eq!(
        follower.aborted_txn_index(),
        leader.aborted_txn_index(),
        "the follower's .txnindex matches"
    );
    assert_eq!(follower.first_unstable_offset(), None);
}

#[test]
fn transactions_cleaner_drops_aborted_data_keeps_committed_and_markers() {
    let dir = tempdir();
    let config = LogConfig {
        cleanup_policy: CleanupPolicy::COMPACT,
        ..small_config()
    };
    let mut log = open(dir.path(), config.clone());
    let ops = run(&mut log, dir.path(), 2024, 120);
    // Close every transaction so the whole log is stable, then roll past it.
    let m = model(&ops, log.log_end_offset());
    for pid in m.open.keys() {
        log.append_as_leader(marker(*pid, false, 0, 0), 0, 0)
            .unwrap();
    }
    log.roll().unwrap();
    let end = log.log_end_offset();
    log.producer_state_mut().on_high_watermark_updated(end);
    let aborted = log.aborted_txn_index();
    let aborted: Vec<AbortedTxn> = aborted.into_iter().flat_map(|(_, e)| e).collect();
    assert!(!aborted.is_empty());
    let is_aborted = |pid: i64, offset: i64| {
        aborted
            .iter()
            .any(|t| t.producer_id == pid && t.first_offset <= offset && offset <= t.last_offset)
    };
    let before = read_all(&log);
    let mut map = OffsetMap::new(24 * 10_000, 0.9).unwrap();
    let plan = log
        .plan_clean(0, 0, end, HashMap::new())
        .expect("something to clean");
    let cleaned = plan.execute(&mut map, 4096, &mut |_| true).unwrap();
    log.commit_clean(cleaned).unwrap();
    let after = read_all(&log);
    let last_of_segments: Vec<i64> = log.segment_base_offsets();
    let mut markers_before = 0;
    for b in &before {
        let kept = after.iter().any(|a| a.base_offset() == b.base_offset());
        if b.is_control() {
            markers_before += 1;
            assert!(kept, "marker at {} kept", b.base_offset());
        } else if b.is_transactional() && !is_aborted(b.producer_id(), b.base_offset()) {
            assert!(kept, "committed batch at {} kept", b.base_offset());
        }
    }
    let aborted_left = after
        .iter()
        .filter(|a| a.is_transactional() && !a.is_control())
        .filter(|a| is_aborted(a.producer_id(), a.base_offset()))
        .filter(|a| !last_of_segments.contains(&a.next_offset()))
        .count();
    assert!(
        aborted_left <= 1,
        "aborted data is gone but a segment's last batch: {aborted_left} left"
    );
    assert_eq!(
        after.iter().filter(|a| a.is_control()).count(),
        markers_before
    );
    // The txn index survived the swap, and a reopen agrees.
    let index: Vec<AbortedTxn> = log
        .aborted_txn_index()
        .into_iter()
        .flat_map(|(_, e)| e)
        .collect();
    assert_eq!(index, aborted);
    log.close().unwrap();
    let log = open(dir.path(), config);
    let index: Vec<AbortedTxn> = log
        .aborted_txn_index()
        .into_iter()
        .flat_map(|(_, e)| e)
        .collect();
    assert_eq!(index, aborted);
    assert_eq!(log.first_unstable_offset(), None);
}
