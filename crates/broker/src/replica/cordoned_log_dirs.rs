//! `cordoned.log.dirs` on a broker (KIP-1066): the log dirs that take no new replica. The
//! setting lives here because only the broker knows its `log.dirs`: it is read from the
//! properties file and changed per broker at runtime (`kafka-configs --entity-type brokers
//! --entity-name N --alter --add-config cordoned.log.dirs=...`, Kafka's
//! `DynamicLogConfig`), each value checked as Kafka's `KafkaConfig.validateCordonedLogDirs`
//! and its `ValidList` check it, with their messages.
//!
//! A value takes effect in two places ([`CordonedLogDirs`], a
//! [`Reconfigurable`]): the `LogManager` creates no new partition in a cordoned dir (and
//! AlterReplicaLogDirs refuses one, DescribeLogDirs reports it), and the lifecycle manager
//! hears the dirs' ids on a watch channel, to send them in the next heartbeat (BrokerHeartbeat
//! v2) so the controllers stop placing replicas on a broker whose every dir is cordoned.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use kraftd_controller::publisher::Reconfigurable;
use kraftd_protocol::Uuid;
use tokio::sync::watch;
use tracing::info;

use super::replica_manager::ReplicaManager;

/// Kafka's `ServerLogConfigs.CORDONED_LOG_DIRS_CONFIG`.
pub const CORDONED_LOG_DIRS_CONFIG: &str = "cordoned.log.dirs";
/// Kafka's `ServerLogConfigs.CORDONED_LOG_DIRS_ALL`: every log dir.
pub const CORDONED_LOG_DIRS_ALL: &str = "*";

/// The log dirs a `cordoned.log.dirs` value names, `*` expanded to all of `log_dirs` (Kafka's
/// `AbstractKafkaConfig.cordonedLogDirs`), or Kafka's message for a value it refuses: an
/// empty or repeated entry (its `ValidList`), `*` with other entries, or an entry that is
/// not one of `log_dirs` (`KafkaConfig.validateCordonedLogDirs`).
pub fn parse_cordoned_log_dirs(value: &str, log_dirs: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    // Kafka's LIST parsing: the trimmed text split on commas and the spaces around them.
    let trimmed = value.trim();
    let entries: Vec<&str> = if trimmed.is_empty() {
        Vec::new()
    } else {
        trimmed.split(',').map(str::trim).collect()
    };
    if entries.iter().any(|e| e.is_empty()) {
        return Err(format!(
            "Configuration '{CORDONED_LOG_DIRS_CONFIG}' values must not be empty."
        ));
    }
    if entries.iter().collect::<BTreeSet<_>>().len() != entries.len() {
        return Err(format!(
            "Configuration '{CORDONED_LOG_DIRS_CONFIG}' values must not be duplicated."
        ));
    }
    if entries.contains(&CORDONED_LOG_DIRS_ALL) {
        if entries.len() != 1 {
            return Err(format!(
                "requirement failed: When {CORDONED_LOG_DIRS_CONFIG} is set to \
                 {CORDONED_LOG_DIRS_ALL}, it must not contain other values"
            ));
        }
        return Ok(log_dirs.to_vec());
    }
    let missing: Vec<&str> = entries
        .iter()
        .copied()
        .filter(|e| !log_dirs.contains(&PathBuf::from(e)))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "requirement failed: All entries in {CORDONED_LOG_DIRS_CONFIG} must be present in \
             log.dirs or log.dir. Missing entries : {}",
            missing.join(", ")
        ));
    }
    Ok(entries.into_iter().map(PathBuf::from).collect())
}

/// The value in effect given this broker's dynamic configs: its own override, else the
/// properties file's, else Kafka's default (none cordoned). The cluster-wide default never
/// holds one (a per-broker config).
pub fn effective_value<'a>(
    dynamic: &'a BTreeMap<String, String>,
    static_configs: &'a BTreeMap<String, String>,
) -> &'a str {
    dynamic
        .get(CORDONED_LOG_DIRS_CONFIG)
        .or_else(|| static_configs.get(CORDONED_LOG_DIRS_CONFIG))
        .map_or("", String::as_str)
}

/// The broker's cordoned log dirs, kept live: the [`Reconfigurable`] that applies a change to
/// the `LogManager` and publishes the dirs' ids for the heartbeats.
#[derive(Debug)]
pub struct CordonedLogDirs {
    replica_manager: Arc<ReplicaManager>,
    /// `log.dirs` with their `directory.id`s.
    log_dirs: Vec<(PathBuf, Uuid)>,
    /// The properties file (its `cordoned.log.dirs`, if any, applies when no dynamic value
    /// does).
    static_configs: BTreeMap<String, String>,
    /// The ids of the cordoned dirs, for the lifecycle manager.
    ids: watch::Sender<BTreeSet<Uuid>>,
}

