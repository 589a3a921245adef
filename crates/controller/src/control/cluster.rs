//! `ClusterControlManager` and `BrokerHeartbeatManager`: the broker lifecycle (R6, R7, KIP-380,
//! KIP-966), as Kafka's `ClusterControlManager`, `BrokerHeartbeatManager` and
//! `ReplicationControlManager.processBrokerHeartbeat`.
//!
//! - BrokerRegistration gives every registration a new, larger broker epoch: the offset at
//!   which its records are written (the caller passes `next_offset`). A new incarnation is a
//!   restart, handled as a shutdown first; its PreviousBrokerEpoch (v3, from the broker's
//!   clean-shutdown marker) tells a clean shutdown from an unclean one, and an unclean one
//!   removes the broker from every ELR (KIP-966). A registered broker starts fenced.
//! - BrokerHeartbeat keeps a broker's session alive, unfences a fenced broker once its
//!   metadata offset has reached its registration, and drives controlled shutdown: leadership
//!   moves away first, then the broker is told to stop. Requests carrying an old broker epoch
//!   get STALE_BROKER_EPOCH. A heartbeat also reports the broker's offline and (v2,
//!   KIP-1066) cordoned log directories (`replication/directories.rs`).
//! - Session expiry: a broker that has not heartbeated for `broker.session.timeout.ms` is
//!   fenced, one broker per call so each fencing is visible before the next is decided.
//!
//! Registration and heartbeats return records and change nothing in the image. The
//! [`BrokerHeartbeatManager`] is the one piece of non-image state: last contact times and
//! metadata offsets are not replicated (a new active controller starts every session afresh,
//! as Kafka's does), so the heartbeat path updates it directly.

use std::collections::BTreeMap;

use kraftd_protocol::features::KRAFT_VERSION_FEATURE;
use kraftd_protocol::messages::{
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    BrokerRegistrationResponse,
};
use kraftd_protocol::metadata::register_broker_record::{BrokerEndpoint, BrokerFeature};
use kraftd_protocol::metadata::RegisterBrokerRecord;
use kraftd_protocol::{ErrorCode, MetadataRecord};

use crate::control::replication::{check_broker_epoch, ReplicationControlManager};
use crate::control::result::{ControllerResult, MAX_RECORDS_PER_BATCH};
use crate::image::{MetadataImage, METADATA_VERSION_FEATURE};

/// Kafka's default `broker.session.timeout.ms`.
pub const BROKER_SESSION_TIMEOUT_MS_DEFAULT: u64 = 9000;

/// Configuration of the cluster control manager, with Kafka's property names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterControlConfig {
    /// The cluster id; a registration naming another gets INCONSISTENT_CLUSTER_ID.
    pub cluster_id: String,
    /// `broker.session.timeout.ms`: a broker silent this long is fenced.
    pub broker_session_timeout_ms: u64,
    /// This controller's `node.id` (-1 unset): UnregisterController refuses to remove the
    /// active controller itself.
    pub node_id: i32,
}

/// Where a broker is in its lifecycle, as Kafka's `BrokerControlState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerControlState {
    Fenced,
    Unfenced,
    ControlledShutdown,
    ShutdownNow,
}

/// Session state of every broker the active controller has heard from. Not replicated.
#[derive(Debug, Clone)]
pub struct BrokerHeartbeatManager {
    session_timeout_ms: u64,
    brokers: BTreeMap<i32, BrokerHeartbeatState>,
}

/// One broker's session, as Kafka's `BrokerHeartbeatState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BrokerHeartbeatState {
    last_contact_ms: u64,
    /// The highest metadata offset the broker reported.
    metadata_offset: i64,
    /// The offset of the record that put it in controlled shutdown: it may stop once every
    /// active broker has replicated past it.
    controlled_shutdown_offset: Option<i64>,
}

/// Broker registration, heartbeats and session expiry.
#[derive(Debug, Clone)]
pub struct ClusterControlManager {
    config: ClusterControlConfig,
    replication: ReplicationControlManager,
}

impl Default for ClusterControlConfig {
    fn default() -> Self {
        ClusterControlConfig {
            cluster_id: String::new(),
            broker_session_timeout_ms: BROKER_SESSION_TIMEOUT_MS_DEFAULT,
            node_id: -1,
        }
    }
}

impl BrokerControlState {
    /// Whether the broker is (or is about to be) fenced.
    pub fn fenced(self) -> bool {
        matches!(
            self,
            BrokerControlState::Fenced | BrokerControlState::ShutdownNow
        )
    }

