//! The DescribeConfigs answer (api key 32, every version our codec has), Kafka's
//! `ConfigHelper`: served by brokers and, as in Kafka, by controllers (for
//! `kafka-configs --bootstrap-controller`), each from its own image and properties. For topics, this
//! node, the cluster-wide broker default, broker loggers and client metrics, as Kafka's
//! `ConfigHelper.describeConfigs`: every value with its source, Kafka's type id, sensitivity,
//! read-only flag, documentation (v3+, when asked) and synonyms (when asked).
//!
//! Where values come from, highest precedence first: the topic's own override
//! (TOPIC_CONFIG), this broker's dynamic config (DYNAMIC_BROKER_CONFIG), the cluster-wide
//! dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG), the node's properties file
//! (STATIC_BROKER_CONFIG), Kafka's default (DEFAULT_CONFIG). The dynamic layers are read from
//! the same `MetadataImage` as the topics (the `DynamicConfigs` handle is built from it), so an
//! answer is consistent at one offset. Definitions, defaults and synonyms live in
//! `crate::control::config_defs`.
//!
//! Kafka's behaviours kept here (apache/kafka `ConfigHelper.scala`,
//! `ServerTopicConfigSynonyms.java`, `DynamicBrokerConfig.brokerConfigSynonyms`):
//! - a topic config takes the first of its broker synonyms that is set in any layer (names
//!   outrank layers: a static `log.retention.ms` beats a dynamic `log.retention.hours`),
//!   converted from minutes or hours, else the synonym chain's default;
//! - synonyms are listed by source (topic, dynamic broker, dynamic default, static,
//!   default), then by synonym priority, and everything before the first entry named like the
//!   primary broker synonym is dropped: so `retention.ms` on an untouched cluster lists no
//!   synonyms (the only candidate is `log.retention.hours`) and reports DEFAULT_CONFIG; the
//!   source is the first synonym's, DEFAULT_CONFIG when there is none;
//! - `configuration_keys` filters (null or empty means all); unknown keys are silently absent;
//! - unknown topic: UNKNOWN_TOPIC_OR_PARTITION; illegal topic name: INVALID_TOPIC_EXCEPTION;
//!   broker resource named neither this broker's id nor empty: INVALID_REQUEST ("Unexpected
//!   broker id ..." / "Broker id must be an integer ..."); the empty broker name describes only
//!   the cluster-wide dynamic defaults, with synonyms of that source only;
//! - a broker config whose type is not known is treated as possibly secret (Kafka's
//!   `KafkaConfig.maybeSensitive`): null value, type UNKNOWN; PASSWORD configs likewise have
//!   null values;
//! - broker configs are read-only unless kraftd accepts them dynamically (`BROKER_CONFIGS`
//!   and the dynamic security configs); a listener override (`listener.name.<l>.<config>`)
//!   takes its type, sensitivity and documentation from its base config, which is also its
//!   synonym;
//!   topic configs are never read-only;
//! - BROKER_LOGGER: this broker's loggers (passed in) with source DYNAMIC_BROKER_LOGGER_CONFIG;
//!   an empty or other broker id is INVALID_REQUEST, as in Kafka;
//! - CLIENT_METRICS: the subscription's three configs (`metrics`, `interval.ms`, `match`),
//!   set ones with source CLIENT_METRICS_CONFIG, the others Kafka's defaults;
//! - GROUP (any group name, existing or not; empty is INVALID_REQUEST "Group name must not be
//!   empty"): every group config (`GROUP_CONFIGS`), as Kafka's `createGroupConfigEntry`: the
//!   group's own value with source GROUP_CONFIG, else its broker synonym's value and source
//!   (`group.share.record.lock.duration.ms` from the properties file is STATIC_BROKER_CONFIG,
//!   unset it is DEFAULT_CONFIG), else the key's default (DEFAULT_CONFIG); an internal group
//!   config is listed only when the group or its broker synonym sets it
//!   (`AbstractKafkaConfig.extractGroupConfigMap`); `streams.assignor.name` defaults to the
//!   first of the broker's `group.streams.assignors`. Unknown resource type ids get
//!   INVALID_REQUEST ("Unsupported resource type") per resource.
//!
//! Ordering: resources in request order; configs in name order (Kafka's order is a hash map's).

