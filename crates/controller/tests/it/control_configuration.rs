//! ConfigurationControlManager: IncrementalAlterConfigs and AlterConfigs on topics, brokers and
//! the cluster default, key/value validation, and the KIP-966 ClearElrRecord on a change of
//! `min.insync.replicas`, with records replayed into the image.

use kraftd_controller::control::config_defs::GroupConfigBounds;
use kraftd_controller::control::configuration::{OP_APPEND, OP_DELETE, OP_SET, OP_SUBTRACT};
use kraftd_controller::control::ConfigurationControlManager;
use kraftd_controller::image::{ConfigResource, ConfigResourceType};
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::{alter_configs_request, incremental_alter_configs_request};
use kraftd_protocol::messages::{AlterConfigsRequest, IncrementalAlterConfigsRequest};
use kraftd_protocol::{ErrorCode, MetadataRecord};

use kraftd_controller::testing::records::{
    change, config, feature, partition, register_broker, topic, uuid,
};

const TOPIC: i8 = 2;
const BROKER: i8 = 4;

/// Two brokers, topic "t" with partition 0 holding an ELR, ELR on if `elr`.
fn image(elr: bool) -> MetadataImage {
    let mut records = vec![feature("metadata.version", 25)];
    if elr {
        records.push(feature("eligible.leader.replicas.version", 1));
    }
    records.extend([
        register_broker(1, 10, false),
        register_broker(2, 11, false),
        topic("t", uuid(1)),
        partition(uuid(1), 0, &[1, 2], &[1, 2], 1),
        topic("u", uuid(2)),
        config(TOPIC, "t", "retention.ms", Some("1000")),
        config(TOPIC, "t", "cleanup.policy", Some("delete")),
    ]);
    let mut elr_change = change(uuid(1), 0);
    elr_change.isr = Some(vec![1]);
    elr_change.eligible_leader_replicas = Some(vec![2]);
    records.push(MetadataRecord::PartitionChange(elr_change));
    MetadataImage::empty().replay_all(&records).unwrap()
}

fn op(
    name: &str,
    operation: i8,
    value: Option<&str>,
) -> incremental_alter_configs_request::AlterableConfig {
    incremental_alter_configs_request::AlterableConfig {
        name: name.into(),
        config_operation: operation,
        value: value.map(str::to_string),
        ..Default::default()
    }
}

fn resource(
    resource_type: i8,
    name: &str,
    configs: Vec<incremental_alter_configs_request::AlterableConfig>,
) -> incremental_alter_configs_request::AlterConfigsResource {
    incremental_alter_configs_request::AlterConfigsResource {
        resource_type,
        resource_name: name.into(),
        configs,
        ..Default::default()
    }
}

fn incremental(
    image: &MetadataImage,
    resources: Vec<incremental_alter_configs_request::AlterConfigsResource>,
) -> (MetadataImage, Vec<i16>, Vec<MetadataRecord>) {
    let request = IncrementalAlterConfigsRequest {
        resources,
        ..Default::default()
    };
    let result = ConfigurationControlManager::new().incremental_alter_configs(image, &request);
    let next = image.replay_all(&result.records).unwrap();
    next.check_invariants().unwrap();
    let codes = result
        .response
        .responses
        .iter()
        .map(|r| r.error_code)
        .collect();
    (next, codes, result.records)
}

