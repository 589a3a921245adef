//! Committed offsets (Kafka's `OffsetMetadataManager`): OffsetCommit, OffsetFetch,
//! OffsetDelete, the offsets' part of DeleteGroups, and expiry
//! (`offsets.retention.minutes` once a group is empty, or a v1 commit's own expiry).
//!
//! State changes only through records: a commit writes OffsetCommit records and the same
//! records, replayed, update the map; a deletion writes tombstones.

use std::collections::{BTreeMap, HashMap};

use kraftd_protocol::coordinator::{
    LegacyOffsetCommitKey, LegacyOffsetCommitValue, OffsetCommitKey, OffsetCommitValue,
};
use kraftd_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kraftd_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kraftd_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kraftd_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartitions, OffsetFetchResponseTopics,
};
use kraftd_protocol::messages::{
    OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse,
};
use kraftd_protocol::{ErrorCode, GroupCoordinatorRecordKey, GroupCoordinatorRecordValue, Uuid};

use crate::context::RequestContext;
use crate::group::classic::ClassicGroup;
use crate::group::commit_api::CommitApi;
use crate::group::record::CoordinatorRecord;
use crate::group::shard::{Group, GroupCoordinatorShard};

/// OffsetCommit v9+ names KIP-848 member epochs and answers GROUP_ID_NOT_FOUND for an
/// unknown group; earlier versions ILLEGAL_GENERATION.
const COMMIT_GROUP_NOT_FOUND_VERSION: i16 = 9;

/// The value version Kafka 4.4 writes (`GroupCoordinatorRecordHelpers.offsetCommitValueVersion`
/// in the 4.4.0 jar): v1 when the commit carries its own expiry (OffsetCommit v2–4
/// `retention_time_ms`), else v4, the flexible version whose tagged `topicId` keeps the
/// committed topic's id (v3 had none: a shard loaded from the log lost the ids a live one
/// answered OffsetFetch with, found by the replay check in `testing`).
fn offset_commit_value_version(expire_timestamp: i64) -> i16 {
    if expire_timestamp >= 0 {
        1
    } else {
        4
    }
}

/// One committed offset (Kafka's `OffsetAndMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetAndMetadata {
    pub offset: i64,
    /// -1 when the client named none.
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
    /// -1 unless the commit asked for its own retention (OffsetCommit v2–4).
    pub expire_timestamp: i64,
    pub topic_id: Uuid,
    /// Where the record sits in the partition (-1 for one written but not yet placed).
    pub record_offset: i64,
}

/// Every group's committed offsets on this shard, and the transactional ones waiting for
/// their transaction's end (by producer id).
#[derive(Debug, Clone, Default)]
pub struct OffsetMetadataManager {
    offsets: HashMap<String, BTreeMap<(String, i32), OffsetAndMetadata>>,
    pub(crate) pending: HashMap<i64, BTreeMap<(String, String, i32), OffsetAndMetadata>>,
}

impl OffsetMetadataManager {
    pub fn get(&self, group: &str, topic: &str, partition: i32) -> Option<&OffsetAndMetadata> {
        self.offsets
            .get(group)?
            .get(&(topic.to_string(), partition))
    }

    /// The group's offsets, by (topic, partition).
    pub fn group_offsets(
        &self,
        group: &str,
    ) -> Option<&BTreeMap<(String, i32), OffsetAndMetadata>> {
        self.offsets.get(group)
    }

    pub fn has_offsets(&self, group: &str) -> bool {
        self.offsets.get(group).is_some_and(|o| !o.is_empty())
    }

