//! The coordinator runtime (Kafka's `CoordinatorRuntime`), the tokio edge around a
//! coordinator's sans-IO shards ([`CoordinatorShard`]): one event loop owns every shard of
//! one coordinator this broker leads.
//!
//! - A partition elected here is loaded on a blocking thread (requests meanwhile get
//!   COORDINATOR_LOAD_IN_PROGRESS); one that moves away is dropped and everything it owed
//!   is answered NOT_COORDINATOR.
//! - A request runs on its shard at once. The batches it produced are appended to the
//!   partition (at the leader epoch the shard was loaded in), and its reply, like every
//!   reply and every piece of work, is held until everything the shard had written when it
//!   replied is committed (the HW passed it): a client never acts on state a failover could
//!   lose, and a transaction's markers are never sent before its prepare record is safe.
//! - A write that fails (refused, or leadership lost before it committed) fails every
//!   reply still held and reloads the shard from the log, which holds exactly what was
//!   appended: the in-memory state rolls back to the log's.
//! - Timers: the loop sleeps until the earliest deadline of any shard.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use kraftd_log::clock::{unix_ms, SteadyClock};
use kraftd_net::mark_sequenced;
use kraftd_protocol::{ErrorCode, Uuid};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::metrics::RuntimeMetrics;
use super::partition_writer::CoordinatorPartitionWriter;
use crate::replica::replica_manager::ReplicaManager;
use kraftd_coordinator::context::RequestContext;
use kraftd_coordinator::context::{ReplyId, TopicMetadata};
use kraftd_coordinator::shard::{CoordinatorOutput, CoordinatorShard, Labels, OutputBatch};
use kraftd_coordinator::writer::{load, LoadError, LoadSummary, PartitionWriter};

/// Where a shard's answer goes.
pub type Responder<S> = oneshot::Sender<Result<<S as CoordinatorShard>::Response, ErrorCode>>;

/// A broadcast's answers: one channel per shard served, and whether some shard is still
/// loading.
pub type BroadcastAnswers<S> = (
    Vec<oneshot::Receiver<Result<<S as CoordinatorShard>::Response, ErrorCode>>>,
    bool,
);

/// A call into a shard from outside a request (a piece of work completing).
pub type ShardCall<S> = Box<dyn FnOnce(&mut S, i64) + Send>;

/// How long a write may wait for the ISR before the shard gives up on it and reloads.
const COMMIT_TIMEOUT: Duration = Duration::from_secs(60);
/// Before a failed load (other than leadership moving) is tried again.
const LOAD_RETRY: Duration = Duration::from_secs(1);

/// Carries out a shard's work once it is committed (the transaction coordinator sends
/// WriteTxnMarkers); it may call back into the shard through the runtime's handle.
pub type WorkHandler<S> =
    Arc<dyn Fn(i32, i32, <S as CoordinatorShard>::Work, RuntimeHandle<S>) + Send + Sync>;

/// A shard loaded from its partition, with the writer it was loaded through.
#[derive(Debug)]
pub struct Loaded<S> {
    shard: S,
    writer: CoordinatorPartitionWriter,
    summary: LoadSummary,
}

/// What the loop reacts to.
pub enum Event<S: CoordinatorShard> {
    Request {
        partition: i32,
        ctx: RequestContext,
        request: S::Request,
        respond: Responder<S>,
    },
    /// The same request on every shard this broker serves (ListGroups).
    Broadcast {
        request: S::Request,
        respond: oneshot::Sender<BroadcastAnswers<S>>,
    },
    /// Runs `call` on the shard if it is still the one led at `leader_epoch` (any epoch
    /// when negative).
    Call {
        partition: i32,
        leader_epoch: i32,
        call: ShardCall<S>,
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
        result: Result<Loaded<S>, LoadError>,
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

impl<S: CoordinatorShard> std::fmt::Debug for Event<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            Event::Request { .. } => "Request",
            Event::Broadcast { .. } => "Broadcast",
            Event::Call { .. } => "Call",
            Event::Elected { .. } => "Elected",
            Event::Resigned { .. } => "Resigned",
            Event::Loaded { .. } => "Loaded",
            Event::Committed { .. } => "Committed",
            Event::Metadata(_) => "Metadata",
        };
        f.write_str(name)
    }
}