#[test]
fn set_delete_append_subtract() {
    let image = image(false);
    let t = ConfigResource::topic("t");
    let (next, codes, records) = incremental(
        &image,
        vec![resource(
            TOPIC,
            "t",
            vec![
                op("retention.ms", OP_SET, Some("2000")),
                op("cleanup.policy", OP_APPEND, Some("compact")),
                op("segment.ms", OP_DELETE, None),
                op(
                    "leader.replication.throttled.replicas",
                    OP_APPEND,
                    Some("0:1,0:2"),
                ),
            ],
        )],
    );
    assert_eq!(codes, vec![0]);
    // Deleting a key that is not set writes nothing.
    assert_eq!(records.len(), 3);
    assert_eq!(next.configs.value(&t, "retention.ms"), Some("2000"));
    assert_eq!(
        next.configs.value(&t, "cleanup.policy"),
        Some("delete,compact")
    );

    let (next, codes, _) = incremental(
        &next,
        vec![resource(
            TOPIC,
            "t",
            vec![
                op("retention.ms", OP_DELETE, None),
                op("cleanup.policy", OP_SUBTRACT, Some("delete")),
                op(
                    "leader.replication.throttled.replicas",
                    OP_SUBTRACT,
                    Some("0:1"),
                ),
            ],
        )],
    );
    assert_eq!(codes, vec![0]);
    assert_eq!(next.configs.value(&t, "retention.ms"), None);
    assert_eq!(next.configs.value(&t, "cleanup.policy"), Some("compact"));
    assert_eq!(
        next.configs
            .value(&t, "leader.replication.throttled.replicas"),
        Some("0:2")
    );

    // Setting the same value again writes nothing.
    let (_, codes, records) = incremental(
        &next,
        vec![resource(
            TOPIC,
            "t",
            vec![op("cleanup.policy", OP_SET, Some("compact"))],
        )],
    );
    assert_eq!(codes, vec![0]);
    assert!(records.is_empty());
}

#[test]
fn brokers_and_cluster_default() {
    let image = image(false);
    let (next, codes, _) = incremental(
        &image,
        vec![
            resource(
                BROKER,
                "",
                vec![op("log.retention.ms", OP_SET, Some("5000"))],
            ),
            resource(BROKER, "1", vec![op("num.io.threads", OP_SET, Some("16"))]),
            resource(BROKER, "7", vec![op("num.io.threads", OP_SET, Some("16"))]),
            resource(BROKER, "x", vec![op("num.io.threads", OP_SET, Some("16"))]),
        ],
    );
    assert_eq!(
        codes,
        vec![
            0,
            0,
            ErrorCode::BrokerIdNotRegistered.code(),
            ErrorCode::InvalidRequest.code()
        ]
    );
    let default = ConfigResource::new(ConfigResourceType::Broker, "");
    let b1 = ConfigResource::new(ConfigResourceType::Broker, "1");
    assert_eq!(
        next.configs.value(&default, "log.retention.ms"),
        Some("5000")
    );
    assert_eq!(next.configs.value(&b1, "num.io.threads"), Some("16"));
}

#[test]
fn invalid_requests_get_kafka_errors() {
    let image = image(false);
    let request = IncrementalAlterConfigsRequest {
        resources: vec![
            resource(TOPIC, "t", vec![op("no.such.key", OP_SET, Some("1"))]),
            resource(
                TOPIC,
                "u",
                vec![op("retention.ms", OP_SET, Some("forever"))],
            ),
            resource(
                TOPIC,
                "missing",
                vec![op("retention.ms", OP_SET, Some("1"))],
            ),
            resource(
                TOPIC,
                "bad name",
                vec![op("retention.ms", OP_SET, Some("1"))],
            ),
            resource(
                BROKER,
                "1",
                vec![op("min.insync.replicas", OP_APPEND, Some("2"))],
            ),
            resource(BROKER, "2", vec![op("num.io.threads", 9, Some("2"))]),
            resource(8, "1", vec![op("kafka", OP_SET, Some("DEBUG"))]),
            resource(
                BROKER,
                "",
                vec![
                    op("num.io.threads", OP_SET, Some("2")),
                    op("num.io.threads", OP_SET, Some("3")),
                ],
            ),
        ],
        ..Default::default()
    };
    let result = ConfigurationControlManager::new().incremental_alter_configs(&image, &request);
    assert!(result.records.is_empty());
    let codes: Vec<i16> = result
        .response
        .responses
        .iter()
        .map(|r| r.error_code)
        .collect();
    assert_eq!(
        codes,
        vec![
            ErrorCode::InvalidConfig.code(),
            ErrorCode::InvalidConfig.code(),
            ErrorCode::UnknownTopicOrPartition.code(),
            ErrorCode::InvalidRequest.code(),
            ErrorCode::InvalidConfig.code(),
            ErrorCode::InvalidRequest.code(),
            ErrorCode::InvalidRequest.code(),
            ErrorCode::InvalidRequest.code(),
        ]
    );
    let message = result.response.responses[1].error_message.clone().unwrap();
    assert!(
        message.contains("retention.ms") && message.contains("forever"),
        "{message}"
    );
}