use std::collections::{BTreeMap, BTreeSet};

use crate::auth::{default_message, RequestAuth};
use crate::control::config_defs::STREAMS_ASSIGNORS_DEFAULT;
use crate::control::config_defs::{
    all_broker_config_defs, any_broker_config_def, broker_config_def, broker_config_synonyms,
    described_broker_config_def, group_config_synonym, response_type, topic_config_synonyms,
    ConfigDef, CLIENT_METRICS_CONFIGS, GROUP_CONFIGS, TOPIC_CONFIGS,
};
use crate::control::topics::validate_topic_name;
use crate::image::{ConfigResource, ConfigResourceType};
use crate::publisher::OPERATION_DESCRIBE_CONFIGS;
use crate::MetadataImage;
use imbl::OrdMap;
use kraftd_protocol::messages::describe_configs_request::{
    DescribeConfigsRequest, DescribeConfigsResource,
};
use kraftd_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResponse, DescribeConfigsResult,
    DescribeConfigsSynonym,
};
use kraftd_protocol::ErrorCode;

/// Kafka's `DescribeConfigsResponse.ConfigSource` ids.
pub mod source {
    pub const UNKNOWN: i8 = 0;
    pub const TOPIC_CONFIG: i8 = 1;
    pub const DYNAMIC_BROKER_CONFIG: i8 = 2;
    pub const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
    pub const STATIC_BROKER_CONFIG: i8 = 4;
    pub const DEFAULT_CONFIG: i8 = 5;
    pub const DYNAMIC_BROKER_LOGGER_CONFIG: i8 = 6;
    pub const CLIENT_METRICS_CONFIG: i8 = 7;
    pub const GROUP_CONFIG: i8 = 8;
}

/// What DescribeConfigs needs to know about the broker answering it, beyond the image.
#[derive(Debug, Clone, Copy)]
pub struct ConfigContext<'a> {
    /// This broker's `node.id`.
    pub broker_id: i32,
    /// The node's properties file (`server.properties`), key to value as written.
    pub static_configs: &'a BTreeMap<String, String>,
    /// This broker's loggers and their levels, for BROKER_LOGGER resources.
    pub loggers: &'a BTreeMap<String, String>,
}

/// Answers a DescribeConfigs request at `version` from `image`.
pub fn describe_configs_response(
    image: &MetadataImage,
    request: &DescribeConfigsRequest,
    version: i16,
    ctx: &ConfigContext<'_>,
) -> DescribeConfigsResponse {
    let options = Options {
        include_synonyms: version >= 1 && request.include_synonyms,
        include_documentation: version >= 3 && request.include_documentation,
    };
    let layers = Layers::of(image, ctx.broker_id, ctx.static_configs);
    let results = request
        .resources
        .iter()
        .map(|resource| {
            let result = match describe_resource(image, resource, &layers, &options, ctx) {
                Ok(configs) => DescribeConfigsResult {
                    error_code: 0,
                    configs: configs
                        .into_iter()
                        .filter(|c| wanted(resource, &c.name))
                        .map(|c| fit_config(c, version))
                        .collect(),
                    ..Default::default()
                },
                Err((code, message)) => DescribeConfigsResult {
                    error_code: code as i16,
                    error_message: message
                        .or_else(|| DescribeConfigsResult::default().error_message),
                    ..Default::default()
                },
            };
            DescribeConfigsResult {
                resource_type: resource.resource_type,
                resource_name: resource.resource_name.clone(),
                ..result
            }
        })
        .collect();
    DescribeConfigsResponse {
        throttle_time_ms: 0,
        results,
        unknown_tagged_fields: Vec::new(),
    }
}

struct Options {
    include_synonyms: bool,
    include_documentation: bool,
}

type ResourceError = (ErrorCode, Option<String>);

fn invalid_request(message: String) -> ResourceError {
    (ErrorCode::InvalidRequest, Some(message))
}

