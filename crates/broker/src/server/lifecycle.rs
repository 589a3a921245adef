//! `BrokerLifecycleManager`, as Kafka's: the broker registers with the active controller under
//! a fresh incarnation id and gets its broker epoch (the offset of its registration record),
//! then heartbeats every `broker.heartbeat.interval.ms` on a channel of its own. It asks to
//! stay fenced until its metadata has caught up (so clients never see a broker serving stale
//! metadata as live), and reports the offset it has applied so the controller can unfence it.
//! Until the controller says the broker has applied its own registration, it heartbeats
//! every 10 ms (Kafka's STARTING state), so it is unfenced without waiting an interval.
//! Controlled shutdown asks the controller to move leadership away and waits for its
//! permission, asking again 50 ms after the first "not yet" (as Kafka does). A heartbeat
//! answered STALE_BROKER_EPOCH (the controller fenced and forgot this incarnation) registers
//! again.
//!
//! A failed log dir (KIP-858): the replica layer hands its `directory.id` over
//! ([`BrokerDirectoryEvents`], Kafka's `propagateDirectoryFailure`); it is sent in
//! OfflineLogDirs in the next heartbeat, at once, and in every heartbeat after. If no
//! heartbeat carrying it has been answered without error within `log.dir.failure.timeout.ms`,
//! the broker stops (Kafka's `OfflineDirBrokerFailureEvent`: the controller could not be
//! told, so it may still send clients to the failed replicas).
//!
//! Cordoned log dirs (KIP-1066): once the broker has caught up with the metadata, and while
//! the metadata version is 4.3-IV0 or above, every heartbeat carries the ids of the dirs
//! `cordoned.log.dirs` names (CordonedLogDirs, BrokerHeartbeat v2; null before, as Kafka's
//! "not known yet"); a change of the setting sends a heartbeat at once (Kafka's
//! `propagateDirectoryCordoned`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kraftd_protocol::messages::broker_registration_request::{Feature, Listener};
use kraftd_protocol::messages::{BrokerHeartbeatRequest, BrokerRegistrationRequest};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody, Uuid};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{info, warn};

use super::assignments_manager::AssignmentsManager;
use super::controller_channel::ControllerChannel;
use super::MetadataStatus;
use crate::metadata::MetadataCache;
use crate::replica::directory_events::DirectoryEventHandler;

/// Kafka's `broker.heartbeat.interval.ms` default.
pub const BROKER_HEARTBEAT_INTERVAL_MS_DEFAULT: u64 = 2000;

/// Kafka's `log.dir.failure.timeout.ms` default.
pub const LOG_DIR_FAILURE_TIMEOUT_MS_DEFAULT: u64 = 30_000;

/// How soon the heartbeat after the first "not yet" to a controlled shutdown goes (Kafka's
/// `BrokerLifecycleManager`: 50 ms, since the controller has moved the leaderships by then
/// and a shutdown need not wait a whole heartbeat interval).
const CONTROLLED_SHUTDOWN_RECHECK: Duration = Duration::from_millis(50);

/// How soon the next heartbeat goes while the controller says this broker has not caught up
/// with its own registration (Kafka's `BrokerLifecycleManager` in STARTING: 10 ms), so it is
/// unfenced as soon as it may be rather than a heartbeat interval later.
const STARTING_RECHECK: Duration = Duration::from_millis(10);

/// What the broker tells the controller about itself.
#[derive(Debug, Clone)]
pub struct LifecycleConfig {
    pub broker_id: i32,
    pub cluster_id: String,
    /// Fresh for every start of the process.
    pub incarnation_id: Uuid,
    /// The advertised listeners.
    pub listeners: Vec<Listener>,
    /// The feature ranges this broker supports.
    pub features: Vec<Feature>,
    pub rack: Option<String>,
    /// The `directory.id` of every log dir.
    pub log_dirs: Vec<Uuid>,
    /// The epoch the clean-shutdown marker held, or -1 after an unclean shutdown or a first
    /// start (KIP-966).
    pub previous_broker_epoch: i64,
    pub heartbeat_interval: Duration,
    /// `log.dir.failure.timeout.ms`: how long a failed log dir may go unacknowledged by
    /// the controller before the broker stops.
    pub log_dir_failure_timeout: Duration,
}

/// The broker's [`DirectoryEventHandler`] (Kafka's in `BrokerServer`): replicas'
/// directories go to the [`AssignmentsManager`], failed directories to the lifecycle
/// manager's heartbeats.
#[derive(Debug)]
pub struct BrokerDirectoryEvents {
    pub assignments: Arc<AssignmentsManager>,
    /// The lifecycle manager's queue of failed directories ([`BrokerLifecycleManager::start`]);
    /// it holds at most one entry per log dir, each failing once.
    pub offline: mpsc::UnboundedSender<Uuid>,
}

