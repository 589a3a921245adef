//! [`OffsetMap`]: Kafka's `SkimpyOffsetMap`, the cleaner's fixed-memory map from a key to
//! the latest offset it was written at in the dirty section of a log.
//!
//! Keys are not stored: a 16-byte digest stands for each, so an entry is 24 bytes (digest
//! and offset) whatever the key's size, and the memory given (a share of
//! `log.cleaner.dedupe.buffer.size`) fixes the number of slots up front. Collisions of
//! slots are resolved by probing (successive 4-byte words of the digest, then linear); the
//! map has no deletes. It takes at most `slots × log.cleaner.io.buffer.load.factor`
//! entries, then says it is full, and the cleaner stops mapping there and cleans what was
//! mapped (a log larger than the map is cleaned in several passes).
//!
//! The digest: Kafka uses MD5. Here it is SHA-256 cut to 16 bytes (the `sha2` crate is
//! already in the workspace, so no new dependency): the map is in memory only, so nothing
//! needs Kafka's exact digest, and a 128-bit prefix of SHA-256 is at least as
//! collision-resistant as MD5 (two keys sharing a digest would make the cleaner drop the
//! older one's latest value, so the digest must be strong, not just fast).

use sha2::{Digest, Sha256};

/// Bytes of a key's digest.
const HASH_BYTES: usize = 16;
/// Bytes one entry takes: the digest and the offset.
pub const BYTES_PER_ENTRY: usize = HASH_BYTES + 8;

/// Kafka's `log.cleaner.io.buffer.load.factor` default.
pub const DEFAULT_LOAD_FACTOR: f64 = 0.9;

/// A fixed-memory map from key digests to offsets (see the module docs).
#[derive(Clone)]
pub struct OffsetMap {
    /// `slots` entries of `digest (16) | offset + 1 (8, big-endian)`; an offset field of 0
    /// marks an empty slot (offsets are never negative, so `offset + 1` is never 0).
    table: Vec<u8>,
    slots: usize,
    max_entries: usize,
    entries: usize,
    latest_offset: i64,
    lookups: u64,
    probes: u64,
}

impl std::fmt::Debug for OffsetMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffsetMap")
            .field("slots", &self.slots)
            .field("max_entries", &self.max_entries)
            .field("entries", &self.entries)
            .field("latest_offset", &self.latest_offset)
            .finish()
    }
}

fn digest(key: &[u8]) -> [u8; HASH_BYTES] {
    let full = Sha256::digest(key);
    let mut out = [0u8; HASH_BYTES];
    out.copy_from_slice(&full[..HASH_BYTES]);
    out
}

impl OffsetMap {
    /// A map using `memory_bytes` (Kafka sizes it as `log.cleaner.dedupe.buffer.size /
    /// log.cleaner.threads`, at most `i32::MAX`) that takes up to `slots × load_factor`
    /// entries. `None` when that is not even one entry (Kafka refuses such a cleaner, as it
    /// could never make progress) or the load factor is not in (0, 1].
    pub fn new(memory_bytes: usize, load_factor: f64) -> Option<OffsetMap> {
        if !(load_factor > 0.0 && load_factor <= 1.0) {
            return None;
        }
        let slots = memory_bytes / BYTES_PER_ENTRY;
        let max_entries = (slots as f64 * load_factor) as usize;
        if max_entries < 1 {
            return None;
        }
        Some(OffsetMap {
            table: vec![0; slots * BYTES_PER_ENTRY],
            slots,
            max_entries,
            entries: 0,
            latest_offset: -1,
            lookups: 0,
            probes: 0,
        })
    }

    /// How many entries the memory holds.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// How many entries it takes before it is full: `slots × load factor`.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// Distinct keys put since the last [`OffsetMap::clear`].
    pub fn size(&self) -> usize {
        self.entries
    }

    /// Whether the map takes no more keys.
    pub fn is_full(&self) -> bool {
        self.entries >= self.max_entries
    }

    /// The share of the slots in use (Kafka's `bufferUtilization`).
    pub fn utilization(&self) -> f64 {
        self.entries as f64 / self.slots as f64
    }

    /// The highest offset mapped (or moved to by [`OffsetMap::update_latest_offset`]); -1
    /// when empty. Records above it were not seen by this map and are kept by the clean.
    pub fn latest_offset(&self) -> i64 {
        self.latest_offset
    }

    /// Moves the latest offset (past a batch without keys, or to a segment's end).
    pub fn update_latest_offset(&mut self, offset: i64) {
        self.latest_offset = offset;
    }

    /// The average number of probes per lookup minus one (Kafka's `collisionRate`).
    pub fn collision_rate(&self) -> f64 {
        if self.lookups == 0 {
            return 0.0;
        }
        (self.probes - self.lookups) as f64 / self.lookups as f64
    }

    /// Forgets every entry and the latest offset.
    pub fn clear(&mut self) {
        self.table.fill(0);
        self.entries = 0;
        self.latest_offset = -1;
        self.lookups = 0;
        self.probes = 0;
    }

