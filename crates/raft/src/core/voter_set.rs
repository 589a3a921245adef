//! KIP-853's voter set as data (Kafka's `VoterSet`, `ReplicaKey`, `VoterSet.VoterNode`): who
//! votes, told apart by node id *and* directory id, where each listens (endpoints by listener
//! name) and which `kraft.version` range each supports. A static quorum
//! (`controller.quorum.voters`, `kraft.version` 0) has no directory ids ([`Uuid::ZERO`]) and
//! matches a replica by id alone; a dynamic one (`kraft.version` 1, the set read from a
//! VotersRecord) matches id and directory id, so a voter whose disk was wiped (a new
//! directory id) is not the old voter. Pure data: the history of sets over the log is
//! `voter_history.rs`'s.

use std::collections::BTreeMap;
use std::fmt;

use kraftd_protocol::messages::{voters_record, VotersRecord};
use kraftd_protocol::Uuid;

use super::endpoints::Endpoint;

/// The `kraft.version` this code supports at most (1: KIP-853 reconfiguration).
pub const MAX_KRAFT_VERSION: i16 = 1;
/// The `version` of the VotersRecord and KRaftVersionRecord this code writes (Kafka's
/// `ControlRecordUtils.KRAFT_VOTERS_CURRENT_VERSION`, `KRAFT_VERSION_CURRENT_VERSION`).
pub const VOTERS_RECORD_VERSION: i16 = 0;

/// A replica's identity: node id and the directory id of its metadata log directory
/// (Kafka's `ReplicaKey`; [`Uuid::ZERO`] is "none", as in `kraft.version` 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReplicaKey {
    pub id: i32,
    pub directory_id: Uuid,
}

impl ReplicaKey {
    pub fn new(id: i32, directory_id: Uuid) -> Self {
        ReplicaKey { id, directory_id }
    }

    /// A key without a directory id (a static voter, an old peer).
    pub fn of_id(id: i32) -> Self {
        ReplicaKey::new(id, Uuid::ZERO)
    }

    pub fn has_directory_id(&self) -> bool {
        self.directory_id != Uuid::ZERO
    }
}

impl fmt::Display for ReplicaKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.has_directory_id() {
            write!(f, "{}:{}", self.id, self.directory_id)
        } else {
            write!(f, "{}", self.id)
        }
    }
}

/// One voter: its key, its listeners (name → endpoint) and its supported `kraft.version`
/// range (Kafka's `VoterNode`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoterNode {
    pub key: ReplicaKey,
    pub listeners: BTreeMap<String, Endpoint>,
    /// (min, max) `kraft.version` supported.
    pub supported_kraft_versions: (i16, i16),
}

impl VoterNode {
    pub fn new(key: ReplicaKey, listeners: BTreeMap<String, Endpoint>) -> Self {
        VoterNode {
            key,
            listeners,
            supported_kraft_versions: (0, MAX_KRAFT_VERSION),
        }
    }

    pub fn supports(&self, kraft_version: i16) -> bool {
        let (min, max) = self.supported_kraft_versions;
        min <= kraft_version && kraft_version <= max
    }
}

/// A set of voters, by node id (ids are unique in a set; Kafka's `VoterSet`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VoterSet {
    voters: BTreeMap<i32, VoterNode>,
}

impl VoterSet {
    /// The empty set (a node that knows no voter yet: an observer with only bootstrap
    /// servers).
    pub fn empty() -> Self {
        VoterSet::default()
    }

    pub fn from_nodes(nodes: impl IntoIterator<Item = VoterNode>) -> Self {
        VoterSet {
            voters: nodes.into_iter().map(|n| (n.key.id, n)).collect(),
        }
    }

    /// The static set of `controller.quorum.voters` (`kraft.version` 0): ids with no
    /// directory id; `endpoints` under `listener_name` where known.
    pub fn from_static(
        ids: impl IntoIterator<Item = i32>,
        endpoints: &BTreeMap<i32, Endpoint>,
        listener_name: &str,
    ) -> Self {
        VoterSet::from_nodes(ids.into_iter().map(|id| {
            let listeners = endpoints
                .get(&id)
                .map(|e| (listener_name.to_string(), e.clone()))
                .into_iter()
                .collect();
            VoterNode::new(ReplicaKey::of_id(id), listeners)
        }))
    }

