//! The driver loop: one tokio task that owns the [`RaftCore`] and feeds it, in the core's call
//! order, with commands from the handles, atomic appends, inbound requests, responses and
//! request failures, completed flushes and timeouts; after every input it drains the core's
//! outputs (persisting the quorum state first, sending, publishing events), answers the
//! proposals the high watermark passed, and sleeps until the next deadline or input.
//! Kafka's `KafkaRaftClientDriver` with the network side of `KafkaNetworkChannel` (one
//! [`Channel`] per destination, [`route`]).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use kraftd_log::CompletedFlush;
use kraftd_protocol::records::Batches;
use kraftd_protocol::ResponseBody;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::{sleep_until, Instant};
use tracing::{error, info, warn};

use super::handle::{AtomicAppend, AtomicAppendRefused, Command, RaftEvent, Scheduled};
use super::log::MetadataLog;
use super::metrics::{self, error_codes, fetched_records, Counters, RaftMetrics};
use super::router::{raft_response, request_body, response_body, NetEvent};
use super::voters::VoterEndpoint;
use crate::core::message::{ApiKind, RaftMessage};
use crate::core::{NotLeader, Output, ProposeError, RaftCore, RoleName};
use kraftd_net::{Channel, ClientConfig, ClientError};

/// A batch this leader appended and has not yet seen commit.
#[derive(Debug)]
pub(super) struct Proposal {
    /// First and last offset.
    pub(super) range: (i64, i64),
    pub(super) at: Instant,
    /// The caller of [`RaftHandle::propose_committed`](super::RaftHandle::propose_committed).
    pub(super) waiter: Option<oneshot::Sender<Result<(i64, i64), ProposeError>>>,
}

/// An inbound request waiting for the core's response.
#[derive(Debug)]
pub(super) struct Inbound {
    reply: oneshot::Sender<ResponseBody>,
    received_ms: u64,
}

pub(super) struct DriverLoop {
    pub(super) node_id: i32,
    pub(super) core: RaftCore<MetadataLog>,
    pub(super) started: Instant,
    /// The Unix time in ms at `started`: the core's clock is `base_ms` plus monotonic time
    /// since, so it never goes back yet its timestamps (DescribeQuorum) read as Unix ms.
    pub(super) base_ms: u64,
    pub(super) voters: BTreeMap<i32, VoterEndpoint>,
    /// The bootstrap servers that name no voter, by their negative ids.
    pub(super) bootstrap_endpoints: BTreeMap<i32, VoterEndpoint>,
    /// [`DriverConfig::controller_listener_name`](super::DriverConfig::controller_listener_name).
    pub(super) controller_listener_name: String,
    pub(super) client: ClientConfig,
    pub(super) channels: HashMap<i32, Channel>,
    /// The address each of `channels` connects to.
    pub(super) routes: HashMap<i32, String>,
    /// Requests awaiting the core's answer, by (sender, correlation id).
    pub(super) inbound: HashMap<(i32, i32), Inbound>,
    pub(super) net_rx: mpsc::Receiver<NetEvent>,
    pub(super) commands: mpsc::Receiver<Command>,
    pub(super) atomic_rx: mpsc::UnboundedReceiver<Scheduled>,
    pub(super) events: broadcast::Sender<RaftEvent>,
    pub(super) metrics: watch::Sender<RaftMetrics>,
    /// Outcomes of outbound requests, sent by the channels' tasks. Unbounded, yet bounded
    /// in practice: one message per request, and each channel holds at most
    /// `CHANNEL_QUEUE_CAPACITY` queued plus `max_in_flight` outstanding requests (the core
    /// itself keeps one Fetch and one request per voter and RPC outstanding).
    pub(super) results_tx: mpsc::UnboundedSender<NetEvent>,
    pub(super) results_rx: mpsc::UnboundedReceiver<NetEvent>,
    /// Requests that could not be sent, to report to the core after the drain.
    pub(super) failures: VecDeque<(i32, i32, ApiKind)>,
    /// Proposals awaiting commit, oldest first.
    pub(super) proposals: VecDeque<Proposal>,
    pub(super) counters: Counters,
    pub(super) shutdown_until: Option<Instant>,
    pub(super) end_quorum_answered: Vec<i32>,
    /// The core asked for a flush ([`Output::Flush`]); started on a blocking thread once
    /// the drain is over (and none is in flight).
    pub(super) flush_due: bool,
    /// A flush runs on a blocking thread; its outcome comes on `flushed_rx`.
    pub(super) flush_in_flight: bool,
    pub(super) flushed_tx: mpsc::UnboundedSender<Result<CompletedFlush, kraftd_log::LogError>>,
    pub(super) flushed_rx: mpsc::UnboundedReceiver<Result<CompletedFlush, kraftd_log::LogError>>,
    /// Shared with the handles: why the loop stopped.
    pub(super) stop_reason: Arc<OnceLock<String>>,
    /// KIP-853 voter changes waiting for the core's answer, by token.
    pub(super) voter_changes: HashMap<u64, super::voter_changes::PendingChange>,
    pub(super) next_voter_token: u64,
    /// This node's own UpdateRaftVoter / auto-join request to the leader.
    pub(super) own_voter_change: super::voter_changes::OwnVoterChange,
    /// The latest epoch in which an atomic append was refused: every later one of that
    /// epoch is refused too, even at the log end. The controller computed it on top of the
    /// refused one, and a control batch of the leader's own (a VotersRecord) of the same
    /// length can put the log end exactly where it expected.
    pub(super) refused_epoch: Option<i32>,
    /// `(epoch, log end)` as the state machine knows it: after its own appends, or as
    /// announced by [`RaftEvent::LeaderAppended`] (`voter_changes.rs`).
    pub(super) known_end: Option<(i32, i64)>,
}

