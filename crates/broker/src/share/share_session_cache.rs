//! Share fetch sessions (Kafka's `ShareSessionCache`, `ShareSession`, `CachedSharePartition`
//! and the session half of `SharePartitionManager.newContext` /
//! `acknowledgeSessionUpdate`): one session per (group, member), the partitions a member
//! fetches so that subsequent ShareFetches name only what changed, its epoch, and the
//! connection it lives on, so that a dropped connection ends the session and releases the
//! member's records.
//!
//! Epochs: 0 opens a session (replacing the member's previous one), -1 closes it, anything
//! else must be the session's next epoch. Sans-IO and single-owner: the
//! `SharePartitionManager` keeps it behind its lock.

use std::collections::{HashMap, HashSet};

use kraftd_protocol::{ErrorCode, Uuid};

/// The epoch of a ShareFetch that opens a session (Kafka's `ShareRequestMetadata.INITIAL_EPOCH`).
pub const INITIAL_EPOCH: i32 = 0;
/// The epoch of a request that closes the session (`FINAL_EPOCH`).
pub const FINAL_EPOCH: i32 = -1;

/// The epoch after `epoch` (Kafka's `ShareRequestMetadata.nextEpoch`): it wraps to 1, and
/// the final epoch stays final.
pub fn next_epoch(epoch: i32) -> i32 {
    if epoch < 0 {
        FINAL_EPOCH
    } else if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

/// A share session's key (Kafka's `ShareSessionKey`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShareSessionKey {
    pub group_id: String,
    pub member_id: String,
}

/// A partition as a share session names it.
pub type SessionPartition = (Uuid, i32);

/// One member's share session (Kafka's `ShareSession`).
#[derive(Debug, Clone)]
pub struct ShareSession {
    pub key: ShareSessionKey,
    /// The epoch the member's next request must carry.
    pub epoch: i32,
    /// The partitions in fetch order; a partition that returned records moves to the back
    /// so that the next fetch starts elsewhere (Kafka's insertion-ordered partition map).
    partitions: Vec<CachedSharePartition>,
    pub connection_id: String,
}

/// A partition of a session (Kafka's `CachedSharePartition`): whether its next answer must
/// include it even without records (new to the session, or its last answer was an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedSharePartition {
    pub partition: SessionPartition,
    requires_update_in_response: bool,
}

/// What a ShareFetch works on (Kafka's `ShareFetchContext`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareFetchContext {
    /// Epoch 0: a new session over the request's partitions; the answer names each.
    Full { partitions: Vec<SessionPartition> },
    /// A later epoch: the session's partitions; the answer names only those with records,
    /// errors or news.
    Subsequent {
        key: ShareSessionKey,
        partitions: Vec<SessionPartition>,
    },
    /// Epoch -1: only acknowledgements; the session closes after the answer.
    Final,
}

/// The sessions of this broker (Kafka's `ShareSessionCache`), at most
/// `group.share.max.share.sessions`.
#[derive(Debug)]
pub struct ShareSessionCache {
    max_entries: usize,
    sessions: HashMap<ShareSessionKey, ShareSession>,
    /// Each connection's session; a session replaced or removed leaves the entry behind
    /// marked stale (Kafka's `SessionKeyAndState`) so the disconnect does not end a newer one.
    connections: HashMap<String, (ShareSessionKey, bool)>,
}