#[test]
fn validate_only_writes_nothing() {
    let image = image(false);
    let request = IncrementalAlterConfigsRequest {
        resources: vec![resource(
            TOPIC,
            "t",
            vec![op("retention.ms", OP_SET, Some("9"))],
        )],
        validate_only: true,
        ..Default::default()
    };
    let result = ConfigurationControlManager::new().incremental_alter_configs(&image, &request);
    assert_eq!(result.response.responses[0].error_code, 0);
    assert!(result.records.is_empty());
}

#[test]
fn min_isr_change_clears_elr_when_elr_is_on() {
    for elr in [true, false] {
        let image = image(elr);
        let p = |image: &MetadataImage| image.topics.partition(&uuid(1), 0).unwrap().elr.clone();
        if elr {
            assert_eq!(p(&image), vec![2]);
        }
        let (next, codes, records) = incremental(
            &image,
            vec![resource(
                TOPIC,
                "t",
                vec![op("min.insync.replicas", OP_SET, Some("2"))],
            )],
        );
        assert_eq!(codes, vec![0]);
        let clear: Vec<_> = records
            .iter()
            .filter_map(|r| match r {
                MetadataRecord::ClearElr(c) => Some(c.topic_name.clone()),
                _ => None,
            })
            .collect();
        if elr {
            assert_eq!(clear, vec!["t".to_string()]);
            assert!(p(&next).is_empty());
        } else {
            assert!(clear.is_empty());
        }
    }
    // A cluster-wide change clears every topic's ELR (empty topic name).
    let image = image(true);
    let (next, _, records) = incremental(
        &image,
        vec![resource(
            BROKER,
            "",
            vec![op("min.insync.replicas", OP_SET, Some("2"))],
        )],
    );
    assert!(records
        .iter()
        .any(|r| matches!(r, MetadataRecord::ClearElr(c) if c.topic_name.is_empty())));
    assert!(next.topics.partition(&uuid(1), 0).unwrap().elr.is_empty());
}