impl std::fmt::Debug for DriverLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DriverLoop")
            .field("node_id", &self.node_id)
            .finish()
    }
}

enum Input {
    Command(Option<Command>),
    Flushed(Result<CompletedFlush, kraftd_log::LogError>),
    Atomic(Scheduled),
    Net(NetEvent),
    Timeout,
    MetricsRefresh,
}

impl DriverLoop {
    pub(super) fn now_ms(&self) -> u64 {
        self.base_ms + self.started.elapsed().as_millis() as u64
    }

    /// When the loop wakes to refresh the windowed metrics if nothing woke it sooner.
    fn metrics_refresh_at(&self) -> Instant {
        let due_ms = self
            .counters
            .metrics_refresh_ms
            .saturating_sub(self.base_ms);
        self.started + Duration::from_millis(due_ms)
    }

    pub(super) async fn run(mut self) -> Result<(), String> {
        let result = self.run_inner().await;
        if let Err(reason) = &result {
            error!(node = self.node_id, "raft driver stopped: {reason}");
            let _ = self.stop_reason.set(reason.clone());
        }
        let DriverLoop { core, .. } = self;
        if let Err(e) = core.into_log().close() {
            warn!("closing the metadata log failed: {e}");
        }
        result
    }

    async fn run_inner(&mut self) -> Result<(), String> {
        self.drain()?;
        self.start_flush_if_due();
        loop {
            if self.shutdown_done() {
                return Ok(());
            }
            let deadline = self.core.poll_timeout();
            let wake = if deadline == u64::MAX {
                Instant::now() + Duration::from_secs(3600)
            } else {
                self.started + Duration::from_millis(deadline.saturating_sub(self.base_ms))
            };
            let wake = match self.shutdown_until {
                Some(s) => wake.min(s),
                None => wake,
            };
            let refresh_at = self.metrics_refresh_at();
            let idle_from = Instant::now();
            let input = tokio::select! {
                cmd = self.commands.recv(), if self.shutdown_until.is_none() => Input::Command(cmd),
                Some(a) = self.atomic_rx.recv(), if self.shutdown_until.is_none() => Input::Atomic(a),
                Some(ev) = self.net_rx.recv() => Input::Net(ev),
                Some(ev) = self.results_rx.recv() => Input::Net(ev),
                Some(done) = self.flushed_rx.recv() => Input::Flushed(done),
                () = sleep_until(wake) => Input::Timeout,
                () = sleep_until(refresh_at) => Input::MetricsRefresh,
            };
            let idle_ms = idle_from.elapsed().as_secs_f64() * 1000.0;
            let now = self.now_ms();
            self.counters.sensors.record_poll_idle(idle_ms, now);
            match input {
                Input::Command(None) => {
                    // Every handle is gone: nobody can propose or read; stop as on shutdown.
                    self.begin_shutdown(now);
                }
                Input::Command(Some(cmd)) => self.on_command(now, cmd),
                Input::Atomic(first) => {
                    self.on_scheduled(now, first);
                    // Appends queued together go out together (one flush, one fetch wake).
                    while let Ok(next) = self.atomic_rx.try_recv() {
                        self.on_scheduled(now, next);
                    }
                }
                Input::Net(ev) => self.on_net(now, ev)?,
                Input::Timeout => self.core.handle_timeout(now),
                Input::MetricsRefresh => {
                    // Republished by the drain below, decayed to `now`.
                    self.counters.sensors.measure_poll_idle();
                    self.counters.metrics_refresh_ms = now + metrics::METRICS_REFRESH_MS;
                    self.maybe_request_own_voter_change(now);
                }
                Input::Flushed(done) => self.on_flushed(now, done),
            }
            self.drain()?;
            self.start_flush_if_due();
            self.check_log()?;
            if self.core.is_fatal() {
                return Err("the raft core hit a fatal error".into());
            }
        }
    }

