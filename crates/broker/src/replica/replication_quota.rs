//! Replication throttles (Kafka's `ReplicationQuotaManager`, one for the leader side and one
//! for the follower side), so moving partitions onto a broker does not take the bandwidth
//! producers and consumers need.
//!
//! Each side has a rate, the dynamic broker config `leader.replication.throttled.rate` /
//! `follower.replication.throttled.rate` (this broker's override, else the cluster default;
//! unset is unlimited), and a set of throttled replicas, the topic configs
//! `leader.replication.throttled.replicas` / `follower.replication.throttled.replicas`
//! (`*`, or `partition:broker` pairs of which this broker reads its own). Both are read
//! from the [`DynamicConfigs`] handle the metadata log feeds, re-read whenever its version
//! moves, so a change applies without a restart.
//!
//! The bytes of throttled partitions are recorded into a windowed rate, Kafka's `SimpleRate`
//! over `replication.quota.window.num` samples of `replication.quota.window.size.seconds`;
//! the quota is exceeded while that rate is above the bound. As Kafka:
//! - the leader records the bytes it sends followers for throttled partitions (in-sync
//!   followers' included), and while over the quota answers a throttled partition empty to
//!   a follower that is not in the ISR (`shouldLeaderThrottle`);
//! - the follower records the bytes it fetched for throttled partitions, and while over the
//!   quota leaves a throttled partition out of its Fetch unless the replica had caught up
//!   with the leader's HW at its last fetch (`shouldFollowerThrottle`).
//!
//! Sans IO: every call takes the time in milliseconds.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use kraftd_controller::control::config_defs::{
    parse_throttled_replicas, FOLLOWER_THROTTLED_REPLICAS, LEADER_THROTTLED_REPLICAS,
};
use kraftd_controller::publisher::{DynamicConfigSnapshot, DynamicConfigs};
use kraftd_controller::quota::QuotaWindow;
use kraftd_raft::driver::stats::Rate;

/// Which side a quota throttles (Kafka's `QuotaType.LEADER_REPLICATION` /
/// `FOLLOWER_REPLICATION` / `ALTER_LOG_DIRS_REPLICATION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicationSide {
    Leader,
    Follower,
    /// Copying a replica into its future log in another log dir (AlterReplicaLogDirs):
    /// every such copy is throttled once a rate is set; there is no replicas list.
    AlterLogDirs,
}

impl ReplicationSide {
    /// The dynamic broker config holding the rate.
    pub fn rate_config(self) -> &'static str {
        match self {
            ReplicationSide::Leader => "leader.replication.throttled.rate",
            ReplicationSide::Follower => "follower.replication.throttled.rate",
            ReplicationSide::AlterLogDirs => "replica.alter.log.dirs.io.max.bytes.per.second",
        }
    }

    /// The topic config listing the throttled replicas (`None`: every replica is).
    pub fn replicas_config(self) -> Option<&'static str> {
        match self {
            ReplicationSide::Leader => Some(LEADER_THROTTLED_REPLICAS),
            ReplicationSide::Follower => Some(FOLLOWER_THROTTLED_REPLICAS),
            ReplicationSide::AlterLogDirs => None,
        }
    }

    /// Kafka's metric group (`QuotaType.toString`), the JMX `type`.
    pub fn metric_group(self) -> &'static str {
        match self {
            ReplicationSide::Leader => "LeaderReplication",
            ReplicationSide::Follower => "FollowerReplication",
            ReplicationSide::AlterLogDirs => "AlterLogDirsReplication",
        }
    }
}

/// The throttled partitions of one topic on this broker.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Throttled {
    All,
    Partitions(Vec<i32>),
}

/// One side's quota: the sans-IO core, fed its settings explicitly (tests drive it with
/// explicit clocks).
#[derive(Debug)]
pub struct ReplicationQuota {
    broker_id: i32,
    side: ReplicationSide,
    rate: Rate,
    /// The bound in bytes per second; `None` is unlimited (Kafka's `Long.MAX_VALUE`).
    bound: Option<f64>,
    /// Per topic with a non-empty replicas list, its partitions throttled here.
    throttled: HashMap<String, Throttled>,
}

impl ReplicationQuota {
    pub fn new(broker_id: i32, side: ReplicationSide, window: QuotaWindow) -> Self {
        ReplicationQuota {
            broker_id,
            side,
            rate: Rate::simple(window.sample_config()),
            bound: None,
            throttled: HashMap::new(),
        }
    }

