//! Transactions on the log, checked against a model: interleaved transactional producers
//! committing and aborting, the last stable offset after each step, the aborted
//! transactions of ranges, the `.txnindex` files byte for byte in Kafka's format; crash and
//! reopen, truncation, and cleaning (Kafka's transaction rules: committed records compacted
//! by key, aborted data removed, markers removed once their data is gone and their delete
//! horizon passed, producers' last batches kept, a read_committed reader seeing the same
//! latest value per key before and after, through a crash and reopen).

use std::collections::{BTreeMap, HashMap, HashSet};
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

/// What a read_committed consumer sees (Kafka's fetcher): the batches below `lso`, the
/// aborted transactions of `collect_aborted_transactions`, a transactional batch skipped
/// while its producer is between an aborted transaction's first offset and its ABORT
/// marker. Returns the latest record per key: key → (offset, value).
fn read_committed(log: &Log, lso: i64) -> BTreeMap<Bytes, (i64, Option<Bytes>)> {
    let mut aborted = log.collect_aborted_transactions(log.log_start_offset(), lso);
    aborted.sort_by_key(|t| t.first_offset);
    let mut aborted: std::collections::VecDeque<AbortedTxn> = aborted.into();
    let mut aborting: HashSet<i64> = HashSet::new();
    let mut out = BTreeMap::new();
    for b in read_all(log) {
        if b.base_offset() >= lso {
            break;
        }
        while aborted
            .front()
            .is_some_and(|t| t.first_offset <= b.last_offset())
        {
            aborting.insert(aborted.pop_front().unwrap().producer_id);
        }
        let records: Vec<_> = b.records().unwrap().map(|r| r.unwrap()).collect();
        if b.is_control() {
            let is_abort = records
                .first()
                .and_then(|r| r.key.as_ref())
                .is_some_and(|k| k[2..4] == [0, 0]);
            if is_abort {
                aborting.remove(&b.producer_id());
            }
            continue;
        }
        if b.is_transactional() && aborting.contains(&b.producer_id()) {
            continue;
        }
        for r in records {
            let offset = r.offset(&b);
            if offset < lso {
                out.insert(r.key.clone().unwrap(), (offset, r.value.clone()));
            }
        }
    }
    out
}