    /// Starts the flush the core asked for on a blocking thread: the Fetch responses sent
    /// before it go out meanwhile, so the followers fetch and fsync while the leader does,
    /// and the loop keeps answering. At most one runs at a time (the core asks for the next
    /// only after [`RaftCore::flush`]).
    fn start_flush_if_due(&mut self) {
        if !self.flush_due || self.flush_in_flight {
            return;
        }
        self.flush_due = false;
        // `None`: the log failed, and the loop stops on it.
        let Some(pending) = self.core.log().plan_flush() else {
            return;
        };
        self.flush_in_flight = true;
        let tx = self.flushed_tx.clone();
        tokio::task::spawn_blocking(move || {
            let _ = tx.send(pending.execute());
        });
    }

    /// A flush started by [`DriverLoop::start_flush_if_due`] finished: the core's flush
    /// takes it (the leader's end offset counts up to what it covered), or the log fails.
    fn on_flushed(&mut self, now: u64, done: Result<CompletedFlush, kraftd_log::LogError>) {
        self.flush_in_flight = false;
        self.core.log().flush_completed(done);
        if self.core.log().failure().is_some() {
            return;
        }
        self.core.flush(now);
        self.core.log().discard_completed_flush();
    }

    /// A Fetch tells the leader our end offset, which it counts toward the HW: flush first
    /// whatever is unflushed (only an ex-leader whose flush had not completed has any; a
    /// follower flushes as it appends), synchronously.
    fn flush_before_fetch(&mut self) -> Result<(), String> {
        use crate::core::log::RaftLog;
        let log = self.core.log();
        if log.flushed_offset() < log.end_offset() {
            let now = self.now_ms();
            self.core.flush(now);
            self.check_log()?;
            let log = self.core.log();
            if log.flushed_offset() < log.end_offset() {
                return Err("the metadata log could not be flushed before a fetch".into());
            }
        }
        Ok(())
    }

    /// Err with the metadata log's disk failure, if it had one: the node must stop.
    fn check_log(&self) -> Result<(), String> {
        match self.core.log().failure() {
            Some(failure) => Err(failure.to_string()),
            None => Ok(()),
        }
    }

    fn shutdown_done(&self) -> bool {
        let Some(until) = self.shutdown_until else {
            return false;
        };
        let others = self
            .core
            .voter_set()
            .ids()
            .filter(|v| *v != self.node_id)
            .count();
        Instant::now() >= until
            || self.core.role() != RoleName::Resigned
            || self.end_quorum_answered.len() >= others
    }

