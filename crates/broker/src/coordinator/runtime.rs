//! The coordinator runtime (Kafka's `CoordinatorRuntime`), the tokio edge around the
//! sans-IO shards: one event loop owns every shard this broker leads.
//!
//! - A partition elected here is loaded on a blocking thread (requests meanwhile get
//!   COORDINATOR_LOAD_IN_PROGRESS); one that moves away is dropped and everything it owed
//!   is answered NOT_COORDINATOR.
//! - A request runs on its shard at once. The records it produced are appended to the
//!   partition as one batch (at the leader epoch the shard was loaded in), and its reply,
//!   like every reply, is held until everything the shard had written when it replied is
//!   committed (the HW passed it): a client never acts on state a failover could lose.
//! - A write that fails (refused, or leadership lost before it committed) fails every
//!   reply still held and reloads the shard from the log, which holds exactly what was
//!   appended: the in-memory state rolls back to the log's.
//! - Timers: the loop sleeps until the earliest deadline of any shard.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use crate::group_coordinator::shard::RequestContext;
use crate::group_coordinator::{
    GroupCoordinatorConfig, GroupCoordinatorShard, ReplyId, ShardOutput, ShardRequest,
    ShardResponse, TopicMetadata,
};
use bytes::Bytes;
use kraftd_log::clock::unix_ms;
use kraftd_protocol::records::RecordBatchBuilder;
use kraftd_protocol::{ErrorCode, Uuid};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::loader::{load_shard, LoadError};
use super::metrics::CoordinatorMetrics;
use crate::replica::replica_manager::ReplicaManager;

/// Where a shard's answer goes.
pub type Responder = oneshot::Sender<Result<ShardResponse, ErrorCode>>;

/// A broadcast's answers: one channel per shard served, and whether some shard is still
/// loading.
pub type BroadcastAnswers = (
    Vec<oneshot::Receiver<Result<ShardResponse, ErrorCode>>>,
    bool,
);

/// How long a write may wait for the ISR before the shard gives up on it and reloads.
const COMMIT_TIMEOUT: Duration = Duration::from_secs(60);
/// Before a failed load (other than leadership moving) is tried again.
const LOAD_RETRY: Duration = Duration::from_secs(1);

/// What the loop reacts to.
#[derive(Debug)]
pub enum Event {
    Request {
        partition: i32,
        ctx: RequestContext,
        request: ShardRequest,
        respond: Responder,
    },
    /// The same request on every shard this broker serves (ListGroups); each answer on
    /// its own channel, and whether some shard is still loading.
    Broadcast {
        request: ShardRequest,
        respond: oneshot::Sender<BroadcastAnswers>,
    },
    Elected {
        partition: i32,
        topic_id: Uuid,
        leader_epoch: i32,
    },
    Resigned {
        partition: i32,
    },
    Loaded {
        partition: i32,
        leader_epoch: i32,
        result: Result<super::loader::Loaded, LoadError>,
        started: Instant,
    },
    Committed {
        partition: i32,
        leader_epoch: i32,
        end_offset: i64,
        error: ErrorCode,
    },
    Metadata(Arc<dyn TopicMetadata>),
}

/// A shard being served.
#[derive(Debug)]
struct Active {
    shard: GroupCoordinatorShard,
    topic_id: Uuid,
    leader_epoch: i32,
    next_reply: ReplyId,
    /// Replies the shard owes (a classic JoinGroup waits for its rebalance).
    owed: HashMap<ReplyId, Responder>,
    /// Replies given, waiting until the HW reaches their offset.
    held: VecDeque<(i64, Responder, ShardResponse)>,
    /// The offset after the last batch appended.
    written_end: i64,
    /// The offset below which everything is committed.
    committed_end: i64,
}

#[derive(Debug)]
enum PartitionState {
    Loading { topic_id: Uuid, leader_epoch: i32 },
    Active(Box<Active>),
}

