//! Partition reassignment (KIP-455), the controller side: AlterPartitionReassignments and
//! ListPartitionReassignments as Kafka's `ReplicationControlManager` answers them, with
//! Kafka's `PartitionReassignmentReplicas` (what a target means for a partition) and
//! `PartitionReassignmentRevert` (what a cancellation goes back to).
//!
//! A reassignment is only partition state: one `PartitionChangeRecord` writes the union of
//! target and current replicas with `addingReplicas` / `removingReplicas`; the
//! [`PartitionChangeBuilder`] completes it in whichever later change finds every remaining
//! replica in the ISR (usually the leader's AlterPartition adding the last new follower), so
//! a reassignment survives controller failover with nothing but the metadata log. A target
//! that needs no new replica completes in the first record.
//!
//! Differences from Kafka, on purpose: a partition named twice in one request is checked
//! against its state after the first entry (Kafka computes both against the old state and
//! writes two records that may contradict each other; our replay refuses that); a new target
//! replacing a running one always writes its own adding/removing lists (Kafka keeps the old
//! ones when the new target's are empty, which can end a reassignment somewhere else than
//! the target asked for), and counts its adding replicas from the replicas the running one
//! started from (the current ones less its adding ones), not from the current ones as
//! Kafka does: a target applied again (a broker forwarding a request again after losing the
//! connection its answer would have come on, a client retrying) or one that keeps a replica
//! the running reassignment was adding still waits for that replica to join the ISR, and a
//! cancel still takes it out. Counted from the current replicas, the repeated target had no
//! adding replica left, so a cancel then kept the replica being added beside the one being
//! removed: four replicas of an RF 3 partition (`cargo xtask chaos --reassign`, seed 41,
//! found it: a broker cut off from the controllers forwarded one request twice when the
//! cut healed, and the controller applied both).

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::messages::alter_partition_reassignments_request::ReassignablePartition;
use kraftd_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kraftd_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kraftd_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
};
use kraftd_protocol::metadata::PartitionChangeRecord;
use kraftd_protocol::{ErrorCode, MetadataRecord, Uuid};

use crate::control::partition_change::{Election, PartitionChangeBuilder};
use crate::control::replication::{is_active, leader_acceptor, ReplicationControlManager};
use crate::control::result::ControllerResult;
use crate::image::{PartitionRegistration, TopicImage};
use crate::MetadataImage;

/// Kafka's message for NO_REASSIGNMENT_IN_PROGRESS (`Errors.NO_REASSIGNMENT_IN_PROGRESS`).
pub const NO_REASSIGNMENT_IN_PROGRESS_MESSAGE: &str = "No partition reassignment is in progress.";

/// One partition's failure: Kafka's error code and message.
type PartitionError = (ErrorCode, String);

/// Whether a partition is being reassigned (adding or removing replicas).
pub fn is_reassigning(partition: &PartitionRegistration) -> bool {
    !partition.adding_replicas.is_empty() || !partition.removing_replicas.is_empty()
}

/// Kafka's `PartitionReassignmentReplicas` built from the current and target replica
/// lists: removing = current − target and adding = target − current, each in broker id
/// order (Kafka's `TreeSet`), replicas = target then the removing ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReassignmentReplicas {
    pub removing: Vec<i32>,
    pub adding: Vec<i32>,
    pub replicas: Vec<i32>,
}

impl ReassignmentReplicas {
    pub fn new(current: &[i32], target: &[i32]) -> Self {
        let difference = |a: &[i32], b: &[i32]| -> Vec<i32> {
            let set: BTreeSet<i32> = a.iter().copied().filter(|r| !b.contains(r)).collect();
            set.into_iter().collect()
        };
        let removing = difference(current, target);
        let adding = difference(target, current);
        let mut replicas = target.to_vec();
        replicas.extend(&removing);
        ReassignmentReplicas {
            removing,
            adding,
            replicas,
        }
    }
}

/// Kafka's `PartitionReassignmentRevert`: the replicas and ISR once every adding replica is
/// dropped again. If the ISR held only adding replicas, the first remaining replica becomes
/// the ISR, which is an unclean election.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReassignmentRevert {
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub unclean: bool,
}

