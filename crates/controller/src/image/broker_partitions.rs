//! An index from a broker to partitions it is a member of, in the way Kafka's
//! `BrokersToIsrs` (and `BrokersToElrs`) index the ISR and ELR: fencing a broker, its
//! controlled shutdown, its restart and its unregistration change exactly the partitions
//! whose ISR (or ELR) holds it, and without the index each of them scans every partition of
//! the cluster (~100 ms at a million partitions to find that a broker is in no ISR).
//!
//! Kafka keeps one copy-on-write `int[]` per (broker, topic), so a change costs the size of
//! that array and creating a topic of n partitions costs n² copies. Here the entries are
//! bitmasks of 64 consecutive partition ids in a persistent B-tree keyed by (broker, topic,
//! partition id / 64): a change copies one path of the tree, untouched parts stay shared
//! between images, and a topic of 100 partitions at RF 3 on 10 brokers costs about two
//! entries of 48 bytes per broker, ~3 bytes per membership before the tree's own overhead
//! (a set of (broker, topic, partition) tuples would cost ~36 bytes per membership, a
//! hundred MB at a million partitions).

use std::collections::BTreeMap;

use imbl::OrdMap;
use kraftd_protocol::Uuid;

/// Partition ids per entry: the bits of a `u64`.
const CHUNK_BITS: i32 = 64;

/// Which partitions each broker is a member of (of the ISR, or of the ELR: one index each).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrokerPartitions {
    /// (broker, topic id, partition id / 64) → bit (partition id mod 64) set for each
    /// partition the broker is a member of. Entries are never zero.
    chunks: OrdMap<Key, u64>,
}

/// (broker, topic id, partition id / 64). The topic id is held as a big-endian `u128`: the
/// same order as its bytes, compared as two words rather than through a `memcmp` call
/// (`memcmp` was 8% of the scale bench's samples with byte-array keys).
type Key = (i32, u128, i32);

/// The entry key and bit of one membership. `>>` and `&` floor, so a negative partition id
/// (refused nowhere in the image) still maps to one key and bit and back.
fn locate(broker: i32, topic_id: Uuid, partition_id: i32) -> (Key, u64) {
    let key = (broker, u128::from_be_bytes(topic_id.0), partition_id >> 6);
    (key, 1u64 << (partition_id & (CHUNK_BITS - 1)))
}

impl BrokerPartitions {
    /// Sets then clears bits of one entry, dropping it once empty. One walk down the tree
    /// when the entry exists (`entry` would walk it twice, three times for a new one).
    fn change(&mut self, key: Key, set: u64, clear: u64) {
        match self.chunks.get_mut(&key) {
            Some(bits) => {
                *bits = (*bits | set) & !clear;
                if *bits == 0 {
                    self.chunks.remove(&key);
                }
            }
            None if set & !clear != 0 => {
                self.chunks.insert(key, set & !clear);
            }
            None => {}
        }
    }

    /// The partitions `broker` is a member of, as (topic id, partition id) in topic id then
    /// partition id order (the order of a scan of the image).
    pub fn partitions(&self, broker: i32) -> impl Iterator<Item = (Uuid, i32)> + '_ {
        let first = (broker, u128::MIN, i32::MIN);
        let last = (broker, u128::MAX, i32::MAX);
        self.chunks
            .range(first..=last)
            .flat_map(|((_, topic_id, chunk), bits)| {
                let (topic_id, chunk, mut bits) = (Uuid(topic_id.to_be_bytes()), *chunk, *bits);
                std::iter::from_fn(move || {
                    if bits == 0 {
                        return None;
                    }
                    let bit = bits.trailing_zeros() as i32;
                    bits &= bits - 1;
                    Some((topic_id, chunk * CHUNK_BITS + bit))
                })
            })
    }
}

/// Membership changes a delta gathers while it replays and makes once per entry when it
/// applies. A topic of 100 partitions at RF 3 is 300 memberships in about 20 entries, and
/// each change to the persistent map walks the tree (copying, the first time after the
/// image was shared, the nodes on the way): with one change per membership a DeleteTopics
/// of 1,000 partitions took ~2 ms instead of ~0.4 ms without the index (bench scale),
/// gathered ~1 ms.
#[derive(Debug, Clone, Default)]
pub struct PendingMembers {
    /// Entry key → (bits set, bits cleared) since the delta began; a bit is in at most one.
    entries: BTreeMap<Key, (u64, u64)>,
}

