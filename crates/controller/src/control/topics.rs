//! `TopicControlManager`: the topic side of Kafka's `ReplicationControlManager` —
//! CreateTopics (name validation as Kafka's `Topic.validate`, defaults `num.partitions` and
//! `default.replication.factor`, manual assignments or rack-aware placement over unfenced
//! brokers, per-topic configs, validate-only), DeleteTopics (by name or id) and
//! CreatePartitions.
//!
//! Pure: every method reads a [`MetadataImage`] and returns a [`ControllerResult`]; new topic
//! ids and placement seeds are inputs, so the same request on the same image gives the same
//! records. Each topic succeeds or fails on its own, as in Kafka; a failed topic writes
//! nothing. A topic that passed every check is charged to the request's controller
//! mutation quota (KIP-599, its partitions created or deleted); a strict quota that is
//! exhausted refuses it with THROTTLING_QUOTA_EXCEEDED.

use std::collections::BTreeSet;

use kraftd_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kraftd_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kraftd_protocol::messages::delete_topics_response::DeletableTopicResult;
use kraftd_protocol::messages::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse,
};
use kraftd_protocol::metadata::{ConfigRecord, PartitionRecord, RemoveTopicRecord, TopicRecord};
use kraftd_protocol::{ErrorCode, MetadataRecord, Uuid};

use crate::control::config_defs::validate_topic_config;
use crate::control::placement::{self, PlacementError, PlacementSeed, UsableBroker};
use crate::control::result::ControllerResult;
use crate::image::{
    ConfigResourceType, MetadataImage, TopicImage, DIRECTORY_MIGRATING, DIRECTORY_UNASSIGNED,
    METADATA_VERSION_FEATURE,
};
use crate::quota::{MutationQuota, ThrottlingQuotaExceeded, Unbounded};

/// Kafka's longest legal topic name (`Topic.MAX_NAME_LENGTH`).
pub const MAX_TOPIC_NAME_LENGTH: usize = 249;
/// Kafka's default `num.partitions`.
pub const NUM_PARTITIONS_DEFAULT: i32 = 1;
/// Kafka's default `default.replication.factor`.
pub const DEFAULT_REPLICATION_FACTOR_DEFAULT: i16 = 1;
/// Kafka's `MAX_PARTITIONS_PER_BATCH`: a CreateTopics or CreatePartitions asking for more new
/// partitions in total fails whole with POLICY_VIOLATION, so one request cannot make an
/// unbounded batch of records.
pub const MAX_PARTITIONS_PER_BATCH: i64 = 10_000;
/// Kafka's `MetadataVersion.IBP_3_7_IV2`, the first with replica directories (JBOD).
pub const DIRECTORY_ASSIGNMENT_METADATA_VERSION: i16 = 17;
/// `ConfigSource.DYNAMIC_TOPIC_CONFIG` in DescribeConfigs and CreateTopics responses.
const CONFIG_SOURCE_DYNAMIC_TOPIC: i8 = 1;

/// Static defaults for topic creation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicConfig {
    /// `num.partitions`: partitions of a topic created with -1.
    pub num_partitions: i32,
    /// `default.replication.factor`: replicas of a topic created with -1.
    pub default_replication_factor: i16,
}

/// Creates and deletes topics and adds partitions. Holds only configuration.
#[derive(Debug, Clone, Default)]
pub struct TopicControlManager {
    config: TopicConfig,
}

/// An error for one topic: the code and Kafka's message.
type TopicError = (ErrorCode, String);

impl Default for TopicConfig {
    fn default() -> Self {
        TopicConfig {
            num_partitions: NUM_PARTITIONS_DEFAULT,
            default_replication_factor: DEFAULT_REPLICATION_FACTOR_DEFAULT,
        }
    }
}

