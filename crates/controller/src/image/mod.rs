//! The immutable `MetadataImage`: everything the metadata log says at one point, as Kafka's
//! `org.apache.kafka.image.MetadataImage`. It is the one state the active controller,
//! standbys, snapshot loading and brokers read; it changes only by replaying records through
//! a [`MetadataDelta`], which yields the next image.
//!
//! Cloning an image is cheap (a few reference counts): the large parts are persistent maps
//! whose untouched entries are shared between consecutive images.

mod acls;
mod broker_partitions;
mod client_quotas;
mod cluster;
mod configs;
mod controller_indexes;
mod delegation_tokens;
pub mod delta;
mod features;
mod producer_ids;
mod scram;
mod topics;
mod writer;

pub use acls::{AclsImage, StandardAcl};
pub use client_quotas::{ClientQuotaEntity, ClientQuotasImage};
pub use cluster::{
    BrokerRegistration, ClusterImage, ControllerRegistration, Endpoint, SupportedRange,
};
pub use configs::{ConfigResource, ConfigResourceType, ConfigsImage};
pub(crate) use controller_indexes::PendingIndexes;
pub use delegation_tokens::{DelegationTokenImage, TokenInformation};
pub use features::{FeaturesImage, METADATA_VERSION_FEATURE};
pub use producer_ids::ProducerIdsImage;
pub use scram::{ScramCredential, ScramCredentialKey, ScramImage, ScramMechanism};
pub use topics::{
    unify_collision_chars, LeaderRecoveryState, PartitionInvariant, PartitionRegistration,
    TopicImage, TopicsImage, DIRECTORY_LOST, DIRECTORY_MIGRATING, DIRECTORY_UNASSIGNED, NO_LEADER,
    NO_LEADER_CHANGE,
};

use kraftd_protocol::MetadataRecord;

use controller_indexes::ControllerIndexes;
use delta::{MetadataDelta, ReplayError};

/// The whole metadata state at one point of the log. Immutable; cheap to clone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetadataImage {
    pub features: FeaturesImage,
    pub cluster: ClusterImage,
    pub topics: TopicsImage,
    pub configs: ConfigsImage,
    pub client_quotas: ClientQuotasImage,
    pub producer_ids: ProducerIdsImage,
    pub acls: AclsImage,
    pub scram: ScramImage,
    pub delegation_tokens: DelegationTokenImage,
}

impl MetadataImage {
    /// The image before any record: what a new node starts from and snapshots load onto.
    pub fn empty() -> Self {
        MetadataImage::default()
    }

    /// This image with the partition indexes only the controller reads (see
    /// `controller_indexes`), built by one scan if it lacks them; every image replayed
    /// from it keeps them. The controller takes every image it holds through this.
    pub fn with_controller_indexes(mut self) -> Self {
        if self.topics.indexes.is_none() {
            self.topics.indexes = Some(ControllerIndexes::scan(&self.topics));
        }
        self
    }

    /// Whether this image carries the controller's partition indexes.
    pub fn has_controller_indexes(&self) -> bool {
        self.topics.indexes.is_some()
    }

    pub fn is_empty(&self) -> bool {
        *self == MetadataImage::empty()
    }

    /// The image after replaying `records` onto this one, through one [`MetadataDelta`]:
    /// the same path the controller, standbys, snapshot loading and brokers use. On error
    /// nothing is returned; `self` is unchanged either way.
    pub fn replay_all<'a>(
        &self,
        records: impl IntoIterator<Item = &'a MetadataRecord>,
    ) -> Result<MetadataImage, ReplayError> {
        let mut delta = MetadataDelta::new(self);
        for record in records {
            delta.replay(record)?;
        }
        Ok(delta.apply())
    }

    /// Checks every partition's invariants (ELR ∩ ISR = ∅, leader in the ISR unless
    /// recovering, replicas ⊇ ISR ∪ ELR, ...) and that the name index matches the topics.
    /// Replay refuses records that would break them, so this holds for every image; it is
    /// here for debug assertions and tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        if self.topics.by_id.len() != self.topics.by_name.len() {
            return Err(format!(
                "{} topics by id but {} by name",
                self.topics.by_id.len(),
                self.topics.by_name.len()
            ));
        }
        for (name, id) in self.topics.by_name.iter() {
            match self.topics.by_id.get(id) {
                Some(topic) if topic.name == *name && topic.id == *id => {}
                _ => return Err(format!("name index entry {name} does not match its topic")),
            }
        }
        for topic in self.topics.by_id.values() {
            for (partition_id, partition) in topic.partitions.iter() {
                partition
                    .validate()
                    .map_err(|e| format!("partition {}-{partition_id}: {e}", topic.name))?;
            }
        }
        // The controller's indexes, against a scan of every partition.
        if let Some(indexes) = &self.topics.indexes {
            let scan = ControllerIndexes::scan(&self.topics);
            agree("leaderless index", &indexes.leaderless, &scan.leaderless)?;
            agree("leader counts", &indexes.leader_counts, &scan.leader_counts)?;
            agree("ISR index", &indexes.isr, &scan.isr)?;
            agree("ELR index", &indexes.elr, &scan.elr)?;
        }
        Ok(())
    }
}

/// An index against what a scan finds: equal, or an error naming both.
fn agree<T: PartialEq + std::fmt::Debug>(what: &str, index: &T, scan: &T) -> Result<(), String> {
    if index == scan {
        Ok(())
    } else {
        Err(format!("{what} {index:?}, a scan finds {scan:?}"))
    }
}
