//! The controller's event loop (Kafka's `KafkaEventQueue` thread of the QuorumController):
//! one tokio task owning the [`QuorumController`], so the controller needs no locks. Inputs,
//! each followed by `process` and the replies it releases: Raft's events in order (committed
//! batches, snapshots, leader changes), queued operations from the listener, refusals of
//! scheduled appends, and the clock.

use std::collections::HashMap;
use std::time::Instant;

use bytes::Bytes;
use kraftd_log::SnapshotId;
use kraftd_protocol::metadata_record::{decode_metadata_record, encode_metadata_record};
use kraftd_protocol::metadata_version::MetadataVersion;
use kraftd_protocol::records::Batches;
use kraftd_protocol::{MetadataRecord, RequestBody, ResponseBody};
use kraftd_raft::driver::{AtomicAppendRefused, RaftEvent, RaftHandle};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tracing::{error, info, warn};

use super::{ControllerNodeConfig, TICK_INTERVAL};
use crate::metrics::ControllerMetrics;
use crate::publisher::MetadataPublisher;
use crate::quorum_controller::{
    CommittedBatch, ControllerError, OpId, ProposeError, QuorumController, QuorumControllerConfig,
    RaftClient, ReadOp, WriteOp,
};
use crate::snapshot::{load_image_snapshot, write_image_snapshot, SnapshotPolicy};
use crate::{MetadataDelta, MetadataImage};

/// A controller request for the event loop and where its answer goes. The operation is
/// built on the loop itself ([`super::apis::operation`]): operations are closures the
/// controller runs in place and need not cross threads.
pub(crate) struct ControllerRequest {
    pub version: i16,
    pub body: RequestBody,
    pub reply: oneshot::Sender<Result<ResponseBody, ControllerError>>,
    /// What CreateTopics, DeleteTopics and CreatePartitions charge (unbounded otherwise).
    pub quota: crate::quota::ControllerMutationQuota,
    /// Who sent it (an Envelope's client for a forwarded request): the delegation token
    /// APIs act for this principal.
    pub principal: kraftd_net::KafkaPrincipal,
    /// When the request was queued (`EventQueueTimeMs` runs from here to its handling).
    pub enqueued: Instant,
    /// A broker forwarded it in an Envelope: that broker checked what only it can (a
    /// `cordoned.log.dirs` naming its own log dirs).
    pub forwarded: bool,
}

/// One input of the loop, taken before it is handled so that its handling can be timed.
enum Input {
    Raft(Result<RaftEvent, broadcast::error::RecvError>),
    Refused(AtomicAppendRefused),
    Request(Option<Box<ControllerRequest>>),
    Tick,
}

pub(crate) enum Op {
    Write(WriteOp<ResponseBody>),
    Read(ReadOp<ResponseBody>),
}

/// What the event loop last published, for the node's owner and its tests.
#[derive(Debug, Clone, Default)]
pub struct ControllerStatus {
    pub leader_id: Option<i32>,
    pub epoch: i32,
    /// Whether this node is the active controller.
    pub active: bool,
    /// The offset of the last committed record applied, -1 before any.
    pub committed_offset: i64,
    pub image: MetadataImage,
    /// Set when the loop stopped on an error it cannot recover from (the committed log
    /// does not replay, Raft's events were lost): the node must restart.
    pub fatal: Option<String>,
}

pub(crate) struct EventLoop {
    controller: QuorumController<ResponseBody>,
    raft: RaftHandle,
    events: broadcast::Receiver<RaftEvent>,
    requests: mpsc::Receiver<ControllerRequest>,
    waiting: HashMap<OpId, oneshot::Sender<Result<ResponseBody, ControllerError>>>,
    refused_tx: mpsc::UnboundedSender<AtomicAppendRefused>,
    refused_rx: mpsc::UnboundedReceiver<AtomicAppendRefused>,
    status: watch::Sender<ControllerStatus>,
    started: Instant,
    base_ms: u64,
    policy: SnapshotPolicy,
    /// The epoch of the last committed batch: a snapshot at the committed offset is named by it.
    last_committed_epoch: i32,
    /// The append time of the last committed batch, the snapshot header's
    /// `lastContainedLogTimestamp`.
    last_committed_timestamp: i64,
    /// A snapshot being written on a blocking thread; at most one at a time.
    snapshot_task: Option<tokio::task::JoinHandle<()>>,
    /// Fed every committed change, in log order (A4).
    publishers: Vec<Box<dyn MetadataPublisher + Send>>,
    /// Kafka's controller metrics this loop sets (offsets, event timings, errors).
    metrics: ControllerMetrics,
}