impl PendingMembers {
    /// Moves the partition's members from `previous` to `next` (either empty for a partition
    /// created or removed), to be made by [`apply_to`](Self::apply_to). Member lists are
    /// replica-sized, so the quadratic diff is cheap.
    pub fn update(&mut self, topic_id: Uuid, partition_id: i32, previous: &[i32], next: &[i32]) {
        for broker in previous.iter().filter(|b| !next.contains(b)) {
            let (key, bit) = locate(*broker, topic_id, partition_id);
            let (set, clear) = self.entries.entry(key).or_default();
            *set &= !bit;
            *clear |= bit;
        }
        for broker in next.iter().filter(|b| !previous.contains(b)) {
            let (key, bit) = locate(*broker, topic_id, partition_id);
            let (set, clear) = self.entries.entry(key).or_default();
            *set |= bit;
            *clear &= !bit;
        }
    }

    /// The index holding exactly the memberships set here (a build from nothing: one
    /// in-order pass instead of a walk down the tree per entry).
    pub fn into_index(self) -> BrokerPartitions {
        BrokerPartitions {
            chunks: self
                .entries
                .into_iter()
                .filter(|(_, (set, _))| *set != 0)
                .map(|(key, (set, _))| (key, set))
                .collect(),
        }
    }

    /// Makes every gathered change in `index`.
    pub fn apply_to(&self, index: &mut BrokerPartitions) {
        for (key, (set, clear)) in &self.entries {
            index.change(*key, *set, *clear);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(n: u8) -> Uuid {
        let mut id = [0; 16];
        id[15] = n;
        Uuid(id)
    }

    /// Changes made one membership at a time: the model [`PendingMembers`] must end at.
    impl BrokerPartitions {
        fn insert(&mut self, broker: i32, topic_id: Uuid, partition_id: i32) {
            let (key, bit) = locate(broker, topic_id, partition_id);
            self.change(key, bit, 0);
        }

        fn remove(&mut self, broker: i32, topic_id: Uuid, partition_id: i32) {
            let (key, bit) = locate(broker, topic_id, partition_id);
            self.change(key, 0, bit);
        }

        fn update(&mut self, topic_id: Uuid, partition_id: i32, previous: &[i32], next: &[i32]) {
            for broker in previous.iter().filter(|b| !next.contains(b)) {
                self.remove(*broker, topic_id, partition_id);
            }
            for broker in next.iter().filter(|b| !previous.contains(b)) {
                self.insert(*broker, topic_id, partition_id);
            }
        }
    }

    #[test]
    fn members_come_back_in_topic_then_partition_order() {
        let mut index = BrokerPartitions::default();
        for (t, p) in [
            (2, 70),
            (1, 3),
            (2, -1),
            (1, 0),
            (2, 63),
            (2, 64),
            (2, i32::MAX),
        ] {
            index.insert(7, topic(t), p);
        }
        index.insert(6, topic(1), 5);
        index.insert(8, topic(1), 5);
        let found: Vec<(Uuid, i32)> = index.partitions(7).collect();
        let expected = [
            (1, 0),
            (1, 3),
            (2, -1),
            (2, 63),
            (2, 64),
            (2, 70),
            (2, i32::MAX),
        ];
        let expected: Vec<(Uuid, i32)> = expected.iter().map(|(t, p)| (topic(*t), *p)).collect();
        assert_eq!(found, expected);
    }

    #[test]
    fn removing_every_member_leaves_nothing() {
        let mut index = BrokerPartitions::default();
        index.update(topic(1), 3, &[], &[1, 2, 3]);
        index.update(topic(1), 4, &[], &[2]);
        index.update(topic(1), 3, &[1, 2, 3], &[3, 4]);
        assert_eq!(index.partitions(1).count(), 0);
        assert_eq!(index.partitions(2).collect::<Vec<_>>(), [(topic(1), 4)]);
        assert_eq!(index.partitions(4).collect::<Vec<_>>(), [(topic(1), 3)]);
        index.update(topic(1), 3, &[3, 4], &[]);
        index.update(topic(1), 4, &[2], &[]);
        assert_eq!(index, BrokerPartitions::default());
    }

    #[test]
    fn pending_changes_end_where_the_same_changes_made_one_by_one_end() {
        let steps: [(u8, i32, &[i32], &[i32]); 6] = [
            (1, 3, &[], &[1, 2, 3]),
            (1, 70, &[], &[2]),
            (1, 3, &[1, 2, 3], &[3, 4]),
            (2, 0, &[], &[1]),
            (2, 0, &[1], &[]),
            (1, 70, &[2], &[1, 2]),
        ];
        let mut base = BrokerPartitions::default();
        base.update(topic(1), 5, &[], &[1, 2]);
        let mut direct = base.clone();
        let mut pending = PendingMembers::default();
        for (t, p, previous, next) in steps {
            direct.update(topic(t), p, previous, next);
            pending.update(topic(t), p, previous, next);
        }
        let mut applied = base;
        pending.apply_to(&mut applied);
        assert_eq!(applied, direct);
    }
}