impl ReassignmentRevert {
    /// `None` when the adding replicas are all the replicas (no partition starts that way).
    pub fn new(partition: &PartitionRegistration) -> Option<Self> {
        let adding = &partition.adding_replicas;
        let keep = |list: &[i32]| -> Vec<i32> {
            list.iter()
                .copied()
                .filter(|r| !adding.contains(r))
                .collect()
        };
        let replicas = keep(&partition.replicas);
        let mut isr = keep(&partition.isr);
        let unclean = isr.is_empty();
        if unclean {
            isr.push(*replicas.first()?);
        }
        Some(ReassignmentRevert {
            replicas,
            isr,
            unclean,
        })
    }
}

/// Partitions already changed earlier in the same request.
type Overlay = BTreeMap<(Uuid, i32), PartitionRegistration>;

impl ReplicationControlManager {
    /// AlterPartitionReassignments: per partition, a target list starts (or replaces) a
    /// reassignment and a null one cancels it; every partition gets its own result and the
    /// records commit together (Kafka's `atomicOf`). `allow_replication_factor_change`
    /// false (v1, KIP-860) refuses a target whose length differs from where the partition
    /// is headed.
    pub fn alter_partition_reassignments(
        &self,
        image: &MetadataImage,
        request: &AlterPartitionReassignmentsRequest,
    ) -> ControllerResult<AlterPartitionReassignmentsResponse> {
        let mut records = Vec::new();
        let mut overlay = Overlay::new();
        let mut response = AlterPartitionReassignmentsResponse {
            allow_replication_factor_change: request.allow_replication_factor_change,
            error_message: None,
            ..Default::default()
        };
        let (mut ok, mut total) = (0usize, 0usize);
        for topic in &request.topics {
            let mut topic_response = ReassignableTopicResponse {
                name: topic.name.clone(),
                ..Default::default()
            };
            for target in &topic.partitions {
                total += 1;
                let result = self.alter_one_reassignment(
                    image,
                    &topic.name,
                    target,
                    request.allow_replication_factor_change,
                    &mut overlay,
                );
                let (error_code, error_message) = match result {
                    Ok(record) => {
                        ok += 1;
                        if let Some(record) = record {
                            records.push(MetadataRecord::PartitionChange(record));
                        }
                        (ErrorCode::None.code(), None)
                    }
                    Err((code, message)) => {
                        tracing::info!(topic = %topic.name, partition = target.partition_index,
                            error = ?code, %message, "unable to alter partition reassignment");
                        (code.code(), Some(message))
                    }
                };
                topic_response
                    .partitions
                    .push(ReassignablePartitionResponse {
                        partition_index: target.partition_index,
                        error_code,
                        error_message,
                        ..Default::default()
                    });
            }
            response.responses.push(topic_response);
        }
        tracing::info!("successfully altered {ok} out of {total} partition reassignment(s)");
        ControllerResult::atomic_of(records, response)
    }

    /// One partition of AlterPartitionReassignments: its record (none if nothing changes).
    fn alter_one_reassignment(
        &self,
        image: &MetadataImage,
        topic_name: &str,
        target: &ReassignablePartition,
        allow_rf_change: bool,
        overlay: &mut Overlay,
    ) -> Result<Option<PartitionChangeRecord>, PartitionError> {
        let topic = image.topics.get_by_name(topic_name).ok_or_else(|| {
            (
                ErrorCode::UnknownTopicOrPartition,
                format!("Unable to find a topic named {topic_name}."),
            )
        })?;
        let index = target.partition_index;
        let key = (topic.id, index);
        let partition = match overlay.get(&key) {
            Some(p) => p.clone(),
            None => PartitionRegistration::clone(topic.partition(index).ok_or_else(|| {
                (
                    ErrorCode::UnknownTopicOrPartition,
                    format!("Unable to find partition {topic_name}:{index}."),
                )
            })?),
        };
        let record = match &target.replicas {
            None => self.cancel_reassignment(image, topic, index, &partition)?,
            Some(replicas) => self.change_reassignment(
                image,
                topic,
                index,
                &partition,
                replicas,
                allow_rf_change,
            )?,
        };
        if let Some(record) = &record {
            // The record must replay: the image's invariants (ELR ∩ ISR = ∅, ISR and ELR
            // within the replicas, leader in the ISR) hold at every step of a move.
            let next = partition.merge(record).map_err(|e| {
                tracing::error!(error = %e, topic = topic_name, partition = index,
                    "a reassignment produced an unreplayable change");
                (ErrorCode::UnknownServerError, e.to_string())
            })?;
            overlay.insert(key, next);
        }
        Ok(record)
    }

