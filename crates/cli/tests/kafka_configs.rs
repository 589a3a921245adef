//! Every topic, broker and group setting kraftd defines is defined as Apache Kafka 4.4.0
//! defines it (issue 35): differentially, against Kafka's own jars (`tests/java/Configs.jsh`
//! lists `LogConfig`'s, `AbstractKafkaConfig`'s and `GroupConfig`'s `ConfigDef`s, with
//! `DynamicBrokerConfig`'s update modes, and runs Kafka's parser and validator over values
//! this test chooses).
//!
//! For every key both define: the same type, default, validator (as Kafka's `toString`
//! prints it), internal flag and, for a broker config, update mode; and for a set of probe
//! values around each bound (kraftd's and Kafka's), each allowed value, other spellings and
//! garbage, kraftd's [`ConfigDef::validate`] accepts exactly what Kafka's accepts and refuses
//! the rest with Kafka's `ConfigException` message, which CreateTopics and
//! (Incremental)AlterConfigs answer INVALID_CONFIG with.
//!
//! The key sets: every topic config of Kafka's is one of kraftd's (DescribeConfigs lists them
//! all, and a client may set any; [`CONFIG_SUPPORT`] says which kraftd honours); kraftd's
//! broker configs are a subset of Kafka's but for its own (documented "kraftd's own"); and
//! kraftd's group configs (`ConfigResource` GROUP) are exactly Kafka's `GroupConfig`'s.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};

use common::kafka_jars;
use kraftd_controller::control::config_defs::{
    all_broker_config_defs, broker_update_mode, config_support, is_throttled_replicas_config,
    ConfigDef, ConfigScope, ConfigType, UpdateMode, COMPRESSION_GZIP_LEVEL, CONFIG_SUPPORT,
    GROUP_CONFIGS, KAFKA_BROKER_CONFIG_NAMES, SHARE_AUTO_OFFSET_RESET, TOPIC_CONFIGS,
};

/// One config as Kafka defines it.
#[derive(Debug)]
struct KafkaConfig {
    config_type: String,
    default: String,
    validator: String,
    internal: bool,
    mode: String,
}

/// The scopes Configs.jsh lists.
const SCOPES: [&str; 3] = ["TOPIC", "BROKER", "GROUP"];

/// Runs Configs.jsh, with `probes` ("scope<TAB>name<TAB>value" lines) when given; its stdout.
fn run_configs_jsh(probes: Option<&str>) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/Configs.jsh");
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new("jshell");
    command
        .arg(format!("--class-path={}", kafka_jars::classpath()))
        .arg(format!("-R{}", kafka_jars::log4j_option()))
        .arg(&script)
        .stdin(Stdio::null());
    if let Some(probes) = probes {
        let path = dir.path().join("probes.tsv");
        std::fs::write(&path, probes).unwrap();
        command.env("KRAFTD_CONFIG_PROBES", &path);
    }
    let out = command.output().expect("jshell runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        stdout.contains("\nDONE"),
        "Configs.jsh did not finish:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Kafka's configs by (scope, name).
fn kafka_configs(stdout: &str) -> BTreeMap<(String, String), KafkaConfig> {
    let mut configs = BTreeMap::new();
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        if let ["CONFIG", scope, name, config_type, default, validator, internal, mode] =
            fields.as_slice()
        {
            configs.insert(
                (scope.to_string(), name.to_string()),
                KafkaConfig {
                    config_type: config_type.to_string(),
                    default: default.to_string(),
                    validator: validator.to_string(),
                    internal: *internal == "true",
                    mode: mode.to_string(),
                },
            );
        }
    }
    configs
}

/// Kafka's verdict on each probe, by (scope, name, value): `Ok` or the message.
type Verdicts = BTreeMap<(String, String, String), Result<(), String>>;

