//! `ConfigurationControlManager`: dynamic configs of topics and brokers (one broker, or the
//! cluster default named "") and groups (any group, existing or not, but not the default
//! named ""), as Kafka's `org.apache.kafka.controller.
//! ConfigurationControlManager`: IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT) and
//! the legacy AlterConfigs (replace every key of the resource).
//!
//! Every key and value is checked against [`config_defs`](crate::control::config_defs), so the
//! log never holds a key brokers do not know, nor a value kraftd would not act on (a key it
//! does not support, set to anything but Kafka's default, is INVALID_CONFIG). A broker
//! config also follows Kafka's update modes (`check_broker_update`: read-only, per broker,
//! per listener), and may be given for one listener (`listener.name.<l>.<config>`). Only keys
//! whose value really changes get a `ConfigRecord`, but for a broker every key set does, as
//! Kafka writes them (KAFKA-14136: the broker re-reads a keystore file set again). A change
//! of `min.insync.replicas` invalidates the ELRs built under the old value (KIP-966), so when
//! ELR is on it also writes a `ClearElrRecord`: for that topic, or, for a broker-level
//! change, for every topic (empty name). `cordoned.log.dirs` (KIP-1066) is refused below
//! metadata.version 4.3-IV0, as Kafka's `isCordonedLogDirsDisabled`, and, unless a broker
//! forwarded the change (having checked the paths against its log dirs), may only lose
//! entries (`isCordonedLogDirsInvalid`).
//!
//! A client-metrics subscription (KIP-714; any name, existing or not) is checked as a whole
//! after the operations apply, as Kafka's validator runs `ClientMetricsConfigs.validate`;
//! deleting its last key removes the subscription.
//!
//! A group's configs are checked as a whole after the operations apply, against this
//! controller's own `group.*` bounds ([`GroupConfigBounds`]), as Kafka's
//! `ControllerConfigurationValidator` runs `GroupConfig.validate` with the controller's
//! `KafkaConfig`.
//!
//! Pure: reads the image, returns records; each resource succeeds or fails on its own.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::messages::{
    alter_configs_response, incremental_alter_configs_response, AlterConfigsRequest,
    AlterConfigsResponse, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use kraftd_protocol::metadata::{ClearElrRecord, ConfigRecord};
use kraftd_protocol::metadata_version::MetadataVersion;
use kraftd_protocol::{ErrorCode, MetadataRecord};

use crate::control::config_defs::{
    broker_config_def, check_broker_update, check_dynamic_support, client_metrics_config_def,
    group_config_def, topic_config_def, validate_client_metrics, ClientMetricsConfigError,
    ConfigDef, ConfigScope, GroupConfigBounds,
};
use crate::control::replication::{ReplicationControlManager, MIN_IN_SYNC_REPLICAS_CONFIG};

/// Kafka's `ServerLogConfigs.CORDONED_LOG_DIRS_CONFIG` (KIP-1066): settable on a broker only
/// from metadata.version 4.3-IV0.
pub const CORDONED_LOG_DIRS_CONFIG: &str = "cordoned.log.dirs";
use crate::control::result::ControllerResult;
use crate::control::topics::validate_topic_name;
use crate::image::{ConfigResource, ConfigResourceType, MetadataImage};

/// Kafka's `AlterConfigOp.OpType` ids.
pub const OP_SET: i8 = 0;
pub const OP_DELETE: i8 = 1;
pub const OP_APPEND: i8 = 2;
pub const OP_SUBTRACT: i8 = 3;

/// Alters dynamic configs. Holds no state (all state is the image), only the node's bounds
/// on group configs.
#[derive(Debug, Clone, Default)]
pub struct ConfigurationControlManager {
    group_bounds: GroupConfigBounds,
}

/// An error for one resource: the code and Kafka's message.
type ResourceError = (ErrorCode, String);

/// One resource's outcome, before it becomes either response type.
struct Outcome {
    resource_type: i8,
    resource_name: String,
    error: Option<ResourceError>,
}

impl ConfigurationControlManager {
    /// With Kafka's default `group.*` bounds.
    pub fn new() -> Self {
        ConfigurationControlManager::default()
    }

    /// With this node's `group.*` bounds, which group configs must lie within.
    pub fn with_group_bounds(group_bounds: GroupConfigBounds) -> Self {
        ConfigurationControlManager { group_bounds }
    }