    fn begin_shutdown(&mut self, now: u64) {
        if self.shutdown_until.is_some() {
            return;
        }
        info!(
            node = self.node_id,
            role = self.core.role().as_str(),
            "raft driver shutting down"
        );
        let was_leader = self.core.role() == RoleName::Leader;
        self.core.resign(now);
        self.shutdown_until = Some(if was_leader {
            Instant::now() + self.client.request_timeout
        } else {
            Instant::now()
        });
    }

    fn on_command(&mut self, now: u64, cmd: Command) {
        match cmd {
            Command::Propose {
                records,
                wait_for_commit,
                reply,
            } => {
                // Commit latency counts from here: the leader's own append and flush too.
                let at = Instant::now();
                let result = self.core.propose(now, &records);
                if self.core.log().failure().is_some() {
                    // Not appended: the caller sees the driver stop.
                    return;
                }
                let Ok(range) = result else {
                    let _ = reply.send(result);
                    return;
                };
                self.note_own_append();
                self.counters.append_records_total += records.len() as u64;
                self.counters
                    .sensors
                    .record_append_records(records.len() as u64, now);
                let waiter = if wait_for_commit {
                    Some(reply)
                } else {
                    let _ = reply.send(Ok(range));
                    None
                };
                self.proposals.push_back(Proposal { range, at, waiter });
            }
            Command::ReadCommitted {
                from,
                max_bytes,
                reply,
            } => {
                let bytes = self.read_committed(from, max_bytes);
                if self.core.log().failure().is_none() {
                    let _ = reply.send(bytes);
                }
            }
            Command::CreateSnapshot { id, bytes, reply } => {
                let result = self.core.create_snapshot(id, &bytes).map(|()| {
                    let start = self.core.delete_log_before_latest_snapshot();
                    info!(
                        node = self.node_id,
                        ?id,
                        log_start = start,
                        "snapshot created"
                    );
                    start
                });
                if self.core.log().failure().is_none() {
                    let _ = reply.send(result);
                }
            }
            Command::UpgradeKRaftVersion {
                version,
                validate_only,
                reply,
            } => {
                let _ = reply.send(self.core.upgrade_kraft_version(now, version, validate_only));
            }
            Command::Shutdown => self.begin_shutdown(now),
        }
    }

    fn on_scheduled(&mut self, now: u64, scheduled: Scheduled) {
        match scheduled {
            Scheduled::Append(append) => self.on_atomic_append(now, append),
            Scheduled::Resign(epoch) => {
                if self.core.role() == RoleName::Leader && self.core.epoch() == epoch {
                    info!(
                        node = self.node_id,
                        epoch, "resigning at the controller's request"
                    );
                    self.core.resign(now);
                }
            }
        }
    }

    fn on_atomic_append(&mut self, now: u64, append: AtomicAppend) {
        use crate::core::log::RaftLog;
        let AtomicAppend {
            epoch,
            base_offset,
            records,
            on_refused,
        } = append;
        if self.refused_epoch == Some(epoch) {
            let _ = on_refused.send(AtomicAppendRefused {
                epoch,
                base_offset,
                reason: "an earlier append of this epoch was refused".into(),
            });
            return;
        }
        let refuse = |reason: String| {
            warn!(node = self.node_id, epoch, base_offset, %reason, "atomic append refused");
            let _ = on_refused.send(AtomicAppendRefused {
                epoch,
                base_offset,
                reason,
            });
            Some(epoch)
        };
        if self.core.role() != RoleName::Leader || self.core.epoch() != epoch {
            self.refused_epoch = refuse(format!(
                "this node is {} in epoch {}",
                self.core.role().as_str(),
                self.core.epoch()
            ));
            return;
        }
        let end = self.core.log().end_offset();
        if end != base_offset {
            self.refused_epoch = refuse(format!("the log ends at {end}"));
            return;
        }
        let at = Instant::now();
        let result = self.core.propose(now, &records);
        if self.core.log().failure().is_some() {
            // Not appended; the driver stops and the controller sees its events end.
            return;
        }
        match result {
            Ok(range) => {
                self.note_own_append();
                self.counters.append_records_total += records.len() as u64;
                self.counters
                    .sensors
                    .record_append_records(records.len() as u64, now);
                self.proposals.push_back(Proposal {
                    range,
                    at,
                    waiter: None,
                });
            }
            Err(e) => self.refused_epoch = refuse(e.to_string()),
        }
    }

