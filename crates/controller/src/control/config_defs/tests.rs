//! The config definitions' unit tests: types, defaults, synonyms, validation and the static-support checks.

use super::*;

#[test]
fn every_default_is_a_valid_value_of_its_config() {
    for def in TOPIC_CONFIGS
        .iter()
        .chain(BROKER_CONFIGS)
        .chain(STATIC_BROKER_CONFIGS)
        .chain(SECURITY_CONFIGS)
        .chain(GROUP_CONFIGS)
    {
        if let Some(default) = def.default {
            // Kafka's own defaults sit outside a few validators (`compression.*.level`
            // ranges are checked per codec); ours must all parse.
            def.validate(default)
                .unwrap_or_else(|e| panic!("default of {}: {e}", def.name));
        }
    }
    assert!(TOPIC_CONFIGS
        .iter()
        .all(|d| d.default.is_some() != d.internal));
    assert!(TOPIC_CONFIGS.windows(2).all(|w| w[0].name < w[1].name));
    assert!(GROUP_CONFIGS.windows(2).all(|w| w[0].name < w[1].name));
    assert!(SECURITY_CONFIGS.windows(2).all(|w| w[0].name < w[1].name));
    // Every security config says how Kafka lets it change, and is in one table only.
    for def in SECURITY_CONFIGS {
        assert!(def.update.is_some(), "{}", def.name);
        assert_eq!(
            all_broker_config_defs()
                .filter(|d| d.name == def.name)
                .count(),
            1,
            "{}",
            def.name
        );
    }
}

#[test]
fn every_synonym_is_a_known_broker_config_with_the_same_default() {
    for (topic_key, synonyms) in TOPIC_CONFIG_SYNONYMS {
        let topic = topic_config_def(topic_key).expect("a topic config");
        assert!(!synonyms.is_empty());
        for synonym in *synonyms {
            assert!(
                any_broker_config_def(synonym.name).is_some(),
                "{} is not a known broker config",
                synonym.name
            );
        }
        // The chain's default (first non-null, converted) is the topic default.
        let (synonym, value) = synonyms
            .iter()
            .find_map(|s| any_broker_config_def(s.name)?.default.map(|d| (s, d)))
            .expect("a default in the chain");
        let converted = if synonym.to_millis == 1 {
            value.to_string()
        } else {
            (value.parse::<i64>().unwrap() * synonym.to_millis).to_string()
        };
        assert_eq!(Some(converted.as_str()), topic.default, "{topic_key}");
    }
}

#[test]
fn broker_synonym_groups_and_canonical_values() {
    assert_eq!(
        broker_config_synonyms("log.retention.hours"),
        vec![
            "log.retention.ms",
            "log.retention.minutes",
            "log.retention.hours"
        ]
    );
    assert_eq!(
        broker_config_synonyms("num.io.threads"),
        vec!["num.io.threads"]
    );
    let policy = topic_config_def("cleanup.policy").unwrap();
    assert_eq!(
        policy.canonical_value(" compact , delete "),
        "compact,delete"
    );
    let ratio = topic_config_def("min.cleanable.dirty.ratio").unwrap();
    assert_eq!(ratio.canonical_value("1"), "1.0");
    let pre = topic_config_def("preallocate").unwrap();
    assert_eq!(pre.canonical_value("TRUE"), "true");
    assert_eq!(pre.response_type(), response_type::BOOLEAN);
    let secret = any_broker_config_def("ssl.key.password").unwrap();
    assert_eq!(secret.response_type(), response_type::PASSWORD);
    let class = any_broker_config_def("principal.builder.class").unwrap();
    assert_eq!(class.response_type(), response_type::CLASS);
    let short = any_broker_config_def("sasl.login.refresh.buffer.seconds").unwrap();
    assert_eq!(short.response_type(), response_type::SHORT);
    assert_eq!(short.canonical_value(" 0300"), "300");
    // The dynamic table is unchanged by the static one.
    assert!(broker_config_def("log.retention.hours").is_none());
    assert!(validate_broker_config("log.retention.hours", "1").is_err());
}

#[test]
fn every_config_has_one_support_row_and_every_row_a_config() {
    for scope in [
        ConfigScope::Topic,
        ConfigScope::Broker,
        ConfigScope::StaticBroker,
        ConfigScope::Group,
    ] {
        for def in scope.defs() {
            let rows = support_rows()
                .filter(|r| r.scope == scope && r.name == def.name)
                .count();
            assert_eq!(rows, 1, "{scope:?} {}: add it to CONFIG_SUPPORT", def.name);
        }
    }
    for row in support_rows() {
        assert!(
            row.scope.def(row.name).is_some(),
            "{:?} {} has no ConfigDef",
            row.scope,
            row.name
        );
        assert!(!row.note.is_empty(), "{}: say where or why", row.name);
    }
    // Only broker configs are read from the properties file and dynamically apart.
    assert!(support_rows()
        .filter(|r| r.support == Support::HonouredStatic)
        .all(|r| r.scope == ConfigScope::Broker));
}

