//! The transaction coordinator's replay check: seeded random producers, and a hand-written
//! scenario of every transaction state.

use crate::testing::transaction::{check, transactional_ids, Producers};

/// Cases × steps: a few hundred sequences, a few seconds in all.
const CASES: u64 = 300;
const STEPS: usize = 120;

#[test]
fn replaying_a_transaction_shards_log_gives_its_live_state() {
    let (mut checks, mut markers) = (0, 0);
    for seed in 0..CASES {
        let mut p = Producers::new(seed);
        p.run(seed, STEPS, 10);
        checks += p.checks;
        markers += p.markers_acknowledged;
    }
    assert!(checks >= CASES as usize * (STEPS / 10));
    assert!(markers > CASES as usize, "markers acknowledged: {markers}");
}

#[test]
fn a_fresh_producer_and_a_long_idle_one_replay() {
    let mut p = Producers::new(u64::MAX);
    let ids = transactional_ids();
    check(&mut p.replica, &ids, "empty");
    for _ in 0..50 {
        p.step();
    }
    // Past every transaction's timeout and the ids' expiration.
    p.replica.advance(400_000);
    check(&mut p.replica, &ids, "after expiry");
}