    fn read_committed(&self, from: i64, max_bytes: usize) -> Bytes {
        use crate::core::log::RaftLog;
        let hw = self.core.high_watermark();
        if from >= hw {
            return Bytes::new();
        }
        let bytes = self.core.log().read(from, max_bytes);
        let mut end = 0;
        for batch in Batches::new(bytes.clone()) {
            match batch {
                Ok(b) if b.next_offset() <= hw => end += b.as_bytes().len(),
                _ => break,
            }
        }
        bytes.slice(..end)
    }

    fn on_net(&mut self, now: u64, ev: NetEvent) -> Result<(), String> {
        match ev {
            NetEvent::DescribeQuorum {
                request,
                version,
                reply,
            } => {
                let mut response = self.core.describe_quorum(&request, now);
                if version >= 2 {
                    self.fill_nodes(&mut response);
                } else {
                    // Directory ids are v2+ and not ignorable: a v1 answer that carried one
                    // could not be encoded (the connection would close), as Kafka's
                    // `RaftUtil` leaves them out below v2.
                    super::voter_changes::strip_directory_ids(&mut response);
                }
                let _ = reply.send(ResponseBody::DescribeQuorum(response));
            }
            NetEvent::VoterChange {
                request,
                version,
                reply,
            } => self.on_voter_change(now, request, version, reply),
            NetEvent::UpgradeKRaftVersion {
                version,
                validate_only,
                reply,
            } => {
                let _ = reply.send(self.core.upgrade_kraft_version(now, version, validate_only));
            }
            NetEvent::Request {
                from,
                correlation_id,
                msg,
                reply,
            } => {
                self.inbound.insert(
                    (from, correlation_id),
                    Inbound {
                        reply,
                        received_ms: now,
                    },
                );
                self.feed(now, from, correlation_id, msg)?;
            }
            NetEvent::Response {
                from,
                correlation_id,
                kind,
                result,
                peer_gone,
            } => match result {
                Ok(msg) => {
                    if let RaftMessage::FetchResponse(r) = &msg {
                        let records = fetched_records(r);
                        self.counters.fetch_records_total += records;
                        self.counters.sensors.record_fetch_records(records, now);
                    }
                    let stats = self.counters.destinations.entry(from).or_default();
                    stats.responses_received += 1;
                    for code in error_codes(&msg) {
                        *stats.errors_by_code.entry(code).or_default() += 1;
                    }
                    if kind == ApiKind::EndQuorumEpoch
                        && error_codes(&msg).is_empty()
                        && !self.end_quorum_answered.contains(&from)
                    {
                        self.end_quorum_answered.push(from);
                    }
                    self.feed(now, from, correlation_id, msg)?;
                }
                Err(reason) => {
                    tracing::debug!(node = self.node_id, to = from, ?kind, %reason, "request failed");
                    self.counters
                        .destinations
                        .entry(from)
                        .or_default()
                        .request_failures += 1;
                    self.core
                        .handle_request_failed(now, from, correlation_id, kind);
                    if peer_gone {
                        self.core.handle_leader_connection_lost(now, from);
                    }
                }
            },
        }
        Ok(())
    }

    fn feed(
        &mut self,
        now: u64,
        from: i32,
        correlation_id: i32,
        msg: RaftMessage,
    ) -> Result<(), String> {
        self.core
            .handle_message(now, from, correlation_id, msg)
            .map_err(|e| e.to_string())
    }

