//! FetchSnapshot (KIP-630) on both sides. The leader serves chunks of a snapshot it holds
//! to a fetcher it sent below its log start; the follower downloads it one chunk in flight
//! (in place of its Fetch) into the log's partial snapshot and installs it in place of its
//! log, which then starts at the snapshot's end offset with the HW raised to it. Kafka's
//! `KafkaRaftClient.handleFetchSnapshotRequest`, `handleFetchSnapshotResponse` and
//! `buildFetchSnapshotRequest`.

use kraftd_log::SnapshotId;
use kraftd_protocol::messages::{
    fetch_snapshot_request, fetch_snapshot_response, FetchSnapshotRequest, FetchSnapshotResponse,
};
use kraftd_protocol::ErrorCode;
use tracing::{info, warn};

use super::log::RaftLog;
use super::message::{RaftMessage, CLUSTER_METADATA_PARTITION, CLUSTER_METADATA_TOPIC};
use super::role::Role;
use super::{single_partition, RaftCore};

/// A snapshot being downloaded from the leader of `epoch` with FetchSnapshot (KIP-630),
/// into the log's partial snapshot; `position` bytes are held.
#[derive(Debug, Clone)]
pub(super) struct SnapshotDownload {
    pub(super) epoch: i32,
    id: SnapshotId,
    position: u64,
}

impl<L: RaftLog> RaftCore<L> {
    /// The leader serves a chunk of one of its snapshots (KafkaRaftClient
    /// `handleFetchSnapshotRequest`).
    pub(super) fn on_fetch_snapshot_request(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        req: FetchSnapshotRequest,
    ) {
        let resp = self.build_fetch_snapshot_response(&req);
        let served = resp.error_code == ErrorCode::None.code()
            && resp
                .topics
                .iter()
                .flat_map(|t| t.partitions.iter())
                .all(|p| p.error_code == ErrorCode::None.code());
        if served && req.replica_id >= 0 && req.replica_id != self.node_id {
            let timeout = self.config.check_quorum_timeout_ms();
            if let Role::Leader(l) = self.quorum.role_mut() {
                l.record_check_quorum(req.replica_id, now_ms, timeout);
            }
        }
        self.respond(
            from,
            corr,
            RaftMessage::FetchSnapshotResponse(Box::new(resp)),
        );
    }