#[test]
fn legacy_alter_configs_replaces_all_keys() {
    let image = image(false);
    let request = AlterConfigsRequest {
        resources: vec![alter_configs_request::AlterConfigsResource {
            resource_type: TOPIC,
            resource_name: "t".into(),
            configs: vec![alter_configs_request::AlterableConfig {
                name: "segment.ms".into(),
                value: Some("60000".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let result = ConfigurationControlManager::new().legacy_alter_configs(&image, &request);
    assert_eq!(result.response.responses[0].error_code, 0);
    assert_eq!(result.records.len(), 3);
    let next = image.replay_all(&result.records).unwrap();
    let t = ConfigResource::topic("t");
    let keys: Vec<String> = next.configs.get(&t).unwrap().keys().cloned().collect();
    assert_eq!(keys, vec!["segment.ms".to_string()]);
}

/// The error code and message of each resource.
fn outcomes_of<'a>(
    responses: impl Iterator<Item = (i16, &'a Option<String>)>,
) -> Vec<(i16, String)> {
    responses
        .map(|(code, message)| (code, message.clone().unwrap_or_default()))
        .collect()
}

#[test]
fn unsupported_configs_are_refused_unless_kafkas_default() {
    let image = image(false);
    let request = IncrementalAlterConfigsRequest {
        resources: vec![
            resource(
                TOPIC,
                "t",
                vec![op("remote.storage.enable", OP_SET, Some("true"))],
            ),
            resource(
                BROKER,
                "",
                vec![op("metric.reporters", OP_SET, Some("com.example.Reporter"))],
            ),
            resource(
                BROKER,
                "1",
                vec![op("metric.reporters", OP_SET, Some("com.example.A"))],
            ),
            // Read from the properties file only: refused dynamically.
            resource(
                BROKER,
                "2",
                vec![op("num.recovery.threads.per.data.dir", OP_SET, Some("3"))],
            ),
        ],
        ..Default::default()
    };
    let result = ConfigurationControlManager::new().incremental_alter_configs(&image, &request);
    assert!(result.records.is_empty());
    let outcomes = outcomes_of(
        result
            .response
            .responses
            .iter()
            .map(|r| (r.error_code, &r.error_message)),
    );
    for ((code, message), key) in outcomes.iter().zip([
        "remote.storage.enable",
        "metric.reporters",
        "metric.reporters",
        "num.recovery.threads.per.data.dir",
    ]) {
        assert_eq!(*code, ErrorCode::InvalidConfig.code(), "{message}");
        assert!(
            message.contains(&format!("kraftd does not support {key}"))
                || message.contains(&format!("kraftd does not support changing {key}")),
            "{message}"
        );
    }

    // Kafka's default, as Connect and Streams set it explicitly, is accepted and stored;
    // honoured and no-effect keys take any valid value.
    let (next, codes, records) = incremental(
        &image,
        vec![
            resource(
                TOPIC,
                "t",
                vec![
                    op("compression.type", OP_SET, Some("gzip")),
                    op("message.timestamp.after.max.ms", OP_SET, Some("60000")),
                    op("remote.storage.enable", OP_SET, Some("FALSE")),
                    op("preallocate", OP_SET, Some("true")),
                    op("retention.bytes", OP_SET, Some("1000000")),
                ],
            ),
            resource(
                BROKER,
                "",
                vec![
                    op("log.cleaner.threads", OP_SET, Some("1")),
                    op("num.io.threads", OP_SET, Some("4")),
                    op("compression.type", OP_SET, Some("lz4")),
                ],
            ),
        ],
    );
    assert_eq!(codes, vec![0, 0]);
    assert_eq!(records.len(), 8);
    let t = ConfigResource::topic("t");
    assert_eq!(next.configs.value(&t, "compression.type"), Some("gzip"));
    assert_eq!(
        next.configs.value(&t, "remote.storage.enable"),
        Some("FALSE")
    );
}

#[test]
fn legacy_alter_configs_refuses_unsupported_configs_unless_default() {
    let image = image(false);
    let alter = |name: &str, value: &str| {
        let request = AlterConfigsRequest {
            resources: vec![alter_configs_request::AlterConfigsResource {
                resource_type: TOPIC,
                resource_name: "t".into(),
                configs: vec![alter_configs_request::AlterableConfig {
                    name: name.into(),
                    value: Some(value.into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        ConfigurationControlManager::new().legacy_alter_configs(&image, &request)
    };
    let refused = alter("remote.storage.enable", "true");
    let response = &refused.response.responses[0];
    assert_eq!(response.error_code, ErrorCode::InvalidConfig.code());
    let message = response.error_message.clone().unwrap();
    assert!(
        message.contains("kraftd does not support remote.storage.enable"),
        "{message}"
    );
    assert!(refused.records.is_empty());
    let accepted = alter("remote.storage.enable", "false");
    assert_eq!(accepted.response.responses[0].error_code, 0);
    assert!(!accepted.records.is_empty());
}

/// The security configs on broker resources (issue 16): known by name, with Kafka's update
/// modes and messages, listener overrides stored under their own name, and the SASL
/// mechanisms kraftd does not serve refused by every operation.
#[test]
fn security_configs_follow_kafkas_update_modes() {
    let image = image(false);
    let relogin = "sasl.kerberos.min.time.before.relogin";
    let prefixed = "listener.name.external.sasl.kerberos.service.name";
    let (next, codes, records) = incremental(
        &image,
        vec![resource(
            BROKER,
            "1",
            vec![
                op(relogin, OP_SET, Some("120000")),
                op(prefixed, OP_SET, Some("kafka")),
            ],
        )],
    );
    assert_eq!(codes, vec![0]);
    assert_eq!(records.len(), 2);
    let broker = ConfigResource::new(ConfigResourceType::Broker, "1");
    assert_eq!(next.configs.value(&broker, relogin), Some("120000"));
    assert_eq!(next.configs.value(&broker, prefixed), Some("kafka"));

    // One request each: a request names a resource once.
    let cases = [
        (
            "",
            op(relogin, OP_SET, Some("1")),
            "Cannot update these configs at default cluster level, broker id must be specified: \
             [sasl.kerberos.min.time.before.relogin]",
        ),
        (
            "1",
            op("super.users", OP_SET, Some("User:x")),
            "Cannot update these configs dynamically: [super.users]",
        ),
        (
            "2",
            op("ssl.truststore.location", OP_SET, Some("/t.pem")),
            "These security configs can be dynamically updated only per-listener using the \
             listener prefix: [ssl.truststore.location]",
        ),
        (
            "1",
            op("sasl.enabled.mechanisms", OP_APPEND, Some("GSSAPI")),
            "kraftd does not support the SASL mechanism GSSAPI",
        ),
        (
            "2",
            op(
                "sasl.mechanism.inter.broker.protocol",
                OP_SET,
                Some("OAUTHBEARER"),
            ),
            "kraftd does not support the SASL mechanism OAUTHBEARER",
        ),
        (
            "",
            op("client.quota.callback.class", OP_SET, Some("a.B")),
            "Cannot update these configs dynamically: [client.quota.callback.class]",
        ),
    ];
    for (name, alter, words) in cases {
        let request = IncrementalAlterConfigsRequest {
            resources: vec![resource(BROKER, name, vec![alter])],
            ..Default::default()
        };
        let result = ConfigurationControlManager::new().incremental_alter_configs(&next, &request);
        assert!(result.records.is_empty());
        let r = &result.response.responses[0];
        let message = r.error_message.clone().unwrap_or_default();
        assert_eq!(r.error_code, ErrorCode::InvalidConfig.code(), "{message}");
        assert!(message.starts_with(words), "{message}");
    }

    // The legacy AlterConfigs too; and deleting what was set is always allowed.
    let legacy = AlterConfigsRequest {
        resources: vec![alter_configs_request::AlterConfigsResource {
            resource_type: BROKER,
            resource_name: "1".into(),
            configs: vec![alter_configs_request::AlterableConfig {
                name: "sasl.enabled.mechanisms".into(),
                value: Some("GSSAPI".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let result = ConfigurationControlManager::new().legacy_alter_configs(&next, &legacy);
    assert_eq!(
        result.response.responses[0].error_code,
        ErrorCode::InvalidConfig.code()
    );
    assert!(result.records.is_empty());
    let (cleared, codes, _) = incremental(
        &next,
        vec![resource(
            BROKER,
            "1",
            vec![op(relogin, OP_DELETE, None), op(prefixed, OP_DELETE, None)],
        )],
    );
    assert_eq!(codes, vec![0]);
    assert_eq!(cleared.configs.value(&broker, relogin), None);
}

const GROUP: i8 = 32;

/// The codes and messages of an IncrementalAlterConfigs with `manager`.
fn incremental_with(
    manager: &ConfigurationControlManager,
    image: &MetadataImage,
    resources: Vec<incremental_alter_configs_request::AlterConfigsResource>,
) -> (MetadataImage, Vec<(i16, Option<String>)>) {
    let request = IncrementalAlterConfigsRequest {
        resources,
        ..Default::default()
    };
    let result = manager.incremental_alter_configs(image, &request);
    let next = image.replay_all(&result.records).unwrap();
    let outcomes = result
        .response
        .responses
        .iter()
        .map(|r| (r.error_code, r.error_message.clone()))
        .collect();
    (next, outcomes)
}

/// Kafka's controller accepts a GROUP resource of any name, existing or not (only the
/// default "" is refused), writes ConfigRecords of type 32, and a DELETE resets a key.
#[test]
fn group_configs_are_set_and_deleted_on_any_group() {
    let image = image(false);
    let manager = ConfigurationControlManager::new();
    let g = ConfigResource::new(ConfigResourceType::Group, "g");
    let (next, outcomes) = incremental_with(
        &manager,
        &image,
        vec![resource(
            GROUP,
            "g",
            vec![
                op("share.auto.offset.reset", OP_SET, Some("earliest")),
                op("share.record.lock.duration.ms", OP_SET, Some("15000")),
                op("share.delivery.count.limit", OP_SET, Some("3")),
            ],
        )],
    );
    assert_eq!(outcomes, vec![(0, None)]);
    assert_eq!(
        next.configs.value(&g, "share.auto.offset.reset"),
        Some("earliest")
    );
    assert_eq!(
        next.configs.value(&g, "share.record.lock.duration.ms"),
        Some("15000")
    );
    let (after, outcomes) = incremental_with(
        &manager,
        &next,
        vec![resource(
            GROUP,
            "g",
            vec![op("share.auto.offset.reset", OP_DELETE, None)],
        )],
    );
    assert_eq!(outcomes, vec![(0, None)]);
    assert_eq!(after.configs.value(&g, "share.auto.offset.reset"), None);
    assert_eq!(
        after.configs.value(&g, "share.delivery.count.limit"),
        Some("3")
    );
    let (_, outcomes) = incremental_with(
        &manager,
        &image,
        vec![resource(
            GROUP,
            "",
            vec![op("share.delivery.count.limit", OP_SET, Some("3"))],
        )],
    );
    assert_eq!(
        outcomes,
        vec![(
            ErrorCode::InvalidRequest.code(),
            Some("Default group resources are not allowed.".into())
        )]
    );
}

/// Unknown keys, bad values and values outside the controller's own bounds are
/// INVALID_CONFIG with Kafka's messages, and nothing is written.
#[test]
fn group_configs_are_validated_as_kafkas_controller_does() {
    let image = image(false);
    let manager = ConfigurationControlManager::new();
    let refused = |configs: Vec<incremental_alter_configs_request::AlterableConfig>| {
        let (next, outcomes) =
            incremental_with(&manager, &image, vec![resource(GROUP, "g", configs)]);
        assert!(next
            .configs
            .get(&ConfigResource::new(ConfigResourceType::Group, "g"))
            .is_none());
        let (code, message) = outcomes[0].clone();
        assert_eq!(code, ErrorCode::InvalidConfig.code());
        message.unwrap()
    };
    assert_eq!(
        refused(vec![op("no.such.config", OP_SET, Some("1"))]),
        "Unknown group config name: no.such.config"
    );
    assert_eq!(
        refused(vec![op("share.auto.offset.reset", OP_SET, Some("none"))]),
        "Invalid value none for configuration share.auto.offset.reset: Invalid value `none` for \
         configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' \
         or of the format 'by_duration:<PnDTnHnMn.nS>'."
    );
    assert_eq!(
        refused(vec![op(
            "share.record.lock.duration.ms",
            OP_SET,
            Some("999")
        )]),
        "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at \
         least 1000"
    );
    assert_eq!(
        refused(vec![op(
            "share.record.lock.duration.ms",
            OP_SET,
            Some("1000")
        )]),
        "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."
    );
    assert_eq!(
        refused(vec![op(
            "consumer.session.timeout.ms",
            OP_SET,
            Some("60001")
        )]),
        "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."
    );
    // The merged set is checked: a heartbeat not below the group's own session timeout.
    let mut bounds = GroupConfigBounds::default();
    bounds.set("group.share.min.session.timeout.ms", 1000);
    bounds.set("group.share.min.heartbeat.interval.ms", 1000);
    let lenient = ConfigurationControlManager::with_group_bounds(bounds);
    let (next, outcomes) = incremental_with(
        &lenient,
        &image,
        vec![resource(
            GROUP,
            "g",
            vec![op("share.session.timeout.ms", OP_SET, Some("10000"))],
        )],
    );
    assert_eq!(outcomes, vec![(0, None)]);
    let (_, outcomes) = incremental_with(
        &lenient,
        &next,
        vec![resource(
            GROUP,
            "g",
            vec![op("share.heartbeat.interval.ms", OP_SET, Some("10000"))],
        )],
    );
    assert_eq!(
        outcomes,
        vec![(
            ErrorCode::InvalidConfig.code(),
            Some(
                "share.session.timeout.ms must be greater than share.heartbeat.interval.ms".into()
            )
        )]
    );
}

/// The legacy AlterConfigs replaces a group's whole set of overrides.
#[test]
fn legacy_alter_configs_replaces_a_groups_configs() {
    let image = image(false);
    let manager = ConfigurationControlManager::new();
    let (next, _) = incremental_with(
        &manager,
        &image,
        vec![resource(
            GROUP,
            "g",
            vec![op("share.delivery.count.limit", OP_SET, Some("3"))],
        )],
    );
    let request = AlterConfigsRequest {
        resources: vec![alter_configs_request::AlterConfigsResource {
            resource_type: GROUP,
            resource_name: "g".into(),
            configs: vec![alter_configs_request::AlterableConfig {
                name: "share.isolation.level".into(),
                value: Some("read_committed".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let result = manager.legacy_alter_configs(&next, &request);
    assert_eq!(result.response.responses[0].error_code, 0);
    let after = next.replay_all(&result.records).unwrap();
    let g = ConfigResource::new(ConfigResourceType::Group, "g");
    assert_eq!(after.configs.value(&g, "share.delivery.count.limit"), None);
    assert_eq!(
        after.configs.value(&g, "share.isolation.level"),
        Some("read_committed")
    );
}

#[test]
fn cordoned_log_dirs_is_per_broker_and_needs_metadata_version_4_3() {
    let set = |name: &str| {
        vec![resource(
            BROKER,
            name,
            vec![op("cordoned.log.dirs", OP_SET, Some("/data/a"))],
        )]
    };
    // At 4.0-IV3 (25): Kafka's DISABLED_CORDONED_LOG_DIRS_ERROR.
    let old = image(false);
    let request = IncrementalAlterConfigsRequest {
        resources: set("1"),
        ..Default::default()
    };
    let result = ConfigurationControlManager::new().incremental_alter_configs(&old, &request);
    let answer = &result.response.responses[0];
    assert_eq!(answer.error_code, ErrorCode::InvalidConfig.code());
    assert_eq!(
        answer.error_message.as_deref(),
        Some(
            "The cordoned.log.dirs configuration value cannot be set because it requires \
             metadata.version >= 4.3-IV0"
        )
    );
    assert!(result.records.is_empty());
    // At 4.4-IV2: set on one broker, forwarded by it (it checked its log dirs); never as
    // the cluster default (per broker in Kafka).
    let new = old.replay_all(&[feature("metadata.version", 33)]).unwrap();
    let forwarded = |image: &MetadataImage, value: &str| {
        let request = IncrementalAlterConfigsRequest {
            resources: vec![resource(
                BROKER,
                "1",
                vec![op("cordoned.log.dirs", OP_SET, Some(value))],
            )],
            ..Default::default()
        };
        let result = ConfigurationControlManager::new()
            .incremental_alter_configs_from(image, &request, true);
        assert_eq!(result.response.responses[0].error_code, 0);
        image.replay_all(&result.records).unwrap()
    };
    let next = forwarded(&new, "/data/a,/data/b");
    let broker = ConfigResource::new(ConfigResourceType::Broker, "1");
    assert_eq!(
        next.configs.value(&broker, "cordoned.log.dirs"),
        Some("/data/a,/data/b")
    );
    // Sent to a controller directly, a value may only drop entries (the controller cannot
    // check paths): Kafka's INVALID_CORDONED_LOG_DIRS_ERROR otherwise.
    let (after, codes, _) = incremental(&next, set("1"));
    assert_eq!(codes, vec![0]);
    assert_eq!(
        after.configs.value(&broker, "cordoned.log.dirs"),
        Some("/data/a")
    );
    let request = IncrementalAlterConfigsRequest {
        resources: vec![resource(
            BROKER,
            "1",
            vec![op("cordoned.log.dirs", OP_SET, Some("/data/a, /data/c"))],
        )],
        ..Default::default()
    };
    let result = ConfigurationControlManager::new().incremental_alter_configs(&next, &request);
    let answer = &result.response.responses[0];
    assert_eq!(answer.error_code, ErrorCode::InvalidConfig.code());
    assert_eq!(
        answer.error_message.as_deref(),
        Some(
            "When updating cordoned.log.dirs via controllers,  the new value must be a subset \
             of the current configuration value."
        )
    );
    let (_, codes, _) = incremental(
        &next,
        vec![resource(
            BROKER,
            "1",
            vec![op("cordoned.log.dirs", OP_SET, Some(" "))],
        )],
    );
    assert_eq!(codes, vec![0]);
    let request = IncrementalAlterConfigsRequest {
        resources: set(""),
        ..Default::default()
    };
    let result = ConfigurationControlManager::new().incremental_alter_configs(&new, &request);
    let answer = &result.response.responses[0];
    assert_eq!(answer.error_code, ErrorCode::InvalidConfig.code());
    assert_eq!(
        answer.error_message.as_deref(),
        Some(
            "Cannot update these configs at default cluster level, broker id must be \
             specified: [cordoned.log.dirs]"
        )
    );
}