    /// The set a VotersRecord carries; `None` when it repeats an id or has a negative one
    /// (Kafka refuses such a record).
    pub fn from_record(record: &VotersRecord) -> Option<VoterSet> {
        let mut voters = BTreeMap::new();
        for v in &record.voters {
            if v.voter_id < 0 {
                return None;
            }
            let listeners = v
                .endpoints
                .iter()
                .map(|e| {
                    (
                        e.name.clone(),
                        Endpoint {
                            host: e.host.clone(),
                            port: e.port,
                        },
                    )
                })
                .collect();
            let node = VoterNode {
                key: ReplicaKey::new(v.voter_id, v.voter_directory_id),
                listeners,
                supported_kraft_versions: (
                    v.k_raft_version_feature.min_supported_version,
                    v.k_raft_version_feature.max_supported_version,
                ),
            };
            if voters.insert(v.voter_id, node).is_some() {
                return None;
            }
        }
        Some(VoterSet { voters })
    }

    /// The VotersRecord of this set (Kafka's `toVotersRecord`).
    pub fn to_record(&self) -> VotersRecord {
        VotersRecord {
            version: VOTERS_RECORD_VERSION,
            voters: self
                .voters
                .values()
                .map(|n| voters_record::Voter {
                    voter_id: n.key.id,
                    voter_directory_id: n.key.directory_id,
                    endpoints: n
                        .listeners
                        .iter()
                        .map(|(name, e)| voters_record::Endpoint {
                            name: name.clone(),
                            host: e.host.clone(),
                            port: e.port,
                            ..Default::default()
                        })
                        .collect(),
                    k_raft_version_feature: voters_record::KRaftVersionFeature {
                        min_supported_version: n.supported_kraft_versions.0,
                        max_supported_version: n.supported_kraft_versions.1,
                        ..Default::default()
                    },
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.voters.is_empty()
    }

    pub fn len(&self) -> usize {
        self.voters.len()
    }

    pub fn ids(&self) -> impl Iterator<Item = i32> + '_ {
        self.voters.keys().copied()
    }

    pub fn nodes(&self) -> impl Iterator<Item = &VoterNode> {
        self.voters.values()
    }

    pub fn node(&self, id: i32) -> Option<&VoterNode> {
        self.voters.get(&id)
    }

    /// Whether some voter has node id `id` (whatever its directory id).
    pub fn contains_id(&self, id: i32) -> bool {
        self.voters.contains_key(&id)
    }

    /// Kafka's `isVoter(ReplicaKey)`: a voter with that id and, when the set records a
    /// directory id for it, that directory id.
    pub fn is_voter(&self, key: ReplicaKey) -> bool {
        match self.voters.get(&key.id) {
            Some(n) if n.key.has_directory_id() => n.key.directory_id == key.directory_id,
            Some(_) => true,
            None => false,
        }
    }

    /// The key the set records for `id`.
    pub fn key(&self, id: i32) -> Option<ReplicaKey> {
        self.voters.get(&id).map(|n| n.key)
    }

    /// The endpoint of voter `id` on `listener`.
    pub fn endpoint(&self, id: i32, listener: &str) -> Option<&Endpoint> {
        self.voters.get(&id).and_then(|n| n.listeners.get(listener))
    }

    /// A majority of this set.
    pub fn majority(&self) -> usize {
        self.voters.len() / 2 + 1
    }

    /// Kafka's `addVoter`: `None` when the id is already a voter.
    pub fn add(&self, node: VoterNode) -> Option<VoterSet> {
        if self.voters.contains_key(&node.key.id) {
            return None;
        }
        let mut next = self.clone();
        next.voters.insert(node.key.id, node);
        Some(next)
    }

    /// Kafka's `removeVoter`: `None` when `key` is not a voter (id and directory id must
    /// match) or it is the last one.
    pub fn remove(&self, key: ReplicaKey) -> Option<VoterSet> {
        let n = self.voters.get(&key.id)?;
        if n.key != key || self.voters.len() == 1 {
            return None;
        }
        let mut next = self.clone();
        next.voters.remove(&key.id);
        Some(next)
    }

    /// Kafka's `updateVoter`: the voter with `node`'s key gets its listeners and supported
    /// versions; `None` when no voter has that key.
    pub fn update(&self, node: VoterNode) -> Option<VoterSet> {
        let n = self.voters.get(&node.key.id)?;
        if n.key != node.key {
            return None;
        }
        let mut next = self.clone();
        next.voters.insert(node.key.id, node);
        Some(next)
    }

    /// Whether every voter supports `kraft_version`.
    pub fn supports(&self, kraft_version: i16) -> bool {
        self.voters.values().all(|n| n.supports(kraft_version))
    }

    /// Kafka's `hasOverlappingMajority`: whether any majority of `self` and any majority of
    /// `other` share a voter (by key), which a single add or remove keeps.
    pub fn has_overlapping_majority(&self, other: &VoterSet) -> bool {
        let a: std::collections::BTreeSet<ReplicaKey> =
            self.voters.values().map(|n| n.key).collect();
        let b: std::collections::BTreeSet<ReplicaKey> =
            other.voters.values().map(|n| n.key).collect();
        a.symmetric_difference(&b).count() <= 1
    }
}

impl fmt::Display for VoterSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<String> = self.voters.values().map(|n| n.key.to_string()).collect();
        write!(f, "[{}]", keys.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(n: u8) -> Uuid {
        let mut b = [0u8; 16];
        b[15] = n;
        Uuid(b)
    }

    fn node(id: i32, d: u8) -> VoterNode {
        let mut l = BTreeMap::new();
        l.insert(
            "CONTROLLER".to_string(),
            Endpoint {
                host: "localhost".into(),
                port: 9000 + id as u16,
            },
        );
        VoterNode::new(ReplicaKey::new(id, dir(d)), l)
    }

    #[test]
    fn a_voter_is_told_apart_by_its_directory_id() {
        let set = VoterSet::from_nodes([node(1, 1), node(2, 2)]);
        assert!(set.is_voter(ReplicaKey::new(1, dir(1))));
        assert!(!set.is_voter(ReplicaKey::new(1, dir(9))), "a wiped disk");
        assert!(!set.is_voter(ReplicaKey::of_id(1)));
        let fixed = VoterSet::from_static([1, 2], &BTreeMap::new(), "CONTROLLER");
        assert!(
            fixed.is_voter(ReplicaKey::new(1, dir(9))),
            "static: id alone"
        );
    }

    #[test]
    fn add_remove_update_and_the_record_round_trip() {
        let set = VoterSet::from_nodes([node(1, 1)]);
        assert!(set.add(node(1, 5)).is_none(), "a duplicate id");
        let two = set.add(node(2, 2)).unwrap();
        assert!(two.has_overlapping_majority(&set));
        assert!(
            two.remove(ReplicaKey::new(2, dir(3))).is_none(),
            "another disk"
        );
        assert!(
            set.remove(ReplicaKey::new(1, dir(1))).is_none(),
            "the last voter"
        );
        assert_eq!(two.remove(ReplicaKey::new(2, dir(2))).unwrap(), set);
        let mut moved = node(2, 2);
        moved.listeners.get_mut("CONTROLLER").unwrap().port = 1;
        let updated = two.update(moved.clone()).unwrap();
        assert_eq!(updated.endpoint(2, "CONTROLLER").unwrap().port, 1);
        assert_eq!(
            VoterSet::from_record(&updated.to_record()).unwrap(),
            updated
        );
        let mut dup = updated.to_record();
        dup.voters.push(dup.voters[0].clone());
        assert!(VoterSet::from_record(&dup).is_none());
    }
}
