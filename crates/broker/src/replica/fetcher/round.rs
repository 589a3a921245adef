//! Which partitions a fetcher's next request looks at. In an established fetch session
//! (KIP-227) a request names only the partitions whose position changed, so the fetcher
//! need not look at the others either: a round looks at the partitions the last response
//! named (their position moved), those added, removed or delayed since (`touched`), and
//! those whose backoff ended. Everything is looked at when the request must be full, after
//! the leader's endpoint changed, while a replication throttle holds partitions back (each
//! round re-checks them, as Kafka's fetcher does), and every [`LOOK_AT_ALL_EVERY`] in case
//! a position moved behind the fetcher's back (the follower's own retention moving its log
//! start). A follower of 10,000 partitions, 4 of them written to, spent two thirds of a
//! core building requests over all 10,000 at each of its ~200 fetches a second.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{Asked, FetcherRun, Followed, Key};
use crate::replica::fetch_session_handler::FetchSessionHandler;
use crate::replica::partition::Role;
use kraftd_log::clock::unix_ms;

/// How often a round looks at every partition even in an established session.
pub(super) const LOOK_AT_ALL_EVERY: Duration = Duration::from_secs(10);

/// What the fetcher remembers between rounds (the partitions to look at next are the
/// shared `touched` set).
#[derive(Debug)]
pub(super) struct RoundState {
    /// Partitions backing off, looked at again once their backoff ends.
    delayed: BTreeSet<Key>,
    /// When every partition was last looked at.
    last_all: Option<Instant>,
    /// A partition was left out for a replication throttle at the last round.
    throttled: bool,
}

impl RoundState {
    pub(super) fn new() -> Self {
        RoundState {
            delayed: BTreeSet::new(),
            last_all: None,
            throttled: false,
        }
    }
}

/// One round: the partitions to ask (every one due when `all`, else the changed ones), the
/// ones to forget, and when the next backoff ends.
#[derive(Debug)]
pub(super) struct Round {
    pub(super) asked: Vec<Asked>,
    pub(super) gone: Vec<Key>,
    pub(super) all: bool,
    pub(super) next_delay: Option<Instant>,
}

impl Round {
    /// Nothing to send: no partition due in a round over all of them; in a round over the
    /// changed ones, no change and an empty session (a session holding partitions is asked
    /// with an empty incremental request, which the leader answers when they have news).
    pub(super) fn is_idle(&self, session: &FetchSessionHandler) -> bool {
        if self.all {
            self.asked.is_empty()
        } else {
            self.asked.is_empty() && self.gone.is_empty() && session.session_partitions() == 0
        }
    }
}

/// Whether a followed partition is asked this round.
enum Due {
    Ask(Asked),
    /// Backing off until then.
    Delayed(Instant),
    /// Not ours to fetch (no longer following this leader, or gone).
    NotFollowed,
    Throttled,
}

impl FetcherRun {
    pub(super) fn next_round(&mut self) -> Round {
        let now = Instant::now();
        let all = self.session.next_metadata().is_full()
            || self.shared.look_at_all.swap(false, Ordering::SeqCst)
            || self.rounds.throttled
            || self
                .rounds
                .last_all
                .is_none_or(|at| now.duration_since(at) >= LOOK_AT_ALL_EVERY);
        if all {
            self.round_over_all(now)
        } else {
            self.round_over_changed(now)
        }
    }

    fn round_over_all(&mut self, now: Instant) -> Round {
        let now_ms = unix_ms().max(0) as u64;
        self.shared.take_touched();
        self.rounds.delayed.clear();
        self.rounds.last_all = Some(now);
        let mut round = Round {
            asked: Vec::new(),
            gone: Vec::new(),
            all: true,
            next_delay: None,
        };
        let mut throttled = false;
        let parts = self.shared.lock();
        for (key, f) in parts.iter() {
            match self.due(Some(f), now, now_ms) {
                Due::Ask(a) => round.asked.push(a),
                Due::Delayed(at) => {
                    self.rounds.delayed.insert(*key);
                    round.next_delay = Some(round.next_delay.map_or(at, |n| n.min(at)));
                }
                Due::NotFollowed => {}
                Due::Throttled => throttled = true,
            }
        }
        drop(parts);
        if round.asked.is_empty() && throttled {
            let at = now + self.config.backoff;
            round.next_delay = Some(round.next_delay.map_or(at, |n| n.min(at)));
        }
        self.rounds.throttled = throttled;
        round
    }

    fn round_over_changed(&mut self, now: Instant) -> Round {
        let now_ms = unix_ms().max(0) as u64;
        let mut keys = self.shared.take_touched();
        let mut round = Round {
            asked: Vec::new(),
            gone: Vec::new(),
            all: false,
            next_delay: None,
        };
        let parts = self.shared.lock();
        // Backoffs that ended are looked at again; the others say when to wake.
        let delayed = std::mem::take(&mut self.rounds.delayed);
        for key in delayed {
            match parts.get(&key).and_then(|f| f.delayed_until) {
                Some(at) if at > now => {
                    self.rounds.delayed.insert(key);
                    round.next_delay = Some(round.next_delay.map_or(at, |n| n.min(at)));
                }
                _ => {
                    keys.insert(key);
                }
            }
        }
        for key in keys {
            match self.due(parts.get(&key), now, now_ms) {
                Due::Ask(a) => round.asked.push(a),
                Due::Delayed(at) => {
                    self.rounds.delayed.insert(key);
                    round.next_delay = Some(round.next_delay.map_or(at, |n| n.min(at)));
                    round.gone.push(key);
                }
                Due::NotFollowed => round.gone.push(key),
                Due::Throttled => {
                    // Re-checked at every round from now on, over all partitions.
                    self.rounds.throttled = true;
                    round.gone.push(key);
                }
            }
        }
        round
    }

    /// Whether a followed partition (`None`: no longer followed) is asked now, and at what
    /// position.
    fn due(&self, f: Option<&Followed>, now: Instant, now_ms: u64) -> Due {
        let Some(f) = f else {
            return Due::NotFollowed;
        };
        if let Some(at) = f.delayed_until.filter(|at| *at > now) {
            return Due::Delayed(at);
        }
        let p = f.hosted.lock();
        if p.role()
            != (Role::Follower {
                leader: self.leader,
            })
        {
            return Due::NotFollowed;
        }
        let in_sync = f.lag.is_some_and(|lag| lag <= 0);
        if !in_sync
            && self.quotas.follower.should_throttle(
                &f.hosted.tp.topic,
                f.hosted.tp.partition,
                now_ms,
            )
        {
            return Due::Throttled;
        }
        Due::Ask(Asked {
            hosted: Arc::clone(&f.hosted),
            fetch_offset: p.log_end_offset(),
            leader_epoch: p.leader_epoch(),
        })
    }

    /// A partition the request left to the session, as it was last asked: its answer
    /// applies only if the partition is still where the session says.
    pub(super) fn asked_as_last_sent(&self, key: Key) -> Option<Asked> {
        let sent = self.session.last_sent(&key)?;
        let hosted = Arc::clone(&self.shared.lock().get(&key)?.hosted);
        Some(Asked {
            hosted,
            fetch_offset: sent.fetch_offset,
            leader_epoch: sent.current_leader_epoch,
        })
    }
}