    /// The slot of the `attempt`th probe: successive 4-byte words of the digest, then
    /// linear from the last word (Kafka's `positionOf`).
    fn slot_of(&mut self, hash: &[u8; HASH_BYTES], attempt: usize) -> usize {
        let word_at = attempt.min(HASH_BYTES - 4);
        let mut word = [0u8; 4];
        word.copy_from_slice(&hash[word_at..word_at + 4]);
        let linear = attempt.saturating_sub(HASH_BYTES - 4) as u64;
        self.probes += 1;
        ((u64::from(u32::from_be_bytes(word)) + linear) % self.slots as u64) as usize
    }

    fn entry(&self, slot: usize) -> (&[u8], u64) {
        let at = slot * BYTES_PER_ENTRY;
        let mut offset = [0u8; 8];
        offset.copy_from_slice(&self.table[at + HASH_BYTES..at + BYTES_PER_ENTRY]);
        (&self.table[at..at + HASH_BYTES], u64::from_be_bytes(offset))
    }

    /// Maps `key` to `offset` (a later put of the same key overwrites it) and makes
    /// `offset` the latest. Returns `false`, changing nothing, when the map is full: Kafka's
    /// cleaner checks fullness before each put, whether or not the key is new.
    pub fn put(&mut self, key: &[u8], offset: i64) -> bool {
        if self.is_full() || offset < 0 {
            return false;
        }
        self.lookups += 1;
        let hash = digest(key);
        let mut attempt = 0;
        loop {
            let slot = self.slot_of(&hash, attempt);
            let (stored, stored_offset) = self.entry(slot);
            let at = slot * BYTES_PER_ENTRY;
            if stored_offset == 0 || stored == hash {
                if stored_offset == 0 {
                    self.table[at..at + HASH_BYTES].copy_from_slice(&hash);
                    self.entries += 1;
                }
                self.table[at + HASH_BYTES..at + BYTES_PER_ENTRY]
                    .copy_from_slice(&(offset as u64 + 1).to_be_bytes());
                self.latest_offset = offset;
                return true;
            }
            // Never more than `slots` probes past the digest words: the map is never
            // completely full (max entries ≤ slots and a free slot is found linearly).
            attempt += 1;
        }
    }

    /// The offset `key` was last put at, if it was.
    pub fn get(&mut self, key: &[u8]) -> Option<i64> {
        self.lookups += 1;
        let hash = digest(key);
        let max_attempts = self.slots + HASH_BYTES - 4;
        for attempt in 0..max_attempts {
            let slot = self.slot_of(&hash, attempt);
            let (stored, stored_offset) = self.entry(slot);
            if stored_offset == 0 {
                return None;
            }
            if stored == hash {
                return Some(stored_offset as i64 - 1);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sized_from_memory_with_the_load_factor() {
        let m = OffsetMap::new(24 * 1000, 0.9).unwrap();
        assert_eq!(m.slots(), 1000);
        assert_eq!(m.max_entries(), 900);
        assert!(OffsetMap::new(23, 0.9).is_none());
        assert!(
            OffsetMap::new(24, 0.9).is_none(),
            "0.9 of one slot is no entry"
        );
        assert!(OffsetMap::new(24, 1.0).is_some());
        assert!(OffsetMap::new(2400, 0.0).is_none());
        assert!(OffsetMap::new(2400, f64::NAN).is_none());
    }

    #[test]
    fn latest_put_wins_and_misses_are_none() {
        let mut m = OffsetMap::new(24 * 100, 0.9).unwrap();
        assert_eq!(m.latest_offset(), -1);
        for i in 0..50i64 {
            assert!(m.put(format!("k{i}").as_bytes(), i));
        }
        assert!(m.put(b"k7", 70));
        assert_eq!(m.size(), 50);
        assert_eq!(m.latest_offset(), 70);
        assert_eq!(m.get(b"k7"), Some(70));
        assert_eq!(m.get(b"k8"), Some(8));
        assert_eq!(m.get(b"k0"), Some(0));
        assert_eq!(m.get(b"nope"), None);
        m.clear();
        assert_eq!(m.size(), 0);
        assert_eq!(m.get(b"k7"), None);
        assert_eq!(m.latest_offset(), -1);
    }

    #[test]
    fn reports_full_at_the_load_factor() {
        let mut m = OffsetMap::new(24 * 10, 0.9).unwrap();
        for i in 0..9i64 {
            assert!(m.put(&i.to_be_bytes(), i));
        }
        assert!(m.is_full());
        assert!(!m.put(b"another", 100));
        assert!(
            !m.put(&0i64.to_be_bytes(), 100),
            "full even for a known key, as Kafka"
        );
        assert_eq!(m.latest_offset(), 8);
        for i in 0..9i64 {
            assert_eq!(m.get(&i.to_be_bytes()), Some(i));
        }
    }

    #[test]
    fn a_completely_full_table_still_answers() {
        let mut m = OffsetMap::new(24 * 7, 1.0).unwrap();
        for i in 0..7i64 {
            assert!(m.put(&[i as u8; 3], i * 10));
        }
        for i in 0..7i64 {
            assert_eq!(m.get(&[i as u8; 3]), Some(i * 10));
        }
        assert_eq!(m.get(b"missing"), None);
        assert!(m.collision_rate() >= 0.0);
    }
}