fn describe_resource(
    image: &MetadataImage,
    resource: &DescribeConfigsResource,
    layers: &Layers<'_>,
    options: &Options,
    ctx: &ConfigContext<'_>,
) -> Result<Vec<DescribeConfigsResourceResult>, ResourceError> {
    let name = resource.resource_name.as_str();
    match ConfigResourceType::from_i8(resource.resource_type) {
        Some(ConfigResourceType::Topic) => {
            validate_topic_name(name)
                .map_err(|message| (ErrorCode::InvalidTopicException, Some(message)))?;
            if image.topics.get_by_name(name).is_none() {
                return Err((ErrorCode::UnknownTopicOrPartition, None));
            }
            let overrides = image.configs.get(&ConfigResource::topic(name));
            // An internal config (internal.segment.bytes) is described only where it is
            // set, as Kafka's ConfigHelper lists a topic's originals and non-internal values.
            Ok(TOPIC_CONFIGS
                .iter()
                .filter(|def| !def.internal || overrides.is_some_and(|m| m.contains_key(def.name)))
                .map(|def| topic_entry(def, overrides, layers, options))
                .collect())
        }
        Some(ConfigResourceType::Broker) if name.is_empty() => Ok(layers
            .dynamic_default
            .into_iter()
            .flat_map(|m| m.keys())
            .map(|key| broker_entry(key, layers, false, options))
            .collect()),
        Some(ConfigResourceType::Broker) => {
            check_broker_id(name, ctx.broker_id, " or empty string")?;
            let keys: BTreeSet<&str> = all_broker_config_defs()
                .map(|d| d.name)
                .chain(ctx.static_configs.keys().map(String::as_str))
                .chain(
                    layers
                        .dynamic_broker
                        .into_iter()
                        .flat_map(|m| m.keys())
                        .map(String::as_str),
                )
                .chain(
                    layers
                        .dynamic_default
                        .into_iter()
                        .flat_map(|m| m.keys())
                        .map(String::as_str),
                )
                .collect();
            Ok(keys
                .into_iter()
                .map(|key| broker_entry(key, layers, true, options))
                .collect())
        }
        Some(ConfigResourceType::BrokerLogger) => {
            if name.is_empty() {
                return Err(invalid_request("Broker id must not be empty".into()));
            }
            check_broker_id(name, ctx.broker_id, "")?;
            Ok(ctx
                .loggers
                .iter()
                .map(|(logger, level)| {
                    plain_entry(logger, level, source::DYNAMIC_BROKER_LOGGER_CONFIG)
                })
                .collect())
        }
        Some(ConfigResourceType::ClientMetrics) => {
            if name.is_empty() {
                return Err(invalid_request(
                    "Client metrics subscription name must not be empty".into(),
                ));
            }
            let resource = ConfigResource::new(ConfigResourceType::ClientMetrics, name);
            let overrides = image.configs.get(&resource);
            Ok(CLIENT_METRICS_CONFIGS
                .iter()
                .map(|def| client_metrics_entry(def, overrides, options))
                .collect())
        }
        Some(ConfigResourceType::Group) => {
            if name.is_empty() {
                return Err(invalid_request("Group name must not be empty".into()));
            }
            let overrides = image
                .configs
                .get(&ConfigResource::new(ConfigResourceType::Group, name));
            Ok(GROUP_CONFIGS
                .iter()
                .filter(|def| {
                    !def.internal
                        || overrides.is_some_and(|m| m.contains_key(def.name))
                        || group_config_synonym(def.name)
                            .is_some_and(|b| layers.set_value(b).is_some())
                })
                .map(|def| group_entry(def, overrides, layers, options))
                .collect())
        }
        None => Err(invalid_request(format!(
            "Unsupported resource type: {}",
            resource.resource_type
        ))),
    }
}

/// A broker resource name must be this broker's id (Kafka's `resourceNameToBrokerId`).
fn check_broker_id(name: &str, broker_id: i32, or_empty: &str) -> Result<(), ResourceError> {
    let id: i32 = name
        .parse()
        .map_err(|_| invalid_request(format!("Broker id must be an integer, but it is: {name}")))?;
    if id != broker_id {
        return Err(invalid_request(format!(
            "Unexpected broker id, expected {broker_id}{or_empty}, but received {name}"
        )));
    }
    Ok(())
}