    /// Committed offsets held, across groups (the `num-offsets` gauge).
    pub fn len(&self) -> usize {
        self.offsets.values().map(|o| o.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tombstones for every offset of `group`.
    pub fn delete_all_records(&self, group: &str) -> Vec<CoordinatorRecord> {
        self.offsets
            .get(group)
            .into_iter()
            .flat_map(|o| o.keys())
            .map(|(topic, partition)| tombstone(group, topic, *partition))
            .collect()
    }

    pub(crate) fn put(
        &mut self,
        group: &str,
        topic: String,
        partition: i32,
        value: OffsetAndMetadata,
    ) {
        self.offsets
            .entry(group.to_string())
            .or_default()
            .insert((topic, partition), value);
    }

    fn remove(&mut self, group: &str, topic: &str, partition: i32) {
        if let Some(o) = self.offsets.get_mut(group) {
            o.remove(&(topic.to_string(), partition));
            if o.is_empty() {
                self.offsets.remove(group);
            }
        }
    }
}

fn tombstone(group: &str, topic: &str, partition: i32) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(GroupCoordinatorRecordKey::OffsetCommit(OffsetCommitKey {
        group: group.to_string(),
        topic: topic.to_string(),
        partition,
    }))
}

pub(crate) fn commit_record(
    group: &str,
    topic: &str,
    partition: i32,
    o: &OffsetAndMetadata,
) -> CoordinatorRecord {
    CoordinatorRecord::new(
        GroupCoordinatorRecordKey::OffsetCommit(OffsetCommitKey {
            group: group.to_string(),
            topic: topic.to_string(),
            partition,
        }),
        GroupCoordinatorRecordValue::OffsetCommit(OffsetCommitValue {
            offset: o.offset,
            leader_epoch: o.leader_epoch,
            metadata: o.metadata.clone(),
            commit_timestamp: o.commit_timestamp,
            expire_timestamp: o.expire_timestamp,
            topic_id: o.topic_id,
            ..Default::default()
        }),
        offset_commit_value_version(o.expire_timestamp),
    )
}

impl GroupCoordinatorShard {
    pub(crate) fn replay_offset_commit(
        &mut self,
        record_offset: i64,
        producer_id: i64,
        key: OffsetCommitKey,
        value: Option<OffsetCommitValue>,
    ) {
        if producer_id >= 0 {
            if let Some(v) = value {
                self.replay_pending_txn_offset(record_offset, producer_id, key, v);
            }
            return;
        }
        match value {
            None => self.offsets.remove(&key.group, &key.topic, key.partition),
            Some(v) => {
                self.ensure_group_for_offsets(&key.group);
                self.offsets.put(
                    &key.group,
                    key.topic,
                    key.partition,
                    OffsetAndMetadata {
                        offset: v.offset,
                        leader_epoch: v.leader_epoch,
                        metadata: v.metadata,
                        commit_timestamp: v.commit_timestamp,
                        expire_timestamp: v.expire_timestamp,
                        topic_id: v.topic_id,
                        record_offset,
                    },
                );
            }
        }
    }

    pub(crate) fn replay_legacy_offset_commit(
        &mut self,
        record_offset: i64,
        producer_id: i64,
        key: LegacyOffsetCommitKey,
        value: Option<LegacyOffsetCommitValue>,
    ) {
        let key = OffsetCommitKey {
            group: key.group,
            topic: key.topic,
            partition: key.partition,
        };
        let value = value.map(|v| OffsetCommitValue {
            offset: v.offset,
            leader_epoch: -1,
            metadata: v.metadata,
            commit_timestamp: v.commit_timestamp,
            expire_timestamp: -1,
            ..Default::default()
        });
        self.replay_offset_commit(record_offset, producer_id, key, value);
    }

    /// A committed offset for a group this shard does not know makes it an empty classic
    /// group (Kafka: a "simple" group, listed with no protocol type), so it can be listed,
    /// described and deleted.
    pub(crate) fn ensure_group_for_offsets(&mut self, group: &str) {
        if !self.groups.contains_key(group) {
            self.groups.insert(
                group.to_string(),
                Group::Classic(ClassicGroup::new_empty(group.to_string(), self.now_ms)),
            );
        }
    }