/// The way into a runtime: requests, broadcasts and calls.
pub struct RuntimeHandle<S: CoordinatorShard> {
    events: mpsc::UnboundedSender<Event<S>>,
    /// The runtime's metrics, for work carried out outside the loop to record what it did
    /// (the share coordinator's `last-pruned-offset`).
    metrics: Arc<RuntimeMetrics>,
}

impl<S: CoordinatorShard> Clone for RuntimeHandle<S> {
    fn clone(&self) -> Self {
        RuntimeHandle {
            events: self.events.clone(),
            metrics: Arc::clone(&self.metrics),
        }
    }
}

impl<S: CoordinatorShard> std::fmt::Debug for RuntimeHandle<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeHandle")
            .field("topic", &S::TOPIC)
            .finish()
    }
}

impl<S: CoordinatorShard> RuntimeHandle<S> {
    /// The runtime's metrics (see the field).
    pub fn metrics(&self) -> &RuntimeMetrics {
        &self.metrics
    }

    pub(crate) fn send(&self, event: Event<S>) -> bool {
        self.events.send(event).is_ok()
    }

    /// Runs `request` on one partition's shard.
    pub async fn call_partition(
        &self,
        partition: i32,
        ctx: RequestContext,
        request: S::Request,
    ) -> Result<S::Response, ErrorCode> {
        self.submit(partition, ctx, request).await
    }

    /// Queues `request` for one partition's shard now and returns its answer to come. The
    /// loop runs requests in the order they are queued, so the request's effect is
    /// sequenced once this returns: it marks the connection's request so
    /// ([`mark_sequenced`]), and a request queued later by the same client runs after it
    /// whatever this one still waits for (its commit). A caller with several shards to call
    /// submits to all before awaiting any.
    pub fn submit(
        &self,
        partition: i32,
        ctx: RequestContext,
        request: S::Request,
    ) -> impl std::future::Future<Output = Result<S::Response, ErrorCode>> + Send + 'static {
        let (respond, rx) = oneshot::channel();
        let sent = self.send(Event::Request {
            partition,
            ctx,
            request,
            respond,
        });
        mark_sequenced();
        async move {
            if !sent {
                return Err(ErrorCode::CoordinatorNotAvailable);
            }
            rx.await.unwrap_or(Err(ErrorCode::CoordinatorNotAvailable))
        }
    }

    /// Runs `request` on every shard this broker serves; the answers, and whether some
    /// shard is still loading.
    pub async fn broadcast(
        &self,
        request: S::Request,
    ) -> (Vec<Result<S::Response, ErrorCode>>, bool) {
        let (respond, rx) = oneshot::channel();
        let sent = self.send(Event::Broadcast { request, respond });
        mark_sequenced();
        if !sent {
            return (vec![Err(ErrorCode::CoordinatorNotAvailable)], false);
        }
        let Ok((receivers, loading)) = rx.await else {
            return (vec![Err(ErrorCode::CoordinatorNotAvailable)], false);
        };
        let mut answers = Vec::with_capacity(receivers.len());
        for r in receivers {
            answers.push(r.await.unwrap_or(Err(ErrorCode::CoordinatorNotAvailable)));
        }
        (answers, loading)
    }

    /// Runs `call` on the shard of `partition` if it is still led at `leader_epoch`, then
    /// writes and answers what it produced.
    pub fn run_on(&self, partition: i32, leader_epoch: i32, call: ShardCall<S>) {
        self.send(Event::Call {
            partition,
            leader_epoch,
            call,
        });
    }
}

/// Something released once the HW passes the offset it waits for.
enum Held<S: CoordinatorShard> {
    Reply(Responder<S>, S::Response),
    Work(S::Work),
}

/// A shard being served.
struct Active<S: CoordinatorShard> {
    shard: S,
    partition: i32,
    topic_id: Uuid,
    leader_epoch: i32,
    /// Its partition's log, at `leader_epoch`.
    writer: CoordinatorPartitionWriter,
    next_reply: ReplyId,
    /// Replies the shard owes (a classic JoinGroup waits for its rebalance).
    owed: HashMap<ReplyId, Responder<S>>,
    /// Replies and work given, waiting until the HW reaches their offset.
    held: VecDeque<(i64, Held<S>)>,
    /// The offset after the last batch appended.
    written_end: i64,
    /// The offset below which everything is committed.
    committed_end: i64,
}