    /// Kafka's `updateQuota`: the rate config's value (`None`: unset, unlimited).
    pub fn set_rate(&mut self, bytes_per_second: Option<i64>) {
        self.bound = bytes_per_second
            .filter(|b| *b >= 0 && *b != i64::MAX)
            .map(|b| b as f64);
    }

    /// Kafka's `markThrottled` / `removeThrottle`: the topic's replicas config as set (an
    /// invalid one, which the controller never lets through, throttles nothing).
    pub fn set_topic_replicas(&mut self, topic: &str, value: Option<&str>) {
        let Some(config) = self.side.replicas_config() else {
            return;
        };
        let parsed = value
            .filter(|v| !v.trim().is_empty())
            .and_then(|v| parse_throttled_replicas(config, v).ok());
        match parsed.map(|p| p.partitions_of(self.broker_id)) {
            Some(None) => {
                self.throttled.insert(topic.to_string(), Throttled::All);
            }
            Some(Some(partitions)) => {
                self.throttled
                    .insert(topic.to_string(), Throttled::Partitions(partitions));
            }
            None => {
                self.throttled.remove(topic);
            }
        }
    }

    /// Kafka's `isThrottled`.
    pub fn is_throttled(&self, topic: &str, partition: i32) -> bool {
        if self.side.replicas_config().is_none() {
            return true;
        }
        match self.throttled.get(topic) {
            Some(Throttled::All) => true,
            Some(Throttled::Partitions(p)) => p.contains(&partition),
            None => false,
        }
    }

    /// Kafka's `isQuotaExceeded`: the rate now is above the bound.
    pub fn is_quota_exceeded(&mut self, now_ms: u64) -> bool {
        match self.bound {
            Some(bound) => self.rate.measure(now_ms) > bound,
            None => false,
        }
    }

    /// Kafka's `record`: bytes of throttled partitions, counted whatever the quota.
    pub fn record(&mut self, bytes: u64, now_ms: u64) {
        self.rate.record(bytes as f64, now_ms);
    }

    /// The measured rate (Kafka's `byte-rate` metric).
    pub fn byte_rate(&mut self, now_ms: u64) -> f64 {
        self.rate.measure(now_ms)
    }

    /// Kafka's `upperBound`: the bound, `i64::MAX` when unlimited.
    pub fn upper_bound(&self) -> i64 {
        self.bound.map_or(i64::MAX, |b| b as i64)
    }
}

/// One side's quota kept current from the dynamic configs.
#[derive(Debug)]
pub struct ReplicationQuotaManager {
    configs: DynamicConfigs,
    state: Mutex<ManagerState>,
}

#[derive(Debug)]
struct ManagerState {
    quota: ReplicationQuota,
    /// The configs' version the quota was set from (`None`: never).
    version: Option<u64>,
}

impl ReplicationQuotaManager {
    pub fn new(side: ReplicationSide, window: QuotaWindow, configs: DynamicConfigs) -> Self {
        ReplicationQuotaManager {
            state: Mutex::new(ManagerState {
                quota: ReplicationQuota::new(configs.node_id(), side, window),
                version: None,
            }),
            configs,
        }
    }

    /// The quota, re-read from the dynamic configs if they changed since last time.
    fn quota(&self) -> MutexGuard<'_, ManagerState> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let snapshot = self.configs.snapshot();
        if state.version != Some(snapshot.version()) {
            state.version = Some(snapshot.version());
            apply_snapshot(&mut state.quota, &snapshot);
        }
        state
    }

    pub fn is_throttled(&self, topic: &str, partition: i32) -> bool {
        self.quota().quota.is_throttled(topic, partition)
    }

    pub fn is_quota_exceeded(&self, now_ms: u64) -> bool {
        self.quota().quota.is_quota_exceeded(now_ms)
    }

    /// Kafka's `shouldLeaderThrottle` / `shouldFollowerThrottle` for a replica that is not
    /// in sync: throttled and over the quota.
    pub fn should_throttle(&self, topic: &str, partition: i32, now_ms: u64) -> bool {
        let mut state = self.quota();
        state.quota.is_throttled(topic, partition) && state.quota.is_quota_exceeded(now_ms)
    }

    /// Records the bytes of the throttled ones among `partitions` (topic, partition,
    /// bytes), as Kafka's `sizeOfThrottledPartitions` then `record`.
    pub fn record_throttled<'a>(
        &self,
        partitions: impl IntoIterator<Item = (&'a str, i32, usize)>,
        now_ms: u64,
    ) {
        let mut state = self.quota();
        let bytes: usize = partitions
            .into_iter()
            .filter(|(topic, partition, _)| state.quota.is_throttled(topic, *partition))
            .map(|(_, _, bytes)| bytes)
            .sum();
        if bytes > 0 {
            state.quota.record(bytes as u64, now_ms);
        }
    }

    pub fn byte_rate(&self, now_ms: u64) -> f64 {
        self.quota().quota.byte_rate(now_ms)
    }

    pub fn upper_bound(&self) -> i64 {
        self.quota().quota.upper_bound()
    }
}