fn kafka_verdicts(stdout: &str) -> Verdicts {
    let mut verdicts = BTreeMap::new();
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let (key, verdict) = match fields.as_slice() {
            ["PROBE", scope, name, value, "OK"] => ((scope, name, value), Ok(())),
            ["PROBE", scope, name, value, "ERR", message] => {
                ((scope, name, value), Err(message.to_string()))
            }
            _ => continue,
        };
        verdicts.insert(
            (key.0.to_string(), key.1.to_string(), key.2.to_string()),
            verdict,
        );
    }
    verdicts
}

/// kraftd's type as Kafka names it.
fn kafka_type(def: &ConfigDef) -> &'static str {
    match def.config_type {
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
    }
}

/// A double as Java prints a `Number` in `Range.toString` (integral values without `.0`,
/// as Kafka writes `Range.between(0, 1)`).
fn java_number(n: f64) -> String {
    if n == f64::MAX {
        "1.7976931348623157E308".to_string()
    } else if n.fract() == 0.0 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

/// kraftd's validator as Kafka's `toString` prints it ("" for none).
fn validator_of(def: &ConfigDef) -> String {
    let range = |min: String, max: Option<String>| match max {
        Some(max) => format!("[{min},...,{max}]"),
        None => format!("[{min},...]"),
    };
    if def.name == COMPRESSION_GZIP_LEVEL {
        return "[1,...,9] or -1".to_string();
    }
    if def.name == SHARE_AUTO_OFFSET_RESET {
        return "[latest, earliest, by_duration:PnDTnHnMn.nS]".to_string();
    }
    if is_throttled_replicas_config(def.name) {
        return "[partitionId]:[brokerId],[partitionId]:[brokerId],...".to_string();
    }
    match def.config_type {
        ConfigType::Int { min, max } if min == i32::MIN && max == i32::MAX => String::new(),
        ConfigType::Int { min, max } => {
            range(min.to_string(), (max != i32::MAX).then(|| max.to_string()))
        }
        ConfigType::Long { min } if min == i64::MIN => String::new(),
        ConfigType::Long { min } => range(min.to_string(), None),
        ConfigType::Short { min } if min == i16::MIN => String::new(),
        ConfigType::Short { min } => range(min.to_string(), None),
        ConfigType::Double { min, max } if min == f64::MIN && max == f64::MAX => String::new(),
        ConfigType::Double { min, max } => range(
            java_number(min),
            (max != f64::MAX).then(|| java_number(max)),
        ),
        ConfigType::String { valid } | ConfigType::List { valid, .. } if !valid.is_empty() => {
            format!("[{}]", valid.join(", "))
        }
        ConfigType::CaseInsensitiveString { valid } => {
            format!("(case insensitive) [{}]", valid.join(", "))
        }
        ConfigType::NonEmptyString => "non-empty string".to_string(),
        _ => String::new(),
    }
}

/// The numbers Kafka's validator string names (`[1,...,9] or -1` → 1, 9, -1).
fn numbers_in(text: &str) -> Vec<i64> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter_map(|t| t.parse().ok())
        .collect()
}