    /// Acts on every output, in order; then reports unsendable requests and drains again.
    fn drain(&mut self) -> Result<(), String> {
        loop {
            // Nothing the core queued after a disk failure is acted on.
            self.check_log()?;
            while let Some(out) = self.core.poll_output() {
                match out {
                    Output::PersistQuorumState(state) => {
                        self.core
                            .log()
                            .write_quorum_state(&state)
                            .map_err(|e| format!("persisting the quorum state failed: {e}"))?;
                    }
                    Output::Send {
                        to,
                        correlation_id,
                        msg,
                    } => {
                        if matches!(
                            msg,
                            RaftMessage::FetchRequest(_) | RaftMessage::FetchSnapshotRequest(_)
                        ) {
                            self.flush_before_fetch()?;
                        }
                        self.send(to, correlation_id, msg)
                    }
                    Output::Flush => self.flush_due = true,
                    Output::Committed(batch) => {
                        let _ = self.events.send(RaftEvent::Committed(batch));
                    }
                    Output::VoterChangeDone {
                        token,
                        error,
                        message,
                    } => self.on_voter_change_done(token, error, message),
                    Output::Snapshot { id, bytes } => {
                        info!(node = self.node_id, ?id, "snapshot for listeners");
                        let _ = self.events.send(RaftEvent::Snapshot { id, bytes });
                    }
                    Output::LeaderChange { epoch, leader_id } => {
                        info!(node = self.node_id, epoch, ?leader_id, "leader change");
                        let log_end_offset = {
                            use crate::core::log::RaftLog;
                            self.core.log().end_offset()
                        };
                        let _ = self.events.send(RaftEvent::LeaderChange {
                            epoch,
                            leader_id,
                            log_end_offset,
                        });
                    }
                }
            }
            let Some((to, correlation_id, kind)) = self.failures.pop_front() else {
                break;
            };
            let now = self.now_ms();
            self.core
                .handle_request_failed(now, to, correlation_id, kind);
        }
        self.expire_inbound();
        self.announce_leader_appends();
        let now = self.now_ms();
        self.settle_proposals(now);
        self.publish_metrics(now);
        Ok(())
    }

    /// Answers the `propose_committed` callers whose proposals the high watermark passed,
    /// counting each commit and its latency, or fails them all when this node no longer
    /// leads.
    fn settle_proposals(&mut self, now: u64) {
        let hw = self.core.high_watermark();
        if self.core.role() != RoleName::Leader {
            let not_leader = NotLeader {
                epoch: self.core.epoch(),
                leader_id: self.core.leader_id(),
            };
            for p in self.proposals.drain(..) {
                if let Some(w) = p.waiter {
                    let _ = w.send(Err(not_leader.into()));
                }
            }
        }
        while let Some(p) = self.proposals.front() {
            if p.range.1 >= hw {
                break;
            }
            let Some(p) = self.proposals.pop_front() else {
                break;
            };
            if let Some(w) = p.waiter {
                let _ = w.send(Ok(p.range));
            }
            let ms = p.at.elapsed().as_secs_f64() * 1000.0;
            self.counters.commits += 1;
            self.counters.commit_latency_total_ms += ms;
            self.counters.sensors.record_commit_latency(ms, now);
        }
    }

