//! The voter sets and `kraft.version`s over the log (Kafka's `KRaftControlRecordStateMachine`
//! with its `VoterSetHistory` and `LogHistory<KRaftVersion>`): every KRaftVersionRecord and
//! VotersRecord read from the latest snapshot (at the snapshot's last contained offset, -1
//! for the bootstrap checkpoint `00000000000000000000-0000000000.checkpoint`) and from the
//! control batches of the log, each at its offset. Applied when a batch is appended, undone
//! when the log is truncated, reset when a snapshot replaces the log. The latest voter set,
//! committed or not, is the one in effect (Kafka's rule: a single-voter change is safe to use
//! as soon as it is appended, since any majority of the old set and any of the new overlap);
//! with none in the log, the static set of `controller.quorum.voters` (`kraft.version` 0).

use bytes::Bytes;
use kraftd_protocol::records::{Batches, ControlRecord, RecordBatch};
use tracing::warn;

use super::voter_set::VoterSet;

/// Voter sets and `kraft.version`s by offset.
#[derive(Debug, Clone, Default)]
pub struct VoterHistory {
    /// `controller.quorum.voters`, if configured: in effect when the log holds no set.
    static_voters: Option<VoterSet>,
    /// (offset, set), offsets increasing.
    voters: Vec<(i64, VoterSet)>,
    /// (offset, kraft.version), offsets increasing.
    kraft_versions: Vec<(i64, i16)>,
}

impl VoterHistory {
    /// A history with the static set (`None`: a dynamic quorum, the set comes from the log).
    pub fn new(static_voters: Option<VoterSet>) -> Self {
        VoterHistory {
            static_voters: static_voters.filter(|s| !s.is_empty()),
            voters: Vec::new(),
            kraft_versions: Vec::new(),
        }
    }

    /// The voter set in effect: the latest in the log, else the static one, else empty.
    pub fn latest(&self) -> &VoterSet {
        static EMPTY: std::sync::OnceLock<VoterSet> = std::sync::OnceLock::new();
        self.voters
            .last()
            .map(|(_, s)| s)
            .or(self.static_voters.as_ref())
            .unwrap_or_else(|| EMPTY.get_or_init(VoterSet::empty))
    }

    /// The offset of the latest set in the log (-1: the bootstrap checkpoint); `None` when
    /// the static set is in effect.
    pub fn latest_offset(&self) -> Option<i64> {
        self.voters.last().map(|(o, _)| *o)
    }

    /// The `kraft.version` in effect: the latest recorded, else 0.
    pub fn kraft_version(&self) -> i16 {
        self.kraft_versions.last().map_or(0, |(_, v)| *v)
    }

    /// The set in effect at `offset` (inclusive).
    pub fn voters_at(&self, offset: i64) -> Option<&VoterSet> {
        self.voters
            .iter()
            .rev()
            .find(|(o, _)| *o <= offset)
            .map(|(_, s)| s)
            .or(self.static_voters.as_ref())
    }

    /// The `kraft.version` in effect at `offset` (inclusive).
    pub fn kraft_version_at(&self, offset: i64) -> i16 {
        self.kraft_versions
            .iter()
            .rev()
            .find(|(o, _)| *o <= offset)
            .map_or(0, |(_, v)| *v)
    }

