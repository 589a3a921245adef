//! A shard's timers (Kafka's `CoordinatorTimer`), over any key type: one deadline per key, scheduling a key
//! again replaces its deadline, cancelling removes it. The shard asks for its expired keys
//! with the time it is handed; nothing here reads a clock.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

/// Deadlines by key, ordered by time.
#[derive(Debug, Clone)]
pub struct Timer<K: Clone + Eq + Hash + Ord> {
    by_key: HashMap<K, i64>,
    by_time: BTreeSet<(i64, K)>,
}

impl<K: Clone + Eq + Hash + Ord> Default for Timer<K> {
    fn default() -> Self {
        Timer {
            by_key: HashMap::new(),
            by_time: BTreeSet::new(),
        }
    }
}

impl<K: Clone + Eq + Hash + Ord> Timer<K> {
    /// Fires `key` at `deadline_ms`, replacing any deadline it had.
    pub fn schedule(&mut self, key: K, deadline_ms: i64) {
        if let Some(old) = self.by_key.insert(key.clone(), deadline_ms) {
            self.by_time.remove(&(old, key.clone()));
        }
        self.by_time.insert((deadline_ms, key));
    }

    pub fn cancel(&mut self, key: &K) {
        if let Some(old) = self.by_key.remove(key) {
            self.by_time.remove(&(old, key.clone()));
        }
    }

    pub fn is_scheduled(&self, key: &K) -> bool {
        self.by_key.contains_key(key)
    }

    pub fn deadline(&self, key: &K) -> Option<i64> {
        self.by_key.get(key).copied()
    }

    /// The earliest deadline.
    pub fn next_deadline(&self) -> Option<i64> {
        self.by_time.first().map(|(t, _)| *t)
    }

    /// Removes and returns the earliest key due at `now_ms`, if any.
    pub fn pop_expired(&mut self, now_ms: i64) -> Option<K> {
        let (t, _) = self.by_time.first()?;
        if *t > now_ms {
            return None;
        }
        let (_, key) = self.by_time.pop_first()?;
        self.by_key.remove(&key);
        Some(key)
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_cancels_and_pops_in_order() {
        let mut t = Timer::default();
        t.schedule("a", 10);
        t.schedule("b", 5);
        t.schedule("a", 3);
        assert_eq!(t.next_deadline(), Some(3));
        t.cancel(&"b");
        assert_eq!(t.pop_expired(2), None);
        assert_eq!(t.pop_expired(100), Some("a"));
        assert_eq!(t.pop_expired(100), None);
        assert!(t.is_empty());
    }
}