    /// OffsetCommit (Kafka's `commitOffset`): the group and member are checked once for the
    /// whole request; each partition then gets its own answer.
    pub(crate) fn offset_commit(
        &mut self,
        ctx: &RequestContext,
        request: OffsetCommitRequest,
    ) -> OffsetCommitResponse {
        let whole = self.validate_commit(ctx, &request);
        if whole.is_ok() && !request.member_id.is_empty() {
            self.classic_commit_heartbeat(&request.group_id, &request.member_id);
        }
        let now = self.now_ms;
        let expire_timestamp = if ctx.api_version <= 4 && request.retention_time_ms >= 0 {
            now + request.retention_time_ms
        } else {
            -1
        };
        let mut records = Vec::new();
        let mut topics = Vec::with_capacity(request.topics.len());
        for topic in &request.topics {
            let mut partitions = Vec::with_capacity(topic.partitions.len());
            for p in &topic.partitions {
                let code = if let Err(code) = whole {
                    code
                } else if p.committed_metadata.as_ref().is_some_and(|m| {
                    m.len() > self.config.offset_metadata_max_bytes.max(0) as usize
                }) {
                    ErrorCode::OffsetMetadataTooLarge
                } else {
                    let o = OffsetAndMetadata {
                        offset: p.committed_offset,
                        leader_epoch: p.committed_leader_epoch,
                        metadata: p.committed_metadata.clone().unwrap_or_default(),
                        commit_timestamp: now,
                        expire_timestamp,
                        topic_id: topic.topic_id,
                        record_offset: -1,
                    };
                    records.push(commit_record(
                        &request.group_id,
                        &topic.name,
                        p.partition_index,
                        &o,
                    ));
                    ErrorCode::None
                };
                partitions.push(OffsetCommitResponsePartition {
                    partition_index: p.partition_index,
                    error_code: code.code(),
                    ..Default::default()
                });
            }
            topics.push(OffsetCommitResponseTopic {
                name: topic.name.clone(),
                topic_id: topic.topic_id,
                partitions,
                ..Default::default()
            });
        }
        if let Err(code) = self.write(records, true) {
            // Kafka's answer to a commit whose records do not fit one batch.
            let code = if code == ErrorCode::RecordListTooLarge {
                ErrorCode::InvalidCommitOffsetSize
            } else {
                code
            };
            for t in &mut topics {
                for p in &mut t.partitions {
                    if p.error_code == 0 {
                        p.error_code = code.code();
                    }
                }
            }
        }
        OffsetCommitResponse {
            topics,
            ..Default::default()
        }
    }

    fn validate_commit(
        &mut self,
        ctx: &RequestContext,
        r: &OffsetCommitRequest,
    ) -> Result<(), ErrorCode> {
        match self.groups.get(&r.group_id) {
            Some(group) => group.validate_offset_commit(
                &r.member_id,
                r.group_instance_id.as_deref(),
                r.generation_id_or_member_epoch,
                CommitApi::OffsetCommit(ctx.api_version),
            ),
            // A commit outside any generation (an admin's, or a consumer that assigns
            // itself partitions) creates the group when its records replay.
            None if r.generation_id_or_member_epoch < 0 => Ok(()),
            None if ctx.api_version >= COMMIT_GROUP_NOT_FOUND_VERSION => {
                Err(ErrorCode::GroupIdNotFound)
            }
            None => Err(ErrorCode::IllegalGeneration),
        }
    }

    /// OffsetFetch for one group (Kafka's `fetchOffsets` / `fetchAllOffsets`).
    pub(crate) fn offset_fetch(
        &mut self,
        _ctx: &RequestContext,
        request: OffsetFetchRequestGroup,
        require_stable: bool,
    ) -> OffsetFetchResponseGroup {
        let group_id = request.group_id.clone();
        let mut answer = OffsetFetchResponseGroup {
            group_id: group_id.clone(),
            ..Default::default()
        };
        if let Some(group) = self.groups.get(&group_id) {
            if let Err(code) =
                group.validate_offset_fetch(request.member_id.as_deref(), request.member_epoch)
            {
                answer.error_code = code.code();
                return answer;
            }
        }
        let partition = |index: i32, o: Option<&OffsetAndMetadata>| match o {
            Some(o) => OffsetFetchResponsePartitions {
                partition_index: index,
                committed_offset: o.offset,
                committed_leader_epoch: o.leader_epoch,
                metadata: Some(o.metadata.clone()),
                ..Default::default()
            },
            None => OffsetFetchResponsePartitions {
                partition_index: index,
                committed_offset: -1,
                committed_leader_epoch: -1,
                metadata: Some(String::new()),
                ..Default::default()
            },
        };
        match request.topics {
            Some(topics) => {
                for t in topics {
                    let partitions = t
                        .partition_indexes
                        .iter()
                        .map(|&i| partition(i, self.offsets.get(&group_id, &t.name, i)))
                        .collect();
                    answer.topics.push(OffsetFetchResponseTopics {
                        name: t.name,
                        topic_id: t.topic_id,
                        partitions,
                        ..Default::default()
                    });
                }
            }
            None => {
                let mut by_topic: BTreeMap<&str, Vec<OffsetFetchResponsePartitions>> =
                    BTreeMap::new();
                let mut ids: HashMap<&str, Uuid> = HashMap::new();
                for ((topic, index), o) in
                    self.offsets.group_offsets(&group_id).into_iter().flatten()
                {
                    by_topic
                        .entry(topic)
                        .or_default()
                        .push(partition(*index, Some(o)));
                    ids.insert(topic, o.topic_id);
                }
                for (topic, partitions) in by_topic {
                    answer.topics.push(OffsetFetchResponseTopics {
                        name: topic.to_string(),
                        topic_id: ids.get(topic).copied().unwrap_or_default(),
                        partitions,
                        ..Default::default()
                    });
                }
            }
        }
        if require_stable {
            // An offset a transaction may still change is not answered (Kafka's
            // UNSTABLE_OFFSET_COMMIT: the client asks again once the transaction ended).
            for t in &mut answer.topics {
                for p in &mut t.partitions {
                    if self.has_pending_txn_offset(&group_id, &t.name, p.partition_index) {
                        p.error_code = ErrorCode::UnstableOffsetCommit.code();
                        p.committed_offset = -1;
                    }
                }
            }
        }
        answer
    }

