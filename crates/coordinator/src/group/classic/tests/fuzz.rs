//! Random request sequences (seeded, so reproducible): whatever clients send, the shard
//! keeps its invariants, answers each request once, and once unloaded has answered every
//! JoinGroup and SyncGroup it parked.

use super::*;
use crate::group::shard::ShardRequest;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

fn check_invariants(h: &H) {
    for group in ["g", "h"] {
        let Some(Group::Classic(g)) = h.shard.group(group) else {
            continue;
        };
        let state = g.state_name();
        if g.num_members() > 0 {
            let leader = g.leader_id().unwrap_or_default();
            assert!(
                g.has_member(leader),
                "{group}: leader {leader} is no member"
            );
        } else {
            assert!(
                matches!(state, "Empty" | "PreparingRebalance" | "Dead"),
                "{group}: no members in {state}"
            );
        }
        for m in g.members() {
            if m.is_awaiting_join() {
                assert!(
                    matches!(state, "PreparingRebalance"),
                    "{group}: join parked in {state}"
                );
            }
            if m.is_awaiting_sync() {
                assert_eq!(
                    state, "CompletingRebalance",
                    "{group}: sync parked in {state}"
                );
            }
            if let Some(i) = m.group_instance_id() {
                assert_eq!(g.static_member_id(i), Some(m.member_id()));
            }
        }
    }
}

fn run(seed: u64, steps: usize) {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut h = H::with_config(GroupCoordinatorConfig {
        // Odd seeds: no initial delay.
        classic_initial_rebalance_delay_ms: if seed % 2 == 0 { DELAY } else { 0 },
        classic_group_max_size: 4,
        max_batch_bytes: 64 * 1024,
        ..Default::default()
    });
    let mut known: Vec<String> = vec![String::new(), "stranger".into()];
    let mut parked: Vec<ReplyId> = Vec::new();
    let groups = ["g", "h", ""];
    let instances = [None, Some("i-1"), Some("i-2")];
    for _ in 0..steps {
        let group = rng.pick(&groups).to_string();
        let member = rng.pick(&known).clone();
        let instance = rng.pick(&instances).map(str::to_string);
        let generation = h.shard.group(&group).map_or(0, |g| match g {
            Group::Classic(g) => g.generation_id(),
            Group::Consumer(_) | Group::Share(_) | Group::Streams(_) => 0,
        }) + rng.below(3) as i32
            - 1;
        match rng.below(9) {
            0..=2 => {
                let client = *rng.pick(&["a", "b", "c"]);
                let mut a = JoinArgs::new(client);
                a.group = group;
                a.member_id = member;
                a.instance = instance;
                a.version = rng.below(10) as i16;
                a.session = *rng.pick(&[SESSION, 6_000, 5_000, 30_000]);
                a.rebalance = *rng.pick(&[REBALANCE, 0, -1, 40_000]);
                if rng.chance(10) {
                    a.protocol_type = "connect".into();
                }
                let big = Bytes::from(vec![9u8; 100 * 1024]);
                let garbage = Bytes::from_static(&[0xff]);
                a.protocols = match rng.below(5) {
                    0 => vec![],
                    1 => vec![("rr".into(), garbage), ("range".into(), sub(&["t"]))],
                    2 => vec![("range".into(), big)],
                    _ => vec![("range".into(), sub(&["t", "u"]))],
                };
                let id = h.join(&a);
                match h.joined(id) {
                    Some(r) => {
                        if !r.member_id.is_empty() && !known.contains(&r.member_id) {
                            known.push(r.member_id);
                        }
                    }
                    None => parked.push(id),
                }
            }
            3 | 4 => {
                let assignments: Vec<(String, Vec<u8>)> = known
                    .iter()
                    .filter(|_| rng.chance(50))
                    .map(|m| (m.clone(), m.as_bytes().to_vec()))
                    .collect();
                let refs: Vec<(&str, &[u8])> = assignments
                    .iter()
                    .map(|(m, a)| (m.as_str(), a.as_slice()))
                    .collect();
                let id = h.sync_as(&group, &member, instance.as_deref(), generation, &refs);
                if h.synced(id).is_none() {
                    parked.push(id);
                }
            }
            5 => {
                h.heartbeat_as(&group, &member, instance.as_deref(), generation);
            }
            6 => {
                let version = rng.below(6) as i16;
                let r = LeaveGroupRequest {
                    group_id: group,
                    member_id: member.clone(),
                    members: vec![MemberIdentity {
                        member_id: if rng.chance(30) {
                            String::new()
                        } else {
                            member
                        },
                        group_instance_id: instance,
                        ..Default::default()
                    }],
                    ..Default::default()
                };
                h.leave_request(version, r);
            }
            7 => {
                let r = match rng.below(3) {
                    0 => ShardRequest::DescribeGroups(vec![group]),
                    1 => ShardRequest::DeleteGroups(vec![group]),
                    _ => ShardRequest::ListGroups {
                        states: vec![],
                        types: vec![],
                    },
                };
                h.send(rng.below(5) as i16, "admin", r);
            }
            _ => h.advance(rng.below(12_000) as i64),
        }
        check_invariants(&h);
    }
    h.shard.classic_on_unloaded(h.now);
    h.advance(0);
    for id in parked {
        assert!(
            h.replies.contains_key(&id),
            "seed {seed}: request {id} never answered"
        );
    }
}

#[test]
fn random_clients_never_break_the_groups() {
    for seed in 0..100 {
        run(seed, 500);
    }
}