/// Checks a topic name as Kafka's `Topic.validate`.
pub fn validate_topic_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("Topic name is illegal, it can't be empty".into());
    }
    if name == "." || name == ".." {
        return Err("Topic name cannot be \".\" or \"..\"".into());
    }
    if name.len() > MAX_TOPIC_NAME_LENGTH {
        return Err(format!(
            "Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, \
             topic name: {name}"
        ));
    }
    if !name
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || c == b'-')
    {
        return Err(format!(
            "Topic name {name} is illegal, it contains a character other than ASCII \
             alphanumerics, '.', '_' and '-'"
        ));
    }
    Ok(())
}

pub use crate::image::unify_collision_chars;

impl TopicControlManager {
    pub fn new(config: TopicConfig) -> Self {
        TopicControlManager { config }
    }

    pub fn config(&self) -> &TopicConfig {
        &self.config
    }

    // ---- CreateTopics ----

    /// CreateTopics. `next_topic_id` supplies fresh ids (the caller's random source); an id
    /// that is zero or already used is drawn again. `seed` starts replica placement; each
    /// topic advances it so consecutive topics start on different brokers.
    pub fn create_topics(
        &self,
        image: &MetadataImage,
        request: &CreateTopicsRequest,
        next_topic_id: impl FnMut() -> Uuid,
        seed: PlacementSeed,
    ) -> ControllerResult<CreateTopicsResponse> {
        self.create_topics_with_quota(image, request, next_topic_id, seed, &mut Unbounded)
    }

    /// [`create_topics`](Self::create_topics) charging each valid topic's partitions to
    /// `quota`.
    pub fn create_topics_with_quota(
        &self,
        image: &MetadataImage,
        request: &CreateTopicsRequest,
        mut next_topic_id: impl FnMut() -> Uuid,
        seed: PlacementSeed,
        quota: &mut dyn MutationQuota,
    ) -> ControllerResult<CreateTopicsResponse> {
        let mut records = Vec::new();
        let mut response = CreateTopicsResponse::default();
        let total: i64 = request
            .topics
            .iter()
            .map(|t| match (t.assignments.len(), t.num_partitions) {
                (0, -1) => i64::from(self.config.num_partitions),
                (0, n) => i64::from(n.max(0)),
                (n, _) => i64::try_from(n).unwrap_or(i64::MAX),
            })
            .fold(0i64, i64::saturating_add);
        if total > MAX_PARTITIONS_PER_BATCH {
            for topic in &request.topics {
                let mut result = CreatableTopicResult {
                    name: topic.name.clone(),
                    ..Default::default()
                };
                set_error(&mut result, too_many_partitions());
                response.topics.push(result);
            }
            return ControllerResult::response_only(response);
        }
        let brokers = placement::usable_brokers(image);
        let mut seen = BTreeSet::new();
        let duplicates: BTreeSet<&str> = request
            .topics
            .iter()
            .filter(|t| !seen.insert(t.name.as_str()))
            .map(|t| t.name.as_str())
            .collect();
        let mut created_unified: BTreeSet<String> = BTreeSet::new();
        let mut used_ids: BTreeSet<Uuid> = BTreeSet::new();
        for (i, topic) in request.topics.iter().enumerate() {
            let mut result = CreatableTopicResult {
                name: topic.name.clone(),
                error_message: None,
                ..Default::default()
            };
            if duplicates.contains(topic.name.as_str()) {
                set_error(
                    &mut result,
                    (ErrorCode::InvalidRequest, "Duplicate topic name.".into()),
                );
                response.topics.push(result);
                continue;
            }
            let topic_seed = PlacementSeed {
                start_index: seed.start_index.wrapping_add(i as u32),
                replica_shift: seed.replica_shift,
            };
            let created = self
                .create_topic(image, topic, &brokers, &created_unified, topic_seed)
                .and_then(|created| {
                    charge(quota, created.replicas.len())?;
                    Ok(created)
                });
            match created {
                Err(error) => set_error(&mut result, error),
                Ok(created) => {
                    let id = loop {
                        let id = next_topic_id();
                        if id != Uuid::ZERO
                            && image.topics.get(&id).is_none()
                            && used_ids.insert(id)
                        {
                            break id;
                        }
                    };
                    result.topic_id = id;
                    result.num_partitions = i32::try_from(created.replicas.len())
                        .expect("partition count came from an i32");
                    result.replication_factor = created.replication_factor;
                    result.configs = Some(
                        created
                            .configs
                            .iter()
                            .map(|(name, value)| CreatableTopicConfigs {
                                name: name.clone(),
                                value: Some(value.clone()),
                                read_only: false,
                                config_source: CONFIG_SOURCE_DYNAMIC_TOPIC,
                                is_sensitive: false,
                                ..Default::default()
                            })
                            .collect(),
                    );
                    created_unified.insert(unify_collision_chars(&topic.name));
                    if !request.validate_only {
                        records.extend(created.records(&topic.name, id));
                    }
                }
            }
            response.topics.push(result);
        }
        ControllerResult::atomic_of(records, response)
    }

