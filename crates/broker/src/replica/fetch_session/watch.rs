//! Which partitions of a fetch session changed since it was last answered, so the leader
//! answering an incremental fetch reads only those (and the ones the request names), not
//! every partition of the session: a follower of 10,000 partitions, a handful of them
//! busy, costs the leader per request in proportion to the busy ones.
//!
//! Each hosted partition's [`ChangeNotify`] (pulsed on every append, HW move, truncation,
//! log-start move and role change) keeps weak links to the [`SessionWatch`]es of the
//! sessions that read it; a pulse marks the partition in each and wakes a fetch of that
//! session waiting for data. A session registers with a partition each time it reads it
//! (idempotent), so a partition re-created under the same key is watched again from its
//! first read; the pulse of the old one on removal marks it, which makes the session read
//! the new one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::sync::futures::{Notified, OwnedNotified};
use tokio::sync::Notify;

use super::super::TopicIdPartition;

/// A session's changed partitions and the wake-up of its waiting fetch.
#[derive(Debug, Default)]
pub struct SessionWatch {
    /// Changed since last taken, keyed by (topic id, partition).
    dirty: Mutex<HashMap<(kraftd_protocol::Uuid, i32), TopicIdPartition>>,
    notify: Notify,
}

impl SessionWatch {
    pub fn new() -> Arc<SessionWatch> {
        Arc::new(SessionWatch::default())
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(kraftd_protocol::Uuid, i32), TopicIdPartition>> {
        self.dirty.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks `tp` changed and wakes the session's waiting fetch (or the next one to wait:
    /// the permit is kept, so a change between a read and the wait is not missed).
    pub fn mark(&self, tp: &TopicIdPartition) {
        self.lock()
            .entry((tp.topic_id, tp.partition))
            .or_insert_with(|| tp.clone());
        self.notify.notify_one();
    }

    /// Marks `tp` to be read by the session's next request without waking a waiting one
    /// (its last answer was an error or left data unread: nothing new to wait for).
    pub fn mark_quiet(&self, tp: &TopicIdPartition) {
        self.lock()
            .entry((tp.topic_id, tp.partition))
            .or_insert_with(|| tp.clone());
    }

    /// The partitions changed since the last call.
    pub fn take(&self) -> Vec<TopicIdPartition> {
        self.lock().drain().map(|(_, tp)| tp).collect()
    }

    /// Resolves when a partition is marked (at once if one was since the last wait).
    pub fn notified(&self) -> Notified<'_> {
        self.notify.notified()
    }
}

/// A hosted partition's change signal: the partition's own waiters (`notify_waiters`, as a
/// `tokio::sync::Notify`) and the sessions watching it.
#[derive(Debug)]
pub struct ChangeNotify {
    tp: TopicIdPartition,
    notify: Arc<Notify>,
    watchers: Mutex<Vec<Weak<SessionWatch>>>,
}

impl ChangeNotify {
    pub fn new(tp: TopicIdPartition) -> ChangeNotify {
        ChangeNotify {
            tp,
            notify: Arc::new(Notify::new()),
            watchers: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Weak<SessionWatch>>> {
        self.watchers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes every task waiting on the partition and marks it in every watching session.
    pub fn notify_waiters(&self) {
        self.notify.notify_waiters();
        let mut watchers = self.lock();
        watchers.retain(|w| match w.upgrade() {
            Some(w) => {
                w.mark(&self.tp);
                true
            }
            None => false,
        });
    }

    /// A future resolving at the next [`ChangeNotify::notify_waiters`].
    pub fn notified(&self) -> Notified<'_> {
        self.notify.notified()
    }

    /// [`ChangeNotify::notified`] owning its signal.
    pub fn notified_owned(self: Arc<Self>) -> OwnedNotified {
        Arc::clone(&self.notify).notified_owned()
    }

    /// Makes `watch` hear of this partition's changes (once, however often called).
    pub fn watch(&self, watch: &Arc<SessionWatch>) {
        let mut watchers = self.lock();
        let target = Arc::downgrade(watch);
        if watchers.iter().any(|w| w.ptr_eq(&target)) {
            return;
        }
        watchers.retain(|w| w.strong_count() > 0);
        watchers.push(target);
    }

    /// Sessions watching (for tests).
    pub fn watchers(&self) -> usize {
        self.lock().iter().filter(|w| w.strong_count() > 0).count()
    }
}