/// Whether the resource's `configuration_keys` asks for `key` (null or empty: every key).
fn wanted(resource: &DescribeConfigsResource, key: &str) -> bool {
    match &resource.configuration_keys {
        None => true,
        Some(keys) => keys.is_empty() || keys.iter().any(|k| k == key),
    }
}

/// Leaves the fields `version` lacks at their defaults (type and documentation are v3+).
fn fit_config(
    mut config: DescribeConfigsResourceResult,
    version: i16,
) -> DescribeConfigsResourceResult {
    if version < 3 {
        let default = DescribeConfigsResourceResult::default();
        config.config_type = default.config_type;
        config.documentation = default.documentation;
    }
    config
}

/// An entry with no synonyms, type or documentation (loggers, client metrics).
fn plain_entry(name: &str, value: &str, source: i8) -> DescribeConfigsResourceResult {
    DescribeConfigsResourceResult {
        name: name.to_string(),
        value: Some(value.to_string()),
        read_only: false,
        config_source: source,
        is_sensitive: false,
        synonyms: Vec::new(),
        config_type: response_type::UNKNOWN,
        documentation: None,
        unknown_tagged_fields: Vec::new(),
    }
}

/// The broker-level layers of config values.
struct Layers<'a> {
    dynamic_broker: Option<&'a OrdMap<String, String>>,
    dynamic_default: Option<&'a OrdMap<String, String>>,
    static_configs: &'a BTreeMap<String, String>,
}

impl<'a> Layers<'a> {
    /// Node `broker_id`'s layers in `image`, over its properties file.
    fn of(
        image: &'a MetadataImage,
        broker_id: i32,
        static_configs: &'a BTreeMap<String, String>,
    ) -> Self {
        Layers {
            dynamic_broker: image.configs.get(&ConfigResource::new(
                ConfigResourceType::Broker,
                broker_id.to_string(),
            )),
            dynamic_default: image
                .configs
                .get(&ConfigResource::new(ConfigResourceType::Broker, "")),
            static_configs,
        }
    }

    /// The value of a broker config as this broker runs with it: dynamic broker over dynamic
    /// default over static; `None` when no layer sets it.
    fn set_value(&self, name: &str) -> Option<&str> {
        self.dynamic_broker
            .and_then(|m| m.get(name))
            .or_else(|| self.dynamic_default.and_then(|m| m.get(name)))
            .or_else(|| self.static_configs.get(name))
            .map(String::as_str)
    }

    /// The value, else Kafka's default.
    fn value(&self, name: &str) -> Option<&str> {
        self.set_value(name)
            .or_else(|| any_broker_config_def(name).and_then(|d| d.default))
    }

    /// Kafka's `ConfigHelper.configSynonyms(primary, names)`: every layer's value of every
    /// name, by layer then by name, from the first entry named `primary` on.
    fn synonyms(
        &self,
        primary: &str,
        names: &[&str],
        sensitive: bool,
    ) -> Vec<DescribeConfigsSynonym> {
        let mut all = Vec::new();
        let mut add = |map: &dyn Fn(&str) -> Option<String>, source: i8| {
            for name in names {
                if let Some(value) = map(name) {
                    all.push(DescribeConfigsSynonym {
                        name: (*name).to_string(),
                        value: if sensitive { None } else { Some(value) },
                        source,
                        unknown_tagged_fields: Vec::new(),
                    });
                }
            }
        };
        add(
            &|n| self.dynamic_broker.and_then(|m| m.get(n)).cloned(),
            source::DYNAMIC_BROKER_CONFIG,
        );
        add(
            &|n| self.dynamic_default.and_then(|m| m.get(n)).cloned(),
            source::DYNAMIC_DEFAULT_BROKER_CONFIG,
        );
        add(
            &|n| self.static_configs.get(n).cloned(),
            source::STATIC_BROKER_CONFIG,
        );
        add(
            &|n| {
                any_broker_config_def(n)
                    .and_then(|d| d.default)
                    .map(str::to_string)
            },
            source::DEFAULT_CONFIG,
        );
        let first = all
            .iter()
            .position(|s| s.name == primary)
            .unwrap_or(all.len());
        all.split_off(first)
    }
}

