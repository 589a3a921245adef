//! The one owner of role transitions, and of the durable quorum state (epoch, leader, vote)
//! that must be written before the node acts on it. Kafka's `QuorumState`.
//!
//! Every transition checks that it is legal from the current role and epoch; an illegal one is
//! a broken invariant and panics with context. The table (`E` is the current epoch; "observer"
//! marks where only voters may go):
//!
//! | from \ to    | Unattached            | Prospective (voter) | Candidate (voter) | Leader      | Follower                  | Resigned |
//! |--------------|-----------------------|---------------------|-------------------|-------------|---------------------------|----------|
//! | Unattached   | > E, or = E to vote   | = E                 | –                 | –           | ≥ E                       | –        |
//! | Prospective  | > E, or = E (lost)    | –                   | E + 1             | –           | ≥ E                       | –        |
//! | Candidate    | > E                   | = E (timeout)       | –                 | = E (won)   | ≥ E                       | –        |
//! | Leader       | > E                   | –                   | –                 | –           | > E                       | = E      |
//! | Follower     | > E                   | = E (fetch timeout) | –                 | –           | > E, or = E, same leader  | –        |
//! | Resigned     | > E                   | –                   | E + 1             | –           | > E                       | –        |
//!
//! The durable state changes only with the epoch, the leader or the vote; within one epoch
//! a vote, once cast, never changes (one vote per epoch), and the epoch never decreases.

use std::fmt;

use kraftd_protocol::messages;

use super::role::{
    CandidateState, EpochElection, FollowerState, LeaderState, ProspectiveState, ResignedState,
    Role, RoleName, UnattachedState,
};

/// The durable quorum state: the three fields of Kafka's `QuorumStateData` (the
/// `quorum-state` file) the transitions work on. The file holds the generated
/// `kraftd_protocol::messages::QuorumStateData` ([`QuorumStateData::to_data`],
/// [`QuorumStateData::from_data`]), in JSON through `driver::log::quorum_state_file`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuorumStateData {
    pub leader_epoch: i32,
    /// -1 when unknown.
    pub leader_id: i32,
    /// -1 when no vote was cast in `leader_epoch`.
    pub voted_id: i32,
}

impl QuorumStateData {
    /// The state of a node that has never run.
    pub const INITIAL: QuorumStateData = QuorumStateData {
        leader_epoch: 0,
        leader_id: -1,
        voted_id: -1,
    };

    /// The generated `QuorumStateData` the `quorum-state` file holds (its JSON codec is
    /// `driver::log::quorum_state_file`): these three fields, no voted directory id (a static
    /// quorum has none), the version-0-only fields left at their defaults.
    pub fn to_data(self) -> messages::QuorumStateData {
        messages::QuorumStateData {
            leader_id: self.leader_id,
            leader_epoch: self.leader_epoch,
            voted_id: self.voted_id,
            ..messages::QuorumStateData::default()
        }
    }

    /// The three fields the core works on, from the file's generated struct.
    pub fn from_data(data: &messages::QuorumStateData) -> QuorumStateData {
        QuorumStateData {
            leader_epoch: data.leader_epoch,
            leader_id: data.leader_id,
            voted_id: data.voted_id,
        }
    }
}

/// The current role and the durable state it implies.
#[derive(Debug, Clone)]
pub struct QuorumState {
    local_id: i32,
    is_voter: bool,
    role: Role,
    durable: QuorumStateData,
}

impl fmt::Display for QuorumState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "node {} {} epoch {}",
            self.local_id,
            self.role.name().as_str(),
            self.role.epoch()
        )
    }
}

impl QuorumState {
    /// The role a node starts in, from what it persisted (Kafka's `QuorumState.initialize`):
    /// an ex-leader comes back Resigned, a follower as Follower, a voter that voted as
    /// Unattached with that vote. `log_last_epoch` above the persisted epoch (a state file
    /// older than the log) starts Unattached in the log's epoch.
    pub fn initialize(
        local_id: i32,
        is_voter: bool,
        persisted: Option<QuorumStateData>,
        log_last_epoch: i32,
        election_deadline_ms: u64,
    ) -> QuorumState {
        let mut d = persisted.unwrap_or(QuorumStateData::INITIAL);
        if log_last_epoch > d.leader_epoch {
            d = QuorumStateData {
                leader_epoch: log_last_epoch,
                leader_id: -1,
                voted_id: -1,
            };
        }
        let voter_deadline = is_voter.then_some(election_deadline_ms);
        let voted_id = (d.voted_id >= 0).then_some(d.voted_id);
        let role = if d.leader_id == local_id && is_voter {
            Role::Resigned(ResignedState {
                epoch: d.leader_epoch,
                election_deadline_ms,
                preferred_successors: Vec::new(),
                end_quorum: Default::default(),
            })
        } else if d.leader_id >= 0 && d.leader_id != local_id {
            Role::Follower(FollowerState {
                epoch: d.leader_epoch,
                leader_id: d.leader_id,
                voted_id,
                fetch_deadline_ms: voter_deadline,
                has_fetched_from_leader: false,
                fetch_target: d.leader_id,
            })
        } else {
            Role::Unattached(UnattachedState {
                epoch: d.leader_epoch,
                voted_id,
                election_deadline_ms: voter_deadline,
            })
        };
        QuorumState {
            local_id,
            is_voter,
            role,
            durable: d,
        }
    }

