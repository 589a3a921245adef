//! Members joining, heartbeating and leaving in a pseudo-random order (a fixed-seed
//! generator, so each run is the same): no partition ever has two owners, and once
//! everyone heartbeats the group settles, balanced, with every partition owned.

use kraftd_protocol::ErrorCode;

use super::*;

/// A 64-bit linear congruential generator (Knuth's MMIX constants).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// Each client's view: its epoch (none when it is out of the group).
fn run(seed: u64) -> usize {
    let mut h = Harness::new(&[("a", 5), ("b", 4)]);
    let mut rng = Lcg(seed);
    let names = ["m0", "m1", "m2", "m3", "m4"];
    let mut epochs: BTreeMap<&str, i32> = BTreeMap::new();
    for _ in 0..300 {
        let m = names[rng.below(names.len() as u64) as usize];
        match (epochs.get(m).copied(), rng.below(10)) {
            (None, _) => {
                let r = h.join(m, &["a", "b"]);
                assert_eq!(error(&r), ErrorCode::None);
                epochs.insert(m, r.member_epoch);
            }
            (Some(_), 0) => {
                let mut leave = beat_request(m, -1, &Default::default());
                leave.topic_partitions = None;
                assert_eq!(error(&h.heartbeat(leave)), ErrorCode::None);
                h.forget(m);
                epochs.remove(m);
            }
            (Some(epoch), _) => {
                let r = h.beat(m, epoch);
                assert_eq!(error(&r), ErrorCode::None, "{m} at {epoch}");
                epochs.insert(m, r.member_epoch);
            }
        }
        h.advance(50);
    }
    for _ in 0..4 {
        let members: Vec<(&str, i32)> = epochs.iter().map(|(m, e)| (*m, *e)).collect();
        for (m, e) in members {
            let r = h.beat(m, e);
            epochs.insert(m, r.member_epoch);
        }
    }
    if epochs.is_empty() {
        return 0;
    }
    let g = h.group();
    assert_eq!(g.state_name(), "Stable", "seed {seed}");
    let counts: Vec<usize> = g
        .members
        .values()
        .map(|m| m.assigned.values().map(|p| p.len()).sum())
        .collect();
    assert_eq!(counts.iter().sum::<usize>(), 9);
    assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1);
    let total: usize = h.client_owned.values().map(|o| o.len()).sum();
    assert_eq!(total, 9);
    epochs.len()
}

#[test]
fn random_joins_heartbeats_and_leaves_keep_single_owners() {
    let settled: Vec<usize> = [1, 7, 42, 1234, 99_999].into_iter().map(run).collect();
    // Most runs end with several members sharing the partitions.
    assert!(
        settled.iter().filter(|n| **n >= 2).count() >= 3,
        "{settled:?}"
    );
}