/// The value a topic runs with: its own override, else the first broker synonym set in any
/// layer (converted to milliseconds where the synonym counts hours or minutes), else the
/// default.
fn topic_value(def: &ConfigDef, own: Option<&String>, layers: &Layers<'_>) -> String {
    match own {
        Some(v) => def.canonical_value(v),
        None => topic_config_synonyms(def.name)
            .iter()
            .find_map(|s| layers.value(s.name).map(|v| (s, v)))
            .map(|(s, v)| {
                if s.to_millis == 1 {
                    def.canonical_value(v)
                } else {
                    v.trim().parse::<i64>().map_or_else(
                        |_| v.trim().to_string(),
                        |n| n.saturating_mul(s.to_millis).max(-1).to_string(),
                    )
                }
            })
            .or_else(|| def.default.map(str::to_string))
            .unwrap_or_default(),
    }
}

/// Every topic config of `topic` as this broker runs it (the values DescribeConfigs
/// reports), for the ReplicaManager to configure the topic's logs with. One resolution
/// rule, here, so what is described is what runs.
pub fn effective_topic_configs(
    image: &MetadataImage,
    broker_id: i32,
    static_configs: &BTreeMap<String, String>,
    topic: &str,
) -> BTreeMap<&'static str, String> {
    let layers = Layers::of(image, broker_id, static_configs);
    let overrides = image.configs.get(&ConfigResource::topic(topic));
    TOPIC_CONFIGS
        .iter()
        .filter_map(|def| {
            let own = overrides.and_then(|m| m.get(def.name));
            // An internal config without a value of its own is not set at all.
            if def.internal && own.is_none() {
                return None;
            }
            Some((def.name, topic_value(def, own, &layers)))
        })
        .collect()
}

/// One topic config of one topic (`ConfigHelper.createTopicConfigEntry`).
fn topic_entry(
    def: &ConfigDef,
    overrides: Option<&OrdMap<String, String>>,
    layers: &Layers<'_>,
    options: &Options,
) -> DescribeConfigsResourceResult {
    let sensitive = def.sensitive;
    let own = overrides.and_then(|m| m.get(def.name));
    let chain = topic_config_synonyms(def.name);
    let value = topic_value(def, own, layers);
    let mut synonyms = match chain.first() {
        Some(primary) => {
            let names = broker_config_synonyms(primary.name);
            layers.synonyms(primary.name, &names, sensitive)
        }
        None => Vec::new(),
    };
    if own.is_some() {
        synonyms.insert(
            0,
            DescribeConfigsSynonym {
                name: def.name.to_string(),
                value: (!sensitive).then(|| value.clone()),
                source: source::TOPIC_CONFIG,
                unknown_tagged_fields: Vec::new(),
            },
        );
    }
    let config_source = synonyms
        .first()
        .map_or(source::DEFAULT_CONFIG, |s| s.source);
    DescribeConfigsResourceResult {
        name: def.name.to_string(),
        value: (!sensitive).then_some(value),
        read_only: false,
        config_source,
        is_sensitive: sensitive,
        synonyms: if options.include_synonyms {
            synonyms
        } else {
            Vec::new()
        },
        config_type: def.response_type(),
        documentation: options.include_documentation.then(|| def.doc.to_string()),
        unknown_tagged_fields: Vec::new(),
    }
}

