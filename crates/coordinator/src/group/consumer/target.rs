//! The group as a heartbeat or a fencing will leave it, before its records are applied
//! (members gone, one member added or changed, regexes resolved anew), and the target
//! assignment computed from it (Kafka's `TargetAssignmentBuilder`): a record for every
//! member whose target changes, then the new target assignment epoch.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::Uuid;

use super::assignor::{self, AssignmentMember, GroupSpec};
use super::group::ConsumerGroup;
use super::member::{ConsumerGroupMember, Partitions};
use super::records;
use super::subscription::member_topic_names;
use crate::context::TopicMetadata;
use crate::group::config::{AssignorName, GroupCoordinatorConfig};
use crate::group::record::CoordinatorRecord;

/// The group after a change.
pub(crate) struct Overlay<'a> {
    pub group: &'a ConsumerGroup,
    /// Members that leave (a replaced static member, a fenced member).
    pub removed: Vec<&'a str>,
    /// The member that joins or changes (replacing the group's member of that id).
    pub updated: Option<&'a ConsumerGroupMember>,
    /// Every resolved regex, as it will be.
    pub regexes: &'a BTreeMap<String, BTreeSet<String>>,
}

impl Overlay<'_> {
    fn is_replaced(&self, id: &str) -> bool {
        self.removed.contains(&id) || self.updated.is_some_and(|u| u.member_id == id)
    }

    /// The members after the change, in member id order (the updated one last).
    pub fn members(&self) -> impl Iterator<Item = &ConsumerGroupMember> {
        self.group
            .members
            .values()
            .filter(|m| !self.is_replaced(&m.member_id))
            .chain(self.updated)
    }

    /// How many members will subscribe to each name, and to each regex.
    fn counts(&self) -> (BTreeMap<String, usize>, BTreeMap<String, usize>) {
        let mut names = self.group.name_subscribers().clone();
        let mut regexes = self.group.regex_subscriber_counts().clone();
        let gone = self
            .removed
            .iter()
            .copied()
            .chain(self.updated.map(|u| u.member_id.as_str()));
        let mut seen = BTreeSet::new();
        for id in gone {
            let Some(m) = self.group.member(id) else {
                continue;
            };
            if !seen.insert(id) {
                continue;
            }
            for t in &m.subscribed_topic_names {
                decrement(&mut names, t);
            }
            if m.has_regex() {
                decrement(&mut regexes, &m.subscribed_topic_regex);
            }
        }
        if let Some(u) = self.updated {
            for t in &u.subscribed_topic_names {
                *names.entry(t.clone()).or_insert(0) += 1;
            }
            if u.has_regex() {
                *regexes.entry(u.subscribed_topic_regex.clone()).or_insert(0) += 1;
            }
        }
        (names, regexes)
    }

    /// Every topic name the group will subscribe to.
    pub fn subscribed_topic_names(&self) -> BTreeSet<String> {
        let (names, regexes) = self.counts();
        let mut out: BTreeSet<String> = names.into_keys().collect();
        for regex in regexes.keys() {
            if let Some(topics) = self.regexes.get(regex) {
                out.extend(topics.iter().cloned());
            }
        }
        out
    }

    /// The assignor the members will prefer.
    fn assignor(&self, config: &GroupCoordinatorConfig) -> AssignorName {
        let mut votes = self.group.assignor_votes().clone();
        for id in self.removed.iter().copied() {
            if let Some(a) = self
                .group
                .member(id)
                .and_then(|m| m.server_assignor.as_ref())
            {
                decrement(&mut votes, a);
            }
        }
        if let Some(u) = self.updated {
            if let Some(a) = self
                .group
                .member(&u.member_id)
                .and_then(|m| m.server_assignor.as_ref())
            {
                decrement(&mut votes, a);
            }
            if let Some(a) = &u.server_assignor {
                *votes.entry(a.clone()).or_insert(0) += 1;
            }
        }
        ConsumerGroup::preferred_assignor(&votes, &config.consumer_assignors)
            .unwrap_or(AssignorName::Uniform)
    }

    /// The new target assignment at `epoch`: every member's target, and the records that
    /// persist the difference from the current one.
    pub fn compute_target(
        &self,
        epoch: i32,
        now_ms: i64,
        metadata: &dyn TopicMetadata,
        config: &GroupCoordinatorConfig,
    ) -> (BTreeMap<String, Partitions>, Vec<CoordinatorRecord>) {
        let group = self.group;
        let mut spec = GroupSpec::default();
        let mut ids_by_name: BTreeMap<String, Option<Uuid>> = BTreeMap::new();
        for m in self.members() {
            let mut topics = BTreeSet::new();
            for name in member_topic_names(m, self.regexes) {
                let id = ids_by_name.entry(name).or_insert_with_key(|name| {
                    let (id, partitions) = metadata.topic_by_name(name)?;
                    spec.partitions.insert(id, partitions);
                    Some(id)
                });
                if let Some(id) = id {
                    topics.insert(*id);
                }
            }
            let current = group
                .target_of(&m.member_id, m.instance_id.as_deref())
                .cloned()
                .unwrap_or_default();
            spec.members.push(AssignmentMember {
                member_id: m.member_id.clone(),
                topics,
                current,
            });
        }
        let assignment = assignor::assign(self.assignor(config), spec);
        let mut out = Vec::new();
        for (member, target) in &assignment {
            if group.target_assignment.get(member) != Some(target) {
                out.push(records::target_assignment(&group.group_id, member, target));
            }
        }
        out.push(records::target_assignment_epoch(
            &group.group_id,
            epoch,
            now_ms,
        ));
        (assignment, out)
    }
}

fn decrement(map: &mut BTreeMap<String, usize>, key: &str) {
    if let Some(n) = map.get_mut(key) {
        *n -= 1;
        if *n == 0 {
            map.remove(key);
        }
    }
}