/// The values to try on a config: each bound of either side's range and its neighbours,
/// zero and the type's extremes, each allowed value in other cases, and garbage.
fn probe_values(def: &ConfigDef, kafka: &KafkaConfig) -> BTreeSet<String> {
    let mut bounds: Vec<i64> = numbers_in(&kafka.validator);
    match def.config_type {
        ConfigType::Int { min, max } => bounds.extend([i64::from(min), i64::from(max)]),
        ConfigType::Short { min } => bounds.push(i64::from(min)),
        ConfigType::Long { min } => bounds.push(min),
        // Kafka loads a class to check its name; kraftd loads none (a class config is
        // refused unless Kafka's default, CONFIG_SUPPORT).
        ConfigType::Class => return BTreeSet::new(),
        _ => {}
    }
    let mut values = BTreeSet::new();
    let mut add = |v: String| {
        values.insert(v);
    };
    add(String::new());
    add("not-a-value".into());
    if def.name == SHARE_AUTO_OFFSET_RESET {
        for v in [
            "earliest",
            "latest",
            "none",
            "EARLIEST",
            "by_duration",
            "by_duration:",
            "by_duration:PT1H",
            "by_duration:pt1h",
            "by_duration:P1DT2H3M4.5S",
            "by_duration:P1D",
            "by_duration:PT",
            "by_duration:P",
            "by_duration:-PT1H",
            "by_duration:-PT-1H",
            "by_duration:PT-1S",
            "by_duration:PT-0.5S",
            "by_duration:PT0.5S",
            "by_duration:PT1.1234567891S",
            "by_duration:PT1,5S",
            "by_duration:+P1D",
            "by_duration:P1H",
            "by_duration:1H",
            "by_duration:PT9223372036854775807S",
            "by_duration:P106751991167301D",
            "BY_DURATION:PT1H",
        ] {
            add(v.to_string());
        }
    }
    if let Some(default) = def.default {
        add(default.to_string());
        add(format!(" {default} "));
    }
    match def.config_type {
        ConfigType::Int { .. } | ConfigType::Short { .. } | ConfigType::Long { .. } => {
            bounds.extend([
                0,
                i64::from(i32::MIN),
                i64::from(i32::MAX),
                i64::MIN,
                i64::MAX,
            ]);
            for b in bounds {
                for d in [-1i64, 0, 1] {
                    if let Some(v) = b.checked_add(d) {
                        add(v.to_string());
                    }
                }
            }
            add("1.5".into());
            add("1e3".into());
        }
        ConfigType::Double { .. } => {
            for v in ["-0.1", "0", "0.0", "0.5", "1", "1.0", "1.1", "1e3", "NaN"] {
                add(v.to_string());
            }
        }
        ConfigType::Boolean => {
            for v in ["true", "false", "TRUE", "False", "yes", "1"] {
                add(v.to_string());
            }
        }
        ConfigType::NonEmptyString => {
            add(" ".into());
        }
        ConfigType::String { valid }
        | ConfigType::CaseInsensitiveString { valid }
        | ConfigType::List { valid, .. } => {
            for v in valid {
                add(v.to_string());
                add(v.to_uppercase());
                add(format!(" {v} "));
            }
            if let ConfigType::List {
                valid: [a, b, ..], ..
            } = def.config_type
            {
                add(format!("{a},{b}"));
                add(format!("{b}, {a}"));
                add(format!("{a},,{b}"));
                add(format!("{a},"));
                add(format!("{a},{a}"));
            }
        }
        ConfigType::Class => {}
    }
    values
}

/// kraftd's definitions by Kafka's scope name: its topic configs, its broker configs
/// (dynamic, static and security) and its group configs.
fn kraftd_defs() -> Vec<(&'static str, &'static ConfigDef)> {
    TOPIC_CONFIGS
        .iter()
        .map(|d| ("TOPIC", d))
        .chain(all_broker_config_defs().map(|d| ("BROKER", d)))
        .chain(GROUP_CONFIGS.iter().map(|d| ("GROUP", d)))
        .collect()
}

/// kraftd's own settings, which Kafka does not have, and StandardAuthorizer's, which are
/// not `KafkaConfig` keys (kafka_security_configs.rs checks them).
fn kraftd_own(def: &ConfigDef) -> bool {
    def.doc.starts_with("kraftd's own")
        || ["super.users", "allow.everyone.if.no.acl.found"].contains(&def.name)
}

/// Broker configs Kafka changes dynamically that kraftd reads from the node's properties
/// file only (read-only in DescribeConfigs, refused by AlterConfigs): the listeners (per
/// broker in Kafka), listed so that no other difference in update mode passes.
const READ_ONLY_IN_KRAFTD: &[&str] = &["listeners"];

/// Dynamic broker configs whose Kafka `ConfigDef` has no validator but whose value becomes
/// a topic config's default with one (`log.retention.ms` → `retention.ms` at least -1, ...):
/// kraftd refuses there what the topic config would refuse, as Kafka's
/// `DynamicLogConfig.validateReconfiguration` checks the topic defaults they make.
const TOPIC_DEFAULT_VALIDATORS: &[(&str, &str)] = &[
    ("log.flush.interval.ms", "[0,...]"),
    ("log.retention.ms", "[-1,...]"),
    ("log.roll.ms", "[1,...]"),
];

