//! The cluster part of the metadata image: broker registrations (epoch, incarnation,
//! listeners, rack, fenced, controlled shutdown, features, log directories, cordoned log
//! directories) and controller registrations, as Kafka's `ClusterImage`.
//!
//! A registration is replaced whole by a new `RegisterBrokerRecord` (a restart gets a new
//! broker epoch, KIP-380) and flipped by fence / unfence / registration-change records that
//! must name its current epoch, so a record meant for an older incarnation never applies.

use std::collections::BTreeMap;
use std::sync::Arc;

use imbl::OrdMap;
use kraftd_protocol::metadata::register_broker_record::{BrokerEndpoint, BrokerFeature};
use kraftd_protocol::metadata::register_controller_record::{
    ControllerEndpoint, ControllerFeature,
};
use kraftd_protocol::metadata::{RegisterBrokerRecord, RegisterControllerRecord};
use kraftd_protocol::Uuid;

use super::topics::{DIRECTORY_LOST, DIRECTORY_MIGRATING, DIRECTORY_UNASSIGNED};

/// Registered brokers and controllers. Cheap to clone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterImage {
    pub(crate) brokers: OrdMap<i32, Arc<BrokerRegistration>>,
    pub(crate) controllers: OrdMap<i32, Arc<ControllerRegistration>>,
}

/// One listener of a broker or controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub name: String,
    pub host: String,
    pub port: u16,
    /// Kafka's `SecurityProtocol` id (0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL).
    pub security_protocol: i16,
}

/// The range of levels a node supports for one feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SupportedRange {
    pub min: i16,
    pub max: i16,
}

/// A broker's registration, as Kafka's `BrokerRegistration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerRegistration {
    pub id: i32,
    /// The broker epoch (KIP-380): the offset of the registration record in KRaft.
    pub epoch: i64,
    pub incarnation_id: Uuid,
    /// Listeners by name.
    pub listeners: BTreeMap<String, Endpoint>,
    /// Supported feature ranges by feature name.
    pub supported_features: BTreeMap<String, SupportedRange>,
    pub rack: Option<String>,
    pub fenced: bool,
    pub in_controlled_shutdown: bool,
    pub is_migrating_zk_broker: bool,
    /// Online log directories, sorted so registrations compare equal whatever the order sent.
    pub directories: Vec<Uuid>,
    /// The cordoned log directories (KIP-1066), as the broker's last heartbeat named them:
    /// `None` until a heartbeat of a caught-up broker carried them (Kafka's null, "not
    /// known yet"), which counts as nothing cordoned. Kept in the order the broker sent.
    pub cordoned_directories: Option<Vec<Uuid>>,
}

/// A controller's registration, as Kafka's `ControllerRegistration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerRegistration {
    pub id: i32,
    pub incarnation_id: Uuid,
    pub zk_migration_ready: bool,
    pub listeners: BTreeMap<String, Endpoint>,
    pub supported_features: BTreeMap<String, SupportedRange>,
}

impl ClusterImage {
    pub fn broker(&self, id: i32) -> Option<&Arc<BrokerRegistration>> {
        self.brokers.get(&id)
    }

    /// Brokers in id order.
    pub fn brokers(&self) -> impl Iterator<Item = &Arc<BrokerRegistration>> {
        self.brokers.values()
    }

    pub fn controller(&self, id: i32) -> Option<&Arc<ControllerRegistration>> {
        self.controllers.get(&id)
    }

    /// Controllers in id order.
    pub fn controllers(&self) -> impl Iterator<Item = &Arc<ControllerRegistration>> {
        self.controllers.values()
    }
}