/// One broker config (`ConfigHelper.createBrokerConfigEntry`); `per_broker` is false for the
/// cluster-wide default resource, whose synonyms are only the dynamic defaults.
fn broker_entry(
    name: &str,
    layers: &Layers<'_>,
    per_broker: bool,
    options: &Options,
) -> DescribeConfigsResourceResult {
    // A listener override (`listener.name.<l>.<config>`) is typed by its base config.
    let def = described_broker_config_def(name);
    // Kafka's maybeSensitive: a config of unknown type may hold a secret.
    let sensitive = def.is_none_or(|d| d.sensitive);
    let raw = if per_broker {
        layers.value(name)
    } else {
        layers
            .dynamic_default
            .and_then(|m| m.get(name))
            .map(String::as_str)
    };
    let value = match (def, raw) {
        _ if sensitive => None,
        (Some(def), Some(v)) => Some(def.canonical_value(v)),
        (_, v) => v.map(str::to_string),
    };
    let names = broker_config_synonyms(name);
    let all: Vec<DescribeConfigsSynonym> = layers
        .synonyms(name, &names, sensitive)
        .into_iter()
        .filter(|s| per_broker || s.source == source::DYNAMIC_DEFAULT_BROKER_CONFIG)
        .collect();
    let config_source = all.first().map_or(source::DEFAULT_CONFIG, |s| s.source);
    DescribeConfigsResourceResult {
        name: name.to_string(),
        value,
        read_only: broker_config_def(name).is_none(),
        config_source,
        is_sensitive: sensitive,
        synonyms: if options.include_synonyms {
            all
        } else {
            Vec::new()
        },
        config_type: def.map_or(response_type::UNKNOWN, ConfigDef::response_type),
        documentation: if options.include_documentation {
            def.map(|d| d.doc.to_string())
        } else {
            None
        },
        unknown_tagged_fields: Vec::new(),
    }
}

/// Every non-internal group config of `group` as this broker describes it (the group's own
/// value, else its broker synonym's, else the default), by Kafka's name: what the broker's
/// share partitions read a group's `share.record.lock.duration.ms`,
/// `share.delivery.count.limit`, `share.isolation.level`, `share.auto.offset.reset` and
/// `share.partition.max.record.locks` from, so that what is described is what runs. (Kafka's
/// `GroupConfigManager` also clamps the bounded ones into the broker's `group.share.*`
/// bounds; the reader does that with its own bounds.)
pub fn effective_group_configs(
    image: &MetadataImage,
    broker_id: i32,
    static_configs: &BTreeMap<String, String>,
    group: &str,
) -> BTreeMap<&'static str, String> {
    let layers = Layers::of(image, broker_id, static_configs);
    let overrides = image
        .configs
        .get(&ConfigResource::new(ConfigResourceType::Group, group));
    let options = Options {
        include_synonyms: false,
        include_documentation: false,
    };
    GROUP_CONFIGS
        .iter()
        .filter(|def| !def.internal)
        .filter_map(|def| {
            let entry = group_entry(def, overrides, &layers, &options);
            Some((def.name, entry.value?))
        })
        .collect()
}

/// One group config of one group (`ConfigHelper.createGroupConfigEntry`): its own value,
/// else its broker synonym's (the first of `group.streams.assignors` for
/// `streams.assignor.name`), else its default.
/// A client-metrics subscription's config as Kafka's `createClientMetricsConfigEntry`: the
/// value set (source CLIENT_METRICS_CONFIG, its one synonym) or Kafka's default
/// (DEFAULT_CONFIG, no synonym).
fn client_metrics_entry(
    def: &ConfigDef,
    overrides: Option<&OrdMap<String, String>>,
    options: &Options,
) -> DescribeConfigsResourceResult {
    let own = overrides.and_then(|m| m.get(def.name));
    let value = own
        .map(|v| def.canonical_value(v))
        .or_else(|| def.default.map(str::to_string));
    let synonyms: Vec<DescribeConfigsSynonym> = own
        .map(|_| DescribeConfigsSynonym {
            name: def.name.to_string(),
            value: value.clone(),
            source: source::CLIENT_METRICS_CONFIG,
            unknown_tagged_fields: Vec::new(),
        })
        .into_iter()
        .collect();
    DescribeConfigsResourceResult {
        name: def.name.to_string(),
        value,
        read_only: false,
        config_source: synonyms
            .first()
            .map_or(source::DEFAULT_CONFIG, |s| s.source),
        is_sensitive: false,
        synonyms: if options.include_synonyms {
            synonyms
        } else {
            Vec::new()
        },
        config_type: def.response_type(),
        documentation: options.include_documentation.then(|| def.doc.to_string()),
        unknown_tagged_fields: Vec::new(),
    }
}