/// Kafka's static settings kraftd parses at start-up with parsers of its own (the quorum's
/// endpoints): the `ConfigDef` validators parse the same entries.
const PARSED_AT_STARTUP: &[&str] = &[
    "controller.quorum.bootstrap.servers",
    "controller.quorum.voters",
];

/// kraftd's list of Kafka's broker config names (what start-up tells unknown keys by) is the
/// jars' list; `UPDATE_KAFKA_CONFIG_NAMES=1` writes it.
fn check_kafka_broker_config_names(kafka: &BTreeMap<(String, String), KafkaConfig>) {
    let names: Vec<&str> = kafka
        .keys()
        .filter(|(scope, _)| scope == "BROKER")
        .map(|(_, name)| name.as_str())
        .collect();
    if std::env::var_os("UPDATE_KAFKA_CONFIG_NAMES").is_some() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../controller/src/control/config_defs/kafka_names.rs");
        let text = std::fs::read_to_string(&path).unwrap();
        let start = text.find("= &[\n").expect("the list's start") + "= &[\n".len();
        let end = text[start..].find("];").expect("the list's end") + start;
        let list: String = names.iter().map(|n| format!("    {n:?},\n")).collect();
        std::fs::write(&path, format!("{}{list}{}", &text[..start], &text[end..])).unwrap();
    }
    assert_eq!(
        KAFKA_BROKER_CONFIG_NAMES,
        names.as_slice(),
        "kafka_names.rs is not Kafka 4.4.0's list: UPDATE_KAFKA_CONFIG_NAMES=1 cargo test -p kraftd-cli --test kafka_configs"
    );
}