    pub fn role(&self) -> &Role {
        &self.role
    }

    pub fn role_mut(&mut self) -> &mut Role {
        &mut self.role
    }

    pub fn name(&self) -> RoleName {
        self.role.name()
    }

    pub fn epoch(&self) -> i32 {
        self.role.epoch()
    }

    pub fn durable(&self) -> QuorumStateData {
        self.durable
    }

    pub fn local_id(&self) -> i32 {
        self.local_id
    }

    pub fn is_voter(&self) -> bool {
        self.is_voter
    }

    /// The voter set changed and this node became a voter (or stopped being one, KIP-853):
    /// the timers of the current role follow (a voter's election or fetch deadline at
    /// `deadline_ms`, none for an observer). Prospective and Candidate keep theirs: an
    /// election under way runs out, and a non-voter cannot win one (nobody grants it).
    pub fn set_is_voter(&mut self, is_voter: bool, deadline_ms: u64) {
        if self.is_voter == is_voter {
            return;
        }
        self.is_voter = is_voter;
        let deadline = is_voter.then_some(deadline_ms);
        match &mut self.role {
            Role::Unattached(u) => u.election_deadline_ms = deadline,
            Role::Follower(f) => f.fetch_deadline_ms = deadline,
            _ => {}
        }
    }

    /// The leader of the current epoch, if known.
    pub fn leader_id(&self) -> Option<i32> {
        match &self.role {
            Role::Leader(_) | Role::Resigned(_) => Some(self.local_id),
            Role::Follower(f) => Some(f.leader_id),
            _ => None,
        }
    }

    /// The vote cast in the current epoch.
    pub fn voted_id(&self) -> Option<i32> {
        (self.durable.voted_id >= 0).then_some(self.durable.voted_id)
    }

    /// → Unattached: a higher epoch with no known leader, a vote cast in this epoch, or a
    /// lost pre-vote in this epoch.
    pub fn transition_to_unattached(
        &mut self,
        epoch: i32,
        voted_id: Option<i32>,
        election_deadline_ms: u64,
    ) -> Option<QuorumStateData> {
        let current = self.epoch();
        let from = self.name();
        // A candidate or resigned leader removed from the voter set (KIP-853) leaves its
        // election in the same epoch, keeping its vote for itself.
        let removed = !self.is_voter && matches!(from, RoleName::Candidate | RoleName::Resigned);
        let legal = epoch > current
            || (epoch == current
                && (removed || matches!(from, RoleName::Unattached | RoleName::Prospective)));
        assert!(
            legal,
            "{self}: illegal transition to unattached in epoch {epoch}"
        );
        if epoch == current {
            if let (Some(old), Some(new)) = (self.voted_id(), voted_id) {
                assert_eq!(old, new, "{self}: second vote in epoch {epoch}");
            }
        }
        let voted_id = if epoch == current {
            voted_id.or(self.voted_id())
        } else {
            voted_id
        };
        self.role = Role::Unattached(UnattachedState {
            epoch,
            voted_id,
            election_deadline_ms: self.is_voter.then_some(election_deadline_ms),
        });
        self.set_durable(epoch, -1, voted_id)
    }

    /// → Prospective: a voter's election or fetch timeout expired.
    pub fn transition_to_prospective(
        &mut self,
        voter_count: usize,
        election_deadline_ms: u64,
    ) -> Option<QuorumStateData> {
        assert!(
            self.is_voter,
            "{self}: an observer never becomes prospective"
        );
        let epoch = self.epoch();
        let leader_id = match &self.role {
            Role::Unattached(_) | Role::Candidate(_) => None,
            Role::Follower(f) => Some(f.leader_id),
            _ => panic!("{self}: illegal transition to prospective"),
        };
        let voted_id = self.voted_id();
        self.role = Role::Prospective(ProspectiveState {
            epoch,
            voted_id,
            leader_id,
            election: EpochElection::new(voter_count, self.local_id),
            election_deadline_ms,
        });
        // Same epoch, leader and vote: nothing new to persist.
        None
    }

    /// → Candidate in the next epoch, voting for itself.
    pub fn transition_to_candidate(
        &mut self,
        voter_count: usize,
        election_deadline_ms: u64,
    ) -> Option<QuorumStateData> {
        assert!(self.is_voter, "{self}: an observer never becomes candidate");
        assert!(
            matches!(self.name(), RoleName::Prospective | RoleName::Resigned),
            "{self}: illegal transition to candidate"
        );
        let epoch = self.epoch().checked_add(1).expect("epoch overflow");
        self.role = Role::Candidate(CandidateState {
            epoch,
            election: EpochElection::new(voter_count, self.local_id),
            election_deadline_ms,
        });
        self.set_durable(epoch, -1, Some(self.local_id))
    }

