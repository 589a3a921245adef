//! `DynamicConfigPublisher`: the dynamic configs one node acts on, as Kafka's
//! `DynamicConfigPublisher` feeding `DynamicBrokerConfig` and the topic config handlers. It
//! exists so a config change replayed from the metadata log takes effect without a restart:
//! request handlers and log managers read the shared [`DynamicConfigs`] handle instead of a
//! value fixed at startup, and watch its version to notice a change.
//!
//! Kept per node: this broker's overrides (broker resource named by its id), the cluster-wide
//! broker default (broker resource with the empty name) and every topic's overrides. Other
//! brokers' overrides, broker loggers, client metrics and groups are someone else's concern.
//!
//! Components that take configs live by more than re-reading a value register a
//! [`Reconfigurable`] (Kafka's `Reconfigurable` / `ListenerReconfigurable`, such as a
//! listener's TLS stores): a broker validates a change against them before forwarding it, and
//! this publisher reconfigures them whenever a record for this node's own resource is
//! replayed, even one that sets a value again, so a keystore file rewritten in place is
//! re-read (Kafka's `reloadUpdatedFilesWithoutConfigChange`, KAFKA-14136).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use imbl::OrdMap;

use super::{is_full_reload, MetadataPublisher, Published};
use crate::image::delta::MetadataDelta;
use crate::image::{ConfigResource, ConfigResourceType, MetadataImage};

/// Feeds a [`DynamicConfigs`] handle from the metadata log.
#[derive(Debug)]
pub struct DynamicConfigPublisher {
    configs: DynamicConfigs,
    /// The broker resource name of this node, computed once rather than per change.
    broker_resource_name: String,
}

/// A cheap, shareable view of one node's dynamic configs; every clone sees every update.
#[derive(Debug, Clone)]
pub struct DynamicConfigs {
    node_id: i32,
    inner: Arc<Published<DynamicConfigSnapshot>>,
    reconfigurables: Arc<Mutex<Vec<Arc<dyn Reconfigurable>>>>,
}

/// Kafka's `Reconfigurable`: a component of a running node that takes some of its dynamic
/// broker configs live. Each call gets this node's effective dynamic broker configs (its own
/// overrides over the cluster default) and picks the keys it owns.
pub trait Reconfigurable: Send + Sync + fmt::Debug {
    /// Whether these configs could be applied; Kafka's message when not (a keystore that
    /// does not load, a certificate whose subject changed, ...).
    fn validate_reconfiguration(&self, configs: &BTreeMap<String, String>) -> Result<(), String>;

    /// Applies the configs: called with every record replayed for this node's own resource
    /// or the cluster default, so a store file may be re-read without a value changing. A failure is logged by the
    /// component and leaves it as it was.
    fn reconfigure(&self, configs: &BTreeMap<String, String>);
}

/// The dynamic configs at one point of the log. Immutable, so several keys read from one
/// snapshot are consistent with each other.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DynamicConfigSnapshot {
    version: u64,
    broker: OrdMap<String, String>,
    cluster_default: OrdMap<String, String>,
    topics: OrdMap<String, OrdMap<String, String>>,
}

impl DynamicConfigPublisher {
    pub fn new(configs: DynamicConfigs) -> Self {
        DynamicConfigPublisher {
            broker_resource_name: configs.node_id.to_string(),
            configs,
        }
    }

    /// The handle this publisher feeds.
    pub fn configs(&self) -> &DynamicConfigs {
        &self.configs
    }

    fn reload(&self, image: &MetadataImage) {
        let broker = ConfigResource::new(ConfigResourceType::Broker, &*self.broker_resource_name);
        let default = ConfigResource::new(ConfigResourceType::Broker, "");
        let topics: OrdMap<String, OrdMap<String, String>> = image
            .configs
            .iter()
            .filter(|(resource, _)| resource.resource_type == ConfigResourceType::Topic)
            .map(|(resource, keys)| (resource.name.clone(), keys.clone()))
            .collect();
        let updated = self.configs.inner.update(|snapshot| {
            let next = DynamicConfigSnapshot {
                version: snapshot.version,
                broker: image.configs.get(&broker).cloned().unwrap_or_default(),
                cluster_default: image.configs.get(&default).cloned().unwrap_or_default(),
                topics,
            };
            if next == *snapshot {
                return false;
            }
            *snapshot = next;
            snapshot.version += 1;
            true
        });
        if updated {
            tracing::info!(node_id = self.configs.node_id, "dynamic configs reloaded");
        }
        self.configs.reconfigure();
    }

    fn apply_changes(&self, delta: &MetadataDelta, image: &MetadataImage) {
        let relevant: Vec<&ConfigResource> = delta
            .changes()
            .changed_configs
            .iter()
            .filter(|resource| self.is_relevant(resource))
            .collect();
        if relevant.is_empty() {
            return;
        }
        // This node's effective broker configs change with its own resource and with the
        // cluster default (Kafka's DynamicBrokerConfig reconfigures on either).
        let own = relevant
            .iter()
            .any(|r| r.resource_type == ConfigResourceType::Broker);
        self.configs.inner.update(|snapshot| {
            let mut changed = false;
            for resource in relevant {
                let keys = image.configs.get(resource).cloned().unwrap_or_default();
                changed |= match resource.resource_type {
                    ConfigResourceType::Topic => {
                        let previous = if keys.is_empty() {
                            snapshot.topics.remove(&resource.name)
                        } else {
                            snapshot.topics.insert(resource.name.clone(), keys.clone())
                        };
                        previous.unwrap_or_default() != keys
                    }
                    ConfigResourceType::Broker if resource.name.is_empty() => {
                        std::mem::replace(&mut snapshot.cluster_default, keys.clone()) != keys
                    }
                    ConfigResourceType::Broker => {
                        std::mem::replace(&mut snapshot.broker, keys.clone()) != keys
                    }
                    _ => unreachable!("{resource:?} passed the relevance filter"),
                };
                tracing::debug!(?resource, "dynamic config changed");
            }
            if changed {
                snapshot.version += 1;
            }
            changed
        });
        if own {
            self.configs.reconfigure();
        }
    }