    /// Kafka's `changePartitionReassignment`: validate the target, then write the union of
    /// target and current replicas with adding/removing (or complete at once when the ISR
    /// already allows it).
    fn change_reassignment(
        &self,
        image: &MetadataImage,
        topic: &TopicImage,
        index: i32,
        partition: &PartitionRegistration,
        target: &[i32],
        allow_rf_change: bool,
    ) -> Result<Option<PartitionChangeRecord>, PartitionError> {
        validate_target(image, target)?;
        if !allow_rf_change {
            validate_replication_factor_unchanged(partition, target.len())?;
        }
        let mut reassignment = ReassignmentReplicas::new(&partition.replicas, target);
        // Adding: what the target has beyond where a running reassignment started (see the
        // module's doc), so that it is still awaited and still reverted.
        // The revert's replicas are where it started.
        if let Some(started) =
            ReassignmentRevert::new(partition).filter(|_| is_reassigning(partition))
        {
            reassignment.adding = ReassignmentReplicas::new(&started.replicas, target).adding;
        }
        Ok(self
            .reassignment_builder(image, topic, index, partition)
            .set_target_replicas(reassignment.replicas)
            .set_target_removing(reassignment.removing)
            .set_target_adding(reassignment.adding)
            .build())
    }

    /// Kafka's `cancelPartitionReassignment`: back to the replicas without the adding ones;
    /// refused when that needs an unclean election the topic does not allow.
    fn cancel_reassignment(
        &self,
        image: &MetadataImage,
        topic: &TopicImage,
        index: i32,
        partition: &PartitionRegistration,
    ) -> Result<Option<PartitionChangeRecord>, PartitionError> {
        if !is_reassigning(partition) {
            return Err((
                ErrorCode::NoReassignmentInProgress,
                NO_REASSIGNMENT_IN_PROGRESS_MESSAGE.into(),
            ));
        }
        let unrevertable = || {
            (
                ErrorCode::InvalidReplicaAssignment,
                "Invalid replica assignment: addingReplicas contained all replicas.".to_string(),
            )
        };
        let revert = ReassignmentRevert::new(partition).ok_or_else(unrevertable)?;
        let unclean_allowed = self.unclean_leader_election_enabled(image, &topic.name);
        if revert.unclean && !unclean_allowed {
            return Err((
                ErrorCode::InvalidReplicaAssignment,
                format!(
                    "Unable to revert partition assignment for {}:{index} because it would \
                     require an unclean leader election.",
                    topic.name
                ),
            ));
        }
        let builder = self.reassignment_builder(image, topic, index, partition);
        let builder = if unclean_allowed {
            builder.set_election(Election::Unclean)
        } else {
            builder
        };
        Ok(builder
            .set_target_isr(revert.isr)
            .set_target_replicas(revert.replicas)
            .set_target_removing(Vec::new())
            .set_target_adding(Vec::new())
            .build())
    }