impl CordonedLogDirs {
    /// Applies the properties file's value at once; the returned receiver sees the ids of
    /// the cordoned dirs now and after every change.
    pub fn new(
        replica_manager: Arc<ReplicaManager>,
        log_dirs: Vec<(PathBuf, Uuid)>,
        static_configs: BTreeMap<String, String>,
    ) -> (Arc<Self>, watch::Receiver<BTreeSet<Uuid>>) {
        let (ids, rx) = watch::channel(BTreeSet::new());
        let this = Arc::new(CordonedLogDirs {
            replica_manager,
            log_dirs,
            static_configs,
            ids,
        });
        this.reconfigure(&BTreeMap::new());
        (this, rx)
    }

    fn paths(&self) -> Vec<PathBuf> {
        self.log_dirs.iter().map(|(p, _)| p.clone()).collect()
    }
}

impl Reconfigurable for CordonedLogDirs {
    fn validate_reconfiguration(&self, configs: &BTreeMap<String, String>) -> Result<(), String> {
        parse_cordoned_log_dirs(
            effective_value(configs, &self.static_configs),
            &self.paths(),
        )
        .map(|_| ())
    }

    /// Kafka's `DynamicLogConfig.reconfigure`: `LogManager.updateCordonedLogDirs`, then the
    /// directory event handler's `handleCordoned` with the dirs' ids.
    fn reconfigure(&self, configs: &BTreeMap<String, String>) {
        let value = effective_value(configs, &self.static_configs);
        let cordoned = match parse_cordoned_log_dirs(value, &self.paths()) {
            Ok(cordoned) => cordoned,
            Err(e) => {
                // Checked before it was forwarded, or at start; a value written past both
                // (another broker's forward, a controller's own listener) is ignored.
                tracing::error!(value, error = %e, "ignoring an invalid cordoned.log.dirs");
                return;
            }
        };
        self.replica_manager
            .log_manager()
            .set_cordoned_dirs(&cordoned);
        let ids: BTreeSet<Uuid> = self
            .log_dirs
            .iter()
            .filter(|(p, _)| cordoned.contains(p))
            .map(|(_, id)| *id)
            .collect();
        self.ids.send_if_modified(|current| {
            let changed = *current != ids;
            if changed {
                info!(cordoned = ?cordoned, "cordoned log dirs changed");
                *current = ids;
            }
            changed
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> Vec<PathBuf> {
        vec![PathBuf::from("/data/a"), PathBuf::from("/data/b")]
    }

    #[test]
    fn values_parse_as_kafka_reads_them() {
        assert_eq!(parse_cordoned_log_dirs("", &dirs()), Ok(vec![]));
        assert_eq!(parse_cordoned_log_dirs("  ", &dirs()), Ok(vec![]));
        assert_eq!(
            parse_cordoned_log_dirs(" /data/b ", &dirs()),
            Ok(vec![PathBuf::from("/data/b")])
        );
        assert_eq!(parse_cordoned_log_dirs("*", &dirs()), Ok(dirs()));
        assert_eq!(
            parse_cordoned_log_dirs("/data/a , /data/b", &dirs()),
            Ok(dirs())
        );
    }

    #[test]
    fn bad_values_get_kafkas_messages() {
        assert_eq!(
            parse_cordoned_log_dirs("/data/a,/data/c,/x", &dirs()),
            Err(
                "requirement failed: All entries in cordoned.log.dirs must be present in \
                 log.dirs or log.dir. Missing entries : /data/c, /x"
                    .to_string()
            )
        );
        assert_eq!(
            parse_cordoned_log_dirs("*,/data/a", &dirs()),
            Err(
                "requirement failed: When cordoned.log.dirs is set to *, it must not contain \
                 other values"
                    .to_string()
            )
        );
        assert_eq!(
            parse_cordoned_log_dirs("/data/a,/data/a", &dirs()),
            Err("Configuration 'cordoned.log.dirs' values must not be duplicated.".to_string())
        );
        assert_eq!(
            parse_cordoned_log_dirs("/data/a,,/data/b", &dirs()),
            Err("Configuration 'cordoned.log.dirs' values must not be empty.".to_string())
        );
    }

    #[test]
    fn the_dynamic_value_wins_over_the_file() {
        let file = BTreeMap::from([(CORDONED_LOG_DIRS_CONFIG.to_string(), "/data/a".into())]);
        let none = BTreeMap::new();
        assert_eq!(effective_value(&none, &file), "/data/a");
        let dynamic = BTreeMap::from([(CORDONED_LOG_DIRS_CONFIG.to_string(), String::new())]);
        assert_eq!(effective_value(&dynamic, &file), "");
        assert_eq!(effective_value(&none, &none), "");
    }
}
