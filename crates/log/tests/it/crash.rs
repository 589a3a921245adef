//! Crash tests: a log whose active segment was cut at every byte position of its last
//! batch, or had bytes flipped in its tail, reopens to exactly the valid prefix, never
//! panics, and its leader-epoch cache agrees with what it kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kraftd_log::{EpochEntry, Log, LEADER_EPOCH_CHECKPOINT_FILE};
use kraftd_protocol::records::RecordBatch;

use crate::common::*;

/// The epoch cache a log holding exactly `batches` must have.
pub fn expected_epochs(batches: &[RecordBatch]) -> Vec<EpochEntry> {
    let mut out: Vec<EpochEntry> = Vec::new();
    for b in batches {
        let epoch = b.partition_leader_epoch();
        if epoch >= 0 && out.last().is_none_or(|e| e.epoch < epoch) {
            out.push(EpochEntry {
                epoch,
                start_offset: b.base_offset(),
            });
        }
    }
    out
}

struct Fixture {
    files: BTreeMap<String, Vec<u8>>,
    active: String,
    batches: Vec<RecordBatch>,
    /// The checkpoint as it was before the last batch's epoch was recorded.
    older_checkpoint: Vec<u8>,
}

/// A log of several segments whose last batch (in the active segment) starts a new epoch.
fn fixture() -> Fixture {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), small_config(), 0).unwrap();
    for i in 0..25 {
        log.append_as_leader(
            producer_batch(1 + i % 3, 25, i as i64 * 10),
            (i / 8) as i32,
            0,
        )
        .unwrap();
    }
    let older_checkpoint = std::fs::read(dir.path().join(LEADER_EPOCH_CHECKPOINT_FILE)).unwrap();
    log.append_as_leader(producer_batch(4, 25, 999), 7, 0)
        .unwrap();
    assert!(log.segment_count() >= 3);
    let active = format!("{:020}.log", log.segment_base_offsets().last().unwrap());
    let batches = read_all(&log);
    log.close().unwrap();
    Fixture {
        files: snapshot_dir(dir.path()),
        active,
        batches,
        older_checkpoint,
    }
}

fn snapshot_dir(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().into_string().unwrap(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn restore(files: &BTreeMap<String, Vec<u8>>, dir: &Path) -> PathBuf {
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    dir.to_path_buf()
}

fn check_reopened(dir: &Path, expected: &[RecordBatch]) -> Log {
    let mut log = Log::open(dir, small_config(), 0).unwrap();
    let got = read_all(&log);
    assert_eq!(got.len(), expected.len());
    for (g, e) in got.iter().zip(expected) {
        assert_eq!(g.as_bytes(), e.as_bytes());
    }
    let end = expected.last().map_or(0, |b| b.next_offset());
    assert_eq!(log.log_end_offset(), end);
    assert_eq!(log.flushed_offset(), end);
    assert_eq!(log.epoch_entries(), expected_epochs(expected).as_slice());
    // The recovered log takes appends again, continuing from its end.
    let info = log.append_as_leader(producer_batch(1, 5, 0), 9, 0).unwrap();
    assert_eq!(info.first_offset, end);
    log
}

#[test]
fn cut_at_every_byte_of_the_last_batch() {
    let f = fixture();
    let last = f.batches.last().unwrap();
    let len = f.files[&f.active].len();
    let start = len - last.size_in_bytes();
    for cut in start..=len {
        let dir = tempdir();
        let mut files = f.files.clone();
        files.get_mut(&f.active).unwrap().truncate(cut);
        restore(&files, dir.path());
        let kept = if cut == len {
            &f.batches[..]
        } else {
            &f.batches[..f.batches.len() - 1]
        };
        let log = check_reopened(dir.path(), kept);
        let cut_bytes = (cut - start) as u64 * u64::from(cut != len);
        assert_eq!(
            log.stats().recovery_truncated_bytes,
            cut_bytes,
            "cut at {cut}"
        );
        assert_eq!(log.stats().recovery_truncations, u64::from(cut_bytes > 0));
    }
}

#[test]
fn stale_checkpoint_is_reconciled_with_the_active_segment() {
    let f = fixture();
    let dir = tempdir();
    let mut files = f.files.clone();
    files.insert(
        LEADER_EPOCH_CHECKPOINT_FILE.to_string(),
        f.older_checkpoint.clone(),
    );
    restore(&files, dir.path());
    check_reopened(dir.path(), &f.batches);
    // A missing checkpoint is rebuilt for the active segment at least.
    let dir = tempdir();
    let mut files = f.files.clone();
    files.remove(LEADER_EPOCH_CHECKPOINT_FILE);
    restore(&files, dir.path());
    let log = Log::open(dir.path(), small_config(), 0).unwrap();
    assert_eq!(log.latest_epoch(), Some(7));
}

/// A small deterministic generator (xorshift), so failures replay.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn flipped_bytes_in_the_tail_cut_the_log_at_the_damaged_batch() {
    let f = fixture();
    let active_bytes = &f.files[&f.active];
    // The batches of the active segment, with their positions in it.
    let in_active: Vec<(usize, &RecordBatch)> = {
        let total: usize = active_bytes.len();
        let mut pos = total;
        let mut v: Vec<(usize, &RecordBatch)> = f
            .batches
            .iter()
            .rev()
            .take_while(|b| {
                if pos == 0 {
                    return false;
                }
                pos -= b.size_in_bytes();
                true
            })
            .map(|b| (0, b))
            .collect();
        v.reverse();
        let mut p = 0;
        for e in v.iter_mut() {
            e.0 = p;
            p += e.1.size_in_bytes();
        }
        assert_eq!(p, total);
        v
    };
    let first_in_active = f.batches.len() - in_active.len();
    let tail_start = in_active[in_active.len().saturating_sub(2)].0;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..300 {
        let pos = tail_start + rng.below(active_bytes.len() - tail_start);
        let bit = 1u8 << rng.below(8);
        let dir = tempdir();
        let mut files = f.files.clone();
        files.get_mut(&f.active).unwrap()[pos] ^= bit;
        restore(&files, dir.path());
        let (k, (batch_pos, _)) = in_active
            .iter()
            .enumerate()
            .rev()
            .find(|(_, (p, _))| *p <= pos)
            .unwrap();
        let rel = pos - batch_pos;
        let damaged = first_in_active + k;
        if (12..16).contains(&rel) {
            // The partition leader epoch is outside the CRC: a flip that raises it cannot
            // be detected, one that lowers it below its predecessor can. Either way the
            // log must be a sound prefix whose epoch cache agrees with it (a raised epoch
            // is kept, and cuts the next batch, whose epoch is then lower).
            let log = Log::open(dir.path(), small_config(), 0).unwrap();
            let got = read_all(&log);
            assert!(got.len() >= damaged && got.len() <= f.batches.len());
            for (g, e) in got.iter().zip(&f.batches) {
                assert_eq!(g.as_bytes()[16..], e.as_bytes()[16..]);
            }
            assert_eq!(log.epoch_entries(), expected_epochs(&got).as_slice());
            continue;
        }
        check_reopened(dir.path(), &f.batches[..damaged]);
    }
}