#[test]
fn kraftd_validates_every_topic_broker_and_group_config_as_kafka_does() {
    let kafka = kafka_configs(&run_configs_jsh(None));
    for scope in SCOPES {
        assert!(
            kafka.keys().filter(|(s, _)| s == scope).count() > 10,
            "Configs.jsh listed few {scope} configs"
        );
    }
    check_kafka_broker_config_names(&kafka);
    let mut differences = Vec::new();
    let mut probes = String::new();
    for (scope, def) in kraftd_defs() {
        let Some(k) = kafka.get(&(scope.to_string(), def.name.to_string())) else {
            if !kraftd_own(def) {
                differences.push(format!("{scope} {}: not a Kafka 4.4 config", def.name));
            }
            continue;
        };
        let mode = match scope {
            "BROKER" => match broker_update_mode(def.name) {
                Some(UpdateMode::ReadOnly) => "read-only",
                Some(UpdateMode::ClusterWide) => "cluster-wide",
                Some(UpdateMode::PerBroker) => "per-broker",
                Some(UpdateMode::PerListener) => "per-listener",
                None => "(none)",
            },
            _ => "-",
        };
        // A string validator that only forbids null (authorizer.class.name) is no validator:
        // a value kraftd reads is never null; a known difference is Kafka's as kraftd has it.
        let mut kafka_validator = k.validator.replace("non-null string", "");
        let mut kafka_mode = k.mode.as_str();
        if scope == "BROKER" {
            if let Some((_, ours)) = TOPIC_DEFAULT_VALIDATORS
                .iter()
                .find(|(n, _)| *n == def.name)
            {
                if kafka_validator.is_empty() {
                    kafka_validator = ours.to_string();
                }
            }
            if PARSED_AT_STARTUP.contains(&def.name) && kafka_validator == "non-empty list" {
                kafka_validator = String::new();
            }
            if READ_ONLY_IN_KRAFTD.contains(&def.name) && kafka_mode != "read-only" {
                kafka_mode = "read-only";
            }
        }
        // Kafka's required settings (no default) are null-defaulted in kraftd, which
        // refuses to start without them.
        let kafka_default = match k.default.as_str() {
            "<none>" => "<null>",
            other => other,
        };
        let expected = (
            k.config_type.as_str(),
            kafka_default,
            kafka_validator.as_str(),
            k.internal,
            kafka_mode,
        );
        let validator = validator_of(def);
        let ours = (
            kafka_type(def),
            def.default.unwrap_or("<null>"),
            validator.as_str(),
            def.internal,
            mode,
        );
        if expected != ours {
            differences.push(format!(
                "{scope} {}: Kafka (type, default, validator, internal, mode) {expected:?}, \
                 kraftd {ours:?}",
                def.name
            ));
        }
        let known = TOPIC_DEFAULT_VALIDATORS.iter().any(|(n, _)| *n == def.name)
            || PARSED_AT_STARTUP.contains(&def.name);
        // Secrets are never probed (nor echoed); the known differences are listed above.
        let skipped = def.sensitive || (scope == "BROKER" && known);
        if !skipped {
            for value in probe_values(def, k) {
                probes.push_str(&format!("{scope}\t{}\t{value}\n", def.name));
            }
        }
    }
    // Every topic config of Kafka's is one of kraftd's, with a support row.
    for ((scope, name), _) in kafka.iter().filter(|((s, _), _)| s == "TOPIC") {
        if !TOPIC_CONFIGS.iter().any(|d| d.name == name) {
            differences.push(format!("{scope} {name}: not defined by kraftd"));
        } else if !CONFIG_SUPPORT
            .iter()
            .any(|r| r.scope == ConfigScope::Topic && r.name == name)
        {
            differences.push(format!("{scope} {name}: no support row"));
        }
    }
    // Every broker config of Kafka's is one of kraftd's, with a support row (dynamic or
    // static, by kraftd's update mode).
    for ((scope, name), _) in kafka.iter().filter(|((s, _), _)| s == "BROKER") {
        let row = [ConfigScope::Broker, ConfigScope::StaticBroker]
            .into_iter()
            .find_map(|s| config_support(s, name));
        if row.is_none() {
            differences.push(format!("{scope} {name}: no support row"));
        }
    }
    // Every group config of Kafka's is one of kraftd's, with a support row.
    for ((scope, name), _) in kafka.iter().filter(|((s, _), _)| s == "GROUP") {
        if !GROUP_CONFIGS.iter().any(|d| d.name == name) {
            differences.push(format!("{scope} {name}: not defined by kraftd"));
        } else if !CONFIG_SUPPORT
            .iter()
            .any(|r| r.scope == ConfigScope::Group && r.name == name)
        {
            differences.push(format!("{scope} {name}: no support row"));
        }
    }
    // Values: kraftd accepts what Kafka accepts and refuses the rest with Kafka's message.
    let verdicts = kafka_verdicts(&run_configs_jsh(Some(&probes)));
    assert!(verdicts.len() > 1000, "only {} probes ran", verdicts.len());
    for ((scope, name, value), kafka_verdict) in &verdicts {
        let (_, def) = kraftd_defs()
            .into_iter()
            .find(|(s, d)| s == scope && d.name == name)
            .expect("a probed config");
        let ours = def.validate(value).map_err(|e| one_line(&e.to_string()));
        let agree = match (&ours, kafka_verdict) {
            (Ok(()), Ok(())) => true,
            (Err(ours), Err(theirs)) => ours == theirs,
            _ => false,
        };
        if !agree {
            differences.push(format!(
                "{scope} {name}={value:?}: Kafka {kafka_verdict:?}, kraftd {ours:?}"
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} differences:\n{}",
        differences.len(),
        differences.join("\n")
    );
}

/// Spaces collapsed, as Configs.jsh prints Kafka's messages.
fn one_line(text: &str) -> String {
    let mut out = String::new();
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            if !space {
                out.push(' ');
            }
            space = true;
        } else {
            out.push(c);
            space = false;
        }
    }
    out
}

/// `kafka-configs --bootstrap-server <b> --entity-type groups --entity-name <g> <args>`
/// (Kafka 4.4.0's `ConfigCommand`): whether it succeeded, and its output.
fn group_configs(bootstrap: &str, group: &str, args: &[&str]) -> (bool, String) {
    let mut all = vec![
        "--bootstrap-server",
        bootstrap,
        "--entity-type",
        "groups",
        "--entity-name",
        group,
    ];
    all.extend(args);
    let out = kafka_jars::run_tool("org.apache.kafka.tools.ConfigCommand", &all);
    (out.status.success(), kafka_jars::output_text(&out))
}