    /// Validates one topic and decides its partitions; no id yet.
    fn create_topic(
        &self,
        image: &MetadataImage,
        topic: &CreatableTopic,
        brokers: &[UsableBroker],
        created_unified: &BTreeSet<String>,
        seed: PlacementSeed,
    ) -> Result<NewTopic, TopicError> {
        validate_topic_name(&topic.name).map_err(|m| (ErrorCode::InvalidTopicException, m))?;
        if image.topics.get_by_name(&topic.name).is_some() {
            return Err((
                ErrorCode::TopicAlreadyExists,
                format!("Topic '{}' already exists.", topic.name),
            ));
        }
        let unified = unify_collision_chars(&topic.name);
        let collision = image
            .topics
            .colliding_name(&topic.name)
            .cloned()
            .or_else(|| created_unified.contains(&unified).then(|| unified.clone()));
        if let Some(existing) = collision {
            return Err((
                ErrorCode::InvalidTopicException,
                format!(
                    "Topic '{}' collides with existing topic: {existing}",
                    topic.name
                ),
            ));
        }
        let mut configs: Vec<(String, String)> = Vec::new();
        for config in &topic.configs {
            let Some(value) = &config.value else {
                return Err((
                    ErrorCode::InvalidConfig,
                    format!(
                        "Null value not supported for topic configs: {}",
                        config.name
                    ),
                ));
            };
            validate_topic_config(&config.name, value)
                .map_err(|e| (ErrorCode::InvalidConfig, e.to_string()))?;
            if configs.iter().any(|(k, _)| *k == config.name) {
                return Err((
                    ErrorCode::InvalidRequest,
                    format!("Duplicate config key {}", config.name),
                ));
            }
            configs.push((config.name.clone(), value.clone()));
        }
        let replicas = if topic.assignments.is_empty() {
            let num_partitions = if topic.num_partitions == -1 {
                self.config.num_partitions
            } else {
                topic.num_partitions
            };
            let replication_factor = if topic.replication_factor == -1 {
                self.config.default_replication_factor
            } else {
                topic.replication_factor
            };
            if num_partitions <= 0 {
                return Err((
                    ErrorCode::InvalidPartitions,
                    "Number of partitions was set to an invalid non-positive value.".into(),
                ));
            }
            if replication_factor <= 0 {
                return Err((
                    ErrorCode::InvalidReplicationFactor,
                    "Replication factor must be larger than 0, or -1 to use the default value."
                        .into(),
                ));
            }
            placement::place(brokers, 0, num_partitions, replication_factor, seed)
                .map_err(placement_error)?
        } else {
            if topic.num_partitions != -1 || topic.replication_factor != -1 {
                return Err((
                    ErrorCode::InvalidRequest,
                    "A manual partition assignment was specified, but numPartitions or \
                     replicationFactor was not set to -1."
                        .into(),
                ));
            }
            let mut sorted: Vec<_> = topic.assignments.iter().collect();
            sorted.sort_by_key(|a| a.partition_index);
            let consecutive = sorted
                .iter()
                .enumerate()
                .all(|(i, a)| i32::try_from(i).ok() == Some(a.partition_index));
            if !consecutive {
                return Err((
                    ErrorCode::InvalidReplicaAssignment,
                    "partitions should be a consecutive 0-based integer sequence".into(),
                ));
            }
            let mut replicas = Vec::with_capacity(sorted.len());
            for assignment in sorted {
                validate_manual_assignment(
                    image,
                    assignment.partition_index,
                    &assignment.broker_ids,
                )?;
                replicas.push(assignment.broker_ids.clone());
            }
            replicas
        };
        let replication_factor = i16::try_from(replicas[0].len()).map_err(|_| {
            (
                ErrorCode::InvalidReplicationFactor,
                "Replication factor is too large.".into(),
            )
        })?;
        let partitions = replicas
            .iter()
            .enumerate()
            .map(|(p, r)| {
                let p = i32::try_from(p).expect("partition count came from an i32");
                new_partition(image, p, r)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(NewTopic {
            replicas,
            replication_factor,
            configs,
            partitions,
        })
    }

    // ---- DeleteTopics ----

    /// DeleteTopics by name (`TopicNames`, v0–v5, or `Topics[].Name`) or by id
    /// (`Topics[].TopicId`, v6+): one `RemoveTopicRecord` per topic found.
    pub fn delete_topics(
        &self,
        image: &MetadataImage,
        request: &DeleteTopicsRequest,
    ) -> ControllerResult<DeleteTopicsResponse> {
        self.delete_topics_with_quota(image, request, &mut Unbounded)
    }

    /// [`delete_topics`](Self::delete_topics) charging each topic's partitions to `quota`.
    pub fn delete_topics_with_quota(
        &self,
        image: &MetadataImage,
        request: &DeleteTopicsRequest,
        quota: &mut dyn MutationQuota,
    ) -> ControllerResult<DeleteTopicsResponse> {
        let mut records = Vec::new();
        let mut response = DeleteTopicsResponse::default();
        let mut removed = BTreeSet::new();
        let targets = request
            .topic_names
            .iter()
            .map(|n| (Some(n.clone()), Uuid::ZERO))
            .chain(
                request
                    .topics
                    .iter()
                    .map(|t| (t.name.clone().filter(|n| !n.is_empty()), t.topic_id)),
            );
        for (name, id) in targets {
            let mut result = DeletableTopicResult {
                name: name.clone(),
                topic_id: id,
                error_message: None,
                ..Default::default()
            };
            let found: Result<&TopicImage, TopicError> = match (&name, id) {
                (Some(name), Uuid::ZERO) => {
                    image.topics.get_by_name(name).map(|t| t.as_ref()).ok_or((
                        ErrorCode::UnknownTopicOrPartition,
                        "This server does not host this topic-partition.".into(),
                    ))
                }
                (_, Uuid::ZERO) => Err((
                    ErrorCode::InvalidRequest,
                    "Neither topic name nor id were specified.".into(),
                )),
                (_, id) => image.topics.get(&id).map(|t| t.as_ref()).ok_or((
                    ErrorCode::UnknownTopicId,
                    "This server does not host this topic ID.".into(),
                )),
            };
            match found {
                Err((code, message)) => {
                    result.error_code = code.code();
                    result.error_message = Some(message);
                }
                Ok(topic) => {
                    result.name = Some(topic.name.clone());
                    result.topic_id = topic.id;
                    if removed.contains(&topic.id) {
                        result.error_code = ErrorCode::InvalidRequest.code();
                        result.error_message = Some("Duplicate topic in request.".into());
                    } else if let Err((code, message)) = charge(quota, topic.partitions.len()) {
                        result.error_code = code.code();
                        result.error_message = Some(message);
                    } else {
                        removed.insert(topic.id);
                        records.push(MetadataRecord::RemoveTopic(RemoveTopicRecord {
                            topic_id: topic.id,
                            ..Default::default()
                        }));
                    }
                }
            }
            response.responses.push(result);
        }
        ControllerResult::atomic_of(records, response)
    }

    // ---- CreatePartitions ----

    /// CreatePartitions: grow each topic to `Count` partitions, with the given assignments or
    /// placed like new topics (replication factor of the existing partition 0).
    pub fn create_partitions(
        &self,
        image: &MetadataImage,
        request: &CreatePartitionsRequest,
        seed: PlacementSeed,
    ) -> ControllerResult<CreatePartitionsResponse> {
        self.create_partitions_with_quota(image, request, seed, &mut Unbounded)
    }

    /// [`create_partitions`](Self::create_partitions) charging each topic's new partitions
    /// to `quota`.
    pub fn create_partitions_with_quota(
        &self,
        image: &MetadataImage,
        request: &CreatePartitionsRequest,
        seed: PlacementSeed,
        quota: &mut dyn MutationQuota,
    ) -> ControllerResult<CreatePartitionsResponse> {
        let mut records = Vec::new();
        let mut response = CreatePartitionsResponse::default();
        let total: i64 = request
            .topics
            .iter()
            .map(|t| {
                let current = image
                    .topics
                    .get_by_name(&t.name)
                    .map_or(0, |topic| topic.partitions.len());
                (i64::from(t.count) - i64::try_from(current).unwrap_or(i64::MAX)).max(0)
            })
            .fold(0i64, i64::saturating_add);
        if total > MAX_PARTITIONS_PER_BATCH {
            let (code, message) = too_many_partitions();
            for topic in &request.topics {
                response.results.push(CreatePartitionsTopicResult {
                    name: topic.name.clone(),
                    error_code: code.code(),
                    error_message: Some(message.clone()),
                    ..Default::default()
                });
            }
            return ControllerResult::response_only(response);
        }
        let brokers = placement::usable_brokers(image);
        let mut seen = BTreeSet::new();
        let duplicates: BTreeSet<&str> = request
            .topics
            .iter()
            .filter(|t| !seen.insert(t.name.as_str()))
            .map(|t| t.name.as_str())
            .collect();
        for topic in &request.topics {
            let mut result = CreatePartitionsTopicResult {
                name: topic.name.clone(),
                error_message: None,
                ..Default::default()
            };
            let outcome = if duplicates.contains(topic.name.as_str()) {
                Err((ErrorCode::InvalidRequest, "Duplicate topic name.".into()))
            } else {
                self.create_partitions_for(image, topic, &brokers, seed)
                    .and_then(|new_records| {
                        let current = image
                            .topics
                            .get_by_name(&topic.name)
                            .map_or(0, |t| t.partitions.len());
                        let added = usize::try_from(topic.count).unwrap_or(0);
                        charge(quota, added.saturating_sub(current))?;
                        Ok(new_records)
                    })
            };
            match outcome {
                Err((code, message)) => {
                    result.error_code = code.code();
                    result.error_message = Some(message);
                }
                Ok(new_records) => {
                    if !request.validate_only {
                        records.extend(new_records);
                    }
                }
            }
            response.results.push(result);
        }
        ControllerResult::atomic_of(records, response)
    }

    fn create_partitions_for(
        &self,
        image: &MetadataImage,
        request: &CreatePartitionsTopic,
        brokers: &[UsableBroker],
        seed: PlacementSeed,
    ) -> Result<Vec<MetadataRecord>, TopicError> {
        let topic = image.topics.get_by_name(&request.name).ok_or((
            ErrorCode::UnknownTopicOrPartition,
            "This server does not host this topic-partition.".into(),
        ))?;
        let current = i32::try_from(topic.partitions.len()).expect("partition count fits i32");
        if request.count < current {
            return Err((
                ErrorCode::InvalidPartitions,
                format!(
                    "The topic {} currently has {current} partition(s); {} would not be an \
                     increase.",
                    request.name, request.count
                ),
            ));
        }
        if request.count == current {
            return Err((
                ErrorCode::InvalidPartitions,
                format!("Topic already has {current} partition(s)."),
            ));
        }
        let additional = request.count - current;
        let replication_factor = topic
            .partitions
            .values()
            .next()
            .map(|p| p.replicas.len())
            .unwrap_or(1);
        let replicas = match &request.assignments {
            None => placement::place(
                brokers,
                current,
                additional,
                i16::try_from(replication_factor).unwrap_or(i16::MAX),
                seed,
            )
            .map_err(placement_error)?,
            Some(assignments) => {
                if i32::try_from(assignments.len()).ok() != Some(additional) {
                    return Err((
                        ErrorCode::InvalidReplicaAssignment,
                        format!(
                            "Attempted to add {additional} additional partition(s), but only {} \
                             assignment(s) were specified.",
                            assignments.len()
                        ),
                    ));
                }
                let mut replicas = Vec::with_capacity(assignments.len());
                for (i, a) in assignments.iter().enumerate() {
                    let p = current + i32::try_from(i).expect("bounded by additional");
                    validate_manual_assignment(image, p, &a.broker_ids)?;
                    if a.broker_ids.len() != replication_factor {
                        return Err((
                            ErrorCode::InvalidReplicaAssignment,
                            format!(
                                "The manual partition assignment includes a partition with {} \
                                 replica(s), but this is not consistent with previous \
                                 partitions, which have {replication_factor} replica(s).",
                                a.broker_ids.len()
                            ),
                        ));
                    }
                    replicas.push(a.broker_ids.clone());
                }
                replicas
            }
        };
        let mut records = Vec::with_capacity(replicas.len());
        for (i, r) in replicas.iter().enumerate() {
            let p = current + i32::try_from(i).expect("bounded by additional");
            let mut record = new_partition(image, p, r)?;
            record.topic_id = topic.id;
            records.push(MetadataRecord::Partition(record));
        }
        Ok(records)
    }
}

/// A validated topic waiting for its id.
struct NewTopic {
    replicas: Vec<Vec<i32>>,
    replication_factor: i16,
    configs: Vec<(String, String)>,
    /// Partition records without the topic id.
    partitions: Vec<PartitionRecord>,
}

impl NewTopic {
    /// TopicRecord, then the configs, then the partitions, as Kafka writes them.
    fn records(&self, name: &str, id: Uuid) -> Vec<MetadataRecord> {
        let mut records = Vec::with_capacity(1 + self.configs.len() + self.partitions.len());
        records.push(MetadataRecord::Topic(TopicRecord {
            name: name.to_string(),
            topic_id: id,
            ..Default::default()
        }));
        for (key, value) in &self.configs {
            records.push(MetadataRecord::Config(ConfigRecord {
                resource_type: ConfigResourceType::Topic.code(),
                resource_name: name.to_string(),
                name: key.clone(),
                value: Some(value.clone()),
                ..Default::default()
            }));
        }
        for partition in &self.partitions {
            let mut record = partition.clone();
            record.topic_id = id;
            records.push(MetadataRecord::Partition(record));
        }
        records
    }
}

fn set_error(result: &mut CreatableTopicResult, (code, message): TopicError) {
    result.error_code = code.code();
    result.error_message = Some(message);
    result.configs = None;
}

/// Charges `partitions` to the request's mutation quota; a strict quota that is exhausted
/// refuses the topic with Kafka's THROTTLING_QUOTA_EXCEEDED.
fn charge(quota: &mut dyn MutationQuota, partitions: usize) -> Result<(), TopicError> {
    quota
        .record(u32::try_from(partitions).unwrap_or(u32::MAX))
        .map_err(|_| {
            (
                ErrorCode::ThrottlingQuotaExceeded,
                ThrottlingQuotaExceeded::MESSAGE.to_string(),
            )
        })
}

fn too_many_partitions() -> TopicError {
    (
        ErrorCode::PolicyViolation,
        "Excessively large number of partitions per request.".into(),
    )
}

fn placement_error(error: PlacementError) -> TopicError {
    let code = match error {
        PlacementError::NonPositivePartitions => ErrorCode::InvalidPartitions,
        _ => ErrorCode::InvalidReplicationFactor,
    };
    (code, error.to_string())
}

/// Checks one manually assigned replica list as Kafka's `validateManualPartitionAssignment`.
fn validate_manual_assignment(
    image: &MetadataImage,
    partition: i32,
    replicas: &[i32],
) -> Result<(), TopicError> {
    if replicas.is_empty() {
        return Err((
            ErrorCode::InvalidReplicaAssignment,
            format!("The manual partition assignment includes an empty replica list for partition {partition}."),
        ));
    }
    let mut seen = BTreeSet::new();
    for r in replicas {
        if !seen.insert(*r) {
            return Err((
                ErrorCode::InvalidReplicaAssignment,
                format!("The manual partition assignment includes the broker {r} more than once."),
            ));
        }
        let Some(registration) = image.cluster.broker(*r) else {
            return Err((
                ErrorCode::InvalidReplicaAssignment,
                format!("The manual partition assignment includes broker {r}, but no such broker is registered."),
            ));
        };
        if !registration.has_uncordoned_dirs() {
            return Err((
                ErrorCode::InvalidReplicaAssignment,
                format!("The manual partition assignment includes broker {r}, but all its log directories are cordoned."),
            ));
        }
    }
    Ok(())
}

/// A new partition: ISR the active replicas (all of them after automatic placement),
/// leader the first of them, epochs 0. Fails if no replica is active.
fn new_partition(
    image: &MetadataImage,
    partition: i32,
    replicas: &[i32],
) -> Result<PartitionRecord, TopicError> {
    let isr: Vec<i32> = replicas
        .iter()
        .copied()
        .filter(|r| image.cluster.broker(*r).is_some_and(|b| b.is_active()))
        .collect();
    let Some(&leader) = isr.first() else {
        return Err((
            ErrorCode::InvalidReplicaAssignment,
            format!(
                "All brokers specified in the partition assignment for partition {partition} \
                 are fenced or in controlled shutdown."
            ),
        ));
    };
    // Directories exist from metadata.version 3.7-IV2 (JBOD); before, the record carries none
    // and replay reads them as MIGRATING, as Kafka's `KRaftClusterDescriber.defaultDir`.
    let directories = if image.features.level(METADATA_VERSION_FEATURE)
        >= DIRECTORY_ASSIGNMENT_METADATA_VERSION
    {
        replicas.iter().map(|r| default_dir(image, *r)).collect()
    } else {
        Vec::new()
    };
    Ok(PartitionRecord {
        partition_id: partition,
        topic_id: Uuid::ZERO,
        replicas: replicas.to_vec(),
        directories,
        isr,
        leader,
        leader_epoch: 0,
        partition_epoch: 0,
        ..Default::default()
    })
}

/// The directory a new replica on `broker` starts in, as Kafka's
/// `ClusterControlManager.defaultDir`: the broker's only directory, MIGRATING if it reported
/// none, else UNASSIGNED (the broker picks one and reports it).
fn default_dir(image: &MetadataImage, broker: i32) -> Uuid {
    match image
        .cluster
        .broker(broker)
        .map(|b| b.directories.as_slice())
    {
        Some([only]) => *only,
        Some([]) => DIRECTORY_MIGRATING,
        _ => DIRECTORY_UNASSIGNED,
    }
}
