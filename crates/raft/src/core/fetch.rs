//! The leader's side of Fetch: the request's checks in Kafka's order (M5), the fetcher's
//! position against the log (valid, diverging at an epoch per KIP-279, or below the log
//! start and sent the snapshot id per KIP-630), the purgatory where a Fetch with nothing to
//! return waits (bounded by [`MAX_PARKED_FETCHES`]), and the high watermark computed from
//! the voters' fetch offsets (M3). Kafka's `KafkaRaftClient.handleFetchRequest`,
//! `tryCompleteFetchRequest`, `validateOffsetAndEpoch` and `LeaderState.updateReplicaState`,
//! with `fetchPurgatory`.

use bytes::Bytes;
use kraftd_log::SnapshotId;
use kraftd_protocol::messages::{fetch_request, fetch_response, FetchRequest, FetchResponse};
use kraftd_protocol::ErrorCode;
use tracing::error;

use super::log::RaftLog;
use super::message::{RaftMessage, CLUSTER_METADATA_PARTITION, CLUSTER_METADATA_TOPIC_ID};
use super::role::Role;
use super::voter_set::ReplicaKey;
use super::{RaftCore, MAX_PARKED_FETCHES};

/// A fetcher's position against the leader's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FetchPosition {
    Valid,
    Diverging { epoch: i32, end: i64 },
    Snapshot(SnapshotId),
}

/// A Fetch waiting at the leader for data, an HW change or its max wait.
#[derive(Debug, Clone)]
pub(super) struct ParkedFetch {
    from: i32,
    correlation_id: i32,
    request: FetchRequest,
    pub(super) deadline_ms: u64,
}

impl<L: RaftLog> RaftCore<L> {
    pub(super) fn on_fetch_request(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        req: FetchRequest,
    ) {
        if let Some(resp) = self.validate_fetch(&req) {
            self.respond(from, corr, RaftMessage::FetchResponse(Box::new(resp)));
            return;
        }
        let p = fetch_partition(&req).expect("validated").clone();
        let replica = req.replica_state.replica_id;
        let position = self.check_fetch_position(p.fetch_offset, p.last_fetched_epoch);
        if position == FetchPosition::Valid && replica >= 0 && replica != self.node_id {
            let leader_end = self.log.end_offset();
            let timeout = self.config.check_quorum_timeout_ms();
            let key = ReplicaKey::new(replica, p.replica_directory_id);
            let is_voter_key = self.voter_set().is_voter(key);
            if let Role::Leader(l) = self.quorum.role_mut() {
                l.record_fetch(
                    replica,
                    p.replica_directory_id,
                    is_voter_key,
                    p.fetch_offset,
                    leader_end,
                    now_ms,
                    timeout,
                );
            }
            self.maybe_advance_leader_hw(now_ms);
        }
        self.answer_or_park(now_ms, from, corr, req, false);
    }

    /// The checks of KafkaRaftClient.handleFetchRequest, in its order; `Some` is the error
    /// response.
    fn validate_fetch(&self, req: &FetchRequest) -> Option<FetchResponse> {
        if !self.has_valid_cluster_id(req.cluster_id.as_deref()) {
            return Some(FetchResponse {
                error_code: ErrorCode::InconsistentClusterId.code(),
                ..Default::default()
            });
        }
        let Some(p) = fetch_partition(req) else {
            return Some(FetchResponse {
                error_code: ErrorCode::InvalidRequest.code(),
                ..Default::default()
            });
        };
        if p.fetch_offset < 0
            || p.last_fetched_epoch < 0
            || p.last_fetched_epoch > p.current_leader_epoch
            || req.max_wait_ms < 0
        {
            return Some(self.fetch_error(ErrorCode::InvalidRequest));
        }
        self.validate_leader_only_request(p.current_leader_epoch)
            .map(|code| self.fetch_error(code))
    }

    /// Where the fetcher's position stands against our log (Kafka's
    /// `validateOffsetAndEpoch`): fine, below our log start (it must fetch the latest
    /// snapshot, KIP-630), or diverging from ours at the largest epoch ≤ its last fetched
    /// epoch that we hold, which ends at the given offset (KIP-279).
    fn check_fetch_position(&self, fetch_offset: i64, last_fetched_epoch: i32) -> FetchPosition {
        let start = self.log.start_offset();
        let latest = self.log.latest_snapshot();
        let snapshot_at_start = latest.filter(|s| s.end_offset == start);
        if fetch_offset == start && last_fetched_epoch == 0 && snapshot_at_start.is_none() {
            return FetchPosition::Valid;
        }
        if let Some(latest) = latest {
            let before_start = fetch_offset < start
                || snapshot_at_start.is_some_and(|s| {
                    (fetch_offset == start && last_fetched_epoch != s.epoch)
                        || last_fetched_epoch < s.epoch
                });
            if before_start {
                return FetchPosition::Snapshot(latest);
            }
        }
        let (epoch, end) = self.log.end_offset_for_epoch(last_fetched_epoch);
        if epoch != last_fetched_epoch || fetch_offset > end {
            FetchPosition::Diverging { epoch, end }
        } else {
            FetchPosition::Valid
        }
    }