    /// A builder for a reassignment change: leaders must be active with their directory
    /// online (Kafka's `LeaderAcceptor`), the election online, ELR per the feature.
    fn reassignment_builder<'a>(
        &self,
        image: &'a MetadataImage,
        topic: &TopicImage,
        index: i32,
        partition: &'a PartitionRegistration,
    ) -> PartitionChangeBuilder<'a, impl Fn(i32) -> bool + 'a> {
        PartitionChangeBuilder::new(
            partition,
            topic.id,
            index,
            leader_acceptor(image, partition, move |r| is_active(image, r)),
            self.effective_min_isr(image, topic, partition),
        )
        .set_eligible_leader_replicas_enabled(Self::is_elr_enabled(image))
    }

    /// ListPartitionReassignments from the committed image: every reassigning partition
    /// (no topics given) or those of the named topics and partitions; unknown names and
    /// partitions not being reassigned are left out, as Kafka does.
    pub fn list_partition_reassignments(
        image: &MetadataImage,
        request: &ListPartitionReassignmentsRequest,
    ) -> ListPartitionReassignmentsResponse {
        let mut response = ListPartitionReassignmentsResponse {
            error_message: None,
            ..Default::default()
        };
        let ongoing = |topic: &TopicImage, indexes: &mut dyn Iterator<Item = i32>| {
            let partitions: Vec<OngoingPartitionReassignment> = indexes
                .filter_map(|i| {
                    let p = topic.partition(i)?;
                    is_reassigning(p).then(|| OngoingPartitionReassignment {
                        partition_index: i,
                        replicas: p.replicas.clone(),
                        adding_replicas: p.adding_replicas.clone(),
                        removing_replicas: p.removing_replicas.clone(),
                        ..Default::default()
                    })
                })
                .collect();
            (!partitions.is_empty()).then(|| OngoingTopicReassignment {
                name: topic.name.clone(),
                partitions,
                ..Default::default()
            })
        };
        match &request.topics {
            None => {
                for (_, id) in image.topics.names() {
                    let Some(topic) = image.topics.get(id) else {
                        continue;
                    };
                    let mut indexes = topic.partitions.keys().copied();
                    response.topics.extend(ongoing(topic, &mut indexes));
                }
            }
            Some(topics) => {
                for wanted in topics {
                    let Some(topic) = image.topics.get_by_name(&wanted.name) else {
                        continue;
                    };
                    let mut indexes = wanted.partition_indexes.iter().copied();
                    response.topics.extend(ongoing(topic, &mut indexes));
                }
            }
        }
        response
    }
}

/// Kafka's `validateManualPartitionAssignment` for a reassignment target: not empty, each
/// broker registered, with a log directory not cordoned (KIP-1066), and named once, checked
/// in broker id order as Kafka does.
fn validate_target(image: &MetadataImage, target: &[i32]) -> Result<(), PartitionError> {
    let invalid = |message: String| Err((ErrorCode::InvalidReplicaAssignment, message));
    if target.is_empty() {
        return invalid("The manual partition assignment includes an empty replica list.".into());
    }
    let mut sorted = target.to_vec();
    sorted.sort_unstable();
    let mut previous = None;
    for broker in sorted {
        let Some(registration) = image.cluster.broker(broker) else {
            return invalid(format!(
                "The manual partition assignment includes broker {broker}, but no such broker \
                 is registered."
            ));
        };
        if !registration.has_uncordoned_dirs() {
            return invalid(format!(
                "The manual partition assignment includes broker {broker}, but all its log \
                 directories are cordoned."
            ));
        }
        if previous == Some(broker) {
            return invalid(format!(
                "The manual partition assignment includes the broker {broker} more than once."
            ));
        }
        previous = Some(broker);
    }
    Ok(())
}

/// Kafka's `validatePartitionReplicationFactorUnchanged` (KIP-860): the target's length
/// against the replica count the partition is headed for (replicas + adding − removing while
/// a reassignment runs).
fn validate_replication_factor_unchanged(
    partition: &PartitionRegistration,
    target_len: usize,
) -> Result<(), PartitionError> {
    let current = if is_reassigning(partition) {
        let mut heading: BTreeSet<i32> = partition
            .replicas
            .iter()
            .chain(&partition.adding_replicas)
            .copied()
            .collect();
        for r in &partition.removing_replicas {
            heading.remove(r);
        }
        heading.len()
    } else {
        partition.replicas.len()
    };
    if current == target_len {
        Ok(())
    } else {
        Err((
            ErrorCode::InvalidReplicationFactor,
            format!("The replication factor is changed from {current} to {target_len}"),
        ))
    }
}
