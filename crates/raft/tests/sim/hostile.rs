//! Hostile and garbled input: valid Raft messages with random bytes flipped, truncated or
//! extended, decoded with the real codecs and fed to cores in every role. Nothing may panic;
//! a message that decodes is handled or ignored with a reason.

use bytes::Bytes;
use kraftd_raft::core::rng::Rng;
use kraftd_raft::{ApiKind, MemoryLog, Output, RaftCore, RaftMessage};

use crate::harness::{Sim, SimConfig};

/// Messages a healthy 3-voter cluster with an observer exchanges, as (kind, request, bytes).
fn sample_traffic() -> Vec<(ApiKind, bool, Bytes)> {
    let mut sim = Sim::new(SimConfig::new(77, &[1, 2, 3], &[9]));
    sim.capture = true;
    sim.run_with_load(5_000, 50);
    // A follower far behind catches up by FetchSnapshot (KIP-630 traffic).
    let leader = sim.leader().expect("leader");
    let behind = if leader == 1 { 2 } else { 1 };
    sim.crash(behind);
    sim.run_with_load(2_000, 50);
    sim.snapshot_and_trim(leader).expect("the leader snapshots");
    sim.restart(behind);
    sim.run_with_load(3_000, 50);
    assert!(
        sim.captured
            .iter()
            .any(|(kind, request, _)| *kind == ApiKind::FetchSnapshot && !*request),
        "FetchSnapshot traffic captured"
    );
    let leader = sim.leader().expect("leader");
    sim.crash(leader);
    sim.run_with_load(8_000, 50);
    sim.captured.clone()
}

fn mutate(rng: &mut Rng, bytes: &Bytes) -> Bytes {
    let mut v = bytes.to_vec();
    match rng.below(4) {
        0 if !v.is_empty() => {
            let n = 1 + rng.below(4);
            for _ in 0..n {
                let i = rng.below(v.len() as u64) as usize;
                v[i] ^= 1 << rng.below(8);
            }
        }
        1 if !v.is_empty() => {
            let i = rng.below(v.len() as u64) as usize;
            v[i] = [0x00, 0x7f, 0x80, 0xff][rng.below(4) as usize];
        }
        2 => {
            let keep = rng.below(v.len() as u64 + 1) as usize;
            v.truncate(keep);
        }
        _ => {
            for _ in 0..rng.below(16) {
                v.push(rng.below(256) as u8);
            }
        }
    }
    Bytes::from(v)
}

/// A fresh voter, a fresh observer and a lone-voter leader.
fn cores() -> Vec<RaftCore<MemoryLog>> {
    let mut out = Vec::new();
    let cfg = kraftd_raft::RaftConfig::new("sim-cluster-id-AAAAAAAA");
    for (id, voters) in [(1, vec![1, 2, 3]), (9, vec![1, 2, 3]), (1, vec![1])] {
        let mut c = RaftCore::new(cfg.clone(), id, voters, None, MemoryLog::new(), 3, 0);
        while c.poll_output().is_some() {}
        out.push(c);
    }
    out
}

#[test]
fn garbled_messages_never_panic_a_core() {
    let traffic = sample_traffic();
    assert!(traffic.len() > 100, "enough traffic captured");
    let mut rng = Rng::new(4242);
    let mut decoded = 0;
    let mut targets = cores();
    // Cores in more roles: the members of a live simulated cluster.
    let mut live = Sim::new(SimConfig::new(79, &[1, 2, 3], &[9]));
    live.run_with_load(3_000, 50);
    for round in 0..20_000u64 {
        let (kind, is_request, bytes) = &traffic[rng.below(traffic.len() as u64) as usize];
        let garbled = mutate(&mut rng, bytes);
        let Ok(msg) = RaftMessage::decode(*kind, *is_request, kind.version(), garbled) else {
            continue;
        };
        decoded += 1;
        let now = 10_000 + round;
        let from = [1, 2, 3, 9, -1, 1000][rng.below(6) as usize];
        for core in targets.iter_mut() {
            let _ = core.handle_message(now, from, round as i32, msg.clone());
            while let Some(out) = core.poll_output() {
                if let Output::Send { msg, .. } = out {
                    msg.encode().expect("the core's own messages encode");
                }
            }
        }
        live.inject(from, msg);
    }
    assert!(
        decoded > 2_500,
        "enough garbled messages decoded ({decoded})"
    );
    assert!(live.ids().iter().all(|id| live.is_up(*id)));
}