/// Sets `quota` from one snapshot of the dynamic configs.
fn apply_snapshot(quota: &mut ReplicationQuota, snapshot: &DynamicConfigSnapshot) {
    let side = quota.side;
    quota.set_rate(
        snapshot
            .broker_config(side.rate_config())
            .and_then(|v| v.trim().parse::<i64>().ok()),
    );
    quota.throttled.clear();
    if let Some(config) = side.replicas_config() {
        for (topic, value) in snapshot.topics_with(config) {
            quota.set_topic_replicas(topic, Some(value));
        }
    }
}

/// Both sides' quotas and the replication byte counters (Kafka's `ReplicationQuotaManager`s
/// and BrokerTopicMetrics' `ReplicationBytesInPerSec` / `ReplicationBytesOutPerSec`),
/// shared by the fetch path and the replica fetchers.
#[derive(Debug)]
pub struct ReplicationQuotas {
    pub leader: ReplicationQuotaManager,
    pub follower: ReplicationQuotaManager,
    /// `replica.alter.log.dirs.io.max.bytes.per.second`: the copy into future logs.
    pub alter_log_dirs: ReplicationQuotaManager,
    /// Record bytes the replica fetchers appended.
    pub replication_bytes_in: AtomicU64,
    /// Record bytes sent to followers.
    pub replication_bytes_out: AtomicU64,
}

impl ReplicationQuotas {
    /// `window` for both replication sides, `alter_log_dirs_window` for the copy into
    /// future logs.
    pub fn new(
        window: QuotaWindow,
        alter_log_dirs_window: QuotaWindow,
        configs: DynamicConfigs,
    ) -> Self {
        ReplicationQuotas {
            leader: ReplicationQuotaManager::new(ReplicationSide::Leader, window, configs.clone()),
            follower: ReplicationQuotaManager::new(
                ReplicationSide::Follower,
                window,
                configs.clone(),
            ),
            alter_log_dirs: ReplicationQuotaManager::new(
                ReplicationSide::AlterLogDirs,
                alter_log_dirs_window,
                configs,
            ),
            replication_bytes_in: AtomicU64::new(0),
            replication_bytes_out: AtomicU64::new(0),
        }
    }

    /// Unthrottled: no dynamic config ever set (tests, tools).
    pub fn unthrottled(broker_id: i32) -> Self {
        Self::new(
            QuotaWindow::default(),
            QuotaWindow::default(),
            DynamicConfigs::new(broker_id),
        )
    }

    /// `kafka_server_{Leader,Follower,AlterLogDirs}Replication_byte_rate` (Kafka's `byte-rate` of
    /// `kafka.server:type=LeaderReplication` / `FollowerReplication`) and
    /// `kafka_server_BrokerTopicMetrics_Replication{In,Out}PerSec_total`.
    pub fn write_prometheus(&self, node_id: i32, now_ms: u64, out: &mut String) {
        use kraftd_raft::driver::metrics::write_prometheus_metric;
        for (side, quota) in [
            (ReplicationSide::Leader, &self.leader),
            (ReplicationSide::Follower, &self.follower),
            (ReplicationSide::AlterLogDirs, &self.alter_log_dirs),
        ] {
            write_prometheus_metric(
                out,
                &format!("kafka_server_{}", side.metric_group()),
                "byte_rate",
                "gauge",
                &format!(
                    "Tracking byte-rate for {} (bytes/s of throttled replicas).",
                    side.metric_group()
                ),
                node_id,
                quota.byte_rate(now_ms),
            );
        }
        let bt = "kafka_server_BrokerTopicMetrics";
        write_prometheus_metric(
            out,
            bt,
            "ReplicationBytesInPerSec_total",
            "counter",
            "Record bytes this broker's replica fetchers fetched from leaders.",
            node_id,
            self.replication_bytes_in.load(Ordering::Relaxed),
        );
        write_prometheus_metric(
            out,
            bt,
            "ReplicationBytesOutPerSec_total",
            "counter",
            "Record bytes this broker sent to followers.",
            node_id,
            self.replication_bytes_out.load(Ordering::Relaxed),
        );
    }
}

#[cfg(test)]
mod tests;
