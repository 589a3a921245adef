//! Whatever the disk holds, opening the log never panics: random bytes in segments,
//! indexes and the epoch checkpoint give either a sound log or a typed error.

use bytes::BytesMut;
use kraftd_log::{Log, LEADER_EPOCH_CHECKPOINT_FILE};
use proptest::prelude::*;

use crate::common::*;

fn segment_bytes(base: i64, batches: usize, garbage: &[u8], flip: Option<usize>) -> Vec<u8> {
    let mut out = BytesMut::new();
    let mut next = base;
    for i in 0..batches {
        out.extend_from_slice(&leader_batch(next, (i / 2) as i32, 2, i as i64));
        next += 2;
    }
    let mut out = out.to_vec();
    out.extend_from_slice(garbage);
    if let Some(at) = flip {
        if !out.is_empty() {
            let at = at % out.len();
            out[at] ^= 0x5a;
        }
    }
    out
}

proptest! {
    // PROPTEST_CASES=20000 for a soak.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    #[test]
    fn open_never_panics_on_disk_content(
        first_batches in 0usize..6,
        second_base_skew in -3i64..3,
        second_batches in 0usize..6,
        garbage in proptest::collection::vec(any::<u8>(), 0..80),
        index_garbage in proptest::collection::vec(any::<u8>(), 0..40),
        flip_first in proptest::option::of(any::<usize>()),
        flip_second in proptest::option::of(any::<usize>()),
        checkpoint in prop_oneof![
            Just(None),
            Just(Some("0\n1\n0 0\n".to_string())),
            "[0-9 \n-]{0,30}".prop_map(Some),
        ],
    ) {
        let dir = tempdir();
        let first = segment_bytes(0, first_batches, &[], flip_first);
        let second_base = (first_batches as i64 * 2 + second_base_skew).max(0);
        let second = segment_bytes(second_base, second_batches, &garbage, flip_second);
        std::fs::write(dir.path().join("00000000000000000000.log"), &first).unwrap();
        std::fs::write(dir.path().join("00000000000000000000.index"), &index_garbage).unwrap();
        std::fs::write(dir.path().join("00000000000000000000.timeindex"), &index_garbage).unwrap();
        if second_base > 0 {
            std::fs::write(dir.path().join(format!("{second_base:020}.log")), &second).unwrap();
            std::fs::write(dir.path().join(format!("{second_base:020}.index")), &index_garbage).unwrap();
        }
        if let Some(text) = checkpoint {
            std::fs::write(dir.path().join(LEADER_EPOCH_CHECKPOINT_FILE), text).unwrap();
        }
        // The same files opened as if a clean-shutdown marker vouched for them (a marker
        // that lies): never a panic, and whatever opens reads back whole.
        let trusting = tempdir();
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), trusting.path().join(e.file_name())).unwrap();
        }
        if let Ok(log) = Log::open_after_clean_shutdown(trusting.path(), small_config(), 0) {
            let kept = read_all(&log);
            let end = kept.last().map_or(log.log_start_offset(), |b| b.next_offset());
            prop_assert_eq!(end, log.log_end_offset());
        }
        let Ok(mut log) = Log::open(dir.path(), small_config(), 0) else {
            return Ok(());
        };
        // Whatever was kept reads back whole and takes appends.
        let kept = read_all(&log);
        prop_assert_eq!(kept.last().map_or(log.log_start_offset(), |b| b.next_offset()), log.log_end_offset());
        // Older segments are trusted up to their last index entry (they were flushed when
        // rolled); the active one is fully re-validated. `verify` checks everything.
        let active_base = *log.segment_base_offsets().last().unwrap();
        for b in kept.iter().filter(|b| b.base_offset() >= active_base) {
            prop_assert!(b.validate_crc().is_ok());
        }
        let all_sound = kept.iter().all(|b| b.validate_crc().is_ok());
        prop_assert_eq!(log.verify().is_ok(), all_sound);
        let _ = log.offset_for_timestamp(1);
        let epoch = log.latest_epoch().unwrap_or(0);
        log.append_as_leader(producer_batch(1, 5, 0), epoch, 0).unwrap();
        let mid = (log.log_start_offset() + log.log_end_offset()) / 2;
        log.truncate_to(mid).unwrap();
    }
}