impl BrokerRegistration {
    pub fn from_record(record: &RegisterBrokerRecord) -> Self {
        let mut directories = record.log_dirs.clone();
        directories.sort();
        BrokerRegistration {
            id: record.broker_id,
            epoch: record.broker_epoch,
            incarnation_id: record.incarnation_id,
            listeners: record
                .end_points
                .iter()
                .map(|e: &BrokerEndpoint| listener(&e.name, &e.host, e.port, e.security_protocol))
                .collect(),
            supported_features: record
                .features
                .iter()
                .map(|f: &BrokerFeature| {
                    feature_range(&f.name, f.min_supported_version, f.max_supported_version)
                })
                .collect(),
            rack: record.rack.clone(),
            fenced: record.fenced,
            in_controlled_shutdown: record.in_controlled_shutdown,
            is_migrating_zk_broker: record.is_migrating_zk_broker,
            directories,
            cordoned_directories: record.cordoned_log_dirs.clone(),
        }
    }

    /// Kafka's `BrokerRegistration.hasUncordonedDirs`: whether new replicas may be placed
    /// on this broker. A broker that registered no directories, or whose cordoned ones are
    /// not known yet, has some; otherwise one of its online directories must not be
    /// cordoned.
    pub fn has_uncordoned_dirs(&self) -> bool {
        match &self.cordoned_directories {
            None => true,
            Some(_) if self.directories.is_empty() => true,
            Some(cordoned) => self.directories.iter().any(|d| !cordoned.contains(d)),
        }
    }

    /// Kafka's `BrokerRegistration.cordonedDirChanged`: whether `dirs` (a heartbeat's
    /// CordonedLogDirs) differs, as a set, from what the registration holds; always true
    /// while the registration holds none yet.
    pub fn cordoned_dir_changed(&self, dirs: &[Uuid]) -> bool {
        match &self.cordoned_directories {
            None => true,
            Some(current) => {
                let current: std::collections::BTreeSet<&Uuid> = current.iter().collect();
                let other: std::collections::BTreeSet<&Uuid> = dirs.iter().collect();
                current != other
            }
        }
    }

    /// Kafka's `BrokerRegistration.hasOnlineDir` (`DirectoryId.isOnline`): unassigned and
    /// migrating directories count as online, a lost one does not, and a broker that
    /// registered no directories (upgraded from before JBOD, KAFKA-16162) is trusted: it
    /// halts when all its directories fail.
    pub fn has_online_dir(&self, dir: Uuid) -> bool {
        if dir == DIRECTORY_UNASSIGNED || dir == DIRECTORY_MIGRATING {
            return true;
        }
        if dir == DIRECTORY_LOST {
            return false;
        }
        self.directories.is_empty() || self.directories.binary_search(&dir).is_ok()
    }

    /// A broker that is registered, not fenced and not shutting down can lead partitions.
    pub fn is_active(&self) -> bool {
        !self.fenced && !self.in_controlled_shutdown
    }
}

/// A registration record's endpoint, keyed by listener name (broker and controller records
/// carry the same fields in types of their own).
fn listener(name: &str, host: &str, port: u16, security_protocol: i16) -> (String, Endpoint) {
    let endpoint = Endpoint {
        name: name.to_string(),
        host: host.to_string(),
        port,
        security_protocol,
    };
    (name.to_string(), endpoint)
}

/// A registration record's supported feature range, keyed by feature name.
fn feature_range(name: &str, min: i16, max: i16) -> (String, SupportedRange) {
    (name.to_string(), SupportedRange { min, max })
}

impl ControllerRegistration {
    pub fn from_record(record: &RegisterControllerRecord) -> Self {
        ControllerRegistration {
            id: record.controller_id,
            incarnation_id: record.incarnation_id,
            zk_migration_ready: record.zk_migration_ready,
            listeners: record
                .end_points
                .iter()
                .map(|e: &ControllerEndpoint| {
                    listener(&e.name, &e.host, e.port, e.security_protocol)
                })
                .collect(),
            supported_features: record
                .features
                .iter()
                .map(|f: &ControllerFeature| {
                    feature_range(&f.name, f.min_supported_version, f.max_supported_version)
                })
                .collect(),
        }
    }
}
