//! Every broker security setting Kafka knows is one kraftd knows, alike (issue 16):
//!
//! - differentially, against Apache Kafka 4.4.0's own jars (`tests/java/SecurityConfigs.jsh`
//!   lists `BrokerSecurityConfigs`, `DelegationTokenManagerConfigs`, `QuotaConfig` and the
//!   security keys of other groups, with `DynamicBrokerConfig`'s update modes): each is in
//!   kraftd's `SECURITY_CONFIGS` with Kafka's type, default, importance, validator, update
//!   mode and the first sentence of its documentation, and kraftd defines no other;
//! - end to end (one controller, one broker, `tests/python/security_configs.py`): kafka-python
//!   sets `sasl.kerberos.min.time.before.relogin` on the broker and reads it back,
//!   confluent-kafka is refused GSSAPI in `sasl.enabled.mechanisms` (INVALID_CONFIG, both
//!   AlterConfigs APIs), read-only configs and keystore settings without a listener prefix
//!   where Kafka refuses them, and the secrets the broker's properties file holds are never
//!   described; Kafka's `kafka-configs` is refused a per-broker config as the cluster-wide
//!   default.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use common::kafka_jars;
use common::python::{python, run_until_all_ok};
use common::{all_logs, formatted_cluster, stop_gracefully};
use kraftd_controller::control::config_defs::{
    any_broker_config_def, ConfigDef, ConfigType, Importance, UpdateMode, SECURITY_CONFIGS,
};

/// One config as Kafka defines it.
struct KafkaConfig {
    config_type: String,
    default: String,
    importance: String,
    validator: String,
    mode: String,
    doc: String,
}

/// Kafka's security configs and StandardAuthorizer's setting names, from the jars.
fn kafka_security_configs() -> (BTreeMap<String, KafkaConfig>, Vec<String>) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/SecurityConfigs.jsh");
    let out = Command::new("jshell")
        .arg(format!("--class-path={}", kafka_jars::classpath()))
        .arg(format!("-R{}", kafka_jars::log4j_option()))
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .expect("jshell runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("DONE"),
        "SecurityConfigs.jsh did not finish:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut configs = BTreeMap::new();
    let mut authorizer = Vec::new();
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        match fields.as_slice() {
            ["CONFIG", name, config_type, default, importance, validator, mode, doc] => {
                configs.insert(
                    name.to_string(),
                    KafkaConfig {
                        config_type: config_type.to_string(),
                        default: default.to_string(),
                        importance: importance.to_string(),
                        validator: validator.to_string(),
                        mode: mode.to_string(),
                        doc: doc.to_string(),
                    },
                );
            }
            ["AUTHORIZER", name] => authorizer.push(name.to_string()),
            _ => {}
        }
    }
    (configs, authorizer)
}

/// kraftd's definition in Kafka's terms: the type name, the default as Kafka prints it, the
/// importance, the validator as Kafka's `toString` prints it, the update mode.
fn as_kafka(def: &ConfigDef) -> (String, String, String, String, String) {
    let config_type = match def.config_type {
        _ if def.sensitive => "PASSWORD",
        ConfigType::Boolean => "BOOLEAN",
        ConfigType::Int { .. } => "INT",
        ConfigType::Short { .. } => "SHORT",
        ConfigType::Long { .. } => "LONG",
        ConfigType::Double { .. } => "DOUBLE",
        ConfigType::String { .. }
        | ConfigType::NonEmptyString
        | ConfigType::CaseInsensitiveString { .. } => "STRING",
        ConfigType::Class => "CLASS",
        ConfigType::List { .. } => "LIST",
    };
    let validator = match def.config_type {
        ConfigType::Int { min, max } if min == i32::MIN && max == i32::MAX => String::new(),
        ConfigType::Int { min, max } if max == i32::MAX => format!("[{min},...]"),
        ConfigType::Int { min, max } => format!("[{min},...,{max}]"),
        ConfigType::Long { min } if min == i64::MIN => String::new(),
        ConfigType::Long { min } => format!("[{min},...]"),
        ConfigType::String { valid } if !valid.is_empty() => format!("[{}]", valid.join(", ")),
        ConfigType::CaseInsensitiveString { valid } => {
            format!("(case insensitive) [{}]", valid.join(", "))
        }
        _ => String::new(),
    };
    let importance = match def.importance {
        Some(Importance::High) => "HIGH",
        Some(Importance::Medium) => "MEDIUM",
        Some(Importance::Low) => "LOW",
        None => "(none)",
    };
    let mode = match def.update {
        Some(UpdateMode::ReadOnly) => "read-only",
        Some(UpdateMode::ClusterWide) => "cluster-wide",
        Some(UpdateMode::PerBroker) => "per-broker",
        Some(UpdateMode::PerListener) => "per-listener",
        None => "(none)",
    };
    (
        config_type.to_string(),
        def.default.unwrap_or("<null>").to_string(),
        importance.to_string(),
        validator,
        mode.to_string(),
    )
}