    /// → Leader of the candidate's epoch (it won).
    pub fn transition_to_leader(&mut self, state: LeaderState) -> Option<QuorumStateData> {
        let Role::Candidate(c) = &self.role else {
            panic!("{self}: only a candidate becomes leader");
        };
        assert!(c.election.is_won(), "{self}: leader without a majority");
        assert_eq!(state.epoch, c.epoch, "{self}: leader of another epoch");
        let epoch = state.epoch;
        self.role = Role::Leader(state);
        self.set_durable(epoch, self.local_id, Some(self.local_id))
    }

    /// → Follower of `leader_id` in `epoch`.
    pub fn transition_to_follower(
        &mut self,
        epoch: i32,
        leader_id: i32,
        fetch_deadline_ms: u64,
    ) -> Option<QuorumStateData> {
        let current = self.epoch();
        assert_ne!(leader_id, self.local_id, "{self}: following itself");
        let legal = match &self.role {
            Role::Unattached(_) | Role::Prospective(_) | Role::Candidate(_) => epoch >= current,
            Role::Follower(f) => epoch > current || f.leader_id == leader_id,
            Role::Leader(_) | Role::Resigned(_) => epoch > current,
        };
        assert!(
            legal,
            "{self}: illegal transition to follower of {leader_id} in epoch {epoch}"
        );
        let voted_id = if epoch == current {
            self.voted_id()
        } else {
            None
        };
        self.role = Role::Follower(FollowerState {
            epoch,
            leader_id,
            voted_id,
            fetch_deadline_ms: self.is_voter.then_some(fetch_deadline_ms),
            has_fetched_from_leader: false,
            fetch_target: leader_id,
        });
        self.set_durable(epoch, leader_id, voted_id)
    }

    /// → Resigned: the leader gives up its epoch.
    pub fn transition_to_resigned(&mut self, state: ResignedState) -> Option<QuorumStateData> {
        assert!(
            matches!(self.role, Role::Leader(_)),
            "{self}: only a leader resigns"
        );
        assert_eq!(state.epoch, self.epoch(), "{self}: resigning another epoch");
        self.role = Role::Resigned(state);
        None
    }

    /// Returns the new durable state when it differs from the old, after checking that the
    /// epoch never decreases and a vote never changes within an epoch.
    fn set_durable(
        &mut self,
        epoch: i32,
        leader_id: i32,
        voted_id: Option<i32>,
    ) -> Option<QuorumStateData> {
        let old = self.durable;
        assert!(
            epoch >= old.leader_epoch,
            "{self}: durable epoch would go back from {} to {epoch}",
            old.leader_epoch
        );
        let voted = voted_id.unwrap_or(-1);
        if epoch == old.leader_epoch && old.voted_id >= 0 {
            assert_eq!(
                old.voted_id, voted,
                "{self}: vote changed within epoch {epoch}"
            );
        }
        let new = QuorumStateData {
            leader_epoch: epoch,
            leader_id,
            voted_id: voted,
        };
        self.durable = new;
        (new != old).then_some(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_to_and_from_the_generated_struct() {
        let d = QuorumStateData {
            leader_epoch: 643,
            leader_id: 1003,
            voted_id: -1,
        };
        let data = d.to_data();
        assert_eq!(data.voted_directory_id, kraftd_protocol::Uuid::ZERO);
        assert!(data.cluster_id.is_empty());
        assert_eq!(QuorumStateData::from_data(&data), d);
    }

    #[test]
    fn ex_leader_restarts_resigned() {
        let d = QuorumStateData {
            leader_epoch: 5,
            leader_id: 1,
            voted_id: 1,
        };
        let q = QuorumState::initialize(1, true, Some(d), 5, 100);
        assert_eq!(q.name(), RoleName::Resigned);
        let q = QuorumState::initialize(2, true, Some(d), 5, 100);
        assert_eq!(q.name(), RoleName::Follower);
        let q = QuorumState::initialize(2, true, None, 0, 100);
        assert_eq!(q.name(), RoleName::Unattached);
    }

    #[test]
    #[should_panic(expected = "illegal transition to unattached")]
    fn epoch_never_goes_back() {
        let mut q = QuorumState::initialize(1, true, None, 0, 100);
        q.transition_to_unattached(3, None, 0);
        q.transition_to_unattached(2, None, 0);
    }

    #[test]
    #[should_panic(expected = "second vote")]
    fn one_vote_per_epoch() {
        let mut q = QuorumState::initialize(1, true, None, 0, 100);
        q.transition_to_unattached(3, Some(2), 0);
        q.transition_to_unattached(3, Some(4), 0);
    }
}