/// Every broker config of Kafka 4.4.0 ([`KAFKA_BROKER_CONFIG_NAMES`], checked against the
/// jars by `kraftd-cli`'s `kafka_configs` test) has a definition and a status, so no key
/// of Kafka's is accepted without a word (the topic and group configs are checked there
/// against the jars directly).
#[test]
fn every_kafka_broker_config_has_a_status() {
    let missing: Vec<&str> = KAFKA_BROKER_CONFIG_NAMES
        .iter()
        .copied()
        .filter(|name| {
            let scope = if ConfigScope::Broker.def(name).is_some() {
                ConfigScope::Broker
            } else {
                ConfigScope::StaticBroker
            };
            scope.def(name).is_none() || config_support(scope, name).is_none()
        })
        .collect();
    assert!(missing.is_empty(), "no status: {missing:?}");
}

/// `docs/configs.md`'s table is this one rendered; `UPDATE_CONFIG_TABLE=1` rewrites it.
#[test]
fn the_configs_doc_is_config_support() {
    const BEGIN: &str = "<!-- config-support:begin (generated from config_defs.rs) -->\n";
    const END: &str = "<!-- config-support:end -->";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configs.md");
    let doc = std::fs::read_to_string(&path).expect("docs/configs.md");
    let start = doc.find(BEGIN).expect("the begin marker") + BEGIN.len();
    let end = doc[start..].find(END).expect("the end marker") + start;
    let table = render_support_table();
    if doc[start..end] != table {
        if std::env::var_os("UPDATE_CONFIG_TABLE").is_some() {
            let updated = format!("{}{table}{}", &doc[..start], &doc[end..]);
            std::fs::write(&path, updated).expect("writing docs/configs.md");
        } else {
            panic!(
                "docs/configs.md's config table differs from CONFIG_SUPPORT; rerun with \
                 UPDATE_CONFIG_TABLE=1 to rewrite it"
            );
        }
    }
}

#[test]
fn unsupported_values_are_refused_unless_kafkas_default() {
    // Refused unless default: the default (in any spelling Kafka parses) passes.
    assert!(validate_topic_config("remote.storage.enable", "false").is_ok());
    let e = validate_topic_config("remote.storage.enable", "true").unwrap_err();
    assert!(matches!(
        e,
        ConfigValueError::Unsupported { dynamic: false, .. }
    ));
    let text = e.to_string();
    assert!(
        text.contains("kraftd does not support remote.storage.enable")
            && text.contains("true")
            && text.contains("(false)"),
        "{text}"
    );
    assert!(validate_topic_config("remote.storage.enable", "FALSE").is_ok());
    assert!(validate_topic_config("remote.storage.enable", "true").is_err());
    assert!(validate_topic_config("message.timestamp.after.max.ms", " 3600000").is_ok());
    // A bad value is still Kafka's InvalidValue, checked first.
    assert!(matches!(
        validate_topic_config("compression.type", "brotli"),
        Err(ConfigValueError::InvalidValue { .. })
    ));
    // Honoured and no-effect keys take any valid value.
    for codec in ["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"] {
        assert!(validate_topic_config("compression.type", codec).is_ok());
        assert!(validate_broker_config("compression.type", codec).is_ok());
        assert!(check_static_support("compression.type", codec).is_ok());
    }
    assert!(validate_topic_config("message.timestamp.after.max.ms", "60000").is_ok());
    assert!(validate_topic_config("message.timestamp.before.max.ms", "60000").is_ok());
    assert!(check_static_support("log.message.timestamp.after.max.ms", "60000").is_ok());
    assert!(validate_topic_config("retention.ms", "1000").is_ok());
    assert!(validate_topic_config("preallocate", "true").is_ok());
    assert!(validate_broker_config("num.io.threads", "16").is_ok());
    // Dynamic in Kafka, read from the properties file only: dynamically, only the default.
    assert!(validate_broker_config("num.recovery.threads.per.data.dir", "2").is_ok());
    let e = validate_broker_config("num.recovery.threads.per.data.dir", "3").unwrap_err();
    assert!(matches!(
        e,
        ConfigValueError::Unsupported { dynamic: true, .. }
    ));
    assert!(
        e.to_string().contains("needs a change there and a restart"),
        "{e}"
    );
    // Dynamic in Kafka and in kraftd: the cleaner's threads and the topic defaults.
    assert!(validate_broker_config("log.cleaner.threads", "3").is_ok());
    assert!(validate_broker_config("log.message.timestamp.type", "LogAppendTime").is_ok());
    // Read-only in Kafka: never dynamically, with Kafka's message.
    let e = validate_broker_config("num.partitions", "1").unwrap_err();
    assert_eq!(
        e.to_string(),
        "Cannot update these configs dynamically: [num.partitions]"
    );
    // In the properties file.
    assert!(check_static_support("num.partitions", "3").is_ok());
    assert!(check_static_support("log.cleaner.threads", "3").is_ok());
    assert!(check_static_support(
        "metric.reporters",
        "org.apache.kafka.common.metrics.JmxReporter"
    )
    .is_ok());
    assert!(check_static_support("metric.reporters", "com.example.Reporter").is_err());
    // The connection quotas are built (kraftd_net::connection_quotas), and checked as Kafka
    // parses them.
    assert!(check_static_support("max.connections.per.ip", "10").is_ok());
    assert!(validate_broker_config("max.connections.per.ip", "10").is_ok());
    assert!(validate_broker_config("listener.name.ext.max.connections", "10").is_ok());
    // A string to the controller, as Kafka's ConfigDef has it; the broker parses it before
    // forwarding (its ConnectionQuotas' reconfiguration check, Kafka's KafkaConfig).
    assert!(validate_broker_config("max.connections.per.ip.overrides", "127.0.0.1:5,h:2").is_ok());
    assert!(validate_broker_config("max.connections.per.ip.overrides", "h").is_ok());
    assert!(check_static_support("log.flush.scheduler.interval.ms", "1000").is_ok());
    assert!(check_static_support("remote.log.storage.system.enable", "true").is_err());
    assert!(check_static_support("offsets.topic.replication.factor", "1").is_ok());
    assert!(
        check_static_support("segment.bytes", "1000").is_ok(),
        "a topic key"
    );
    // Delegation tokens are built: their secret key is taken.
    assert!(check_static_support("delegation.token.secret.key", "hunter2").is_ok());
}

