//! The value of `leader.replication.throttled.replicas` and
//! `follower.replication.throttled.replicas`, as Kafka's `ThrottledReplicaListValidator`
//! checks it and `TopicConfigHandler.parseThrottledPartitions` reads it: the literal `*` (every
//! replica of the topic) or a list of `partition:broker` pairs. The controller refuses any
//! other value with Kafka's message; each broker reads the partitions listed for itself.

use super::ConfigValueError;

/// The names of the two topic configs.
pub const LEADER_THROTTLED_REPLICAS: &str = "leader.replication.throttled.replicas";
pub const FOLLOWER_THROTTLED_REPLICAS: &str = "follower.replication.throttled.replicas";

/// A parsed throttled-replicas list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThrottledReplicas {
    /// `*`: every replica of the topic.
    All,
    /// `(partition, broker)` pairs, in the order given (empty: none).
    Listed(Vec<(i32, i32)>),
}

impl ThrottledReplicas {
    /// The partitions throttled on `broker_id` (Kafka's `parseThrottledPartitions`):
    /// `None` for all of them.
    pub fn partitions_of(&self, broker_id: i32) -> Option<Vec<i32>> {
        match self {
            ThrottledReplicas::All => None,
            ThrottledReplicas::Listed(pairs) => Some(
                pairs
                    .iter()
                    .filter(|(_, broker)| *broker == broker_id)
                    .map(|(partition, _)| *partition)
                    .collect(),
            ),
        }
    }
}

/// Parses `value` of config `name` as Kafka does: the LIST type's split on commas (an
/// empty value is the empty list), then the validator on each trimmed item, which must be
/// empty or `digits:digits`, unless the whole list is `*`. The error is Kafka's
/// `ConfigException` text (the value shown as the parsed Java list).
pub fn parse_throttled_replicas(
    name: &str,
    value: &str,
) -> Result<ThrottledReplicas, ConfigValueError> {
    let trimmed = value.trim();
    let items: Vec<&str> = if trimmed.is_empty() {
        Vec::new()
    } else {
        trimmed.split(',').map(str::trim).collect()
    };
    if items.concat() == "*" {
        return Ok(ThrottledReplicas::All);
    }
    let pair = |item: &str| -> Option<(i32, i32)> {
        let (partition, broker) = item.split_once(':')?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(partition) || !digits(broker) {
            return None;
        }
        Some((partition.parse().ok()?, broker.parse().ok()?))
    };
    let mut pairs = Vec::new();
    for item in &items {
        if item.is_empty() {
            continue;
        }
        match pair(item) {
            Some(p) => pairs.push(p),
            None => {
                return Err(ConfigValueError::InvalidValue {
                    key: name.to_string(),
                    value: format!("[{}]", items.join(", ")),
                    reason: format!(
                        "{name} must be the literal '*' or a list of replicas in the following \
                         format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
                    ),
                })
            }
        }
    }
    Ok(ThrottledReplicas::Listed(pairs))
}

/// Whether `name` is one of the two throttled-replicas configs.
pub fn is_throttled_replicas_config(name: &str) -> bool {
    name == LEADER_THROTTLED_REPLICAS || name == FOLLOWER_THROTTLED_REPLICAS
}