/// Proposes through the Raft driver from inside the synchronous controller.
struct Proposer<'a> {
    raft: &'a RaftHandle,
    refused: &'a mpsc::UnboundedSender<AtomicAppendRefused>,
}

impl RaftClient for Proposer<'_> {
    fn propose(
        &mut self,
        epoch: i32,
        base_offset: i64,
        metadata_version: MetadataVersion,
        records: &[MetadataRecord],
    ) -> Result<(i64, i64), ProposeError> {
        let values = records
            .iter()
            .map(|r| encode_metadata_record(r, metadata_version.record_version(r)))
            .collect::<Result<Vec<Bytes>, _>>()
            .map_err(|e| ProposeError::Refused(format!("a record does not encode: {e}")))?;
        self.raft
            .schedule_atomic_append(epoch, base_offset, values, self.refused.clone())
            .map_err(|e| ProposeError::Refused(e.to_string()))
    }

    fn resign(&mut self, epoch: i32) {
        self.raft.resign(epoch);
    }
}

impl EventLoop {
    pub(crate) fn new(
        controller_config: QuorumControllerConfig,
        node: &ControllerNodeConfig,
        raft: RaftHandle,
        events: broadcast::Receiver<RaftEvent>,
        requests: mpsc::Receiver<ControllerRequest>,
        status: watch::Sender<ControllerStatus>,
        publishers: Vec<Box<dyn MetadataPublisher + Send>>,
    ) -> Self {
        let (refused_tx, refused_rx) = mpsc::unbounded_channel();
        let base_ms = unix_ms();
        EventLoop {
            controller: QuorumController::new(controller_config),
            raft,
            events,
            requests,
            waiting: HashMap::new(),
            refused_tx,
            refused_rx,
            status,
            started: Instant::now(),
            base_ms,
            policy: SnapshotPolicy::new(
                node.snapshot_max_bytes,
                node.snapshot_max_interval_ms,
                base_ms as i64,
            ),
            last_committed_epoch: 0,
            last_committed_timestamp: 0,
            snapshot_task: None,
            publishers,
            metrics: ControllerMetrics::new(),
        }
    }