impl ShareSessionCache {
    pub fn new(max_entries: usize) -> Self {
        ShareSessionCache {
            max_entries,
            sessions: HashMap::new(),
            connections: HashMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    pub fn get(&self, key: &ShareSessionKey) -> Option<&ShareSession> {
        self.sessions.get(key)
    }

    /// The session half of Kafka's `newContext` for a ShareFetch: opens, checks and
    /// advances, or prepares to close the member's session. `to_forget` leaves the session
    /// before `fetch_data` joins it. Errors: SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION
    /// _EPOCH, SHARE_SESSION_LIMIT_REACHED, INVALID_REQUEST (acknowledgements in a request
    /// that opens a session: nothing can have been acquired in it).
    #[allow(clippy::too_many_arguments)]
    pub fn new_context(
        &mut self,
        group_id: &str,
        member_id: &str,
        fetch_data: &[SessionPartition],
        to_forget: &[SessionPartition],
        epoch: i32,
        is_acknowledge_data_present: bool,
        connection_id: &str,
    ) -> Result<ShareFetchContext, ErrorCode> {
        let key = ShareSessionKey {
            group_id: group_id.to_owned(),
            member_id: member_id.to_owned(),
        };
        match epoch {
            FINAL_EPOCH => {
                if !self.sessions.contains_key(&key) {
                    return Err(ErrorCode::ShareSessionNotFound);
                }
                Ok(ShareFetchContext::Final)
            }
            INITIAL_EPOCH => {
                if is_acknowledge_data_present {
                    return Err(ErrorCode::InvalidRequest);
                }
                self.remove(&key);
                if self.sessions.len() >= self.max_entries {
                    return Err(ErrorCode::ShareSessionLimitReached);
                }
                let mut partitions: Vec<CachedSharePartition> = Vec::new();
                for p in fetch_data {
                    if !partitions.iter().any(|c| c.partition == *p) {
                        partitions.push(CachedSharePartition {
                            partition: *p,
                            requires_update_in_response: false,
                        });
                    }
                }
                let session = ShareSession {
                    key: key.clone(),
                    epoch: next_epoch(INITIAL_EPOCH),
                    partitions,
                    connection_id: connection_id.to_owned(),
                };
                self.sessions.insert(key.clone(), session);
                self.connections
                    .insert(connection_id.to_owned(), (key, false));
                Ok(ShareFetchContext::Full {
                    partitions: fetch_data.to_vec(),
                })
            }
            _ => {
                let session = self
                    .sessions
                    .get_mut(&key)
                    .ok_or(ErrorCode::ShareSessionNotFound)?;
                if session.epoch != epoch {
                    return Err(ErrorCode::InvalidShareSessionEpoch);
                }
                let forget: HashSet<&SessionPartition> = to_forget.iter().collect();
                session
                    .partitions
                    .retain(|c| !forget.contains(&c.partition));
                for p in fetch_data {
                    if !session.partitions.iter().any(|c| c.partition == *p) {
                        session.partitions.push(CachedSharePartition {
                            partition: *p,
                            requires_update_in_response: true,
                        });
                    }
                }
                session.epoch = next_epoch(session.epoch);
                Ok(ShareFetchContext::Subsequent {
                    key,
                    partitions: session.partitions.iter().map(|c| c.partition).collect(),
                })
            }
        }
    }

    /// The session half of a ShareAcknowledge (Kafka's `acknowledgeSessionUpdate`): epoch 0
    /// is refused, -1 needs the session (which closes after the answer), anything else must
    /// be the next epoch and advances it.
    pub fn acknowledge_session_update(
        &mut self,
        group_id: &str,
        member_id: &str,
        epoch: i32,
    ) -> Result<(), ErrorCode> {
        if epoch == INITIAL_EPOCH {
            return Err(ErrorCode::InvalidShareSessionEpoch);
        }
        let key = ShareSessionKey {
            group_id: group_id.to_owned(),
            member_id: member_id.to_owned(),
        };
        let session = self
            .sessions
            .get_mut(&key)
            .ok_or(ErrorCode::ShareSessionNotFound)?;
        if epoch == FINAL_EPOCH {
            return Ok(());
        }
        if session.epoch != epoch {
            return Err(ErrorCode::InvalidShareSessionEpoch);
        }
        session.epoch = next_epoch(session.epoch);
        Ok(())
    }

    /// Which of a subsequent fetch's answered partitions its answer carries (Kafka's
    /// `CachedSharePartition.maybeUpdateResponseData`): those with records or an error,
    /// and those the session owes an update (new, or recovering from an error). A partition
    /// that returned records moves to the back of the session's order.
    pub fn must_respond(
        &mut self,
        key: &ShareSessionKey,
        partition: SessionPartition,
        has_records: bool,
        has_error: bool,
    ) -> bool {
        let Some(session) = self.sessions.get_mut(key) else {
            return has_records || has_error;
        };
        let Some(i) = session
            .partitions
            .iter()
            .position(|c| c.partition == partition)
        else {
            return has_records || has_error;
        };
        let cached = &mut session.partitions[i];
        let must = has_records || has_error || cached.requires_update_in_response;
        cached.requires_update_in_response = has_error;
        if has_records {
            let moved = session.partitions.remove(i);
            session.partitions.push(moved);
        }
        must
    }

    /// Ends the member's session: the partitions whose records the member held, for the
    /// caller to release (Kafka's `releaseSession`).
    pub fn remove(&mut self, key: &ShareSessionKey) -> Option<ShareSession> {
        let session = self.sessions.remove(key)?;
        if let Some((k, stale)) = self.connections.get_mut(&session.connection_id) {
            if k == key {
                *stale = true;
            }
        }
        Some(session)
    }

    /// A client connection closed (Kafka's `ClientConnectionDisconnectListener`): the
    /// session it opened ends, unless a later request already replaced or closed it.
    pub fn on_disconnect(&mut self, connection_id: &str) -> Option<ShareSession> {
        let (key, stale) = self.connections.remove(connection_id)?;
        if stale {
            return None;
        }
        let session = self.sessions.remove(&key)?;
        Some(session)
    }

    /// Whether any session of `group_id` remains.
    pub fn has_group(&self, group_id: &str) -> bool {
        self.sessions.keys().any(|k| k.group_id == group_id)
    }

    /// Every session ends (share groups switched off, Kafka's `onShareVersionToggle`).
    pub fn remove_all_sessions(&mut self) -> Vec<ShareSession> {
        self.connections.clear();
        self.sessions.drain().map(|(_, s)| s).collect()
    }
}

impl ShareSession {
    /// The session's partitions, in fetch order.
    pub fn partitions(&self) -> impl Iterator<Item = SessionPartition> + '_ {
        self.partitions.iter().map(|c| c.partition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Uuid = Uuid([1; 16]);

    #[test]
    fn epochs_advance_and_wrap() {
        assert_eq!(next_epoch(0), 1);
        assert_eq!(next_epoch(i32::MAX), 1);
        assert_eq!(next_epoch(FINAL_EPOCH), FINAL_EPOCH);
    }

    #[test]
    fn a_session_opens_at_zero_and_checks_each_next_epoch() {
        let mut cache = ShareSessionCache::new(10);
        let ctx = cache.new_context("g", "m", &[(T, 0)], &[], 0, false, "c1");
        assert_eq!(
            ctx,
            Ok(ShareFetchContext::Full {
                partitions: vec![(T, 0)]
            })
        );
        assert_eq!(
            cache.new_context("g", "m", &[], &[], 2, false, "c1"),
            Err(ErrorCode::InvalidShareSessionEpoch)
        );
        let ctx = cache.new_context("g", "m", &[(T, 1)], &[(T, 0)], 1, true, "c1");
        assert!(
            matches!(ctx, Ok(ShareFetchContext::Subsequent { ref partitions, .. }) if partitions == &vec![(T, 1)])
        );
        assert_eq!(cache.acknowledge_session_update("g", "m", 2), Ok(()));
        assert_eq!(
            cache.acknowledge_session_update("g", "m", 2),
            Err(ErrorCode::InvalidShareSessionEpoch)
        );
        assert!(cache
            .new_context("g", "m", &[], &[], 3, false, "c1")
            .is_ok());
    }

    #[test]
    fn unknown_sessions_and_bad_openings_are_refused() {
        let mut cache = ShareSessionCache::new(10);
        assert_eq!(
            cache.new_context("g", "m", &[], &[], 4, false, "c"),
            Err(ErrorCode::ShareSessionNotFound)
        );
        assert_eq!(
            cache.new_context("g", "m", &[], &[], FINAL_EPOCH, false, "c"),
            Err(ErrorCode::ShareSessionNotFound)
        );
        assert_eq!(
            cache.new_context("g", "m", &[(T, 0)], &[], 0, true, "c"),
            Err(ErrorCode::InvalidRequest)
        );
        assert_eq!(
            cache.acknowledge_session_update("g", "m", 0),
            Err(ErrorCode::InvalidShareSessionEpoch)
        );
        assert_eq!(
            cache.acknowledge_session_update("g", "m", 1),
            Err(ErrorCode::ShareSessionNotFound)
        );
    }

    #[test]
    fn the_cache_holds_at_most_max_sessions() {
        let mut cache = ShareSessionCache::new(1);
        cache
            .new_context("g", "a", &[], &[], 0, false, "c1")
            .expect("opens");
        assert_eq!(
            cache.new_context("g", "b", &[], &[], 0, false, "c2"),
            Err(ErrorCode::ShareSessionLimitReached)
        );
        // Reopening one's own session replaces it, within the limit.
        cache
            .new_context("g", "a", &[], &[], 0, false, "c1")
            .expect("reopens");
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_dropped_connection_ends_its_session_only() {
        let mut cache = ShareSessionCache::new(10);
        cache
            .new_context("g", "m", &[(T, 0)], &[], 0, false, "c1")
            .expect("opens");
        assert!(cache.has_group("g"));
        let ended = cache.on_disconnect("c1").expect("the session ends");
        assert!(!cache.has_group("g"));
        assert_eq!(ended.partitions().collect::<Vec<_>>(), vec![(T, 0)]);
        assert!(cache.is_empty());
        // A session reopened on a new connection survives the old connection's close.
        cache
            .new_context("g", "m", &[], &[], 0, false, "c2")
            .expect("opens");
        cache
            .new_context("g", "m", &[], &[], 0, false, "c3")
            .expect("reopens");
        assert!(cache.on_disconnect("c2").is_none());
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn subsequent_answers_carry_only_what_changed() {
        let mut cache = ShareSessionCache::new(10);
        cache
            .new_context("g", "m", &[(T, 0)], &[], 0, false, "c")
            .expect("opens");
        cache
            .new_context("g", "m", &[(T, 1)], &[], 1, false, "c")
            .expect("adds");
        let key = ShareSessionKey {
            group_id: "g".into(),
            member_id: "m".into(),
        };
        assert!(!cache.must_respond(&key, (T, 0), false, false));
        assert!(
            cache.must_respond(&key, (T, 1), false, false),
            "new to the session"
        );
        assert!(!cache.must_respond(&key, (T, 1), false, false));
        assert!(cache.must_respond(&key, (T, 0), false, true));
        assert!(
            cache.must_respond(&key, (T, 0), false, false),
            "recovered from its error"
        );
        assert!(cache.must_respond(&key, (T, 0), true, false));
        let order: Vec<_> = cache.get(&key).expect("session").partitions().collect();
        assert_eq!(order, vec![(T, 1), (T, 0)]);
    }
}