impl DirectoryEventHandler for BrokerDirectoryEvents {
    fn handle_assignment(&self, topic_id: Uuid, partition: i32, directory_id: Uuid, reason: &str) {
        self.assignments
            .handle_assignment(topic_id, partition, directory_id, reason);
    }

    fn handle_failure(&self, directory_id: Uuid) {
        let _ = self.offline.send(directory_id);
    }
}

/// Where the broker stands with the controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LifecycleState {
    /// -1 until registered.
    pub broker_epoch: i64,
    pub fenced: bool,
    /// The controller allowed the controlled shutdown to finish.
    pub shutdown_granted: bool,
}

impl Default for LifecycleState {
    fn default() -> Self {
        LifecycleState {
            broker_epoch: -1,
            fenced: true,
            shutdown_granted: false,
        }
    }
}

/// A running lifecycle manager.
#[derive(Debug)]
pub struct BrokerLifecycleManager {
    state: watch::Receiver<LifecycleState>,
    shutdown: mpsc::Sender<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

struct Lifecycle {
    config: LifecycleConfig,
    channel: ControllerChannel,
    metadata: watch::Receiver<MetadataStatus>,
    state: watch::Sender<LifecycleState>,
    shutdown: mpsc::Receiver<oneshot::Sender<()>>,
    shutting_down: Option<oneshot::Sender<()>>,
    /// Failed log dirs to report (from [`BrokerDirectoryEvents`]).
    offline_rx: mpsc::UnboundedReceiver<Uuid>,
    /// Each failed log dir reported so far: whether a heartbeat carrying it was answered
    /// without error, and until when that may take (Kafka's `offlineDirs`).
    offline_dirs: BTreeMap<Uuid, (bool, Instant)>,
    /// Where the broker is told to stop when a failed dir is not acknowledged in time.
    stop: watch::Sender<Option<String>>,
    /// The ids of the cordoned log dirs (`replica::cordoned_log_dirs`).
    cordoned: watch::Receiver<BTreeSet<Uuid>>,
    /// The metadata the broker has applied: whether its version carries cordoned dirs.
    cache: MetadataCache,
}

/// What the lifecycle manager reports of the cordoned log dirs (KIP-1066).
#[derive(Debug)]
pub struct CordonedDirsSource {
    /// The ids of the cordoned log dirs, now and after every change.
    pub ids: watch::Receiver<BTreeSet<Uuid>>,
    /// The broker's metadata: CordonedLogDirs is sent only from metadata.version 4.3-IV0.
    pub cache: MetadataCache,
}

impl BrokerLifecycleManager {
    /// Starts registering and heartbeating. `metadata` says how far the broker's metadata
    /// has come: the offset it reports, and whether it has caught up (until then it asks to
    /// stay fenced). Failed log dirs arrive on `offline_rx`; `stop` is told when one goes
    /// unacknowledged for `log.dir.failure.timeout.ms`; `cordoned` names the cordoned dirs.
    pub fn start(
        config: LifecycleConfig,
        channel: ControllerChannel,
        metadata: watch::Receiver<MetadataStatus>,
        offline_rx: mpsc::UnboundedReceiver<Uuid>,
        stop: watch::Sender<Option<String>>,
        cordoned: CordonedDirsSource,
    ) -> Self {
        let (state_tx, state) = watch::channel(LifecycleState::default());
        let (shutdown_tx, shutdown) = mpsc::channel(1);
        let lifecycle = Lifecycle {
            config,
            channel,
            metadata,
            state: state_tx,
            shutdown,
            shutting_down: None,
            offline_rx,
            offline_dirs: BTreeMap::new(),
            stop,
            cordoned: cordoned.ids,
            cache: cordoned.cache,
        };
        BrokerLifecycleManager {
            state,
            shutdown: shutdown_tx,
            task: tokio::spawn(lifecycle.run()),
        }
    }

    pub fn state(&self) -> watch::Receiver<LifecycleState> {
        self.state.clone()
    }

    /// Controlled shutdown: asks the controller to move this broker's leaderships away and
    /// waits until it agrees, or `timeout` passes. Heartbeats stop afterwards.
    pub async fn controlled_shutdown(self, timeout: Duration) -> LifecycleState {
        let (done, rx) = oneshot::channel();
        if self.shutdown.send(done).await.is_ok() {
            let _ = tokio::time::timeout(timeout, rx).await;
        }
        self.task.abort();
        let state = *self.state.borrow();
        if state.shutdown_granted {
            info!(epoch = state.broker_epoch, "controlled shutdown granted");
        } else {
            warn!(
                epoch = state.broker_epoch,
                ?timeout,
                "controlled shutdown not granted by the controller; stopping anyway"
            );
        }
        state
    }
}

impl Drop for BrokerLifecycleManager {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Lifecycle {
    async fn run(mut self) {
        loop {
            self.register().await;
            if !self.heartbeat_until_stale().await {
                return;
            }
        }
    }