    pub fn in_controlled_shutdown(self) -> bool {
        self == BrokerControlState::ControlledShutdown
    }

    pub fn should_shut_down(self) -> bool {
        self == BrokerControlState::ShutdownNow
    }

    /// The state the image shows for a registered broker.
    /// Fenced wins over controlled shutdown: a broker fenced mid-shutdown (its session
    /// expired) is simply fenced, as Kafka's heartbeat manager resets it on fencing.
    fn of(image: &MetadataImage, broker_id: i32) -> Option<Self> {
        image.cluster.broker(broker_id).map(|b| {
            if b.fenced {
                BrokerControlState::Fenced
            } else if b.in_controlled_shutdown {
                BrokerControlState::ControlledShutdown
            } else {
                BrokerControlState::Unfenced
            }
        })
    }
}

impl BrokerHeartbeatManager {
    pub fn new(session_timeout_ms: u64) -> Self {
        BrokerHeartbeatManager {
            session_timeout_ms,
            brokers: BTreeMap::new(),
        }
    }

    /// Start tracking every registered broker as if it had just heartbeated: a newly active
    /// controller does not know when brokers last spoke to the old one, so each gets a full
    /// session (Kafka does the same on activation).
    pub fn activate(&mut self, image: &MetadataImage, now_ms: u64) {
        self.brokers.clear();
        for broker in image.cluster.brokers() {
            self.register(broker.id, now_ms);
        }
    }

    /// A (re-)registration: a fresh session with nothing replicated yet.
    pub fn register(&mut self, broker_id: i32, now_ms: u64) {
        self.brokers.insert(
            broker_id,
            BrokerHeartbeatState {
                last_contact_ms: now_ms,
                metadata_offset: -1,
                controlled_shutdown_offset: None,
            },
        );
    }

    /// A heartbeat was received.
    pub fn touch(&mut self, broker_id: i32, now_ms: u64, metadata_offset: i64) {
        let state = self
            .brokers
            .entry(broker_id)
            .or_insert(BrokerHeartbeatState {
                last_contact_ms: now_ms,
                metadata_offset,
                controlled_shutdown_offset: None,
            });
        state.last_contact_ms = state.last_contact_ms.max(now_ms);
        state.metadata_offset = state.metadata_offset.max(metadata_offset);
    }

    /// The broker was unregistered.
    pub fn remove(&mut self, broker_id: i32) {
        self.brokers.remove(&broker_id);
    }

    fn set_controlled_shutdown_offset(&mut self, broker_id: i32, offset: i64) {
        if let Some(state) = self.brokers.get_mut(&broker_id) {
            state.controlled_shutdown_offset = Some(offset);
        }
    }

    fn expired(&self, state: &BrokerHeartbeatState, now_ms: u64) -> bool {
        now_ms.saturating_sub(state.last_contact_ms) > self.session_timeout_ms
    }

    /// Whether an unfenced broker is still within its session: then another process
    /// registering with its id is a duplicate, not a restart.
    pub fn has_valid_session(&self, image: &MetadataImage, broker_id: i32, now_ms: u64) -> bool {
        let unfenced = image.cluster.broker(broker_id).is_some_and(|b| !b.fenced);
        unfenced
            && self
                .brokers
                .get(&broker_id)
                .is_some_and(|s| !self.expired(s, now_ms))
    }

    /// The unfenced broker whose session expired longest ago, if any (Kafka's
    /// `findOneStaleBroker`). Brokers never heard from are not tracked and not expired.
    pub fn find_one_stale_broker(&self, image: &MetadataImage, now_ms: u64) -> Option<i32> {
        image
            .cluster
            .brokers()
            .filter(|b| !b.fenced)
            .filter_map(|b| self.brokers.get(&b.id).map(|s| (b.id, s)))
            .filter(|(_, s)| self.expired(s, now_ms))
            .min_by_key(|(id, s)| (s.last_contact_ms, *id))
            .map(|(id, _)| id)
    }

    /// The lowest metadata offset among active brokers (unfenced, not shutting down):
    /// everything at or below it has reached all of them.
    pub fn lowest_active_offset(&self, image: &MetadataImage) -> i64 {
        image
            .cluster
            .brokers()
            .filter(|b| b.is_active())
            .map(|b| self.brokers.get(&b.id).map_or(-1, |s| s.metadata_offset))
            .min()
            .unwrap_or(i64::MAX)
    }
}

impl ClusterControlManager {
    pub fn new(config: ClusterControlConfig, replication: ReplicationControlManager) -> Self {
        ClusterControlManager {
            config,
            replication,
        }
    }