#[test]
fn throttled_replica_lists_are_checked_as_kafka_does() {
    let key = "leader.replication.throttled.replicas";
    for ok in ["", "*", " * ", "0:1", "0:1, 1:2,2:3", "0:1,"] {
        assert!(validate_topic_config(key, ok).is_ok(), "{ok:?}");
    }
    let e = validate_topic_config(key, "0:1,x").unwrap_err();
    assert_eq!(
        e.to_string(),
        "Invalid value [0:1, x] for configuration leader.replication.throttled.replicas: \
         leader.replication.throttled.replicas must be the literal '*' or a list of replicas \
         in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
    );
    assert!(validate_topic_config("follower.replication.throttled.replicas", "*,0:1").is_err());
    assert!(validate_topic_config("follower.replication.throttled.replicas", "1").is_err());
    let parsed = parse_throttled_replicas(key, "0:1, 1:2, 2:1").unwrap();
    assert_eq!(parsed.partitions_of(1), Some(vec![0, 2]));
    assert_eq!(parsed.partitions_of(3), Some(vec![]));
    assert_eq!(
        parse_throttled_replicas(key, "*").unwrap().partitions_of(1),
        None
    );
}

#[test]
fn replication_throttle_rates_are_dynamic_broker_configs() {
    for key in [
        "leader.replication.throttled.rate",
        "follower.replication.throttled.rate",
    ] {
        assert!(validate_broker_config(key, "1048576").is_ok());
        assert!(
            check_broker_update(key, true).is_ok(),
            "{key} as the default"
        );
        let e = validate_broker_config(key, "-1").unwrap_err();
        assert!(e.to_string().contains("Value must be at least 0"), "{e}");
    }
}

/// A group config's default is its broker synonym's, where kraftd defines that setting
/// (Kafka's `GroupConfig` defines each default as the `GroupCoordinatorConfig` or
/// `ShareGroupConfig` one).
#[test]
fn every_group_config_defaults_to_its_broker_synonym() {
    for def in GROUP_CONFIGS {
        let Some(broker) = group_config_synonym(def.name) else {
            continue;
        };
        if def.name == "streams.assignor.name" {
            continue;
        }
        if let Some(b) = any_broker_config_def(broker) {
            assert_eq!(def.default, b.default, "{} / {broker}", def.name);
        }
    }
    assert_eq!(group_config_synonym("share.auto.offset.reset"), None);
    assert_eq!(
        group_config_synonym("share.record.lock.duration.ms"),
        Some("group.share.record.lock.duration.ms")
    );
}

#[test]
fn share_auto_offset_reset_is_refused_with_kafkas_message() {
    let def = group_config_def(SHARE_AUTO_OFFSET_RESET).unwrap();
    assert_eq!(def.validate(" earliest "), Ok(()));
    assert_eq!(def.validate("by_duration:PT10M"), Ok(()));
    assert_eq!(
        def.validate("none").unwrap_err().to_string(),
        "Invalid value none for configuration share.auto.offset.reset: Invalid value `none` \
         for configuration share.auto.offset.reset. The value must be either 'earliest', \
         'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
    );
    let isolation = group_config_def("share.isolation.level").unwrap();
    assert_eq!(
        isolation
            .validate("READ_COMMITTED")
            .unwrap_err()
            .to_string(),
        "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be \
         one of: read_committed, read_uncommitted"
    );
}
