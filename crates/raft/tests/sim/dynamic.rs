//! The simulator's KIP-853 side ([`SimConfig::dynamic`](super::SimConfig)): formatting the
//! initial voters with a bootstrap checkpoint (Kafka's `format --initial-controllers`),
//! directory ids (a wiped disk comes back with a new one, so it is not the voter it was),
//! voter changes at the leader ([`Sim::add_voter`], [`Sim::remove_voter`]), and the
//! membership invariants checked after every event: a leader holds at most one uncommitted
//! voter set, and no majority of the voter set in effect lacks a committed batch (counting
//! a holder only under the directory id the set names for it).

use std::collections::BTreeMap;

use bytes::Bytes;
use kraftd_log::SnapshotId;
use kraftd_protocol::Uuid;
use kraftd_raft::core::endpoints::Endpoint;
use kraftd_raft::core::voter_set::{ReplicaKey, VoterNode, VoterSet};
use kraftd_raft::core::VoterChangeError;
use kraftd_raft::snapshot::{with_kraft_control, SnapshotWriter};
use kraftd_raft::{RaftLog, RoleName};

use super::Sim;

/// A node's controller listener in the simulator (never connected to: the harness routes by
/// id).
pub fn listeners(id: i32) -> BTreeMap<String, Endpoint> {
    BTreeMap::from([(
        "CONTROLLER".to_string(),
        Endpoint {
            host: format!("node-{id}"),
            port: 9093,
        },
    )])
}

/// The bootstrap checkpoint `00000000000000000000-0000000000.checkpoint` naming `voters`.
pub fn bootstrap_checkpoint(voters: &VoterSet) -> Bytes {
    let empty = SnapshotWriter::new(0, -1, 0)
        .and_then(|w| w.finish())
        .expect("an empty snapshot writes");
    with_kraft_control(&empty, 1, Some(voters.to_record())).expect("the header reads")
}

impl Sim {
    pub(super) fn new_directory_id(&mut self) -> Uuid {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.rng.below(u64::MAX).to_be_bytes());
        b[8..].copy_from_slice(&self.rng.below(u64::MAX).to_be_bytes());
        b[15] |= 1;
        Uuid(b)
    }

    /// Writes the bootstrap checkpoint of the initial voters on each of their disks.
    pub(super) fn format_initial_voters(&mut self) {
        let set = VoterSet::from_nodes(
            self.cfg
                .voters
                .iter()
                .map(|v| VoterNode::new(self.voter_key(*v), listeners(*v))),
        );
        let bytes = bootstrap_checkpoint(&set);
        let id = SnapshotId {
            end_offset: 0,
            epoch: 0,
        };
        for v in self.cfg.voters.clone() {
            let disk = self
                .nodes
                .get_mut(&v)
                .and_then(|n| n.disk.as_mut())
                .expect("a formatted disk");
            disk.store_snapshot(id, &bytes)
                .expect("the checkpoint stores");
        }
    }

    /// The key of node `id` as its disk is now.
    pub fn voter_key(&self, id: i32) -> ReplicaKey {
        ReplicaKey::new(id, self.nodes[&id].directory_id)
    }

    /// The voter set in effect at the leader, if there is one.
    pub fn voter_set(&self) -> Option<VoterSet> {
        self.leader().map(|l| self.core(l).voter_set().clone())
    }

    /// AddRaftVoter of node `id` (with its current key) at the leader; the token of the
    /// change, answered later in [`Sim::voter_changes_done`].
    pub fn add_voter(&mut self, id: i32) -> Result<u64, VoterChangeError> {
        let node = VoterNode::new(self.voter_key(id), listeners(id));
        self.change_voters(|core, now, token| core.add_voter(now, token, node, 5_000))
    }

    /// Whether voter `id`'s disk may be lost now without a committed batch resting on it
    /// alone with the leader: every other voter of the set in effect is up, on its own disk,
    /// and has flushed the leader's whole log.
    pub fn dynamic_wipe_is_safe(&self, id: i32) -> bool {
        let Some(leader) = self.leader() else {
            return false;
        };
        let end = self.core(leader).log().end_offset();
        self.core(leader).voter_set().nodes().all(|v| {
            v.key.id == id
                || self.nodes.get(&v.key.id).is_some_and(|n| {
                    n.directory_id == v.key.directory_id
                        && n.core
                            .as_ref()
                            .is_some_and(|c| c.log().flushed_offset() >= end)
                })
        })
    }

    /// RemoveRaftVoter of `key` at the leader.
    pub fn remove_voter(&mut self, key: ReplicaKey) -> Result<u64, VoterChangeError> {
        self.change_voters(|core, now, token| core.remove_voter(now, token, key))
    }

    fn change_voters(
        &mut self,
        f: impl FnOnce(
            &mut kraftd_raft::RaftCore<kraftd_raft::MemoryLog>,
            u64,
            u64,
        ) -> Result<(), VoterChangeError>,
    ) -> Result<u64, VoterChangeError> {
        let Some(leader) = self.leader() else {
            return Err(VoterChangeError {
                code: kraftd_protocol::ErrorCode::NotLeaderOrFollower,
                message: "no leader".into(),
            });
        };
        let token = self.events + 1_000_000 * (self.voter_changes_done.len() as u64 + 1);
        let now = self.now_ms;
        let core = self
            .nodes
            .get_mut(&leader)
            .and_then(|n| n.core.as_mut())
            .expect("the leader is up");
        f(core, now, token)?;
        self.drain(leader);
        self.check_node(leader);
        Ok(token)
    }

    /// No majority of `id`'s voter set in effect lacks the committed batch at `base`: every
    /// future leader (elected by such a majority) has it.
    pub(super) fn check_no_majority_lacks(&mut self, id: i32, base: i64, bytes: &Bytes) {
        let Some(core) = self.nodes[&id].core.as_ref() else {
            return;
        };
        let set = core.voter_set().clone();
        if set.is_empty() {
            return;
        }
        let holders = set
            .nodes()
            .filter(|v| {
                let Some(n) = self.nodes.get(&v.key.id) else {
                    return false;
                };
                if n.directory_id != v.key.directory_id {
                    return false;
                }
                let log = n.core.as_ref().map(|c| c.log()).or(n.disk.as_ref());
                log.is_some_and(|l| {
                    l.flushed_offset() > base
                        && (l.batch_at(base).is_some_and(|b| b == bytes)
                            || l.latest_snapshot().is_some_and(|s| s.end_offset > base))
                })
            })
            .count();
        if set.len() - holders >= set.majority() {
            self.violation(
                id,
                format!(
                    "committed batch at {base} missing on a majority of the voter set {set} ({holders} hold it)"
                ),
            );
        }
    }

    /// A leader holds at most one uncommitted voter set (one change at a time).
    pub(super) fn check_membership(&mut self, id: i32) {
        let Some(core) = self.nodes[&id].core.as_ref() else {
            return;
        };
        if core.role() != RoleName::Leader {
            return;
        }
        // Committed is what any node ever saw below its HW (a leader's own HW may lag it
        // right after a restart).
        let hw = self.max_hw;
        let uncommitted = core
            .voter_history()
            .voter_set_offsets()
            .filter(|o| *o >= hw)
            .count();
        if uncommitted > 1 {
            self.violation(
                id,
                format!("{uncommitted} uncommitted voter sets at the leader (HW {hw})"),
            );
        }
    }
}