    /// Sets the metrics handle the loop updates (the node's, shared with its publisher and
    /// the `/metrics` endpoint).
    pub(crate) fn with_metrics(mut self, metrics: ControllerMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    fn now_ms(&self) -> u64 {
        self.base_ms + self.started.elapsed().as_millis() as u64
    }

    pub(crate) async fn run(mut self) {
        let node_id = self.controller.node_id();
        if let Err(reason) = self.run_inner().await {
            error!(node = node_id, "controller event loop stopped: {reason}");
            self.status.send_modify(|s| s.fatal = Some(reason));
        }
        // Whatever still waits gets NOT_CONTROLLER: this node no longer answers.
        for (_, reply) in self.waiting.drain() {
            let _ = reply.send(Err(ControllerError::NotController { leader_id: None }));
        }
    }

    async fn run_inner(&mut self) -> Result<(), String> {
        let mut tick = tokio::time::interval(TICK_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let input = tokio::select! {
                biased;
                event = self.events.recv() => Input::Raft(event),
                Some(refused) = self.refused_rx.recv() => Input::Refused(refused),
                request = self.requests.recv() => Input::Request(request.map(Box::new)),
                _ = tick.tick() => Input::Tick,
            };
            let began = Instant::now();
            match input {
                Input::Raft(Ok(event)) => {
                    if let Err(e) = self.on_raft_event(event) {
                        self.metrics.record_metadata_error();
                        return Err(e);
                    }
                }
                Input::Raft(Err(broadcast::error::RecvError::Lagged(n))) => {
                    return Err(format!("fell {n} Raft events behind; restart to reload"));
                }
                // The driver stopped under us (a disk error, say): so must the controller.
                Input::Raft(Err(broadcast::error::RecvError::Closed)) => {
                    return Err(self
                        .raft
                        .stop_reason()
                        .unwrap_or_else(|| "the Raft driver stopped".to_string()));
                }
                Input::Refused(refused) => {
                    warn!(%refused, "scheduled append refused");
                    let mut proposer = Proposer {
                        raft: &self.raft,
                        refused: &self.refused_tx,
                    };
                    self.controller
                        .handle_append_refused(refused.epoch, &mut proposer);
                }
                Input::Request(Some(request)) => {
                    let waited = began.saturating_duration_since(request.enqueued);
                    self.metrics
                        .record_event_queue_time(waited.as_secs_f64() * 1000.0, self.now_ms());
                    self.on_request(*request);
                }
                Input::Request(None) => return Ok(()),
                Input::Tick => {
                    let now = self.now_ms();
                    let mut proposer = Proposer {
                        raft: &self.raft,
                        refused: &self.refused_tx,
                    };
                    self.controller.tick(now, &mut proposer);
                    self.maybe_snapshot(now);
                }
            }
            let mut proposer = Proposer {
                raft: &self.raft,
                refused: &self.refused_tx,
            };
            self.controller.process(&mut proposer);
            for completion in self.controller.drain_completions() {
                if let Some(reply) = self.waiting.remove(&completion.id) {
                    let _ = reply.send(completion.result);
                }
            }
            self.publish();
            self.metrics.record_event_processing_time(
                began.elapsed().as_secs_f64() * 1000.0,
                self.now_ms(),
            );
        }
    }

    fn on_request(&mut self, request: ControllerRequest) {
        let Some(op) = super::apis::operation_with_quota(
            request.version,
            request.body,
            request.quota,
            &request.principal,
            request.forwarded,
            self.raft.metrics().borrow().kraft_version,
        ) else {
            let _ = request.reply.send(Err(ControllerError::InvalidRecords(
                "not a controller API".to_string(),
            )));
            return;
        };
        let submitted = match op {
            Op::Write(op) => self.controller.submit_write(op),
            Op::Read(op) => self.controller.submit_read(op),
        };
        match submitted {
            Ok(id) => {
                self.waiting.insert(id, request.reply);
            }
            Err(e) => {
                let _ = request.reply.send(Err(e));
            }
        }
    }

    fn on_raft_event(&mut self, event: RaftEvent) -> Result<(), String> {
        match event {
            RaftEvent::Committed(batch) => {
                let bytes = batch.bytes.len() as u64;
                let committed = decode_committed(&batch)?;
                self.controller.handle_commit(&committed).map_err(|e| {
                    format!(
                        "committed batch at {} does not replay: {e}",
                        batch.base_offset
                    )
                })?;
                if let Some(delta) = self.controller.take_commit_delta() {
                    self.publish_metadata(&delta);
                }
                self.last_committed_epoch = batch.epoch;
                if let Some(Ok(parsed)) = Batches::new(batch.bytes.clone()).last() {
                    self.last_committed_timestamp = parsed.max_timestamp();
                }
                let now = self.now_ms();
                if self.policy.record_committed(bytes, now as i64) {
                    self.maybe_snapshot(now);
                }
            }
            RaftEvent::Snapshot { id, bytes } => {
                let image = load_image_snapshot(bytes)
                    .map_err(|e| format!("snapshot {id:?} does not load: {e}"))?;
                info!(?id, "loaded a snapshot from the leader");
                self.controller.handle_snapshot(image, id.end_offset);
                // A delta from the empty image: publishers rebuild from the snapshot's image.
                self.publish_metadata(&MetadataDelta::new(&MetadataImage::empty()));
                self.last_committed_epoch = id.epoch;
                self.policy.snapshot_taken(self.now_ms() as i64);
            }
            RaftEvent::LeaderChange {
                epoch,
                leader_id,
                log_end_offset,
            } => {
                self.controller
                    .handle_leader_change_at(leader_id, epoch, Some(log_end_offset));
            }
            RaftEvent::LeaderAppended {
                epoch,
                base_offset,
                end_offset,
            } => self
                .controller
                .handle_leader_append(epoch, base_offset, end_offset),
        }
        Ok(())
    }

    /// Takes a snapshot of the committed image when the policy says so, serialized off the
    /// event loop (the image is immutable and shared, so the loop goes on).
    fn maybe_snapshot(&mut self, now_ms: u64) {
        if self
            .snapshot_task
            .as_ref()
            .is_some_and(|t| !t.is_finished())
        {
            return;
        }
        let committed = self.controller.committed_offset();
        if committed < 0 || !self.policy.should_snapshot(now_ms as i64) {
            return;
        }
        self.policy.snapshot_taken(now_ms as i64);
        let id = SnapshotId {
            end_offset: committed + 1,
            epoch: self.last_committed_epoch,
        };
        let image = self.controller.committed_image().clone();
        let raft = self.raft.clone();
        let last_timestamp = self.last_committed_timestamp;
        self.snapshot_task = Some(tokio::spawn(async move {
            let bytes = tokio::task::spawn_blocking(move || {
                write_image_snapshot(&image, id.epoch, last_timestamp)
            })
            .await;
            match bytes {
                Ok(Ok(bytes)) => match raft.create_snapshot(id, bytes).await {
                    Ok(log_start) => info!(?id, log_start, "metadata snapshot written"),
                    Err(e) => warn!(?id, "metadata snapshot failed: {e}"),
                },
                Ok(Err(e)) => warn!(?id, "metadata snapshot does not encode: {e}"),
                Err(e) => warn!(?id, "metadata snapshot task failed: {e}"),
            }
        }));
    }

    fn publish_metadata(&mut self, delta: &MetadataDelta) {
        let image = self.controller.committed_image();
        for publisher in &mut self.publishers {
            publisher.on_metadata_update(delta, image);
        }
    }

    fn publish(&self) {
        let leader = self.controller.leader();
        let committed = self.controller.committed_offset();
        let active = self.controller.is_active();
        // Kafka's OffsetControlManager: the active controller applies a record when it
        // schedules its append (stamped with the time then), a standby when it is committed
        // (stamped with the batch's append time).
        let applied = self.controller.last_written_offset();
        let applied_ms = if applied > committed {
            self.now_ms() as i64
        } else {
            self.last_committed_timestamp
        };
        self.metrics
            .set_offsets(active, committed, applied, applied_ms);
        self.status.send_if_modified(|s| {
            if s.committed_offset == committed
                && s.leader_id == leader.leader_id
                && s.epoch == leader.epoch
                && s.active == active
            {
                return false;
            }
            s.leader_id = leader.leader_id;
            s.epoch = leader.epoch;
            s.active = active;
            s.committed_offset = committed;
            s.image = self.controller.committed_image().clone();
            true
        });
    }
}

/// Decodes a committed Raft batch into the controller's records with their offsets.
/// Control batches (LeaderChange and the like) carry no metadata records but still move
/// the committed offset.
pub fn decode_committed(batch: &kraftd_raft::CommittedBatch) -> Result<CommittedBatch, String> {
    let mut records = Vec::new();
    if !batch.is_control {
        for parsed in Batches::new(batch.bytes.clone()) {
            let parsed =
                parsed.map_err(|e| format!("committed batch at {}: {e}", batch.base_offset))?;
            let iter = parsed
                .records()
                .map_err(|e| format!("committed batch at {}: {e}", batch.base_offset))?;
            for record in iter {
                let record =
                    record.map_err(|e| format!("committed batch at {}: {e}", batch.base_offset))?;
                let offset = parsed.base_offset() + i64::from(record.offset_delta);
                let value = record
                    .value
                    .ok_or_else(|| format!("metadata record at {offset} has a null value"))?;
                let (decoded, _version) = decode_metadata_record(value)
                    .map_err(|e| format!("metadata record at {offset}: {e}"))?;
                records.push((offset, decoded));
            }
        }
    }
    Ok(CommittedBatch {
        epoch: batch.epoch,
        last_offset: batch.last_offset,
        records,
    })
}

fn unix_ms() -> u64 {
    kraftd_log::clock::unix_ms().max(0) as u64
}