    pub fn config(&self) -> &ClusterControlConfig {
        &self.config
    }

    /// BrokerRegistration. `next_offset` is the offset the first record of the result will
    /// get: it becomes the new broker epoch (KIP-380), so the records must be written as one
    /// batch (the result is atomic). `request_version` ≥ 3 carries PreviousBrokerEpoch;
    /// older requests cannot prove a clean shutdown.
    // Each is an input Kafka's registerBroker takes too (the kraft.version its
    // QuorumController adds to the finalized features).
    #[allow(clippy::too_many_arguments)]
    pub fn register_broker(
        &self,
        image: &MetadataImage,
        heartbeats: &BrokerHeartbeatManager,
        request_version: i16,
        request: &BrokerRegistrationRequest,
        kraft_version: i16,
        next_offset: i64,
        now_ms: u64,
    ) -> ControllerResult<BrokerRegistrationResponse> {
        let fail = |error: ErrorCode| {
            tracing::info!(broker = request.broker_id, %error, "broker registration refused");
            ControllerResult::response_only(BrokerRegistrationResponse {
                error_code: error.code(),
                broker_epoch: -1,
                ..Default::default()
            })
        };
        if request.cluster_id != self.config.cluster_id {
            return fail(ErrorCode::InconsistentClusterId);
        }
        if request.broker_id < 0 {
            return fail(ErrorCode::InvalidRequest);
        }
        if let Err(error) = check_features(image, request, kraft_version) {
            return fail(error);
        }
        let existing = image.cluster.broker(request.broker_id);
        if let Some(existing) = existing {
            if heartbeats.has_valid_session(image, request.broker_id, now_ms)
                && existing.incarnation_id != request.incarnation_id
            {
                return fail(ErrorCode::DuplicateBrokerRegistration);
            }
        }
        let mut records = Vec::new();
        let mut broker_epoch = next_offset;
        let new_incarnation = existing.map(|e| e.incarnation_id) != Some(request.incarnation_id);
        if new_incarnation {
            // A restart: the old incarnation is gone. Its clean-shutdown marker named the
            // epoch it last ran with; anything else (no registration at all included, as
            // Kafka's -2) means it may have lost unflushed data.
            let stored_epoch = existing.map_or(-2, |e| e.epoch);
            let is_clean_shutdown =
                request_version >= 3 && request.previous_broker_epoch == stored_epoch;
            tracing::info!(
                broker = request.broker_id,
                stored_epoch,
                claimed = request.previous_broker_epoch,
                is_clean_shutdown,
                "broker (re)started"
            );
            self.replication.handle_broker_shutdown(
                image,
                request.broker_id,
                is_clean_shutdown,
                &mut records,
            );
        }
        // A restart of a broker in more ISRs than one Raft batch holds cannot go as one
        // batch (Kafka's atomic write would be refused for good, and the broker could never
        // come back): the ISR changes go first, in batches, and the registration last, its
        // epoch its own offset. A failover midway leaves some ISRs shrunk and no
        // registration; the broker's retry shrinks the rest.
        let atomic = records.len() < MAX_RECORDS_PER_BATCH;
        if !atomic {
            broker_epoch = next_offset + records.len() as i64;
        }
        records.push(MetadataRecord::RegisterBroker(RegisterBrokerRecord {
            broker_id: request.broker_id,
            is_migrating_zk_broker: request.is_migrating_zk_broker,
            incarnation_id: request.incarnation_id,
            broker_epoch,
            end_points: request
                .listeners
                .iter()
                .map(|l| BrokerEndpoint {
                    name: l.name.clone(),
                    host: l.host.clone(),
                    port: l.port,
                    security_protocol: l.security_protocol,
                    ..Default::default()
                })
                .collect(),
            features: request
                .features
                .iter()
                .map(|f| BrokerFeature {
                    name: f.name.clone(),
                    min_supported_version: f.min_supported_version,
                    max_supported_version: f.max_supported_version,
                    ..Default::default()
                })
                .collect(),
            rack: request.rack.clone(),
            fenced: true,
            in_controlled_shutdown: false,
            log_dirs: request.log_dirs.clone(),
            ..Default::default()
        }));
        let response = BrokerRegistrationResponse {
            error_code: ErrorCode::None.code(),
            broker_epoch,
            ..Default::default()
        };
        if atomic {
            ControllerResult::atomic_of(records, response)
        } else {
            ControllerResult::of(records, response)
        }
    }