    /// Answers a valid Fetch now, or parks it when it has nothing to return.
    fn answer_or_park(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        req: FetchRequest,
        force: bool,
    ) {
        let (resp, has_news) = self.build_fetch_response(&req);
        if force || has_news || req.max_wait_ms == 0 || self.parked.len() >= MAX_PARKED_FETCHES {
            self.respond(from, corr, RaftMessage::FetchResponse(Box::new(resp)));
        } else {
            let deadline_ms = now_ms + (req.max_wait_ms as u64).min(self.config.fetch_max_wait_ms);
            self.parked_deadline_ms = Some(
                self.parked_deadline_ms
                    .map_or(deadline_ms, |d| d.min(deadline_ms)),
            );
            self.parked.push(ParkedFetch {
                from,
                correlation_id: corr,
                request: req,
                deadline_ms,
            });
        }
    }

    /// The response to a Fetch (errors included) and whether it tells the fetcher anything
    /// new: an error, a divergence, records, or an HW above the one it sent (KIP-1166).
    fn build_fetch_response(&self, req: &FetchRequest) -> (FetchResponse, bool) {
        if let Some(resp) = self.validate_fetch(req) {
            return (resp, true);
        }
        let p = fetch_partition(req).expect("validated");
        let hw = match self.quorum.role() {
            Role::Leader(l) if l.high_watermark_known => self.high_watermark,
            _ => -1,
        };
        let mut part = self.partition_response(ErrorCode::None);
        part.high_watermark = hw;
        match self.check_fetch_position(p.fetch_offset, p.last_fetched_epoch) {
            FetchPosition::Valid => {}
            FetchPosition::Diverging { epoch, end } => {
                part.diverging_epoch = fetch_response::EpochEndOffset {
                    epoch,
                    end_offset: end,
                    ..Default::default()
                };
                return (self.wrap_partition(part), true);
            }
            FetchPosition::Snapshot(id) => {
                part.snapshot_id = fetch_response::SnapshotId {
                    end_offset: id.end_offset,
                    epoch: id.epoch,
                    ..Default::default()
                };
                return (self.wrap_partition(part), true);
            }
        }
        let max_bytes = (p.partition_max_bytes.max(0) as usize)
            .min(req.max_bytes.max(0) as usize)
            .min(self.config.fetch_max_bytes)
            .max(1);
        let records = self.log.read(p.fetch_offset, max_bytes);
        let fetcher_hw_behind = p.high_watermark != i64::MAX && hw >= 0 && p.high_watermark < hw;
        let has_news = !records.is_empty() || fetcher_hw_behind;
        part.records = Some(records);
        (self.wrap_partition(part), has_news)
    }

    /// Answers parked fetches that now have something to say (or all, on a role change).
    pub(super) fn complete_parked(&mut self, now_ms: u64, all: bool) {
        if self.parked.is_empty() {
            return;
        }
        let parked = std::mem::take(&mut self.parked);
        self.parked_deadline_ms = None;
        for p in parked {
            self.answer_or_park(now_ms, p.from, p.correlation_id, p.request, all);
        }
    }

    pub(super) fn expire_parked(&mut self, now_ms: u64) {
        if self.parked_deadline_ms.is_none_or(|d| d > now_ms) {
            return;
        }
        let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.parked)
            .into_iter()
            .partition(|p| p.deadline_ms <= now_ms);
        self.parked_deadline_ms = keep.iter().map(|p| p.deadline_ms).min();
        self.parked = keep;
        for p in due {
            self.answer_or_park(now_ms, p.from, p.correlation_id, p.request, true);
        }
    }

    /// Recomputes the leader's HW from the voters' end offsets (M3).
    pub(super) fn maybe_advance_leader_hw(&mut self, now_ms: u64) {
        let flushed = self.log.flushed_offset();
        let current = self.high_watermark;
        let Role::Leader(l) = self.quorum.role_mut() else {
            return;
        };
        let majority = l.majority_end_offset(flushed);
        // The HW stays unknown until a record of this epoch commits.
        if majority <= l.epoch_start_offset {
            return;
        }
        l.high_watermark_known = true;
        if majority > current {
            self.set_high_watermark(majority);
            self.complete_parked(now_ms, false);
            self.maybe_complete_voter_change(now_ms);
        } else if majority < current {
            error!(
                node = self.node_id,
                epoch = self.epoch(),
                computed = majority,
                high_watermark = current,
                "computed high watermark below the current one: a voter lost committed data"
            );
        }
    }

    // ----- the messages -----

    fn partition_response(&self, error: ErrorCode) -> fetch_response::PartitionData {
        fetch_response::PartitionData {
            partition_index: CLUSTER_METADATA_PARTITION,
            error_code: error.code(),
            high_watermark: -1,
            log_start_offset: self.log.start_offset(),
            current_leader: fetch_response::LeaderIdAndEpoch {
                leader_id: self.leader_id().unwrap_or(-1),
                leader_epoch: self.epoch(),
                ..Default::default()
            },
            records: Some(Bytes::new()),
            ..Default::default()
        }
    }

    fn wrap_partition(&self, part: fetch_response::PartitionData) -> FetchResponse {
        FetchResponse {
            responses: vec![fetch_response::FetchableTopicResponse {
                topic_id: CLUSTER_METADATA_TOPIC_ID,
                partitions: vec![part],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn fetch_error(&self, error: ErrorCode) -> FetchResponse {
        self.wrap_partition(self.partition_response(error))
    }
}

/// The one `__cluster_metadata` partition of a Fetch (topics by id since v13).
fn fetch_partition(req: &FetchRequest) -> Option<&fetch_request::FetchPartition> {
    match req.topics.as_slice() {
        [t] if t.topic_id == CLUSTER_METADATA_TOPIC_ID => match t.partitions.as_slice() {
            [p] if p.partition == CLUSTER_METADATA_PARTITION => Some(p),
            _ => None,
        },
        _ => None,
    }
}