/// Every data record left in the log: (offset, key).
fn data_records(log: &Log) -> Vec<(i64, Bytes)> {
    read_all(log)
        .iter()
        .filter(|b| !b.is_control())
        .flat_map(|b| {
            b.records()
                .unwrap()
                .map(|r| {
                    let r = r.unwrap();
                    (r.offset(b), r.key.clone().unwrap())
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The owner's `last_batches` (as the broker's cleaner builds it).
fn last_batches(log: &Log) -> HashMap<i64, i64> {
    log.producer_state()
        .active_producers()
        .filter(|e| e.last_data_offset() >= 0)
        .map(|e| (e.producer_id, e.last_data_offset()))
        .collect()
}

/// One whole clean at `now`, the dirty section from the log start.
fn clean_all(log: &mut Log, now: i64) {
    let end = log.log_end_offset();
    let mut map = OffsetMap::new(24 * 10_000, 0.9).unwrap();
    let plan = log
        .plan_clean(now, 0, end, last_batches(log))
        .expect("something to clean");
    let cleaned = plan.execute(&mut map, 4096, &mut |_| true).unwrap();
    log.commit_clean(cleaned).unwrap();
}

fn index_entries(log: &Log) -> Vec<AbortedTxn> {
    log.aborted_txn_index()
        .into_iter()
        .flat_map(|(_, e)| e)
        .collect()
}

/// Per producer, the last sequence its state holds.
fn last_seqs(log: &Log) -> BTreeMap<i64, (i16, i32)> {
    log.producer_state()
        .active_producers()
        .map(|e| (e.producer_id, (e.producer_epoch, e.last_seq())))
        .collect()
}

#[test]
fn transactions_cleaner_compacts_committed_and_removes_aborted_data_then_markers() {
    for seed in [2024, 7, 99] {
        let dir = tempdir();
        let config = LogConfig {
            cleanup_policy: CleanupPolicy::COMPACT,
            delete_retention_ms: 100,
            ..small_config()
        };
        let mut log = open(dir.path(), config.clone());
        let ops = run(&mut log, dir.path(), seed, 150);
        // Close every transaction so the whole log is stable, then roll past it.
        let m = model(&ops, log.log_end_offset());
        for pid in m.open.keys() {
            log.append_as_leader(marker(*pid, false, 0, 0), 0, 0)
                .unwrap();
        }
        log.roll().unwrap();
        let end = log.log_end_offset();
        log.producer_state_mut().on_high_watermark_updated(end);
        let m = model(&ops, end);
        assert!(!m.aborted.is_empty());
        let visible = read_committed(&log, end);
        let seqs = last_seqs(&log);
        let markers_before = read_all(&log).iter().filter(|b| b.is_control()).count();

        // Clean 1: aborted data goes, committed data is compacted by key (one record per
        // key, the visible latest); every marker stays (its data was read), and so does
        // every index entry.
        clean_all(&mut log, 0);
        assert_eq!(read_committed(&log, end), visible, "seed {seed}");
        let left: BTreeMap<Bytes, i64> = data_records(&log)
            .into_iter()
            .map(|(o, k)| (k, o))
            .collect();
        assert_eq!(data_records(&log).len(), left.len(), "one record per key");
        assert_eq!(
            left,
            visible
                .iter()
                .map(|(k, (o, _))| (k.clone(), *o))
                .collect::<BTreeMap<_, _>>()
        );
        assert_eq!(
            read_all(&log).iter().filter(|b| b.is_control()).count(),
            markers_before
        );
        assert_eq!(index_entries(&log), m.aborted);

        // Clean 2: markers whose transaction had nothing left (before this clean: a batch
        // read in the clean counts, even if it goes now, as Kafka's) get a delete horizon;
        // the index keeps only the aborted transactions with a batch read (a producer's or
        // a segment's last, kept emptied by clean 1).
        let before2 = read_all(&log);
        clean_all(&mut log, 10);
        assert_eq!(read_committed(&log, end), visible, "seed {seed}");
        let after = read_all(&log);
        let has_batch = |t: &AbortedTxn| {
            before2.iter().any(|b| {
                !b.is_control()
                    && b.producer_id() == t.producer_id
                    && t.first_offset <= b.base_offset()
                    && b.last_offset() < t.last_offset
            })
        };
        let expected: Vec<AbortedTxn> =
            m.aborted.iter().filter(|t| has_batch(t)).copied().collect();
        assert!(
            expected.len() < m.aborted.len(),
            "some aborted txn had nothing left"
        );
        assert_eq!(index_entries(&log), expected);
        // Markers: a marker without data of its transaction before it (since its
        // producer's previous marker) has the horizon 10 + 100; one with data has none.
        let txn_has_data = |batches: &[kraftd_protocol::records::RecordBatch], i: usize| {
            let pid = batches[i].producer_id();
            batches[..i]
                .iter()
                .rev()
                .filter(|b| b.producer_id() == pid)
                .take_while(|b| !b.is_control())
                .any(|b| b.is_transactional())
        };
        let mut horizons = 0;
        for (i, b) in before2.iter().enumerate().filter(|(_, b)| b.is_control()) {
            let b = after
                .iter()
                .find(|a| a.base_offset() == b.base_offset())
                .expect("clean 2 removes no marker");
            if txn_has_data(&before2, i) {
                assert_eq!(b.delete_horizon_ms(), None, "marker at {}", b.base_offset());
            } else {
                assert_eq!(
                    b.delete_horizon_ms(),
                    Some(110),
                    "marker at {}",
                    b.base_offset()
                );
                horizons += 1;
            }
        }
        assert!(horizons > 0);
        assert_eq!(
            after.iter().filter(|b| b.is_control()).count(),
            markers_before
        );

        // Clean 3, before the horizon: every marker stays; after it: the markers of empty
        // transactions go, but a producer's or a segment's last batch (kept empty).
        clean_all(&mut log, 109);
        assert_eq!(
            read_all(&log).iter().filter(|b| b.is_control()).count(),
            markers_before
        );
        let before3 = read_all(&log);
        clean_all(&mut log, 110);
        assert_eq!(read_committed(&log, end), visible, "seed {seed}");
        let after = read_all(&log);
        let segment_ends: Vec<i64> = {
            let bases = log.segment_base_offsets();
            bases[1..].to_vec()
        };
        let mut removed = 0;
        for (i, b) in before3.iter().enumerate().filter(|(_, b)| b.is_control()) {
            let kept = after.iter().find(|a| a.base_offset() == b.base_offset());
            if txn_has_data(&before3, i) {
                let kept = kept.expect("a marker with data of its transaction stays");
                assert_eq!(kept.as_bytes(), b.as_bytes());
            } else if b.delete_horizon_ms().is_none_or(|h| h > 110) {
                // Its data went after clean 2 (a segment's last batch then): it gets its
                // horizon now.
                let kept = kept.expect("a marker before its horizon stays");
                assert_eq!(kept.record_count(), 1);
                assert_eq!(
                    kept.delete_horizon_ms(),
                    Some(b.delete_horizon_ms().unwrap_or(210))
                );
            } else if let Some(kept) = kept {
                assert!(
                    segment_ends.contains(&kept.next_offset()),
                    "marker at {} kept only as a segment's last batch",
                    kept.base_offset()
                );
                assert_eq!(kept.record_count(), 0, "kept emptied");
            } else {
                removed += 1;
            }
        }
        assert!(removed > 0, "seed {seed}");
        // The index: the aborted transactions with a batch read by this clean.
        let expected: Vec<AbortedTxn> = m
            .aborted
            .iter()
            .filter(|t| {
                before3.iter().any(|b| {
                    !b.is_control()
                        && b.producer_id() == t.producer_id
                        && t.first_offset <= b.base_offset()
                        && b.last_offset() < t.last_offset
                })
            })
            .copied()
            .collect();
        assert_eq!(index_entries(&log), expected);
        // Producers' last batches survive: the state rebuilt from the cleaned log (no
        // snapshot) knows every producer's last sequence.
        assert_eq!(last_seqs(&log), seqs);

        // Crash (no clean close) and reopen: the same log, index and producers.
        let before_crash = read_all(&log);
        drop(log);
        for f in std::fs::read_dir(dir.path()).unwrap() {
            let p = f.unwrap().path();
            if p.extension().is_some_and(|e| e == "snapshot") {
                std::fs::remove_file(p).unwrap();
            }
        }
        let log = open(dir.path(), config);
        assert_eq!(
            read_all(&log)
                .iter()
                .map(|b| b.as_bytes().clone())
                .collect::<Vec<_>>(),
            before_crash
                .iter()
                .map(|b| b.as_bytes().clone())
                .collect::<Vec<_>>()
        );
        assert_eq!(index_entries(&log), expected);
        assert_eq!(log.first_unstable_offset(), None);
        assert_eq!(read_committed(&log, end), visible, "seed {seed}");
        assert_eq!(last_seqs(&log), seqs, "seed {seed}");
    }
}

/// A hand-written history with every case: a committed transaction whose data is compacted
/// away (its marker goes after the horizon), an aborted transaction that is its producer's
/// last batch (kept emptied, with its marker and index entry), an aborted transaction of a
/// producer that wrote on (its data, then its marker and entry, go), a committed
/// transaction with data left (its marker stays).
#[test]
fn transactions_cleaner_markers_follow_their_data() {
    let dir = tempdir();
    let config = LogConfig {
        cleanup_policy: CleanupPolicy::COMPACT,
        delete_retention_ms: 100,
        segment_bytes: 1 << 20,
        ..small_config()
    };
    let mut log = open(dir.path(), config.clone());
    let mut append = |b: BytesMut| log.append_as_leader(b, 0, 0).unwrap();
    append(data_batch(1, 0, true, 1, 1, 0)); // 0: k1 (pid 1, committed)
    append(marker(1, false, 0, 0)); // 1
    append(data_batch(2, 0, true, 1, 1, 0)); // 2: k1 (pid 2, aborted, its last)
    append(marker(2, true, 0, 0)); // 3
    append(data_batch(1, 1, true, 1, 2, 0)); // 4: k2 (pid 1, committed)
    append(marker(1, false, 0, 0)); // 5
    append(data_batch(3, 0, false, 1, 1, 0)); // 6: k1 (pid 3, idempotent)
    append(data_batch(4, 0, true, 1, 3, 0)); // 7: k3 (pid 4, aborted)
    append(marker(4, true, 0, 0)); // 8
    append(data_batch(4, 1, true, 1, 3, 0)); // 9: k3 (pid 4, committed)
    append(marker(4, false, 0, 0)); // 10
    append(data_batch(5, 0, false, 1, 9, 0)); // 11: k9
    log.roll().unwrap();
    let end = log.log_end_offset();
    assert_eq!(end, 12);
    log.producer_state_mut().on_high_watermark_updated(end);
    let visible = read_committed(&log, end);
    let offsets = |log: &Log| -> Vec<(i64, i32, Option<i64>)> {
        read_all(log)
            .iter()
            .map(|b| (b.base_offset(), b.record_count(), b.delete_horizon_ms()))
            .collect()
    };
    let entry = |pid, first, last, lso| AbortedTxn {
        producer_id: pid,
        first_offset: first,
        last_offset: last,
        last_stable_offset: lso,
    };
    let e2 = entry(2, 2, 3, 4);
    let e4 = entry(4, 7, 8, 9);
    assert_eq!(index_entries(&log), vec![e2, e4]);

    clean_all(&mut log, 0);
    assert_eq!(
        offsets(&log),
        vec![
            (1, 1, None),
            (2, 0, None),
            (3, 1, None),
            (4, 1, None),
            (5, 1, None),
            (6, 1, None),
            (8, 1, None),
            (9, 1, None),
            (10, 1, None),
            (11, 1, None)
        ]
    );
    assert_eq!(index_entries(&log), vec![e2, e4]);
    assert_eq!(read_committed(&log, end), visible);

    clean_all(&mut log, 10);
    assert_eq!(
        offsets(&log),
        vec![
            (1, 1, Some(110)),
            (2, 0, None),
            (3, 1, None),
            (4, 1, None),
            (5, 1, None),
            (6, 1, None),
            (8, 1, Some(110)),
            (9, 1, None),
            (10, 1, None),
            (11, 1, None)
        ]
    );
    assert_eq!(index_entries(&log), vec![e2]);
    assert_eq!(read_committed(&log, end), visible);

    clean_all(&mut log, 110);
    assert_eq!(
        offsets(&log),
        vec![
            (2, 0, None),
            (3, 1, None),
            (4, 1, None),
            (5, 1, None),
            (6, 1, None),
            (9, 1, None),
            (10, 1, None),
            (11, 1, None)
        ]
    );
    assert_eq!(index_entries(&log), vec![e2]);
    assert_eq!(read_committed(&log, end), visible);
    log.close().unwrap();
    let log = open(dir.path(), config);
    assert_eq!(index_entries(&log), vec![e2]);
    assert_eq!(read_committed(&log, end), visible);
    assert_eq!(log.first_unstable_offset(), None);
}

/// An aborted transaction whose data is in the cleanable range but whose marker (and
/// `.txnindex` entry) is in the active segment: its records are not mapped, so they never
/// hide an older committed value, and they are removed.
#[test]
fn transactions_cleaner_sees_aborts_whose_marker_is_past_the_cleanable_range() {
    let dir = tempdir();
    let config = LogConfig {
        cleanup_policy: CleanupPolicy::COMPACT,
        segment_bytes: 1 << 20,
        ..small_config()
    };
    let mut log = open(dir.path(), config);
    log.append_as_leader(data_batch(5, 0, false, 1, 1, 0), 0, 0)
        .unwrap(); // 0: k1, committed
    log.append_as_leader(data_batch(1, 0, true, 2, 1, 0), 0, 0)
        .unwrap(); // 1-2: k1, k2 (aborted)
    log.append_as_leader(data_batch(5, 1, false, 1, 3, 0), 0, 0)
        .unwrap(); // 3: k3
    log.roll().unwrap();
    log.append_as_leader(marker(1, true, 0, 0), 0, 0).unwrap(); // 4, in the active segment
    let end = log.log_end_offset();
    log.producer_state_mut().on_high_watermark_updated(end);
    let visible = read_committed(&log, end);
    assert_eq!(visible.len(), 2, "k1 (offset 0) and k3");
    let mut map = OffsetMap::new(24 * 1000, 0.9).unwrap();
    let plan = log.plan_clean(0, 0, end, last_batches(&log)).unwrap();
    assert_eq!(plan.first_uncleanable_offset(), 4);
    let cleaned = plan.execute(&mut map, 4096, &mut |_| true).unwrap();
    log.commit_clean(cleaned).unwrap();
    assert_eq!(read_committed(&log, end), visible);
    let after = read_all(&log);
    // The aborted batch is its producer's last: kept, emptied.
    let aborted = after.iter().find(|b| b.base_offset() == 1).unwrap();
    assert_eq!(aborted.record_count(), 0);
    assert_eq!(
        data_records(&log)
            .iter()
            .map(|(o, _)| *o)
            .collect::<Vec<_>>(),
        vec![0, 3]
    );
}

/// Kafka's third case of a producer's last batch: a producer whose state holds no data
/// batch (its epoch was bumped by an abort marker) keeps its markers of that epoch, emptied
/// once discardable.
#[test]
fn transactions_cleaner_keeps_the_marker_holding_a_producers_epoch() {
    let dir = tempdir();
    let config = LogConfig {
        cleanup_policy: CleanupPolicy::COMPACT,
        delete_retention_ms: 100,
        segment_bytes: 1 << 20,
        ..small_config()
    };
    let mut log = open(dir.path(), config.clone());
    log.append_as_leader(data_batch(7, 0, true, 1, 1, 0), 0, 0)
        .unwrap(); // 0: pid 7 epoch 0
    let m = ControlRecord::Abort(EndTxnMarker {
        coordinator_epoch: 0,
    });
    let mut b = RecordBatchBuilder::new(0)
        .producer(7, 1, -1)
        .transactional(true)
        .control(true);
    b.append(
        0,
        Some(m.key()),
        Some(m.encode_value().unwrap()),
        Vec::new(),
    )
    .unwrap();
    log.append_as_leader(BytesMut::from(&b.build().unwrap()[..]), 0, 0)
        .unwrap(); // 1: the abort, epoch bumped to 1
    log.append_as_leader(data_batch(5, 0, false, 1, 9, 0), 0, 0)
        .unwrap(); // 2
    log.roll().unwrap();
    let end = log.log_end_offset();
    log.producer_state_mut().on_high_watermark_updated(end);
    let entry = log.producer_state().last_entry(7).unwrap();
    assert_eq!((entry.producer_epoch, entry.last_data_offset()), (1, -1));
    for now in [0, 10, 110, 220] {
        clean_all(&mut log, now);
    }
    let after = read_all(&log);
    let marker = after.iter().find(|b| b.base_offset() == 1).expect("kept");
    assert!(marker.is_control());
    assert_eq!(marker.record_count(), 0, "emptied");
    assert_eq!(marker.producer_epoch(), 1);
    assert!(!after.iter().any(|b| b.base_offset() == 0));
    assert!(index_entries(&log).is_empty());
}