    fn build_fetch_snapshot_response(&self, req: &FetchSnapshotRequest) -> FetchSnapshotResponse {
        if !self.has_valid_cluster_id(req.cluster_id.as_deref()) {
            return FetchSnapshotResponse {
                error_code: ErrorCode::InconsistentClusterId.code(),
                ..Default::default()
            };
        }
        let Some(p) =
            single_partition(&req.topics, |t| &t.name, |t| &t.partitions, |p| p.partition)
        else {
            return FetchSnapshotResponse {
                error_code: ErrorCode::InvalidRequest.code(),
                ..Default::default()
            };
        };
        let epoch = self.epoch();
        let code = self
            .validate_leader_only_request(p.current_leader_epoch)
            .unwrap_or(ErrorCode::None);
        let mut part = fetch_snapshot_response::PartitionSnapshot {
            index: CLUSTER_METADATA_PARTITION,
            error_code: code.code(),
            snapshot_id: fetch_snapshot_response::SnapshotId {
                end_offset: p.snapshot_id.end_offset,
                epoch: p.snapshot_id.epoch,
                ..Default::default()
            },
            current_leader: fetch_snapshot_response::LeaderIdAndEpoch {
                leader_id: self.leader_id().unwrap_or(-1),
                leader_epoch: epoch,
                ..Default::default()
            },
            ..Default::default()
        };
        if code == ErrorCode::None {
            let id = SnapshotId {
                end_offset: p.snapshot_id.end_offset,
                epoch: p.snapshot_id.epoch,
            };
            let max_bytes = (req.max_bytes.max(1) as usize).min(self.config.fetch_max_bytes);
            match u64::try_from(p.position) {
                Err(_) => part.error_code = ErrorCode::PositionOutOfRange.code(),
                Ok(position) => match self.log.read_snapshot(id, position, max_bytes) {
                    None => part.error_code = ErrorCode::SnapshotNotFound.code(),
                    Some((_, size)) if position > size => {
                        part.error_code = ErrorCode::PositionOutOfRange.code()
                    }
                    Some((bytes, size)) => {
                        part.size = i64::try_from(size).unwrap_or(i64::MAX);
                        part.position = p.position;
                        part.unaligned_records = bytes;
                    }
                },
            }
        }
        FetchSnapshotResponse {
            topics: vec![fetch_snapshot_response::TopicSnapshot {
                name: CLUSTER_METADATA_TOPIC.to_string(),
                partitions: vec![part],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// The leader answered a Fetch with the id of its latest snapshot (we are below its log
    /// start): install it when held already, or start downloading it with FetchSnapshot.
    pub(super) fn on_fetch_snapshot_id(
        &mut self,
        now_ms: u64,
        from: i32,
        epoch: i32,
        id: SnapshotId,
        backoff: u64,
    ) {
        if id.end_offset < 0 || id.epoch < 0 || id.epoch > epoch {
            warn!(
                node = self.node_id,
                from,
                ?id,
                "invalid snapshot id; ignored"
            );
            self.fetch_backoff_until_ms = backoff;
            return;
        }
        if id.end_offset < self.high_watermark {
            warn!(
                node = self.node_id,
                from,
                ?id,
                hw = self.high_watermark,
                "snapshot below our high watermark; ignored"
            );
            self.fetch_backoff_until_ms = backoff;
            return;
        }
        if self.log.read_snapshot(id, 0, 0).is_some() {
            // Held already (a restart after a download, before the log was replaced).
            if let Err(e) = self.log.install_snapshot(id, &[]) {
                warn!(node = self.node_id, from, error = %e, "snapshot install refused");
                self.fetch_backoff_until_ms = backoff;
                return;
            }
            self.on_snapshot_installed(now_ms, id);
            return;
        }
        if let Err(e) = self.log.begin_snapshot_download(id) {
            warn!(node = self.node_id, from, error = %e, "snapshot download refused");
            self.fetch_backoff_until_ms = backoff;
            return;
        }
        info!(node = self.node_id, from, ?id, "fetching snapshot");
        self.snapshot_download = Some(SnapshotDownload {
            epoch,
            id,
            position: 0,
        });
    }

    /// A follower stores a chunk; the last one installs the snapshot in place of its log
    /// (KafkaRaftClient `handleFetchSnapshotResponse`).
    pub(super) fn on_fetch_snapshot_response(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        resp: FetchSnapshotResponse,
    ) {
        let Some(backoff) =
            self.accept_fetch_reply(now_ms, from, corr, resp.error_code, "fetch snapshot")
        else {
            return;
        };
        let Some(p) =
            single_partition(&resp.topics, |t| &t.name, |t| &t.partitions, |p| p.index).cloned()
        else {
            warn!(
                node = self.node_id,
                from, "fetch snapshot response without the metadata partition"
            );
            self.fetch_backoff_until_ms = backoff;
            return;
        };
        if self.maybe_follow(
            now_ms,
            p.current_leader.leader_id,
            p.current_leader.leader_epoch,
        ) {
            self.snapshot_download = None;
            return;
        }
        if p.error_code != ErrorCode::None.code() {
            warn!(
                node = self.node_id,
                from,
                code = p.error_code,
                "fetch snapshot refused"
            );
            if p.error_code == ErrorCode::SnapshotNotFound.code()
                || p.error_code == ErrorCode::PositionOutOfRange.code()
            {
                // Fetch again: the leader names its current snapshot.
                self.snapshot_download = None;
            }
            let leader = &p.current_leader;
            self.on_fetch_partition_error(from, leader.leader_id, leader.leader_epoch, backoff);
            return;
        }
        if !self.successful_fetch_from_leader(now_ms, from) {
            return;
        }
        let Some(d) = self.snapshot_download.clone() else {
            return;
        };
        let same_id =
            p.snapshot_id.end_offset == d.id.end_offset && p.snapshot_id.epoch == d.id.epoch;
        let expected_position = i64::try_from(d.position).unwrap_or(i64::MAX);
        let fits = p.size >= 0
            && expected_position.saturating_add(p.unaligned_records.len() as i64) <= p.size;
        if !same_id || p.position != expected_position || !fits {
            warn!(
                node = self.node_id,
                from,
                position = p.position,
                size = p.size,
                "fetch snapshot chunk does not fit the download; starting over"
            );
            self.snapshot_download = None;
            self.fetch_backoff_until_ms = backoff;
            return;
        }
        let position = match self
            .log
            .append_snapshot_download(d.id, &p.unaligned_records)
        {
            Ok(position) => position,
            Err(e) => {
                warn!(node = self.node_id, from, error = %e, "snapshot chunk refused");
                self.snapshot_download = None;
                self.fetch_backoff_until_ms = backoff;
                return;
            }
        };
        if (position as i64) < p.size {
            if p.unaligned_records.is_empty() {
                self.fetch_backoff_until_ms = backoff;
            }
            if let Some(d) = self.snapshot_download.as_mut() {
                d.position = position;
            }
            return;
        }
        self.snapshot_download = None;
        if let Err(e) = self.log.finish_snapshot_download(d.id) {
            warn!(node = self.node_id, from, error = %e, "snapshot install refused");
            self.fetch_backoff_until_ms = backoff;
            return;
        }
        self.on_snapshot_installed(now_ms, d.id);
    }

    /// The log now starts at snapshot `id`, which the leader holds committed.
    fn on_snapshot_installed(&mut self, now_ms: u64, id: SnapshotId) {
        info!(node = self.node_id, ?id, "installed snapshot");
        self.reload_history(now_ms);
        if id.end_offset > self.high_watermark {
            self.set_high_watermark(id.end_offset);
        }
    }

    pub(super) fn fetch_snapshot_request(&self, d: &SnapshotDownload) -> FetchSnapshotRequest {
        FetchSnapshotRequest {
            cluster_id: Some(self.config.cluster_id.clone()),
            replica_id: self.node_id,
            max_bytes: self.config.fetch_max_bytes.min(i32::MAX as usize) as i32,
            topics: vec![fetch_snapshot_request::TopicSnapshot {
                name: CLUSTER_METADATA_TOPIC.to_string(),
                partitions: vec![fetch_snapshot_request::PartitionSnapshot {
                    partition: CLUSTER_METADATA_PARTITION,
                    current_leader_epoch: self.epoch(),
                    snapshot_id: fetch_snapshot_request::SnapshotId {
                        end_offset: d.id.end_offset,
                        epoch: d.id.epoch,
                        ..Default::default()
                    },
                    position: i64::try_from(d.position).unwrap_or(i64::MAX),
                    replica_directory_id: self.config.directory_id,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }
}