    fn request_deadline(&self) -> Instant {
        Instant::now() + self.config.heartbeat_interval.max(Duration::from_secs(2)) * 2
    }

    /// Registers until the controller accepts; retries forever (with a backoff) on errors
    /// other than a wrong cluster, which it logs loudly and keeps retrying, as Kafka does.
    async fn register(&mut self) {
        let mut backoff = Duration::from_millis(100);
        loop {
            let request = RequestBody::BrokerRegistration(BrokerRegistrationRequest {
                broker_id: self.config.broker_id,
                cluster_id: self.config.cluster_id.clone(),
                incarnation_id: self.config.incarnation_id,
                listeners: self.config.listeners.clone(),
                features: self.config.features.clone(),
                rack: self.config.rack.clone(),
                is_migrating_zk_broker: false,
                log_dirs: self.config.log_dirs.clone(),
                previous_broker_epoch: self.config.previous_broker_epoch,
                ..Default::default()
            });
            let deadline = self.request_deadline();
            let not_controller = |r: &ResponseBody| matches!(r, ResponseBody::BrokerRegistration(b) if b.error_code == ErrorCode::NotController.code());
            match self
                .channel
                .send(None, request, deadline, not_controller)
                .await
            {
                Ok(ResponseBody::BrokerRegistration(r)) if r.error_code == 0 => {
                    info!(
                        broker = self.config.broker_id,
                        epoch = r.broker_epoch,
                        "registered with the controller"
                    );
                    self.state.send_modify(|s| {
                        s.broker_epoch = r.broker_epoch;
                        s.fenced = true;
                    });
                    return;
                }
                Ok(ResponseBody::BrokerRegistration(r)) => {
                    let code = ErrorCode::from_code(r.error_code);
                    warn!(
                        broker = self.config.broker_id,
                        ?code,
                        "registration refused; retrying"
                    );
                }
                Ok(other) => warn!(?other, "unexpected answer to BrokerRegistration"),
                Err(e) => {
                    warn!(broker = self.config.broker_id, error = %e, "registration failed; retrying")
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(self.config.heartbeat_interval);
        }
    }

    /// The CordonedLogDirs of the next heartbeat: null until the broker has caught up with
    /// the metadata (its dynamic configs are known by then) or below metadata.version
    /// 4.3-IV0, whose controllers neither read nor expect them.
    fn cordoned_log_dirs(&mut self, caught_up: bool) -> Option<Vec<Uuid>> {
        let ids = self.cordoned.borrow_and_update().clone();
        let supported = self
            .cache
            .image()
            .features
            .version()
            .is_cordoned_log_dirs_supported();
        (caught_up && supported).then(|| ids.into_iter().collect())
    }

    /// When the earliest failed dir not yet acknowledged must have been.
    fn next_ack_deadline(&self) -> Option<Instant> {
        self.offline_dirs
            .values()
            .filter(|(acknowledged, _)| !acknowledged)
            .map(|(_, deadline)| *deadline)
            .min()
    }

    /// A failed dir past its deadline without the controller's acknowledgement stops the
    /// broker (Kafka's `OfflineDirBrokerFailureEvent`); true when it did.
    fn stop_on_unacknowledged_dir(&mut self) -> bool {
        let now = Instant::now();
        let Some(dir) = self
            .offline_dirs
            .iter()
            .find(|(_, (acknowledged, deadline))| !acknowledged && *deadline <= now)
            .map(|(dir, _)| *dir)
        else {
            return false;
        };
        let reason = format!(
            "could not communicate offline log dir {dir} with the controllers within log.dir.failure.timeout.ms ({} ms)",
            self.config.log_dir_failure_timeout.as_millis()
        );
        warn!(broker = self.config.broker_id, %reason, "shutting down");
        self.stop.send_if_modified(|r| {
            let first = r.is_none();
            if first {
                *r = Some(reason);
            }
            first
        });
        true
    }

    /// Heartbeats until the epoch goes stale (`true`: register again) or the controlled
    /// shutdown is granted (`false`).
    async fn heartbeat_until_stale(&mut self) -> bool {
        let mut interval = tokio::time::interval(self.config.heartbeat_interval);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut caught_up = self.metadata.borrow().caught_up;
        // Whether the controller has answered a heartbeat asking to shut down.
        let mut shutdown_answered = false;
        let mut deadline_passed = false;
        loop {
            let ack_deadline = self.next_ack_deadline();
            tokio::select! {
                _ = interval.tick() => {}
                Some(done) = self.shutdown.recv(), if self.shutting_down.is_none() => {
                    info!(broker = self.config.broker_id, "controlled shutdown requested");
                    self.shutting_down = Some(done);
                }
                // Caught up: ask to be unfenced at once rather than at the next tick.
                Ok(_) = self.metadata.wait_for(|m| m.caught_up), if !caught_up => {}
                // A failed log dir goes to the controller at once (Kafka's
                // `scheduleNextCommunicationImmediately`).
                Some(dir) = self.offline_rx.recv() => {
                    warn!(broker = self.config.broker_id, %dir, "reporting an offline log directory to the controller");
                    let deadline = Instant::now() + self.config.log_dir_failure_timeout;
                    self.offline_dirs.entry(dir).or_insert((false, deadline));
                }
                _ = tokio::time::sleep_until(ack_deadline.unwrap_or_else(Instant::now)), if ack_deadline.is_some() => {
                    deadline_passed = true;
                }
                // A change of cordoned.log.dirs goes to the controller at once.
                Ok(()) = self.cordoned.changed() => {}
            }
            if std::mem::take(&mut deadline_passed) {
                // The heartbeats stop with the broker; a controlled shutdown would need
                // the controller this broker could not reach.
                if self.stop_on_unacknowledged_dir() {
                    return false;
                }
                continue;
            }
            let epoch = self.state.borrow().broker_epoch;
            let metadata = *self.metadata.borrow();
            caught_up = metadata.caught_up;
            let request = RequestBody::BrokerHeartbeat(BrokerHeartbeatRequest {
                broker_id: self.config.broker_id,
                broker_epoch: epoch,
                current_metadata_offset: metadata.last_applied_offset,
                want_fence: !caught_up,
                want_shut_down: self.shutting_down.is_some(),
                offline_log_dirs: self.offline_dirs.keys().copied().collect(),
                cordoned_log_dirs: self.cordoned_log_dirs(caught_up),
                ..Default::default()
            });
            let sent_offline: Vec<Uuid> = self.offline_dirs.keys().copied().collect();
            let deadline = self.request_deadline();
            let not_controller = |r: &ResponseBody| matches!(r, ResponseBody::BrokerHeartbeat(b) if b.error_code == ErrorCode::NotController.code());
            match self
                .channel
                .send(None, request, deadline, not_controller)
                .await
            {
                Ok(ResponseBody::BrokerHeartbeat(r)) if r.error_code == 0 => {
                    for dir in sent_offline {
                        if let Some((acknowledged, _)) = self.offline_dirs.get_mut(&dir) {
                            *acknowledged = true;
                        }
                    }
                    let was_fenced = self.state.borrow().fenced;
                    if was_fenced != r.is_fenced {
                        info!(
                            broker = self.config.broker_id,
                            fenced = r.is_fenced,
                            "fencing changed"
                        );
                    }
                    self.state.send_modify(|s| {
                        s.fenced = r.is_fenced;
                        s.shutdown_granted = r.should_shut_down;
                    });
                    if r.should_shut_down && self.shutting_down.is_some() {
                        if let Some(done) = self.shutting_down.take() {
                            let _ = done.send(());
                        }
                        return false;
                    }
                    if !r.is_caught_up {
                        interval.reset_after(STARTING_RECHECK);
                    }
                    if self.shutting_down.is_some() && !shutdown_answered {
                        // The controller moved (or is moving) this broker's leaderships in
                        // answer to this heartbeat: ask again soon, not an interval later.
                        shutdown_answered = true;
                        info!(
                            broker = self.config.broker_id,
                            "controlled shutdown pending; asking the controller again shortly"
                        );
                        interval.reset_after(CONTROLLED_SHUTDOWN_RECHECK);
                    }
                }
                Ok(ResponseBody::BrokerHeartbeat(r))
                    if r.error_code == ErrorCode::StaleBrokerEpoch.code() =>
                {
                    warn!(
                        broker = self.config.broker_id,
                        epoch, "broker epoch is stale; registering again"
                    );
                    self.state.send_modify(|s| s.fenced = true);
                    return true;
                }
                Ok(ResponseBody::BrokerHeartbeat(r)) => {
                    warn!(broker = self.config.broker_id, code = ?ErrorCode::from_code(r.error_code), "heartbeat refused");
                }
                Ok(other) => warn!(?other, "unexpected answer to BrokerHeartbeat"),
                Err(e) => warn!(broker = self.config.broker_id, error = %e, "heartbeat failed"),
            }
        }
    }
}
