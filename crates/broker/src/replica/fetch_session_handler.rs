//! The fetching side of KIP-227 incremental fetch sessions (Kafka's `FetchSessionHandler`),
//! used by the replica fetcher: a follower of 10,000 partitions must not resend, and be
//! resent, all 10,000 on every Fetch when a handful have news.
//!
//! The rules are Kafka's:
//!
//! - With no session, the request is full (`session_epoch` 0, every partition sent); a full
//!   response naming a session id starts the session at epoch 1.
//! - In a session, a request sends only the partitions added or whose parameters changed
//!   since they were last sent (fetch offset, epochs, log start, HW, max bytes) and
//!   forgets those no longer fetched; the epoch advances on every answered request.
//! - A response whose partitions the session cannot explain (a full response omitting or
//!   adding partitions, an incremental one naming a partition not in the session), a
//!   top-level error, or a failed request ends the session: the next request is full
//!   (closing the old session on the leader, except after `FETCH_SESSION_ID_NOT_FOUND`, when
//!   there is nothing to close). Such a response's data is not applied: the fetcher asks
//!   again in full and nothing is skipped.
//! - A session the leader closes (an incremental response with session id 0) ends too.

use std::collections::{BTreeMap, HashMap};

use kraftd_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kraftd_protocol::messages::FetchResponse;
use kraftd_protocol::{ErrorCode, Uuid};

use super::fetch_session::{next_epoch, FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID};

/// A partition in a session: (topic id, partition).
pub type SessionKey = (Uuid, i32);

/// Kafka's `FetchMetadata`: the session id and the epoch the next request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchMetadata {
    pub session_id: i32,
    pub epoch: i32,
}

impl FetchMetadata {
    /// No session: the next request is full and asks for one.
    pub const INITIAL: FetchMetadata = FetchMetadata {
        session_id: INVALID_SESSION_ID,
        epoch: INITIAL_EPOCH,
    };

    pub fn is_full(&self) -> bool {
        self.epoch == INITIAL_EPOCH || self.epoch == FINAL_EPOCH
    }

    /// Closes this session on the leader and asks for a new one (Kafka's
    /// `nextCloseExisting`).
    fn next_close_existing(self) -> FetchMetadata {
        FetchMetadata {
            session_id: self.session_id,
            epoch: INITIAL_EPOCH,
        }
    }
}

/// One partition the fetcher wants this round.
#[derive(Debug, Clone)]
pub struct WantedPartition {
    pub topic_id: Uuid,
    pub topic: String,
    pub data: FetchPartition,
}

/// What to put in the next request.
#[derive(Debug)]
pub struct SessionRequest {
    pub metadata: FetchMetadata,
    /// Partitions to send (all of them in a full request), grouped by topic.
    pub topics: Vec<FetchTopic>,
    pub forgotten: Vec<ForgottenTopic>,
    /// How many partitions the request names (sent) and leaves to the session.
    pub sent: usize,
    pub omitted: usize,
}

/// Kafka's `FetchSessionHandler` for one leader.
#[derive(Debug)]
pub struct FetchSessionHandler {
    next: FetchMetadata,
    /// The partitions the leader's session holds, as last sent.
    session: HashMap<SessionKey, WantedPartition>,
    /// The partitions the last request asked for, to check the response against.
    asked: Option<AskedSet>,
    /// Sessions ended for a reason other than a clean close (for metrics and tests).
    resets: u64,
}

#[derive(Debug)]
struct AskedSet {
    full: bool,
}

impl Default for FetchSessionHandler {
    fn default() -> Self {
        Self::new()
    }
}

impl FetchSessionHandler {
    pub fn new() -> Self {
        FetchSessionHandler {
            next: FetchMetadata::INITIAL,
            session: HashMap::new(),
            asked: None,
            resets: 0,
        }
    }

    /// The metadata the next request will carry.
    pub fn next_metadata(&self) -> FetchMetadata {
        self.next
    }

    /// How many times a session ended on an error, a failed request or an inconsistent
    /// response.
    pub fn resets(&self) -> u64 {
        self.resets
    }

    /// The partitions the leader's session holds.
    pub fn session_partitions(&self) -> usize {
        self.session.len()
    }

    /// Kafka's `Builder.build`: `wanted` is every partition to fetch this round (in the
    /// fetcher's order). A full request sends them all; an incremental one sends the added
    /// and changed ones and forgets the ones no longer wanted.
    pub fn build(&mut self, wanted: Vec<WantedPartition>) -> SessionRequest {
        let full = self.next.is_full();
        self.asked = Some(AskedSet { full });
        let total = wanted.len();
        let mut send: Vec<WantedPartition> = Vec::new();
        let mut forgotten: BTreeMap<Uuid, ForgottenTopic> = BTreeMap::new();
        if full {
            self.session.clear();
            for w in wanted {
                self.session.insert(key(&w), w.clone());
                send.push(w);
            }
        } else {
            let mut next: HashMap<SessionKey, WantedPartition> = HashMap::with_capacity(total);
            for w in wanted {
                match self.session.get(&key(&w)) {
                    Some(prev) if prev.data == w.data => {}
                    _ => send.push(w.clone()),
                }
                next.insert(key(&w), w);
            }
            for (k, prev) in &self.session {
                if !next.contains_key(k) {
                    let t = forgotten.entry(k.0).or_insert_with(|| ForgottenTopic {
                        topic: prev.topic.clone(),
                        topic_id: k.0,
                        ..Default::default()
                    });
                    t.partitions.push(k.1);
                }
            }
            self.session = next;
        }
        self.request(send, forgotten, total)
    }