    /// BrokerHeartbeat (Kafka's `processBrokerHeartbeat` with `calculateNextBrokerState`).
    /// `register_broker_record_offset` is the offset of the broker's registration record: a
    /// fenced broker whose metadata offset has reached it has caught up and is unfenced.
    /// `next_offset` is where this result's records will start (the controlled-shutdown
    /// marker's offset, which every active broker must pass before this one may stop).
    /// Updates `heartbeats` (the session), and nothing else.
    pub fn broker_heartbeat(
        &self,
        image: &MetadataImage,
        heartbeats: &mut BrokerHeartbeatManager,
        request: &BrokerHeartbeatRequest,
        register_broker_record_offset: i64,
        next_offset: i64,
        now_ms: u64,
    ) -> ControllerResult<BrokerHeartbeatResponse> {
        let broker_id = request.broker_id;
        let current = match check_broker_epoch(image, broker_id, request.broker_epoch)
            .map(|()| BrokerControlState::of(image, broker_id))
        {
            Ok(Some(state)) => state,
            Ok(None) | Err(_) => {
                return ControllerResult::response_only(BrokerHeartbeatResponse {
                    error_code: ErrorCode::StaleBrokerEpoch.code(),
                    is_fenced: true,
                    ..Default::default()
                })
            }
        };
        let next = self.next_broker_state(
            image,
            heartbeats,
            current,
            request,
            register_broker_record_offset,
        );
        let mut records = Vec::new();
        if current != next {
            tracing::info!(broker = broker_id, ?current, ?next, "broker state change");
            match next {
                BrokerControlState::Fenced => {
                    self.replication
                        .handle_broker_fenced(image, broker_id, &mut records)
                }
                BrokerControlState::Unfenced => self.replication.handle_broker_unfenced(
                    image,
                    broker_id,
                    request.broker_epoch,
                    &mut records,
                ),
                BrokerControlState::ControlledShutdown => {
                    self.replication.handle_broker_in_controlled_shutdown(
                        image,
                        broker_id,
                        request.broker_epoch,
                        &mut records,
                    );
                    heartbeats.set_controlled_shutdown_offset(broker_id, next_offset);
                }
                BrokerControlState::ShutdownNow => {
                    // Fence it (leaving every ISR) unless it already is.
                    if current != BrokerControlState::Fenced {
                        self.replication
                            .handle_broker_fenced(image, broker_id, &mut records)
                    }
                }
            }
        }
        heartbeats.touch(broker_id, now_ms, request.current_metadata_offset);
        if image.features.version().is_directory_assignment_supported() {
            self.replication.handle_directories_offline(
                image,
                broker_id,
                request.broker_epoch,
                &request.offline_log_dirs,
                &mut records,
            );
        }
        if image.features.version().is_cordoned_log_dirs_supported() {
            self.replication.handle_directories_cordoned(
                image,
                broker_id,
                request.broker_epoch,
                request.cordoned_log_dirs.as_deref(),
                &mut records,
            );
        }
        let offset_unknown = heartbeats
            .brokers
            .get(&broker_id)
            .is_some_and(|s| s.controlled_shutdown_offset.is_none());
        if next.in_controlled_shutdown() && offset_unknown {
            // Entered under a previous controller: the marker is somewhere below next_offset,
            // so waiting for next_offset is safe.
            heartbeats.set_controlled_shutdown_offset(broker_id, next_offset);
        }
        ControllerResult::of(
            records,
            BrokerHeartbeatResponse {
                error_code: ErrorCode::None.code(),
                is_caught_up: request.current_metadata_offset >= register_broker_record_offset,
                is_fenced: next.fenced(),
                should_shut_down: next.should_shut_down(),
                ..Default::default()
            },
        )
    }