fn group_entry(
    def: &ConfigDef,
    overrides: Option<&OrdMap<String, String>>,
    layers: &Layers<'_>,
    options: &Options,
) -> DescribeConfigsResourceResult {
    let own = overrides.and_then(|m| m.get(def.name));
    let broker = group_config_synonym(def.name);
    // The broker synonym's default, where kraftd does not define that broker setting:
    // the group config's own (`group.streams.assignors` is Kafka's `sticky`).
    let broker_default = if def.name == "streams.assignor.name" {
        Some(STREAMS_ASSIGNORS_DEFAULT)
    } else {
        def.default
    };
    let broker_value = |b: &str| {
        layers.value(b).map(|v| {
            if def.name == "streams.assignor.name" {
                v.split(',').map(str::trim).next().unwrap_or("").to_string()
            } else {
                def.canonical_value(v)
            }
        })
    };
    let value = match own {
        Some(v) => Some(def.canonical_value(v)),
        None => broker
            .and_then(broker_value)
            .or_else(|| broker_default.map(str::to_string)),
    };
    let mut synonyms = match broker {
        Some(b) => {
            let found = layers.synonyms(b, &[b], false);
            if found.is_empty() {
                // A broker setting kraftd does not define: its default is the key's.
                broker_default
                    .map(|d| DescribeConfigsSynonym {
                        name: b.to_string(),
                        value: Some(d.to_string()),
                        source: source::DEFAULT_CONFIG,
                        unknown_tagged_fields: Vec::new(),
                    })
                    .into_iter()
                    .collect()
            } else {
                found
            }
        }
        None => def
            .default
            .map(|d| DescribeConfigsSynonym {
                name: def.name.to_string(),
                value: Some(d.to_string()),
                source: source::DEFAULT_CONFIG,
                unknown_tagged_fields: Vec::new(),
            })
            .into_iter()
            .collect(),
    };
    if own.is_some() {
        synonyms.insert(
            0,
            DescribeConfigsSynonym {
                name: def.name.to_string(),
                value: value.clone(),
                source: source::GROUP_CONFIG,
                unknown_tagged_fields: Vec::new(),
            },
        );
    }
    let config_source = synonyms
        .first()
        .map_or(source::DEFAULT_CONFIG, |s| s.source);
    DescribeConfigsResourceResult {
        name: def.name.to_string(),
        value,
        read_only: false,
        config_source,
        is_sensitive: false,
        synonyms: if options.include_synonyms {
            synonyms
        } else {
            Vec::new()
        },
        config_type: def.response_type(),
        documentation: options.include_documentation.then(|| def.doc.to_string()),
        unknown_tagged_fields: Vec::new(),
    }
}

/// Whether `auth` may not DESCRIBE_CONFIGS `resource`: the error Kafka answers for it.
pub fn describe_configs_refusal(
    auth: &RequestAuth,
    resource: &DescribeConfigsResource,
) -> Option<ErrorCode> {
    auth.config_resource_refusal(
        OPERATION_DESCRIBE_CONFIGS,
        resource.resource_type,
        &resource.resource_name,
    )
}

/// The result Kafka gives a resource DescribeConfigs may not describe: the error with its
/// default message, no configs.
pub fn describe_configs_refused(
    resource: &DescribeConfigsResource,
    code: ErrorCode,
) -> DescribeConfigsResult {
    DescribeConfigsResult {
        error_code: code.code(),
        error_message: Some(default_message(code)),
        resource_type: resource.resource_type,
        resource_name: resource.resource_name.clone(),
        configs: Vec::new(),
        ..Default::default()
    }
}

/// Answers `request` as `auth` may see it (Kafka's `ConfigHelper.handleDescribeConfigsRequest`):
/// the refused resources after the others, as Kafka orders them.
pub fn handle_describe_configs(
    auth: &RequestAuth,
    image: &MetadataImage,
    mut request: DescribeConfigsRequest,
    version: i16,
    ctx: &ConfigContext<'_>,
) -> DescribeConfigsResponse {
    let mut refused = Vec::new();
    request
        .resources
        .retain(|resource| match describe_configs_refusal(auth, resource) {
            Some(code) => {
                refused.push(describe_configs_refused(resource, code));
                false
            }
            None => true,
        });
    let mut response = describe_configs_response(image, &request, version, ctx);
    response.results.extend(refused);
    response
}