    /// An incremental request from what changed: `changed` holds the partitions whose
    /// position may have moved or that are new (sent when they differ from what the
    /// session holds), `gone` those no longer fetched (forgotten if the session holds
    /// them); every other partition stays in the session as last sent. The fetcher's work
    /// per request is then the partitions with news, not all it follows. Only for a
    /// session already established (a full request must name every partition:
    /// [`Self::build`]).
    pub fn build_changed(
        &mut self,
        changed: Vec<WantedPartition>,
        gone: &[SessionKey],
    ) -> SessionRequest {
        debug_assert!(
            !self.next.is_full(),
            "a full request is built from every partition"
        );
        self.asked = Some(AskedSet { full: false });
        let mut send: Vec<WantedPartition> = Vec::new();
        let mut forgotten: BTreeMap<Uuid, ForgottenTopic> = BTreeMap::new();
        for k in gone {
            if let Some(prev) = self.session.remove(k) {
                let t = forgotten.entry(k.0).or_insert_with(|| ForgottenTopic {
                    topic: prev.topic.clone(),
                    topic_id: k.0,
                    ..Default::default()
                });
                t.partitions.push(k.1);
            }
        }
        for w in changed {
            match self.session.get(&key(&w)) {
                Some(prev) if prev.data == w.data => {}
                _ => {
                    self.session.insert(key(&w), w.clone());
                    send.push(w);
                }
            }
        }
        let total = self.session.len();
        self.request(send, forgotten, total)
    }

    /// What the session last sent for a partition (the position the leader fetches it at
    /// while the request leaves it out).
    pub fn last_sent(&self, key: &SessionKey) -> Option<&FetchPartition> {
        self.session.get(key).map(|w| &w.data)
    }

    fn request(
        &self,
        send: Vec<WantedPartition>,
        forgotten: BTreeMap<Uuid, ForgottenTopic>,
        total: usize,
    ) -> SessionRequest {
        let sent = send.len();
        let mut topics: Vec<FetchTopic> = Vec::new();
        let mut index: HashMap<Uuid, usize> = HashMap::new();
        for w in send {
            let i = *index.entry(w.topic_id).or_insert_with(|| {
                topics.push(FetchTopic {
                    topic: w.topic.clone(),
                    topic_id: w.topic_id,
                    ..Default::default()
                });
                topics.len() - 1
            });
            topics[i].partitions.push(w.data);
        }
        let mut forgotten: Vec<ForgottenTopic> = forgotten.into_values().collect();
        for t in &mut forgotten {
            t.partitions.sort_unstable();
        }
        SessionRequest {
            metadata: self.next,
            topics,
            forgotten,
            sent,
            omitted: total - sent,
        }
    }

    /// Kafka's `handleResponse`: whether the response's partition data may be applied. On
    /// `false` the session is over and the next request is full.
    pub fn handle_response(&mut self, response: &FetchResponse) -> bool {
        let full = match self.asked.take() {
            Some(a) => a.full,
            None => self.next.is_full(),
        };
        let error =
            ErrorCode::from_code(response.error_code).unwrap_or(ErrorCode::UnknownServerError);
        if error != ErrorCode::None {
            self.next = if error == ErrorCode::FetchSessionIdNotFound {
                FetchMetadata::INITIAL
            } else {
                self.next.next_close_existing()
            };
            self.reset();
            return false;
        }
        let mut named = 0usize;
        let mut extra = false;
        for t in &response.responses {
            for p in &t.partitions {
                named += 1;
                if !self.session.contains_key(&(t.topic_id, p.partition_index)) {
                    extra = true;
                }
            }
        }
        if full {
            if named == 0 && response.throttle_time_ms > 0 {
                // KIP-219: a throttled full fetch is answered empty; nothing to apply, not
                // an error either.
                self.next = FetchMetadata::INITIAL;
                self.session.clear();
                return false;
            }
            // Every partition named once (duplicates would make `named` exceed the
            // session's size while none is extra).
            if extra || named != self.session.len() {
                self.next = FetchMetadata::INITIAL;
                self.reset();
                return false;
            }
            self.next = if response.session_id == INVALID_SESSION_ID {
                FetchMetadata::INITIAL
            } else {
                FetchMetadata {
                    session_id: response.session_id,
                    epoch: 1,
                }
            };
            true
        } else {
            if extra {
                self.next = self.next.next_close_existing();
                self.reset();
                return false;
            }
            self.next = if response.session_id == INVALID_SESSION_ID {
                FetchMetadata::INITIAL
            } else {
                FetchMetadata {
                    session_id: self.next.session_id,
                    epoch: next_epoch(self.next.epoch),
                }
            };
            true
        }
    }

    /// Kafka's `handleError`: the request failed (transport error, timeout): close the
    /// session and start over in full.
    pub fn handle_error(&mut self) {
        self.asked = None;
        if self.next.session_id != INVALID_SESSION_ID {
            self.next = self.next.next_close_existing();
        } else {
            self.next = FetchMetadata::INITIAL;
        }
        self.reset();
    }

    /// Starts over without closing anything (a new connection, maybe to a restarted leader
    /// that forgot the session anyway).
    pub fn restart(&mut self) {
        self.asked = None;
        self.next = FetchMetadata::INITIAL;
        self.session.clear();
    }

    fn reset(&mut self) {
        self.resets += 1;
        self.session.clear();
    }
}

fn key(w: &WantedPartition) -> SessionKey {
    (w.topic_id, w.data.partition)
}

#[cfg(test)]
mod tests;