    fn is_relevant(&self, resource: &ConfigResource) -> bool {
        match resource.resource_type {
            ConfigResourceType::Topic => true,
            ConfigResourceType::Broker => {
                resource.name.is_empty() || resource.name == self.broker_resource_name
            }
            ConfigResourceType::BrokerLogger
            | ConfigResourceType::ClientMetrics
            | ConfigResourceType::Group => false,
        }
    }
}

impl MetadataPublisher for DynamicConfigPublisher {
    fn name(&self) -> &str {
        "DynamicConfigPublisher"
    }

    fn on_metadata_update(&mut self, delta: &MetadataDelta, image: &MetadataImage) {
        if is_full_reload(delta) {
            self.reload(image);
        } else {
            self.apply_changes(delta, image);
        }
    }
}

impl DynamicConfigs {
    /// An empty view for node `node_id`: nothing is set until a publisher feeds it.
    pub fn new(node_id: i32) -> Self {
        DynamicConfigs {
            node_id,
            inner: Arc::new(Published::new(DynamicConfigSnapshot::default())),
            reconfigurables: Arc::default(),
        }
    }

    /// Registers a component to validate and reconfigure with this node's dynamic configs
    /// (Kafka's `DynamicBrokerConfig.addReconfigurable`); it is reconfigured at once with
    /// the configs already published.
    pub fn add_reconfigurable(&self, reconfigurable: Arc<dyn Reconfigurable>) {
        reconfigurable.reconfigure(&self.snapshot().broker_configs());
        self.reconfigurables
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(reconfigurable);
    }

    /// Whether this node's dynamic broker configs may become `configs` (its own overrides
    /// over the cluster default, after a change): every registered component's verdict, the
    /// first refusal's message.
    pub fn validate_reconfiguration(
        &self,
        configs: &BTreeMap<String, String>,
    ) -> Result<(), String> {
        let reconfigurables = self
            .reconfigurables
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        reconfigurables
            .iter()
            .try_for_each(|r| r.validate_reconfiguration(configs))
    }

    /// Reconfigures every registered component with the configs now published.
    fn reconfigure(&self) {
        let reconfigurables = self
            .reconfigurables
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if reconfigurables.is_empty() {
            return;
        }
        let configs = self.snapshot().broker_configs();
        for r in &reconfigurables {
            r.reconfigure(&configs);
        }
    }

    pub fn node_id(&self) -> i32 {
        self.node_id
    }

    /// The current snapshot, for reading several keys consistently.
    pub fn snapshot(&self) -> Arc<DynamicConfigSnapshot> {
        self.inner.load()
    }

    /// Grows by one with every update that changed a value this node sees; compare it with
    /// an earlier reading to notice that configs must be re-read.
    pub fn version(&self) -> u64 {
        self.inner.load().version
    }

    /// This broker's dynamic value of `key`: its own override, else the cluster default.
    pub fn broker_config(&self, key: &str) -> Option<String> {
        self.inner.load().broker_config(key).map(str::to_string)
    }

    /// A topic's override of `key`.
    pub fn topic_config(&self, topic: &str, key: &str) -> Option<String> {
        self.inner
            .load()
            .topic_config(topic, key)
            .map(str::to_string)
    }
}

impl DynamicConfigSnapshot {
    pub fn version(&self) -> u64 {
        self.version
    }

    /// This broker's override of `key`, else the cluster default, as Kafka's
    /// `DynamicBrokerConfig` layers them.
    pub fn broker_config(&self, key: &str) -> Option<&str> {
        self.broker
            .get(key)
            .or_else(|| self.cluster_default.get(key))
            .map(String::as_str)
    }

    /// This broker's own overrides, without the cluster default.
    pub fn own_broker_configs(&self) -> BTreeMap<String, String> {
        self.broker.clone().into_iter().collect()
    }

    /// The cluster-wide defaults alone.
    pub fn cluster_default_configs(&self) -> BTreeMap<String, String> {
        self.cluster_default.clone().into_iter().collect()
    }

    /// Every dynamic broker key in effect on this node, overrides over defaults.
    pub fn broker_configs(&self) -> BTreeMap<String, String> {
        let mut effective: BTreeMap<String, String> =
            self.cluster_default.clone().into_iter().collect();
        effective.extend(self.broker.clone());
        effective
    }

    /// The cluster-wide default of `key` alone, ignoring this broker's override.
    pub fn cluster_default_config(&self, key: &str) -> Option<&str> {
        self.cluster_default.get(key).map(String::as_str)
    }

    /// A topic's override of `key`. Falling back to a broker-level synonym
    /// (`log.retention.ms` for `retention.ms`) is the caller's, as in Kafka's `LogConfig`.
    pub fn topic_config(&self, topic: &str, key: &str) -> Option<&str> {
        self.topics
            .get(topic)
            .and_then(|keys| keys.get(key))
            .map(String::as_str)
    }

    /// Every topic that sets `key`, with its value (the replication throttles read their
    /// replica lists so).
    pub fn topics_with<'a>(&'a self, key: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> {
        self.topics
            .iter()
            .filter_map(move |(topic, keys)| keys.get(key).map(|v| (topic.as_str(), v.as_str())))
    }

    /// A topic's overrides; `None` when it has none.
    pub fn topic_configs(&self, topic: &str) -> Option<&OrdMap<String, String>> {
        self.topics.get(topic)
    }
}
