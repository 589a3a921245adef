//! The group coordinator's replay check: seeded random clients of both protocols, and
//! hand-written scenarios (a classic generation, a KIP-848 group, transactional offset
//! commits committed and aborted, offset and group deletion).

use crate::testing::group::{check, group_ids, Clients};

const CASES: u64 = 300;
const STEPS: usize = 150;

#[test]
fn replaying_a_group_shards_log_gives_its_live_state() {
    let (mut checks, mut compared) = (0, 0);
    for seed in 0..CASES {
        let mut c = Clients::new(seed);
        c.run(seed, STEPS, 15);
        checks += c.checks;
        compared += c.compared;
    }
    assert!(checks >= CASES as usize * (STEPS / 15));
    assert!(
        compared > checks * 3,
        "groups compared: {compared} in {checks} checks"
    );
}

#[test]
fn an_empty_shard_replays() {
    let mut c = Clients::new(7);
    assert_eq!(
        check(&mut c.replica, &group_ids(), "empty"),
        group_ids().len()
    );
}