/// Kafka's documentation as plain text: tags dropped, entities decoded, spaces collapsed.
fn plain(doc: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in doc.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn kraftd_defines_every_security_config_of_kafka_as_kafka_does() {
    let (kafka, authorizer) = kafka_security_configs();
    assert!(kafka.len() > 90, "only {} configs listed", kafka.len());
    let mut differences = Vec::new();
    for (name, k) in &kafka {
        let Some(def) = any_broker_config_def(name) else {
            differences.push(format!("{name}: not defined by kraftd"));
            continue;
        };
        let (config_type, default, importance, validator, mode) = as_kafka(def);
        // authorizer.class.name's validator only forbids null, which a string never is.
        let kafka_validator = k.validator.replace("non-null string", "");
        let expected = (
            k.config_type.as_str(),
            k.default.as_str(),
            k.importance.as_str(),
            kafka_validator.as_str(),
            k.mode.as_str(),
        );
        let ours = (
            config_type.as_str(),
            default.as_str(),
            importance.as_str(),
            validator.as_str(),
            mode.as_str(),
        );
        if expected != ours {
            differences.push(format!("{name}: Kafka {expected:?}, kraftd {ours:?}"));
        }
        let doc = plain(&k.doc);
        if def.doc.is_empty() || !doc.starts_with(def.doc) {
            differences.push(format!(
                "{name}: documentation {:?} does not begin Kafka's {doc:?}",
                def.doc
            ));
        }
    }
    // StandardAuthorizer's settings: read-only, and nothing else is kraftd's invention.
    for name in &authorizer {
        match any_broker_config_def(name) {
            Some(def) if def.update == Some(UpdateMode::ReadOnly) => {}
            _ => differences.push(format!("{name}: not a read-only kraftd config")),
        }
    }
    for def in SECURITY_CONFIGS {
        if !kafka.contains_key(def.name) && !authorizer.iter().any(|a| a == def.name) {
            differences.push(format!("{}: not a Kafka 4.4 security config", def.name));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[test]
fn stock_clients_set_security_configs_by_name_and_are_refused_what_kraftd_does_not_do() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    // Secrets in the broker's properties file, for DescribeConfigs to hide.
    brokers[0].add_config(&[
        "ssl.keystore.password=hunter2-keystore",
        "listener.name.plaintext.ssl.keystore.password=hunter2-listener",
        "listener.name.plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.\
         security.scram.ScramLoginModule required username=\"admin\" password=\"hunter2-jaas\";",
        "sasl.kerberos.service.name=kafka",
    ]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let broker_id = brokers[0].id.to_string();
    let logs = || {
        format!(
            "--- logs ---\n{}\n{}",
            all_logs(&controllers),
            all_logs(&brokers)
        )
    };
    run_until_all_ok(
        "security_configs.py",
        &[&brokers[0].address(), &broker_id],
        logs,
    );
    // Kafka's kafka-configs: a per-broker config as the cluster-wide default is refused with
    // Kafka's message (the Python clients cannot name the default resource "").
    let out = Command::new("java")
        .args([
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1",
            &kafka_jars::log4j_option(),
        ])
        .args([
            "-cp",
            &kafka_jars::classpath(),
            "org.apache.kafka.tools.ConfigCommand",
        ])
        .args(["--bootstrap-server", &brokers[0].address()])
        .args(["--entity-type", "brokers", "--entity-default", "--alter"])
        .args([
            "--add-config",
            "sasl.kerberos.min.time.before.relogin=120000",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("java runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success()
            && text.contains("InvalidConfigurationException")
            && text.contains(
                "Cannot update these configs at default cluster level, broker id must be \
                 specified: [sasl.kerberos.min.time.before.relogin]"
            ),
        "kafka-configs --entity-default:\n{text}\n{}",
        logs()
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