enum PartitionState<S: CoordinatorShard> {
    Loading { topic_id: Uuid, leader_epoch: i32 },
    Active(Box<Active<S>>),
}

/// The event loop's state.
pub struct CoordinatorRuntime<S: CoordinatorShard> {
    config: Arc<S::Config>,
    replica_manager: Arc<ReplicaManager>,
    metadata: Arc<dyn TopicMetadata>,
    partitions: BTreeMap<i32, PartitionState<S>>,
    handle: RuntimeHandle<S>,
    metrics: Arc<RuntimeMetrics>,
    work: Option<WorkHandler<S>>,
    last_gauges_ms: i64,
    /// The shards' `now` unless they follow the wall clock ([`shard_now`]).
    clock: SteadyClock,
}

impl<S: CoordinatorShard> std::fmt::Debug for CoordinatorRuntime<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoordinatorRuntime")
            .field("topic", &S::TOPIC)
            .field("partitions", &self.partitions.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The `now` a shard of `S` is handed: the wall clock for a shard whose timeouts Kafka
/// measures on it (`CoordinatorShard::WALL_CLOCK`, the transaction coordinator's), else
/// `clock`, which a step of the wall clock does not move: the shard's timers' deadlines are
/// compared with it, and Kafka's group coordinator counts its session and rebalance
/// timeouts on a monotonic timer — a broker whose clock jumps an hour ahead must not expire
/// every member of its groups (`stock_clock_jump.rs`).
fn shard_now<S: CoordinatorShard>(clock: &SteadyClock) -> i64 {
    if S::WALL_CLOCK {
        unix_ms()
    } else {
        clock.now_ms()
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

impl<S: CoordinatorShard> CoordinatorRuntime<S> {
    /// Starts the runtime's loop on the current tokio runtime; its handle.
    pub fn start(
        config: Arc<S::Config>,
        replica_manager: Arc<ReplicaManager>,
        metrics: Arc<RuntimeMetrics>,
        work: Option<WorkHandler<S>>,
    ) -> RuntimeHandle<S> {
        let (tx, rx) = mpsc::unbounded_channel();
        let handle = RuntimeHandle {
            events: tx,
            metrics: Arc::clone(&metrics),
        };
        let no_topics: Arc<dyn TopicMetadata> = Arc::new(kraftd_coordinator::context::NoTopics);
        let runtime = CoordinatorRuntime {
            config,
            replica_manager,
            metadata: no_topics,
            partitions: BTreeMap::new(),
            handle: handle.clone(),
            metrics,
            work,
            last_gauges_ms: 0,
            clock: SteadyClock::start(),
        };
        tokio::spawn(runtime.run(rx));
        handle
    }

    /// Runs until every sender of events is gone.
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Event<S>>) {
        loop {
            // Timers due fire before the next event, so a busy loop never starves them.
            if self
                .next_deadline()
                .is_some_and(|at| at <= shard_now::<S>(&self.clock))
            {
                self.fire_timers();
            }
            let event = match self.next_deadline() {
                Some(at) => {
                    let wait =
                        Duration::from_millis((at - shard_now::<S>(&self.clock)).max(0) as u64);
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
        let now = shard_now::<S>(&self.clock);
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

    fn active_partitions(&self) -> Vec<i32> {
        self.partitions
            .iter()
            .filter(|(_, s)| matches!(s, PartitionState::Active(_)))
            .map(|(p, _)| *p)
            .collect()
    }

    fn handle(&mut self, event: Event<S>) {
        match event {
            Event::Request {
                partition,
                ctx,
                request,
                respond,
            } => self.request(partition, &ctx, request, respond),
            Event::Broadcast { request, respond } => {
                let mut receivers = Vec::new();
                let loading = self.partitions.len() > self.active_partitions().len();
                for p in self.active_partitions() {
                    let (tx, rx) = oneshot::channel();
                    self.request(p, &RequestContext::default(), request.clone(), tx);
                    receivers.push(rx);
                }
                let _ = respond.send((receivers, loading));
            }
            Event::Call {
                partition,
                leader_epoch,
                call,
            } => {
                if let Some(PartitionState::Active(a)) = self.partitions.get_mut(&partition) {
                    if leader_epoch < 0 || a.leader_epoch == leader_epoch {
                        call(&mut a.shard, shard_now::<S>(&self.clock));
                        self.process_output(partition);
                    }
                }
            }
            Event::Elected {
                partition,
                topic_id,
                leader_epoch,
            } => self.elect(partition, topic_id, leader_epoch),
            Event::Resigned { partition } => {
                if let Some(PartitionState::Active(active)) = self.partitions.remove(&partition) {
                    info!(
                        topic = S::TOPIC,
                        partition, "coordinator shard unloaded: leadership moved"
                    );
                    Self::fail_all(partition, *active, ErrorCode::NotCoordinator);
                }
                self.partitions.remove(&partition);
                self.metrics.forget_partition(partition);
                self.metrics.set_shards(&self.partitions_summary());
                self.publish_gauges(true);
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
                for p in self.active_partitions() {
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
        request: S::Request,
        respond: Responder<S>,
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
                active
                    .shard
                    .handle(shard_now::<S>(&self.clock), ctx, id, request);
                self.process_output(partition);
            }
        }
    }

    /// Appends what the shard wrote and routes its replies and work (see the module docs).
    fn process_output(&mut self, partition: i32) {
        let mut active = match self.partitions.remove(&partition) {
            Some(PartitionState::Active(a)) => a,
            Some(other) => {
                self.partitions.insert(partition, other);
                return;
            }
            None => return,
        };
        let CoordinatorOutput {
            batches,
            replies,
            work,
        } = active.shard.take_output();
        self.metrics.record_counters(active.shard.take_counters());
        for batch in &batches {
            if let Err(code) = self.append(&mut active, batch) {
                warn!(topic = S::TOPIC, partition, error = ?code, "coordinator write failed; reloading the shard from its log");
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
            active
                .held
                .push_back((active.written_end, Held::Reply(respond, response)));
        }
        for w in work {
            active.held.push_back((active.written_end, Held::Work(w)));
        }
        self.release(&mut active);
        self.partitions
            .insert(partition, PartitionState::Active(active));
        self.publish_gauges(false);
    }

    /// Sends every held reply and starts every held piece of work the HW has passed.
    fn release(&self, active: &mut Active<S>) {
        while let Some((offset, _)) = active.held.front() {
            if *offset > active.committed_end {
                break;
            }
            let (_, held) = active.held.pop_front().expect("front exists");
            match held {
                Held::Reply(respond, response) => {
                    let _ = respond.send(Ok(response));
                }
                Held::Work(w) => {
                    if let Some(handler) = &self.work {
                        handler(
                            active.shard_partition(),
                            active.leader_epoch,
                            w,
                            self.handle.clone(),
                        );
                    }
                }
            }
        }
    }

    /// The shard gauges, at most once a second (or now with `force`).
    fn publish_gauges(&mut self, force: bool) {
        let now = shard_now::<S>(&self.clock);
        if !force && now - self.last_gauges_ms < 1000 {
            return;
        }
        self.last_gauges_ms = now;
        let mut gauges: BTreeMap<(&'static str, Labels), u64> = BTreeMap::new();
        for state in self.partitions.values() {
            if let PartitionState::Active(a) = state {
                for (name, labels, value) in a.shard.gauges() {
                    *gauges.entry((name, labels)).or_insert(0) += value;
                }
            }
        }
        self.metrics.set_gauges(gauges);
    }

    fn append(&self, active: &mut Active<S>, batch: &OutputBatch) -> Result<(), ErrorCode> {
        if batch.records.is_empty() {
            return Ok(());
        }
        let appended = active.writer.append(batch)?;
        active.shard.on_appended(appended.base_offset);
        active.written_end = appended.end_offset;
        self.metrics.record_write(batch.records.len());
        self.await_commit(active.partition, &active.writer, appended.end_offset);
        Ok(())
    }

    /// Tells the loop once the HW passes `end_offset` (or why it will not).
    fn await_commit(&self, partition: i32, writer: &CoordinatorPartitionWriter, end_offset: i64) {
        let committed = writer.wait_for_commit(end_offset, Instant::now() + COMMIT_TIMEOUT);
        let handle = self.handle.clone();
        let leader_epoch = writer.leader_epoch();
        tokio::spawn(async move {
            let error = committed.await;
            handle.send(Event::Committed {
                partition,
                leader_epoch,
                end_offset,
                error,
            });
        });
    }

    fn committed(&mut self, partition: i32, leader_epoch: i32, end_offset: i64, error: ErrorCode) {
        let Some(PartitionState::Active(active)) = self.partitions.get_mut(&partition) else {
            return;
        };
        if active.leader_epoch != leader_epoch {
            return;
        }
        if error != ErrorCode::None {
            warn!(topic = S::TOPIC, partition, end_offset, error = ?error, "coordinator write did not commit; reloading the shard from its log");
            let Some(PartitionState::Active(active)) = self.partitions.remove(&partition) else {
                return;
            };
            let topic_id = active.topic_id;
            Self::fail_all(partition, *active, normalize_write_error(error));
            self.elect(partition, topic_id, leader_epoch);
            return;
        }
        active.committed_end = active.committed_end.max(end_offset);
        let mut active = match self.partitions.remove(&partition) {
            Some(PartitionState::Active(a)) => a,
            _ => return,
        };
        self.release(&mut active);
        self.partitions
            .insert(partition, PartitionState::Active(active));
    }

    /// Answers everything a dropped shard owed with `code`; its held work is dropped (a
    /// shard loaded again emits the work its log still calls for).
    fn fail_all(partition: i32, active: Active<S>, code: ErrorCode) {
        debug!(topic = S::TOPIC, partition, owed = active.owed.len(), held = active.held.len(), error = ?code, "failing a shard's pending replies");
        for (_, respond) in active.owed {
            let _ = respond.send(Err(code));
        }
        for (_, held) in active.held {
            if let Held::Reply(respond, _) = held {
                let _ = respond.send(Err(code));
            }
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
        info!(
            topic = S::TOPIC,
            partition, leader_epoch, "loading coordinator shard"
        );
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
        let handle = self.handle.clone();
        let started = Instant::now();
        tokio::task::spawn_blocking(move || {
            let writer = CoordinatorPartitionWriter::new(rm, topic_id, partition, leader_epoch);
            let mut shard = S::new(partition, leader_epoch, config, metadata);
            let result = load(&writer, &mut shard).map(|summary| Loaded {
                shard,
                writer,
                summary,
            });
            handle.send(Event::Loaded {
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
        result: Result<Loaded<S>, LoadError>,
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
            Err(LoadError::Read(
                code @ (ErrorCode::NotLeaderOrFollower | ErrorCode::FencedLeaderEpoch),
            )) => {
                debug!(topic = S::TOPIC, partition, error = ?code, "coordinator load abandoned: not leader");
                self.partitions.remove(&partition);
                self.metrics.set_shards(&self.partitions_summary());
                return;
            }
            Err(e) => {
                warn!(topic = S::TOPIC, partition, leader_epoch, error = %e, "coordinator load failed; trying again");
                let handle = self.handle.clone();
                self.partitions.remove(&partition);
                tokio::spawn(async move {
                    tokio::time::sleep(LOAD_RETRY).await;
                    handle.send(Event::Elected {
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
            topic = S::TOPIC,
            partition,
            leader_epoch,
            records = loaded.summary.records,
            ms = elapsed.as_millis() as u64,
            "coordinator shard loaded"
        );
        self.metrics.record_load(elapsed);
        let Loaded {
            mut shard,
            writer,
            summary,
        } = loaded;
        shard.on_metadata_update(Arc::clone(&self.metadata));
        shard.on_loaded(shard_now::<S>(&self.clock));
        let active = Active {
            shard,
            partition,
            topic_id,
            leader_epoch,
            writer,
            next_reply: 0,
            owed: HashMap::new(),
            held: VecDeque::new(),
            written_end: summary.log_end_offset,
            committed_end: summary.high_watermark,
        };
        if active.committed_end < active.written_end {
            // A new leader's uncommitted tail: replies wait until the HW passes it.
            self.await_commit(partition, &active.writer, active.written_end);
        }
        self.partitions
            .insert(partition, PartitionState::Active(Box::new(active)));
        self.metrics.set_shards(&self.partitions_summary());
        self.process_output(partition);
    }
}

impl<S: CoordinatorShard> Active<S> {
    fn shard_partition(&self) -> i32 {
        self.partition
    }
}