/// The event loop's state.
pub struct CoordinatorRuntime {
    config: Arc<GroupCoordinatorConfig>,
    replica_manager: Arc<ReplicaManager>,
    metadata: Arc<dyn TopicMetadata>,
    partitions: BTreeMap<i32, PartitionState>,
    events: mpsc::UnboundedSender<Event>,
    metrics: Arc<CoordinatorMetrics>,
    last_gauges_ms: i64,
}

impl std::fmt::Debug for CoordinatorRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoordinatorRuntime")
            .field("partitions", &self.partitions.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Kafka's mapping of a failed write's error to what the client is told
/// (`GroupCoordinatorService.normalizeException`).
pub fn normalize_write_error(code: ErrorCode) -> ErrorCode {
    match code {
        ErrorCode::UnknownTopicOrPartition
        | ErrorCode::NotEnoughReplicas
        | ErrorCode::NotEnoughReplicasAfterAppend
        | ErrorCode::RequestTimedOut => ErrorCode::CoordinatorNotAvailable,
        ErrorCode::NotLeaderOrFollower | ErrorCode::KafkaStorageError => ErrorCode::NotCoordinator,
        ErrorCode::MessageTooLarge
        | ErrorCode::RecordListTooLarge
        | ErrorCode::InvalidFetchSize => ErrorCode::UnknownServerError,
        other => other,
    }
}

impl CoordinatorRuntime {
    pub fn new(
        config: Arc<GroupCoordinatorConfig>,
        replica_manager: Arc<ReplicaManager>,
        metadata: Arc<dyn TopicMetadata>,
        events: mpsc::UnboundedSender<Event>,
        metrics: Arc<CoordinatorMetrics>,
    ) -> Self {
        CoordinatorRuntime {
            config,
            replica_manager,
            metadata,
            partitions: BTreeMap::new(),
            events,
            metrics,
            last_gauges_ms: 0,
        }
    }

    /// Runs until every sender of events is gone.
    pub async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Event>) {
        loop {
            // Timers due fire before the next event, so a busy loop never starves them.
            if self.next_deadline().is_some_and(|at| at <= unix_ms()) {
                self.fire_timers();
            }
            let deadline = self.next_deadline();
            let event = match deadline {
                Some(at) => {
                    let wait = Duration::from_millis((at - unix_ms()).max(0) as u64);
                    tokio::select! {
                        e = rx.recv() => e,
                        _ = tokio::time::sleep(wait) => {
                            self.fire_timers();
                            continue;
                        }
                    }
                }
                None => rx.recv().await,
            };
            let Some(event) = event else { break };
            self.handle(event);
        }
        for (p, state) in std::mem::take(&mut self.partitions) {
            if let PartitionState::Active(active) = state {
                Self::fail_all(p, *active, ErrorCode::NotCoordinator);
            }
        }
    }

    fn next_deadline(&self) -> Option<i64> {
        self.partitions
            .values()
            .filter_map(|s| match s {
                PartitionState::Active(a) => a.shard.next_deadline(),
                PartitionState::Loading { .. } => None,
            })
            .min()
    }

    fn fire_timers(&mut self) {
        let now = unix_ms();
        let due: Vec<i32> = self
            .partitions
            .iter()
            .filter_map(|(p, s)| match s {
                PartitionState::Active(a) if a.shard.next_deadline().is_some_and(|d| d <= now) => {
                    Some(*p)
                }
                _ => None,
            })
            .collect();
        for p in due {
            if let Some(PartitionState::Active(a)) = self.partitions.get_mut(&p) {
                a.shard.on_timeout(now);
            }
            self.process_output(p);
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Request {
                partition,
                ctx,
                request,
                respond,
            } => self.request(partition, &ctx, request, respond),
            Event::Broadcast { request, respond } => {
                let mut receivers = Vec::new();
                let mut loading = false;
                let partitions: Vec<i32> = self.partitions.keys().copied().collect();
                for p in partitions {
                    match self.partitions.get(&p) {
                        Some(PartitionState::Active(_)) => {
                            let (tx, rx) = oneshot::channel();
                            self.request(p, &RequestContext::default(), request.clone(), tx);
                            receivers.push(rx);
                        }
                        _ => loading = true,
                    }
                }
                let _ = respond.send((receivers, loading));
            }
            Event::Elected {
                partition,
                topic_id,
                leader_epoch,
            } => self.elect(partition, topic_id, leader_epoch),
            Event::Resigned { partition } => {
                if let Some(PartitionState::Active(active)) = self.partitions.remove(&partition) {
                    info!(
                        partition,
                        "group coordinator shard unloaded: leadership moved"
                    );
                    Self::fail_all(partition, *active, ErrorCode::NotCoordinator);
                }
                self.metrics.set_shards(&self.partitions_summary());
                self.publish_group_counts(true);
            }
            Event::Loaded {
                partition,
                leader_epoch,
                result,
                started,
            } => self.loaded(partition, leader_epoch, result, started),
            Event::Committed {
                partition,
                leader_epoch,
                end_offset,
                error,
            } => self.committed(partition, leader_epoch, end_offset, error),
            Event::Metadata(metadata) => {
                self.metadata = Arc::clone(&metadata);
                let active: Vec<i32> = self
                    .partitions
                    .iter()
                    .filter(|(_, s)| matches!(s, PartitionState::Active(_)))
                    .map(|(p, _)| *p)
                    .collect();
                for p in active {
                    if let Some(PartitionState::Active(a)) = self.partitions.get_mut(&p) {
                        a.shard.on_metadata_update(Arc::clone(&metadata));
                    }
                    self.process_output(p);
                }
            }
        }
    }

    fn partitions_summary(&self) -> Vec<(i32, bool)> {
        self.partitions
            .iter()
            .map(|(p, s)| (*p, matches!(s, PartitionState::Active(_))))
            .collect()
    }

    fn request(
        &mut self,
        partition: i32,
        ctx: &RequestContext,
        request: ShardRequest,
        respond: Responder,
    ) {
        match self.partitions.get_mut(&partition) {
            None => {
                let _ = respond.send(Err(ErrorCode::NotCoordinator));
            }
            Some(PartitionState::Loading { .. }) => {
                let _ = respond.send(Err(ErrorCode::CoordinatorLoadInProgress));
            }
            Some(PartitionState::Active(active)) => {
                let id = active.next_reply;
                active.next_reply += 1;
                active.owed.insert(id, respond);
                active.shard.handle(unix_ms(), ctx, id, request);
                self.process_output(partition);
            }
        }
    }

    /// Appends what the shard wrote and routes its replies (see the module docs).
    fn process_output(&mut self, partition: i32) {
        let mut active = match self.partitions.remove(&partition) {
            Some(PartitionState::Active(a)) => a,
            Some(other) => {
                self.partitions.insert(partition, other);
                return;
            }
            None => return,
        };
        let ShardOutput { records, replies } = active.shard.take_output();
        self.metrics.record_stats(active.shard.take_stats());
        if !records.is_empty() {
            if let Err(code) = self.append(&mut active, &records) {
                warn!(partition, error = ?code, "group coordinator write failed; reloading the shard from its log");
                let (topic_id, epoch) = (active.topic_id, active.leader_epoch);
                let mut active = *active;
                // The replies of this very call fail too.
                for (id, _) in replies {
                    if let Some(r) = active.owed.remove(&id) {
                        let _ = r.send(Err(normalize_write_error(code)));
                    }
                }
                Self::fail_all(partition, active, normalize_write_error(code));
                self.elect(partition, topic_id, epoch);
                return;
            }
        }
        for (id, response) in replies {
            let Some(respond) = active.owed.remove(&id) else {
                debug_assert!(false, "shard replied twice or to an unknown reply id {id}");
                continue;
            };
            if active.written_end <= active.committed_end {
                let _ = respond.send(Ok(response));
            } else {
                active
                    .held
                    .push_back((active.written_end, respond, response));
            }
        }
        self.partitions
            .insert(partition, PartitionState::Active(active));
        self.publish_group_counts(false);
    }

    /// The group gauges, at most once a second (or now with `force`).
    fn publish_group_counts(&mut self, force: bool) {
        let now = unix_ms();
        if !force && now - self.last_gauges_ms < 1000 {
            return;
        }
        self.last_gauges_ms = now;
        let mut groups = BTreeMap::new();
        let mut offsets = 0;
        for state in self.partitions.values() {
            if let PartitionState::Active(a) = state {
                for (k, n) in a.shard.group_counts() {
                    *groups.entry(k).or_insert(0) += n;
                }
                offsets += a.shard.offsets_count();
            }
        }
        self.metrics.set_groups(groups, offsets);
    }

    fn append(
        &self,
        active: &mut Active,
        records: &[crate::group_coordinator::CoordinatorRecord],
    ) -> Result<(), ErrorCode> {
        let now = unix_ms();
        let mut builder = RecordBatchBuilder::new(0);
        for r in records {
            let (key, value) = r.encode().map_err(|_| ErrorCode::UnknownServerError)?;
            builder
                .append(now, Some(key), value, Vec::new())
                .map_err(|_| ErrorCode::UnknownServerError)?;
        }
        let batch: Bytes = builder.build().map_err(|_| ErrorCode::UnknownServerError)?;
        let partition = active.shard.partition();
        let (hosted, end) = self.replica_manager.append_coordinator_batch(
            active.topic_id,
            partition,
            active.leader_epoch,
            batch,
        )?;
        active.written_end = end;
        self.metrics.record_write(records.len());

        let events = self.events.clone();
        let epoch = active.leader_epoch;
        tokio::spawn(async move {
            let error = ReplicaManager::wait_for_coordinator_commit(
                &hosted,
                epoch,
                end,
                Instant::now() + COMMIT_TIMEOUT,
            )
            .await;
            let _ = events.send(Event::Committed {
                partition,
                leader_epoch: epoch,
                end_offset: end,
                error,
            });
        });
        Ok(())
    }

    fn committed(&mut self, partition: i32, leader_epoch: i32, end_offset: i64, error: ErrorCode) {
        let Some(PartitionState::Active(active)) = self.partitions.get_mut(&partition) else {
            return;
        };
        if active.leader_epoch != leader_epoch {
            return;
        }
        if error != ErrorCode::None {
            warn!(partition, end_offset, error = ?error, "group coordinator write did not commit; reloading the shard from its log");
            let Some(PartitionState::Active(active)) = self.partitions.remove(&partition) else {
                return;
            };
            let topic_id = active.topic_id;
            Self::fail_all(partition, *active, normalize_write_error(error));
            self.elect(partition, topic_id, leader_epoch);
            return;
        }
        active.committed_end = active.committed_end.max(end_offset);
        while let Some((offset, _, _)) = active.held.front() {
            if *offset > active.committed_end {
                break;
            }
            let (_, respond, response) = active.held.pop_front().expect("front exists");
            let _ = respond.send(Ok(response));
        }
    }

    /// Answers everything a dropped shard owed with `code`.
    fn fail_all(partition: i32, active: Active, code: ErrorCode) {
        debug!(partition, owed = active.owed.len(), held = active.held.len(), error = ?code, "failing a shard's pending replies");
        for (_, respond) in active.owed {
            let _ = respond.send(Err(code));
        }
        for (_, respond, _) in active.held {
            let _ = respond.send(Err(code));
        }
    }

    fn elect(&mut self, partition: i32, topic_id: Uuid, leader_epoch: i32) {
        match self.partitions.get(&partition) {
            Some(PartitionState::Active(a))
                if a.leader_epoch == leader_epoch && a.topic_id == topic_id =>
            {
                return
            }
            Some(PartitionState::Loading {
                leader_epoch: e,
                topic_id: t,
            }) if *e == leader_epoch && *t == topic_id => return,
            _ => {}
        }
        if let Some(PartitionState::Active(old)) = self.partitions.remove(&partition) {
            Self::fail_all(partition, *old, ErrorCode::NotCoordinator);
        }
        info!(partition, leader_epoch, "loading group coordinator shard");
        self.partitions.insert(
            partition,
            PartitionState::Loading {
                topic_id,
                leader_epoch,
            },
        );
        self.metrics.set_shards(&self.partitions_summary());
        let rm = Arc::clone(&self.replica_manager);
        let config = Arc::clone(&self.config);
        let metadata = Arc::clone(&self.metadata);
        let events = self.events.clone();
        let started = Instant::now();
        tokio::task::spawn_blocking(move || {
            let result = load_shard(&rm, topic_id, partition, leader_epoch, config, metadata);
            let _ = events.send(Event::Loaded {
                partition,
                leader_epoch,
                result,
                started,
            });
        });
    }

    fn loaded(
        &mut self,
        partition: i32,
        leader_epoch: i32,
        result: Result<super::loader::Loaded, LoadError>,
        started: Instant,
    ) {
        let topic_id = match self.partitions.get(&partition) {
            Some(PartitionState::Loading {
                topic_id,
                leader_epoch: e,
            }) if *e == leader_epoch => *topic_id,
            _ => return,
        };
        let loaded = match result {
            Ok(l) => l,
            Err(LoadError::NotLeader(code)) => {
                debug!(partition, error = ?code, "group coordinator load abandoned: not leader");
                self.partitions.remove(&partition);
                self.metrics.set_shards(&self.partitions_summary());
                return;
            }
            Err(e) => {
                warn!(partition, leader_epoch, error = %e, "group coordinator load failed; trying again");
                let events = self.events.clone();
                self.partitions.remove(&partition);
                tokio::spawn(async move {
                    tokio::time::sleep(LOAD_RETRY).await;
                    let _ = events.send(Event::Elected {
                        partition,
                        topic_id,
                        leader_epoch,
                    });
                });
                return;
            }
        };
        let elapsed = started.elapsed();
        info!(
            partition,
            leader_epoch,
            records = loaded.records,
            ms = elapsed.as_millis() as u64,
            "group coordinator shard loaded"
        );
        self.metrics.record_load(elapsed);
        let mut shard = loaded.shard;
        shard.on_metadata_update(Arc::clone(&self.metadata));
        shard.on_loaded(unix_ms());
        let active = Active {
            shard,
            topic_id,
            leader_epoch,
            next_reply: 0,
            owed: HashMap::new(),
            held: VecDeque::new(),
            written_end: loaded.log_end_offset,
            committed_end: loaded.high_watermark,
        };
        if active.committed_end < active.written_end {
            // A new leader's uncommitted tail: replies wait until the HW passes it.
            if let Some(hosted) = self.replica_manager.partition(topic_id, partition) {
                let events = self.events.clone();
                let end = active.written_end;
                tokio::spawn(async move {
                    let error = ReplicaManager::wait_for_coordinator_commit(
                        &hosted,
                        leader_epoch,
                        end,
                        Instant::now() + COMMIT_TIMEOUT,
                    )
                    .await;
                    let _ = events.send(Event::Committed {
                        partition,
                        leader_epoch,
                        end_offset: end,
                        error,
                    });
                });
            }
        }
        self.partitions
            .insert(partition, PartitionState::Active(Box::new(active)));
        self.metrics.set_shards(&self.partitions_summary());
        self.process_output(partition);
    }
}