/// Kafka's own `kafka-configs --entity-type groups` on real kraftd processes: it sets a
/// group's share configs (on a group that does not exist), describes them with their
/// sources, deletes one back to its default; a value Kafka refuses, and one outside the
/// controller's own `group.share.*` bounds, are refused with Kafka's messages.
#[test]
fn kafka_configs_alters_describes_and_deletes_group_configs_on_kraftd() {
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = common::formatted_cluster(root.path(), 1, 1);
    // The controller checks group configs against its own bounds, as Kafka's does.
    controllers[0].add_config(&["group.share.min.record.lock.duration.ms=1000"]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = brokers[0].address();
    let logs = || {
        format!(
            "--- logs ---\n{}\n{}",
            common::all_logs(&controllers),
            common::all_logs(&brokers)
        )
    };
    let set = [
        "--alter",
        "--add-config",
        "share.auto.offset.reset=earliest,share.record.lock.duration.ms=5000,\
         share.delivery.count.limit=3",
    ];
    // The first call also waits for the broker to be up.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (ok, text) = group_configs(&bootstrap, "g", &set);
        if ok {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "kafka-configs --alter:\n{text}\n{}",
            logs()
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let (ok, text) = group_configs(&bootstrap, "g", &["--describe"]);
    assert!(
        ok && text.contains("Dynamic configs for group g are:")
            && text.contains("share.auto.offset.reset=earliest sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.auto.offset.reset=earliest, DEFAULT_CONFIG:share.auto.offset.reset=latest}")
            && text.contains("share.record.lock.duration.ms=5000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.record.lock.duration.ms=5000, DEFAULT_CONFIG:group.share.record.lock.duration.ms=30000}")
            && text.contains("share.delivery.count.limit=3"),
        "kafka-configs --describe:\n{text}\n{}",
        logs()
    );
    let (ok, text) = group_configs(&bootstrap, "g", &["--describe", "--all"]);
    assert!(
        ok && text.contains("share.isolation.level=read_uncommitted sensitive=false synonyms={DEFAULT_CONFIG:share.isolation.level=read_uncommitted}")
            && text.contains("share.session.timeout.ms=45000"),
        "kafka-configs --describe --all:\n{text}\n{}",
        logs()
    );
    let (ok, text) = group_configs(
        &bootstrap,
        "g",
        &["--alter", "--delete-config", "share.auto.offset.reset"],
    );
    assert!(ok, "kafka-configs --delete-config:\n{text}\n{}", logs());
    let (ok, text) = group_configs(&bootstrap, "g", &["--describe"]);
    assert!(
        ok && !text.contains("share.auto.offset.reset")
            && text.contains("share.delivery.count.limit=3"),
        "kafka-configs --describe after the delete:\n{text}\n{}",
        logs()
    );
    for (config, message) in [
        (
            "share.auto.offset.reset=none",
            "Invalid value none for configuration share.auto.offset.reset: Invalid value `none` \
             for configuration share.auto.offset.reset. The value must be either 'earliest', \
             'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
        ),
        (
            "share.record.lock.duration.ms=999",
            "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be \
             at least 1000",
        ),
        (
            "share.delivery.count.limit=11",
            "share.delivery.count.limit must be in the range 2 to 10 inclusive.",
        ),
        (
            "no.such.config=1",
            "Unknown group config name: no.such.config",
        ),
    ] {
        let (ok, text) = group_configs(&bootstrap, "g", &["--alter", "--add-config", config]);
        assert!(
            !ok && text.contains("InvalidConfigurationException") && text.contains(message),
            "kafka-configs --add-config {config}:\n{text}\n{}",
            logs()
        );
    }
    common::stop_gracefully(&mut brokers);
    common::stop_gracefully(&mut controllers);
}