    /// OffsetDelete (Kafka's `deleteOffsets`): the group must exist; a topic the group
    /// consumes keeps its offsets (GROUP_SUBSCRIBED_TO_TOPIC).
    pub(crate) fn offset_delete(&mut self, request: OffsetDeleteRequest) -> OffsetDeleteResponse {
        let Some(group) = self.groups.get(&request.group_id) else {
            return OffsetDeleteResponse {
                error_code: ErrorCode::GroupIdNotFound.code(),
                ..Default::default()
            };
        };
        let mut records = Vec::new();
        let mut topics = Vec::new();
        for t in &request.topics {
            let subscribed = !group.is_empty() && group.is_subscribed_to_topic(&t.name);
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let code = if subscribed {
                        ErrorCode::GroupSubscribedToTopic
                    } else {
                        if self
                            .offsets
                            .get(&request.group_id, &t.name, p.partition_index)
                            .is_some()
                        {
                            records.push(tombstone(&request.group_id, &t.name, p.partition_index));
                        }
                        ErrorCode::None
                    };
                    OffsetDeleteResponsePartition {
                        partition_index: p.partition_index,
                        error_code: code.code(),
                    }
                })
                .collect();
            topics.push(OffsetDeleteResponseTopic {
                name: t.name.clone(),
                partitions,
            });
        }
        let error_code = match self.write(records, true) {
            Ok(()) => 0,
            Err(code) => code.code(),
        };
        OffsetDeleteResponse {
            error_code,
            topics,
            ..Default::default()
        }
    }

    /// Deletes expired offsets, then groups left empty with no offsets (Kafka's
    /// `cleanupGroupMetadata`). An offset expires at its own expiry when the commit set
    /// one; otherwise `offsets.retention.minutes` after its commit (or after the group
    /// emptied, for a group with a protocol), unless the group consumes its topic.
    pub(crate) fn expire_offsets_and_groups(&mut self) {
        let now = self.now_ms;
        let retention = self.config.offsets_retention_ms;
        let mut records = Vec::new();
        let mut emptied = Vec::new();
        for (group_id, group) in &self.groups {
            if !group.offsets_may_expire() {
                continue;
            }
            let offsets = self.offsets.group_offsets(group_id);
            let mut kept = 0usize;
            for ((topic, partition), o) in offsets.into_iter().flatten() {
                let expired = if o.expire_timestamp >= 0 {
                    now >= o.expire_timestamp
                } else if group.is_subscribed_to_topic(topic) {
                    false
                } else {
                    now - group.offset_expiration_base(o.commit_timestamp) >= retention
                };
                if expired {
                    records.push(tombstone(group_id, topic, *partition));
                } else {
                    kept += 1;
                }
            }
            // A share group is never expired (Kafka's `ShareGroup.shouldExpire`): its state
            // lives in the share coordinator and goes only with DeleteGroups.
            if kept == 0 && group.is_empty() && !matches!(group, Group::Share(_)) {
                emptied.push(group_id.clone());
            }
        }
        for id in &emptied {
            if let Some(g) = self.groups.get(id) {
                records.extend(g.delete_records());
            }
        }
        // Tombstones are small; should they not fit one batch, the next run goes on.
        if self.write(records, true).is_ok() {
            for id in emptied {
                self.groups.remove(&id);
            }
        }
    }
}
