//! Damage in the middle of an older (sealed) segment: open checks only each sealed
//! segment's tail (from its last index entry), so damage further in is found by the read
//! that reaches it, which fails with [`LogError::Corrupt`] naming the file and the damaged
//! batch's position: never garbage, never a silently shortened answer.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use kraftd_log::{Log, LogError};
use kraftd_protocol::records::{Batches, RecordBatch};

use crate::common::*;

/// A closed log of several sealed segments; returns the path of the second segment's
/// `.log` and its batches.
fn sealed_fixture(dir: &Path) -> (PathBuf, Vec<RecordBatch>) {
    let mut log = Log::open(dir, small_config(), 0).unwrap();
    let mut next = 0;
    for i in 0..60 {
        log.append_as_follower(leader_batch(next, 0, 2, i), 0)
            .unwrap();
        next = log.log_end_offset();
    }
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 4, "{bases:?}");
    log.close().unwrap();
    let path = dir.join(format!("{:020}.log", bases[1]));
    let bytes = Bytes::from(std::fs::read(&path).unwrap());
    let batches: Vec<RecordBatch> = Batches::new(bytes).map(|b| b.unwrap()).collect();
    assert!(batches.len() >= 5);
    (path, batches)
}

fn damage(path: &Path, at: usize, bytes: &[u8]) {
    let mut data = std::fs::read(path).unwrap();
    data[at..at + bytes.len()].copy_from_slice(bytes);
    std::fs::write(path, data).unwrap();
}

fn assert_corrupt_at(result: Result<impl std::fmt::Debug, LogError>, path: &Path, position: usize) {
    match result {
        Err(LogError::Corrupt {
            path: p,
            position: at,
            reason,
        }) => {
            assert_eq!(p, path, "{reason}");
            assert_eq!(at, position as u64, "{reason}");
        }
        other => panic!("expected corruption at {position}, got {other:?}"),
    }
}

/// The ways a batch's framing can be broken: (name, byte offset in the batch, bytes).
const DAMAGE: &[(&str, usize, &[u8])] = &[
    // The magic byte (offset 16) is not 2.
    ("bad magic", 16, &[1]),
    // batchLength (offset 8) below the 49-byte minimum.
    ("length below the minimum", 8, &[0, 0, 0, 10]),
    // batchLength running far past the segment's end.
    ("length past the segment end", 8, &[0x7f, 0, 0, 0]),
];

#[test]
fn broken_framing_mid_segment_is_an_error_for_every_read_reaching_it() {
    for &(what, at, bytes) in DAMAGE {
        let dir = tempdir();
        let (path, sealed) = sealed_fixture(dir.path());
        // A batch in the middle: not the first, and before the tail open re-checks.
        let victim = &sealed[sealed.len() / 2];
        damage(&path, victim.position() + at, bytes);
        let log = Log::open(dir.path(), small_config(), 0)
            .unwrap_or_else(|e| panic!("{what}: open checks only the tail: {e}"));
        // Reading the damaged batch, or from an earlier batch of the segment with room
        // for it, fails at the damaged batch.
        // `max_bytes` ending right after the damaged batch makes the read stop short of
        // the segment's end: the damage must still not pass for "the next batch did not
        // fit".
        for from in [victim, &sealed[0], &sealed[1]] {
            let just_enough = victim.position() + victim.size_in_bytes() - from.position();
            for max_bytes in [1 << 20, just_enough] {
                assert_corrupt_at(
                    log.read(from.base_offset(), max_bytes, i64::MAX),
                    &path,
                    victim.position(),
                );
            }
        }
        // A read that stops before the damage is fine (it never reached it).
        let r = log.read(sealed[0].base_offset(), 1, i64::MAX).unwrap();
        assert_eq!(r.bytes.as_ref(), sealed[0].as_bytes());
        // The full check names the same batch.
        assert_corrupt_at(log.verify(), &path, victim.position());
        // Reading the whole log from the start stops with the error, never skips.
        let mut offset = log.log_start_offset();
        let err = loop {
            match log.read(offset, 4096, i64::MAX) {
                Ok(r) => {
                    assert!(!r.bytes.is_empty());
                    for b in batches(&r.bytes) {
                        assert!(b.validate_crc().is_ok(), "{what}: garbage returned");
                    }
                    offset = r.next_offset;
                }
                Err(e) => break e,
            }
        };
        assert!(offset <= victim.base_offset(), "{what}: skipped the damage");
        assert_corrupt_at(Err::<(), _>(err), &path, victim.position());
    }
}

#[test]
fn broken_framing_in_a_sealed_segments_last_batch_fails_open() {
    for &(what, at, bytes) in DAMAGE {
        let dir = tempdir();
        let (path, sealed) = sealed_fixture(dir.path());
        let last = sealed.last().unwrap();
        damage(&path, last.position() + at, bytes);
        let err = Log::open(dir.path(), small_config(), 0).map(|_| ());
        match err {
            Err(LogError::Corrupt {
                path: p, position, ..
            }) => {
                assert_eq!(p, path, "{what}");
                assert!(position <= last.position() as u64, "{what}: {position}");
            }
            other => panic!("{what}: expected corruption, got {other:?}"),
        }
    }
}

#[test]
fn a_misplaced_index_entry_is_an_error_not_a_misread() {
    let dir = tempdir();
    let (path, sealed) = sealed_fixture(dir.path());
    let index = path.with_extension("index");
    let mut entries = std::fs::read(&index).unwrap();
    assert!(
        entries.len() >= 16,
        "the fixture indexes the segment more than once"
    );
    // Point the first entry into the middle of a batch (keeping positions increasing).
    let pos = u32::from_be_bytes(entries[4..8].try_into().unwrap()) + 3;
    entries[4..8].copy_from_slice(&pos.to_be_bytes());
    std::fs::write(&index, entries).unwrap();
    let log = Log::open(dir.path(), small_config(), 0).unwrap();
    let rel = u32::from_be_bytes(std::fs::read(&index).unwrap()[..4].try_into().unwrap());
    let offset = sealed[0].base_offset() + i64::from(rel);
    match log.read(offset, 1 << 20, i64::MAX) {
        Err(LogError::Corrupt { path: p, .. }) => assert_eq!(p, path),
        other => panic!("expected corruption, got {other:?}"),
    }
}