    /// The offsets of the voter sets read from the log and snapshot, oldest first.
    pub fn voter_set_offsets(&self) -> impl Iterator<Item = i64> + '_ {
        self.voters.iter().map(|(o, _)| *o)
    }

    /// Whether the static set is configured.
    pub fn has_static_voters(&self) -> bool {
        self.static_voters.is_some()
    }

    /// Forgets everything read from the log and snapshots (a snapshot replaces the log).
    pub fn clear(&mut self) {
        self.voters.clear();
        self.kraft_versions.clear();
    }

    /// The records of a snapshot's header batch, at its last contained offset.
    pub fn load_snapshot(
        &mut self,
        last_contained_offset: i64,
        kraft_version: Option<i16>,
        voters: Option<VoterSet>,
    ) {
        self.clear();
        if let Some(v) = kraft_version {
            self.kraft_versions.push((last_contained_offset, v));
        }
        if let Some(s) = voters {
            self.voters.push((last_contained_offset, s));
        }
    }

    /// Reads the KRaftVersionRecord and VotersRecord of the control batches in `bytes`
    /// (already checked batches, as the log holds them).
    pub fn apply_batches(&mut self, bytes: &Bytes) {
        for batch in Batches::new(bytes.clone()) {
            match batch {
                Ok(b) => self.apply_batch(&b),
                Err(_) => return,
            }
        }
    }

    /// Reads one batch's control records.
    pub fn apply_batch(&mut self, batch: &RecordBatch) {
        if !batch.is_control() {
            return;
        }
        let Ok(records) = batch.records() else {
            return;
        };
        for record in records {
            let Ok(record) = record else { return };
            let offset = batch.base_offset() + record.offset_delta as i64;
            let key = record.key.unwrap_or_default();
            let value = record.value.unwrap_or_default();
            match ControlRecord::decode(&key, value) {
                Ok(ControlRecord::KRaftVersion(v)) => {
                    self.add_kraft_version(offset, v.k_raft_version)
                }
                Ok(ControlRecord::KRaftVoters(v)) => match VoterSet::from_record(&v) {
                    Some(set) => self.add_voters(offset, set),
                    None => warn!(offset, "a VotersRecord with a bad voter list; ignored"),
                },
                _ => {}
            }
        }
    }

    pub fn add_kraft_version(&mut self, offset: i64, version: i16) {
        if self
            .kraft_versions
            .last()
            .is_some_and(|(o, _)| *o >= offset)
        {
            return;
        }
        self.kraft_versions.push((offset, version));
    }

    pub fn add_voters(&mut self, offset: i64, set: VoterSet) {
        if self.voters.last().is_some_and(|(o, _)| *o >= offset) {
            return;
        }
        self.voters.push((offset, set));
    }

    /// The log was truncated to `end_offset`: what was read at or after it is undone.
    pub fn truncate_new_entries(&mut self, end_offset: i64) {
        self.voters.retain(|(o, _)| *o < end_offset);
        self.kraft_versions.retain(|(o, _)| *o < end_offset);
    }

    /// The log now starts at `start_offset`: entries before it are dropped, but the last
    /// one before it stays (it is still in effect there).
    pub fn truncate_old_entries(&mut self, start_offset: i64) {
        fn trim<T>(v: &mut Vec<(i64, T)>, start: i64) {
            let before = v.iter().filter(|(o, _)| *o < start).count();
            if before > 1 {
                v.drain(..before - 1);
            }
        }
        trim(&mut self.voters, start_offset);
        trim(&mut self.kraft_versions, start_offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::voter_set::{ReplicaKey, VoterNode};
    use std::collections::BTreeMap;

    fn set(ids: &[i32]) -> VoterSet {
        VoterSet::from_nodes(
            ids.iter()
                .map(|i| VoterNode::new(ReplicaKey::of_id(*i), BTreeMap::new())),
        )
    }

    #[test]
    fn the_latest_set_rules_and_truncation_undoes_it() {
        let mut h = VoterHistory::new(Some(set(&[1, 2, 3])));
        assert_eq!(h.latest(), &set(&[1, 2, 3]));
        assert_eq!(h.latest_offset(), None);
        assert_eq!(h.kraft_version(), 0);
        h.add_kraft_version(10, 1);
        h.add_voters(10, set(&[1, 2, 3]));
        h.add_voters(20, set(&[1, 2, 3, 4]));
        assert_eq!(h.latest(), &set(&[1, 2, 3, 4]));
        assert_eq!(h.voters_at(15), Some(&set(&[1, 2, 3])));
        h.truncate_new_entries(20);
        assert_eq!(h.latest_offset(), Some(10));
        h.truncate_new_entries(5);
        assert_eq!(h.latest(), &set(&[1, 2, 3]));
        assert_eq!(h.kraft_version(), 0);
    }

    #[test]
    fn old_entries_keep_the_one_in_effect() {
        let mut h = VoterHistory::new(None);
        assert!(h.latest().is_empty());
        h.load_snapshot(-1, Some(1), Some(set(&[1])));
        h.add_voters(5, set(&[1, 2]));
        h.add_voters(9, set(&[1, 2, 3]));
        h.truncate_old_entries(7);
        assert_eq!(h.voters_at(7), Some(&set(&[1, 2])));
        assert_eq!(h.kraft_version_at(100), 1);
    }
}