    /// Kafka's `BrokerHeartbeatManager.calculateNextBrokerState`.
    fn next_broker_state(
        &self,
        image: &MetadataImage,
        heartbeats: &BrokerHeartbeatManager,
        current: BrokerControlState,
        request: &BrokerHeartbeatRequest,
        register_broker_record_offset: i64,
    ) -> BrokerControlState {
        use BrokerControlState::*;
        let shutting_down = image
            .cluster
            .broker(request.broker_id)
            .is_some_and(|b| b.in_controlled_shutdown);
        match current {
            Fenced => {
                if request.want_shut_down {
                    ShutdownNow
                } else if !request.want_fence
                    && request.current_metadata_offset >= register_broker_record_offset
                    && !shutting_down
                {
                    // A broker fenced during its controlled shutdown stays fenced until it
                    // registers again: unfencing would leave it "shutting down" forever.
                    Unfenced
                } else {
                    Fenced
                }
            }
            Unfenced => {
                if request.want_fence {
                    if request.want_shut_down {
                        ShutdownNow
                    } else {
                        Fenced
                    }
                } else if request.want_shut_down {
                    if ReplicationControlManager::has_leaderships(image, request.broker_id) {
                        ControlledShutdown
                    } else {
                        ShutdownNow
                    }
                } else {
                    Unfenced
                }
            }
            ControlledShutdown => {
                if ReplicationControlManager::has_leaderships(image, request.broker_id) {
                    return ControlledShutdown;
                }
                let offset = heartbeats
                    .brokers
                    .get(&request.broker_id)
                    .and_then(|s| s.controlled_shutdown_offset);
                match offset {
                    // Every active broker has seen the leadership moves: safe to stop. An
                    // unknown offset (a controller failover) is set by this heartbeat and
                    // decided on the next one.
                    Some(o) if o <= heartbeats.lowest_active_offset(image) => ShutdownNow,
                    _ => ControlledShutdown,
                }
            }
            ShutdownNow => ShutdownNow,
        }
    }

    /// UnregisterBroker: the broker leaves every ISR and ELR, then its registration goes.
    /// BROKER_ID_NOT_REGISTERED if there is none. The caller forgets its heartbeat session.
    ///
    /// Not atomic: a broker in more ISRs than one Raft batch holds would make an atomic write
    /// that Raft refuses for good (the controller renounced at every try). The partition
    /// changes go first, in batches, and the `UnregisterBrokerRecord` last, so a write
    /// stopped midway (a failover) leaves some ISRs shrunk and the broker still registered;
    /// the retry of the request shrinks the rest and unregisters it. A shrunk ISR on its
    /// own is a state the broker's fencing makes anyway.
    pub fn unregister_broker(
        &self,
        image: &MetadataImage,
        broker_id: i32,
    ) -> ControllerResult<ErrorCode> {
        let Some(broker) = image.cluster.broker(broker_id) else {
            return ControllerResult::response_only(ErrorCode::BrokerIdNotRegistered);
        };
        let mut records = Vec::new();
        self.replication
            .handle_broker_unregistered(image, broker_id, broker.epoch, &mut records);
        ControllerResult::of(records, ErrorCode::None)
    }

    /// Session expiry: fence the one unfenced broker whose session expired longest ago
    /// (Kafka's `maybeFenceOneStaleBroker`); the response names it. One per call, so the
    /// effect of each fencing is in the image before the next is decided.
    pub fn maybe_fence_one_stale_broker(
        &self,
        image: &MetadataImage,
        heartbeats: &BrokerHeartbeatManager,
        now_ms: u64,
    ) -> ControllerResult<Option<i32>> {
        let Some(broker_id) = heartbeats.find_one_stale_broker(image, now_ms) else {
            return ControllerResult::response_only(None);
        };
        tracing::info!(
            broker = broker_id,
            "fencing broker: its session has timed out"
        );
        let mut records = Vec::new();
        self.replication
            .handle_broker_fenced(image, broker_id, &mut records);
        ControllerResult::of(records, Some(broker_id))
    }
}

/// The broker must support the finalized level of every finalized feature (a feature it
/// does not list counts as supporting only level 0), as Kafka's registration check. The
/// finalized features include the quorum's `kraft.version` (`kraft_version`, held by the
/// Raft layer, not by a metadata record), as Kafka's QuorumController adds it before the
/// check: a broker that supports only level 0 cannot join a dynamic quorum's cluster.
fn check_features(
    image: &MetadataImage,
    request: &BrokerRegistrationRequest,
    kraft_version: i16,
) -> Result<(), ErrorCode> {
    let finalized = image
        .features
        .metadata_version
        .map(|level| (METADATA_VERSION_FEATURE, level))
        .into_iter()
        .chain(
            image
                .features
                .finalized
                .iter()
                .filter(|(k, _)| k.as_str() != KRAFT_VERSION_FEATURE)
                .map(|(k, v)| (k.as_str(), *v)),
        )
        .chain(std::iter::once((KRAFT_VERSION_FEATURE, kraft_version)));
    for (name, level) in finalized {
        let (min, max) = request
            .features
            .iter()
            .find(|f| f.name == name)
            .map_or((0, 0), |f| {
                (f.min_supported_version, f.max_supported_version)
            });
        if level < min || level > max {
            return Err(ErrorCode::UnsupportedVersion);
        }
    }
    Ok(())
}