    /// IncrementalAlterConfigs sent to the controller directly: apply each operation to the
    /// resource's current overrides.
    pub fn incremental_alter_configs(
        &self,
        image: &MetadataImage,
        request: &IncrementalAlterConfigsRequest,
    ) -> ControllerResult<IncrementalAlterConfigsResponse> {
        self.incremental_alter_configs_from(image, request, false)
    }

    /// IncrementalAlterConfigs, `forwarded` by a broker (which checked its own
    /// `cordoned.log.dirs`) or sent here directly.
    pub fn incremental_alter_configs_from(
        &self,
        image: &MetadataImage,
        request: &IncrementalAlterConfigsRequest,
        forwarded: bool,
    ) -> ControllerResult<IncrementalAlterConfigsResponse> {
        let keys: Vec<(i8, &str)> = request
            .resources
            .iter()
            .map(|r| (r.resource_type, r.resource_name.as_str()))
            .collect();
        let duplicates = duplicate_resources(&keys);
        let mut records = Vec::new();
        let mut outcomes = Vec::new();
        for r in &request.resources {
            let result = if duplicates.contains(&(r.resource_type, r.resource_name.as_str())) {
                Err((ErrorCode::InvalidRequest, "Duplicate resource.".into()))
            } else {
                check_resource(image, r.resource_type, &r.resource_name).and_then(
                    |(resource, defs)| {
                        let ops: Vec<(&str, i8, Option<&str>)> = r
                            .configs
                            .iter()
                            .map(|c| (c.name.as_str(), c.config_operation, c.value.as_deref()))
                            .collect();
                        incremental(image, &resource, defs, &ops, &self.group_bounds, forwarded)
                    },
                )
            };
            push_outcome(
                image,
                r.resource_type,
                &r.resource_name,
                result,
                request.validate_only,
                &mut records,
                &mut outcomes,
            );
        }
        let response = IncrementalAlterConfigsResponse {
            responses: outcomes
                .into_iter()
                .map(|o| {
                    let (error_code, error_message) = error_fields(o.error);
                    incremental_alter_configs_response::AlterConfigsResourceResponse {
                        error_code,
                        error_message,
                        resource_type: o.resource_type,
                        resource_name: o.resource_name,
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        };
        ControllerResult::atomic_of(records, response)
    }

    /// AlterConfigs (legacy) sent to the controller directly: the request's keys become the
    /// resource's whole set of overrides; every other key is deleted.
    pub fn legacy_alter_configs(
        &self,
        image: &MetadataImage,
        request: &AlterConfigsRequest,
    ) -> ControllerResult<AlterConfigsResponse> {
        self.legacy_alter_configs_from(image, request, false)
    }

    /// AlterConfigs (legacy), `forwarded` by a broker or sent here directly.
    pub fn legacy_alter_configs_from(
        &self,
        image: &MetadataImage,
        request: &AlterConfigsRequest,
        forwarded: bool,
    ) -> ControllerResult<AlterConfigsResponse> {
        let keys: Vec<(i8, &str)> = request
            .resources
            .iter()
            .map(|r| (r.resource_type, r.resource_name.as_str()))
            .collect();
        let duplicates = duplicate_resources(&keys);
        let mut records = Vec::new();
        let mut outcomes = Vec::new();
        for r in &request.resources {
            let result = if duplicates.contains(&(r.resource_type, r.resource_name.as_str())) {
                Err((ErrorCode::InvalidRequest, "Duplicate resource.".into()))
            } else {
                check_resource(image, r.resource_type, &r.resource_name).and_then(
                    |(resource, defs)| {
                        let current: BTreeMap<String, String> = image
                            .configs
                            .get(&resource)
                            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                            .unwrap_or_default();
                        let mut ops: Vec<(&str, i8, Option<&str>)> = r
                            .configs
                            .iter()
                            .map(|c| (c.name.as_str(), OP_SET, c.value.as_deref()))
                            .collect();
                        for key in current.keys() {
                            if !r.configs.iter().any(|c| c.name == *key) {
                                ops.push((key.as_str(), OP_DELETE, None));
                            }
                        }
                        incremental(image, &resource, defs, &ops, &self.group_bounds, forwarded)
                    },
                )
            };
            push_outcome(
                image,
                r.resource_type,
                &r.resource_name,
                result,
                request.validate_only,
                &mut records,
                &mut outcomes,
            );
        }
        let response = AlterConfigsResponse {
            responses: outcomes
                .into_iter()
                .map(|o| {
                    let (error_code, error_message) = error_fields(o.error);
                    alter_configs_response::AlterConfigsResourceResponse {
                        error_code,
                        error_message,
                        resource_type: o.resource_type,
                        resource_name: o.resource_name,
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        };
        ControllerResult::atomic_of(records, response)
    }
}

type DefLookup = fn(&str) -> Option<&'static ConfigDef>;

/// The resource a request names, if it is one the controller alters and it exists (Kafka's
/// `checkConfigResource` and `ConfigResourceExistenceChecker`).
fn check_resource(
    image: &MetadataImage,
    resource_type: i8,
    name: &str,
) -> Result<(ConfigResource, DefLookup), ResourceError> {
    match ConfigResourceType::from_i8(resource_type) {
        Some(ConfigResourceType::Topic) => {
            validate_topic_name(name)
                .map_err(|_| (ErrorCode::InvalidRequest, "Illegal topic name.".to_string()))?;
            if image.topics.get_by_name(name).is_none() {
                return Err((
                    ErrorCode::UnknownTopicOrPartition,
                    format!("The topic '{name}' does not exist."),
                ));
            }
            Ok((ConfigResource::topic(name), topic_config_def as DefLookup))
        }
        Some(ConfigResourceType::Broker) => {
            if !name.is_empty() {
                let id: i32 = name.parse().map_err(|_| {
                    (
                        ErrorCode::InvalidRequest,
                        format!("Illegal non-integral BROKER resource type name {name}"),
                    )
                })?;
                let known =
                    image.cluster.broker(id).is_some() || image.cluster.controller(id).is_some();
                if !known {
                    return Err((
                        ErrorCode::BrokerIdNotRegistered,
                        format!("No node with id {id} found."),
                    ));
                }
            }
            Ok((
                ConfigResource::new(ConfigResourceType::Broker, name),
                broker_config_def as DefLookup,
            ))
        }
        Some(ConfigResourceType::Group) => {
            if name.is_empty() {
                return Err((
                    ErrorCode::InvalidRequest,
                    "Default group resources are not allowed.".to_string(),
                ));
            }
            Ok((
                ConfigResource::new(ConfigResourceType::Group, name),
                group_config_def as DefLookup,
            ))
        }
        // The name is checked with the configs (`validate_client_metrics`), as Kafka's
        // validator does.
        Some(ConfigResourceType::ClientMetrics) => Ok((
            ConfigResource::new(ConfigResourceType::ClientMetrics, name),
            client_metrics_config_def as DefLookup,
        )),
        _ => Err((
            ErrorCode::InvalidRequest,
            format!("Unsupported resource type {resource_type}."),
        )),
    }
}

/// The config records one resource's operations make (only changed keys), or its error.
fn incremental(
    image: &MetadataImage,
    resource: &ConfigResource,
    defs: DefLookup,
    ops: &[(&str, i8, Option<&str>)],
    group_bounds: &GroupConfigBounds,
    forwarded: bool,
) -> Result<Vec<ConfigRecord>, ResourceError> {
    let mut seen = BTreeSet::new();
    if ops.iter().any(|(k, _, _)| !seen.insert(*k)) {
        return Err((
            ErrorCode::InvalidRequest,
            "Error due to duplicate config keys".into(),
        ));
    }
    let current = |key: &str| image.configs.value(resource, key);
    let mut records = Vec::new();
    for &(key, op, value) in ops {
        if resource.resource_type == ConfigResourceType::Broker
            && key == CORDONED_LOG_DIRS_CONFIG
            && !image.features.version().is_cordoned_log_dirs_supported()
        {
            // Kafka's DISABLED_CORDONED_LOG_DIRS_ERROR: brokers below 4.3-IV0 cannot tell
            // the controllers which directories are cordoned.
            return Err((
                ErrorCode::InvalidConfig,
                format!(
                    "The {CORDONED_LOG_DIRS_CONFIG} configuration value cannot be set because \
                     it requires metadata.version >= {}",
                    MetadataVersion::IBP_4_3_IV0.version()
                ),
            ));
        }
        let new_value: Option<String> = match op {
            OP_DELETE => None,
            OP_SET | OP_APPEND | OP_SUBTRACT => {
                if resource.resource_type == ConfigResourceType::Broker {
                    check_broker_update(key, resource.name.is_empty())
                        .map_err(|e| (ErrorCode::InvalidConfig, e.to_string()))?;
                }
                let def = defs(key).ok_or_else(|| {
                    if resource.resource_type == ConfigResourceType::ClientMetrics {
                        return (
                            ErrorCode::InvalidRequest,
                            format!("Unknown client metrics configuration: {key}"),
                        );
                    }
                    let kind = match resource.resource_type {
                        ConfigResourceType::Topic => "topic",
                        ConfigResourceType::Group => "group",
                        _ => "broker",
                    };
                    (
                        ErrorCode::InvalidConfig,
                        format!("Unknown {kind} config name: {key}"),
                    )
                })?;
                let Some(value) = value else {
                    return Err((
                        ErrorCode::InvalidRequest,
                        format!("Null value not supported for : {key}"),
                    ));
                };
                let op_name = match op {
                    OP_APPEND => "APPEND",
                    OP_SUBTRACT => "SUBTRACT",
                    _ => "SET",
                };
                if op != OP_SET && !def.is_list() {
                    return Err((
                        ErrorCode::InvalidConfig,
                        format!("Can't {op_name} to key {key} because its type is not LIST."),
                    ));
                }
                let new_value = match op {
                    OP_SET => value.to_string(),
                    _ => list_op(current(key).unwrap_or(""), op, value),
                };
                let scope = match resource.resource_type {
                    ConfigResourceType::Topic => Some(ConfigScope::Topic),
                    ConfigResourceType::Group => Some(ConfigScope::Group),
                    // Checked as a whole below; kraftd honours every subscription config.
                    ConfigResourceType::ClientMetrics => None,
                    _ => Some(ConfigScope::Broker),
                };
                if let Some(scope) = scope {
                    def.validate(&new_value)
                        .and_then(|()| check_dynamic_support(scope, def, &new_value))
                        .map_err(|e| (ErrorCode::InvalidConfig, e.about(key).to_string()))?;
                }
                if resource.resource_type == ConfigResourceType::Broker
                    && key == CORDONED_LOG_DIRS_CONFIG
                    && !forwarded
                    && !is_cordoning_subset(current(key), &new_value)
                {
                    return Err((
                        ErrorCode::InvalidConfig,
                        format!(
                            "When updating {CORDONED_LOG_DIRS_CONFIG} via controllers,  the new \
                             value must be a subset of the current configuration value."
                        ),
                    ));
                }
                Some(new_value)
            }
            other => {
                return Err((
                    ErrorCode::InvalidRequest,
                    format!("Unknown operation type {other}"),
                ))
            }
        };
        // KAFKA-14136: a broker config is written even when its value stays, so the broker
        // re-reads the files it names (a keystore rewritten in place).
        if current(key) != new_value.as_deref()
            || resource.resource_type == ConfigResourceType::Broker
        {
            records.push(ConfigRecord {
                resource_type: resource.resource_type.code(),
                resource_name: resource.name.clone(),
                name: key.to_string(),
                value: new_value,
                ..Default::default()
            });
        }
    }
    let whole_checked = matches!(
        resource.resource_type,
        ConfigResourceType::Group | ConfigResourceType::ClientMetrics
    );
    if whole_checked {
        let mut configs: BTreeMap<String, String> = image
            .configs
            .get(resource)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        for r in &records {
            match &r.value {
                Some(v) => configs.insert(r.name.clone(), v.clone()),
                None => configs.remove(&r.name),
            };
        }
        if resource.resource_type == ConfigResourceType::ClientMetrics {
            // Kafka's ControllerConfigurationValidator: `ClientMetricsConfigs.validate`.
            validate_client_metrics(&resource.name, &configs).map_err(|e| match e {
                ClientMetricsConfigError::InvalidRequest(m) => (ErrorCode::InvalidRequest, m),
                ClientMetricsConfigError::InvalidConfig(m) => (ErrorCode::InvalidConfig, m),
            })?;
        } else {
            group_bounds
                .validate(&configs)
                .map_err(|message| (ErrorCode::InvalidConfig, message))?;
        }
    }
    Ok(records)
}

/// Records the outcome and, unless validating only, the records with any `ClearElrRecord` a
/// `min.insync.replicas` change needs.
fn push_outcome(
    image: &MetadataImage,
    resource_type: i8,
    resource_name: &str,
    result: Result<Vec<ConfigRecord>, ResourceError>,
    validate_only: bool,
    records: &mut Vec<MetadataRecord>,
    outcomes: &mut Vec<Outcome>,
) {
    let error = match result {
        Err(error) => Some(error),
        Ok(configs) => {
            if !validate_only {
                // A broker's records repeat unchanged values (KAFKA-14136): only a new
                // value invalidates ELRs.
                let resource = ConfigResource::new(
                    ConfigResourceType::from_i8(resource_type).unwrap_or(ConfigResourceType::Topic),
                    resource_name,
                );
                let min_isr_changed = configs.iter().any(|c| {
                    c.name == MIN_IN_SYNC_REPLICAS_CONFIG
                        && image.configs.value(&resource, &c.name) != c.value.as_deref()
                });
                records.extend(configs.into_iter().map(MetadataRecord::Config));
                if min_isr_changed && ReplicationControlManager::is_elr_enabled(image) {
                    let topic_name = if resource_type == ConfigResourceType::Topic.code() {
                        resource_name.to_string()
                    } else {
                        String::new()
                    };
                    records.push(MetadataRecord::ClearElr(ClearElrRecord {
                        topic_name,
                        ..Default::default()
                    }));
                }
            }
            None
        }
    };
    outcomes.push(Outcome {
        resource_type,
        resource_name: resource_name.to_string(),
        error,
    });
}

/// Kafka's `isCordonedLogDirsInvalid`, negated: a controller knows a broker's log dirs only
/// by id, so a `cordoned.log.dirs` sent to it directly (not forwarded by the broker, which
/// checks the paths) may only drop entries: a blank value, or entries all in `current`.
fn is_cordoning_subset(current: Option<&str>, new_value: &str) -> bool {
    let entries =
        |v: &str| -> Vec<String> { v.trim().split(',').map(|e| e.trim().to_string()).collect() };
    if new_value.trim().is_empty() {
        return true;
    }
    let current = current.map(entries).unwrap_or_default();
    entries(new_value).iter().all(|e| current.contains(e))
}

/// A resource's overrides after IncrementalAlterConfigs' operations (`(key, op, value)`),
/// as the controller will apply them; for a broker that checks a change to its own configs
/// before forwarding it (Kafka's `ConfigAdminManager.preprocess`). Values are not
/// validated here: the controller does that.
pub fn apply_config_ops(
    mut current: BTreeMap<String, String>,
    ops: &[(&str, i8, Option<&str>)],
) -> BTreeMap<String, String> {
    for &(key, op, value) in ops {
        match (op, value) {
            (OP_DELETE, _) => {
                current.remove(key);
            }
            (OP_SET, Some(v)) => {
                current.insert(key.to_string(), v.to_string());
            }
            (OP_APPEND | OP_SUBTRACT, Some(v)) => {
                let next = list_op(current.get(key).map_or("", String::as_str), op, v);
                current.insert(key.to_string(), next);
            }
            _ => {}
        }
    }
    current
}

/// A LIST config's value after APPEND or SUBTRACT of `value`'s items.
fn list_op(current: &str, op: i8, value: &str) -> String {
    let mut list = split_list(current);
    for item in split_list(value) {
        if op == OP_APPEND && !list.contains(&item) {
            list.push(item);
        } else if op == OP_SUBTRACT {
            list.retain(|x| *x != item);
        }
    }
    list.join(",")
}

fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn duplicate_resources<'a>(keys: &[(i8, &'a str)]) -> BTreeSet<(i8, &'a str)> {
    let mut seen = BTreeSet::new();
    keys.iter().filter(|k| !seen.insert(**k)).copied().collect()
}

fn error_fields(error: Option<ResourceError>) -> (i16, Option<String>) {
    match error {
        None => (0, None),
        Some((code, message)) => (code.code(), Some(message)),
    }
}
