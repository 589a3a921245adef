//! Transactional offset commits (Kafka's `OffsetMetadataManager` transactional half):
//! TxnOffsetCommit writes OffsetCommit records in a transactional batch of the producer;
//! they stay pending, invisible to OffsetFetch, until the transaction's marker lands in
//! this partition: a commit marker makes them the group's committed offsets (unless a later
//! plain commit already replaced one), an abort drops them. OffsetFetch with
//! `require_stable` answers UNSTABLE_OFFSET_COMMIT for a partition with a pending offset.

use kraftd_protocol::coordinator::{OffsetCommitKey, OffsetCommitValue};
use kraftd_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kraftd_protocol::messages::{TxnOffsetCommitRequest, TxnOffsetCommitResponse};
use kraftd_protocol::ErrorCode;

use crate::context::RequestContext;
use crate::group::commit_api::CommitApi;
use crate::group::offsets::{commit_record, OffsetAndMetadata};
use crate::group::shard::GroupCoordinatorShard;

impl GroupCoordinatorShard {
    /// TxnOffsetCommit: the group and member checked as a transactional commit (Kafka's
    /// `validateTransactionalOffsetCommit`: a group unknown here is accepted outside any
    /// generation, as a simple group; a request naming no member is accepted; a stale
    /// member epoch is ILLEGAL_GENERATION, the error transactional producers know), then
    /// one transactional batch of OffsetCommit records for the producer.
    pub(crate) fn txn_offset_commit(
        &mut self,
        _ctx: &RequestContext,
        r: TxnOffsetCommitRequest,
    ) -> TxnOffsetCommitResponse {
        let whole = match self.groups.get(&r.group_id) {
            Some(group) => group
                .validate_offset_commit(
                    &r.member_id,
                    r.group_instance_id.as_deref(),
                    r.generation_id_or_member_epoch,
                    CommitApi::Transactional,
                )
                .map_err(|code| match code {
                    ErrorCode::StaleMemberEpoch => ErrorCode::IllegalGeneration,
                    code => code,
                }),
            None if r.generation_id_or_member_epoch < 0 => Ok(()),
            None => Err(ErrorCode::IllegalGeneration),
        };
        let now = self.now_ms;
        let mut records = Vec::new();
        let mut topics = Vec::with_capacity(r.topics.len());
        for t in &r.topics {
            let mut partitions = Vec::with_capacity(t.partitions.len());
            for p in &t.partitions {
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
                        expire_timestamp: -1,
                        topic_id: t.topic_id,
                        record_offset: -1,
                    };
                    records.push(commit_record(&r.group_id, &t.name, p.partition_index, &o));
                    ErrorCode::None
                };
                partitions.push(TxnOffsetCommitResponsePartition {
                    partition_index: p.partition_index,
                    error_code: code.code(),
                    ..Default::default()
                });
            }
            topics.push(TxnOffsetCommitResponseTopic {
                name: t.name.clone(),
                topic_id: t.topic_id,
                partitions,
                ..Default::default()
            });
        }
        if let Err(code) = self.write_transactional(r.producer_id, r.producer_epoch, records) {
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
        TxnOffsetCommitResponse {
            topics,
            ..Default::default()
        }
    }

    /// An OffsetCommit record of a transactional batch: pending until its marker.
    pub(crate) fn replay_pending_txn_offset(
        &mut self,
        record_offset: i64,
        producer_id: i64,
        key: OffsetCommitKey,
        v: OffsetCommitValue,
    ) {
        self.offsets.pending.entry(producer_id).or_default().insert(
            (key.group, key.topic, key.partition),
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

    /// The producer's transaction ended (its marker is in this partition's log): its
    /// pending offsets become committed (`commit`) or are dropped. A pending offset whose
    /// record precedes the committed one's (a plain commit after it) does not replace it.
    pub fn complete_transaction(&mut self, producer_id: i64, commit: bool) {
        let Some(pending) = self.offsets.pending.remove(&producer_id) else {
            return;
        };
        if !commit {
            return;
        }
        for ((group, topic, partition), o) in pending {
            let newer = self
                .offsets
                .get(&group, &topic, partition)
                .is_none_or(|c| c.record_offset <= o.record_offset);
            if newer {
                self.ensure_group_for_offsets(&group);
                self.offsets.put(&group, topic, partition, o);
            }
        }
    }

    /// Whether a transaction may still change this partition's offset for `group`.
    pub fn has_pending_txn_offset(&self, group: &str, topic: &str, partition: i32) -> bool {
        let key = (group.to_string(), topic.to_string(), partition);
        self.offsets.pending.values().any(|p| p.contains_key(&key))
    }
}