    fn send(&mut self, to: i32, correlation_id: i32, msg: RaftMessage) {
        let kind = msg.kind();
        if !msg.is_request() {
            let Some(inbound) = self.inbound.remove(&(to, correlation_id)) else {
                tracing::debug!(
                    node = self.node_id,
                    to,
                    correlation_id,
                    "response to a request no longer waiting"
                );
                return;
            };
            if let Some(body) = response_body(msg) {
                let _ = inbound.reply.send(body);
            }
            return;
        }
        let Some(body) = request_body(msg) else {
            return;
        };
        // KIP-853: a voter of the set in effect, or a leader named on the wire.
        let learned = self.core.leader_endpoint(to).map(|e| e.address());
        let Some(address) = route(to, &self.voters, &self.bootstrap_endpoints, learned) else {
            warn!(node = self.node_id, to, "no endpoint known for node");
            self.failures.push_back((to, correlation_id, kind));
            return;
        };
        let channel = match self.channels.get(&to) {
            Some(c) if self.routes.get(&to) == Some(&address) => c.clone(),
            _ => {
                // A learned endpoint can change with the epoch (a leader restarted
                // elsewhere): the old channel goes with its address.
                let c = Channel::spawn(address.clone(), self.client.clone());
                self.channels.insert(to, c.clone());
                self.routes.insert(to, address.clone());
                c
            }
        };
        let stats = self.counters.destinations.entry(to).or_default();
        stats.requests_sent += 1;
        if stats.address != address {
            stats.address.clone_from(&address);
        }
        if kind == ApiKind::Fetch {
            self.counters.last_fetch_destination = Some(to);
        }
        let tx = self.results_tx.clone();
        let on_reply = Box::new(move |outcome: Result<ResponseBody, ClientError>| {
            let peer_gone = outcome.as_ref().is_err_and(ClientError::is_peer_gone);
            let result = match outcome {
                Ok(body) => {
                    raft_response(body).ok_or_else(|| "response of another api".to_string())
                }
                Err(e) => Err(e.to_string()),
            };
            let _ = tx.send(NetEvent::Response {
                from: to,
                correlation_id,
                kind,
                result,
                peer_gone,
            });
        });
        if let Err(e) = channel.send_with(correlation_id, kind.version(), body, on_reply) {
            tracing::debug!(node = self.node_id, to, ?kind, "request not sent: {e}");
            self.failures.push_back((to, correlation_id, kind));
        }
    }

    /// Requests the core never answered (it answers all, parked Fetches within their max
    /// wait) are dropped after twice the request timeout so the map stays bounded; the
    /// connection then skips them.
    fn expire_inbound(&mut self) {
        let now = self.now_ms();
        let limit = 2 * self.client.request_timeout.as_millis() as u64;
        self.inbound
            .retain(|_, i| now.saturating_sub(i.received_ms) <= limit && !i.reply.is_closed());
    }
}

/// Where a request to node `to` goes: its `controller.quorum.voters` endpoint, else its
/// bootstrap server's (a negative id), else the endpoint a Raft message named for it
/// (KIP-853: `learned`, as `host:port`). The configuration comes first for a static voter:
/// the operator wrote the address this node can reach, while an advertised one may be
/// unroutable from here (D2) or stale; a learned endpoint serves the ids the configuration
/// lacks. (Kafka prefers the endpoints of the messages; with static voters they match.)
fn route(
    to: i32,
    voters: &BTreeMap<i32, VoterEndpoint>,
    bootstrap: &BTreeMap<i32, VoterEndpoint>,
    learned: Option<String>,
) -> Option<String> {
    voters
        .get(&to)
        .or_else(|| bootstrap.get(&to))
        .map(VoterEndpoint::address)
        .or(learned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(id: i32, host: &str, port: u16) -> VoterEndpoint {
        VoterEndpoint {
            id,
            host: host.to_string(),
            port,
        }
    }

    #[test]
    fn a_configured_voter_is_routed_by_its_configuration_and_a_learned_endpoint_fills_the_rest() {
        let voters = BTreeMap::from([(1, endpoint(1, "controller-1", 9093))]);
        let bootstrap = BTreeMap::from([(-2, endpoint(-2, "localhost", 9093))]);
        let learned = |a: &str| Some(a.to_string());
        assert_eq!(
            route(1, &voters, &bootstrap, learned("10.0.0.1:19093")),
            Some("controller-1:9093".to_string()),
            "the configuration wins for a static voter"
        );
        assert_eq!(
            route(-2, &voters, &bootstrap, None),
            Some("localhost:9093".to_string())
        );
        assert_eq!(
            route(2, &voters, &bootstrap, learned("10.0.0.2:9093")),
            Some("10.0.0.2:9093".to_string()),
            "an id the configuration lacks goes where the messages named it"
        );
        assert_eq!(route(3, &voters, &bootstrap, None), None);
    }
}
