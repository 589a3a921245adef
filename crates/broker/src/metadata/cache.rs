//! The MetadataCache, as Kafka's `KRaftMetadataCache`: the image the request handlers answer
//! from, and the questions they ask of it (a topic by name or id, a partition's leader,
//! replicas, ISR and offline replicas, the alive brokers and their endpoints on a listener).
//!
//! It is a [`MetadataPublisher`]: the loader swaps each new image in, and a handler takes one
//! [`MetadataView`] per request, so every answer in a response comes from the same image
//! (Kafka's warning: "multiple reads of this value risk getting different image values").
//! Taking a view clones one `Arc` under a read lock held only for that; the publisher never
//! waits for a slow reader. The image carries no cluster id (Kafka's neither: it comes from
//! `meta.properties`), so the cache is given it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use kraftd_controller::image::{BrokerRegistration, PartitionRegistration, TopicImage};
use kraftd_controller::{MetadataDelta, MetadataImage, MetadataPublisher};
use kraftd_protocol::{ErrorCode, Uuid};

pub use kraftd_controller::image::DIRECTORY_LOST;
/// `MetadataResponse.NO_LEADER_ID`.
pub const NO_LEADER_ID: i32 = -1;
/// `MetadataResponse.NO_CONTROLLER_ID`.
pub const NO_CONTROLLER_ID: i32 = -1;

/// The shared handle: clone it for each request handler, and give one clone to the loader
/// as a publisher.
#[derive(Debug, Clone)]
pub struct MetadataCache {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    node_id: i32,
    cluster_id: Arc<str>,
    current: RwLock<Arc<MetadataImage>>,
    initialized: AtomicBool,
}

impl MetadataCache {
    /// An empty cache of broker `node_id` in cluster `cluster_id` (from `meta.properties`).
    pub fn new(node_id: i32, cluster_id: impl Into<String>) -> Self {
        MetadataCache {
            inner: Arc::new(Inner {
                node_id,
                cluster_id: Arc::from(cluster_id.into()),
                current: RwLock::new(Arc::new(MetadataImage::empty())),
                initialized: AtomicBool::new(false),
            }),
        }
    }

    pub fn node_id(&self) -> i32 {
        self.inner.node_id
    }

    pub fn cluster_id(&self) -> &str {
        &self.inner.cluster_id
    }

    /// Whether the loader has published anything yet (it does only once caught up).
    pub fn initialized(&self) -> bool {
        self.inner.initialized.load(Ordering::Acquire)
    }

    /// The current image. A poisoned lock still holds a whole value (the only write is one
    /// assignment), so poison is ignored.
    pub fn image(&self) -> Arc<MetadataImage> {
        self.inner
            .current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The current image with the queries over it; take one per request.
    pub fn view(&self) -> MetadataView {
        MetadataView {
            image: self.image(),
            cluster_id: self.inner.cluster_id.clone(),
        }
    }

    /// Replaces the image, as Kafka's `setImage`.
    pub fn set_image(&self, image: MetadataImage) {
        *self
            .inner
            .current
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(image);
        self.inner.initialized.store(true, Ordering::Release);
    }
}

impl MetadataPublisher for MetadataCache {
    fn name(&self) -> &str {
        "MetadataCache"
    }

    /// The image is immutable and complete, so a full reload and an incremental delta are
    /// the same swap here.
    fn on_metadata_update(&mut self, _delta: &MetadataDelta, image: &MetadataImage) {
        self.set_image(image.clone());
    }
}

/// A broker's endpoint on one listener, as Kafka's `Node`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerNode {
    pub id: i32,
    pub host: String,
    pub port: u16,
    pub rack: Option<String>,
}

/// One partition as the Metadata response describes it (Kafka's `MetadataResponsePartition`
/// as `getPartitionMetadata` fills it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadata {
    pub partition_index: i32,
    /// NONE; LEADER_NOT_AVAILABLE or LISTENER_NOT_FOUND when the leader cannot be reached on
    /// the listener; REPLICA_NOT_AVAILABLE when replicas were filtered out (v0 only).
    pub error: ErrorCode,
    /// [`NO_LEADER_ID`] when the leader is not a registered broker with the listener.
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// Replicas whose broker is unregistered, fenced, lacks the listener, or lost the log
    /// directory holding the replica.
    pub offline_replicas: Vec<i32>,
    pub eligible_leader_replicas: Vec<i32>,
    pub last_known_elr: Vec<i32>,
}

/// One image and the questions request handlers ask of it.
#[derive(Debug, Clone)]
pub struct MetadataView {
    image: Arc<MetadataImage>,
    cluster_id: Arc<str>,
}

impl MetadataView {
    pub fn image(&self) -> &MetadataImage {
        &self.image
    }

    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// The finalized `metadata.version`, `None` before the bootstrap records.
    pub fn metadata_version(&self) -> Option<i16> {
        self.image.features.metadata_version
    }

    // ---- topics ----

    pub fn topic(&self, name: &str) -> Option<&Arc<TopicImage>> {
        self.image.topics.get_by_name(name)
    }

    pub fn topic_by_id(&self, id: &Uuid) -> Option<&Arc<TopicImage>> {
        self.image.topics.get(id)
    }

    pub fn topic_id(&self, name: &str) -> Option<Uuid> {
        self.topic(name).map(|t| t.id)
    }

    pub fn topic_name(&self, id: &Uuid) -> Option<&str> {
        self.topic_by_id(id).map(|t| t.name.as_str())
    }

    /// Every topic name, in name order.
    pub fn topic_names(&self) -> impl Iterator<Item = &str> {
        self.image.topics.names().map(|(name, _)| name.as_str())
    }

    pub fn contains_topic(&self, name: &str) -> bool {
        self.topic(name).is_some()
    }

    pub fn contains_partition(&self, topic: &str, partition: i32) -> bool {
        self.partition(topic, partition).is_some()
    }

    pub fn num_partitions(&self, topic: &str) -> Option<usize> {
        self.topic(topic).map(|t| t.partitions.len())
    }

    pub fn partition(&self, topic: &str, partition: i32) -> Option<&Arc<PartitionRegistration>> {
        self.topic(topic)?.partition(partition)
    }

    /// Every partition of `topic` as a Metadata response describes it to a client on
    /// `listener`, in partition order; `None` for an unknown topic. Kafka's
    /// `getPartitionMetadata`: `error_unavailable_endpoints` (Metadata v0) drops replicas
    /// that are not alive on the listener from `replicas` and `isr`;
    /// `error_unavailable_listeners` answers LISTENER_NOT_FOUND rather than
    /// LEADER_NOT_AVAILABLE for a registered leader without the listener.
    pub fn partition_metadata(
        &self,
        topic: &str,
        listener: &str,
        error_unavailable_endpoints: bool,
        error_unavailable_listeners: bool,
    ) -> Option<Vec<PartitionMetadata>> {
        let topic = self.topic(topic)?;
        let partitions = topic.partitions.iter().map(|(&index, p)| {
            let replicas = self.filter_alive(&p.replicas, listener, error_unavailable_endpoints);
            let isr = self.filter_alive(&p.isr, listener, error_unavailable_endpoints);
            // Kafka's `getAliveEndpoint` checks registration and listener but not fencing:
            // a fenced leader is reported (the controller moves leadership off a fenced
            // broker right after), and shows in `offline_replicas`.
            let leader = self.broker(p.leader).and_then(|b| node(b, listener));
            let (error, leader_id) = match leader {
                None if self.image.cluster.broker(p.leader).is_none() => {
                    (ErrorCode::LeaderNotAvailable, NO_LEADER_ID)
                }
                None if error_unavailable_listeners => (ErrorCode::ListenerNotFound, NO_LEADER_ID),
                None => (ErrorCode::LeaderNotAvailable, NO_LEADER_ID),
                Some(node) if replicas.len() < p.replicas.len() || isr.len() < p.isr.len() => {
                    (ErrorCode::ReplicaNotAvailable, node.id)
                }
                Some(node) => (ErrorCode::None, node.id),
            };
            PartitionMetadata {
                partition_index: index,
                error,
                leader_id,
                leader_epoch: p.leader_epoch,
                replicas,
                isr,
                offline_replicas: self.offline_replicas(p, listener),
                eligible_leader_replicas: p.elr.clone(),
                last_known_elr: p.last_known_elr.clone(),
            }
        });
        Some(partitions.collect())
    }

    /// The replicas of `partition` a client on `listener` cannot use (Kafka's
    /// `getOfflineReplicas`): the broker is not registered, is fenced, has no such listener,
    /// or no longer has the replica's log directory online.
    pub fn offline_replicas(&self, partition: &PartitionRegistration, listener: &str) -> Vec<i32> {
        partition
            .replicas
            .iter()
            .copied()
            .filter(|&id| match self.image.cluster.broker(id) {
                None => true,
                Some(b) => {
                    b.fenced
                        || !b.listeners.contains_key(listener)
                        || !partition.directory(id).is_none_or(|d| b.has_online_dir(d))
                }
            })
            .collect()
    }

    fn filter_alive(&self, brokers: &[i32], listener: &str, filter: bool) -> Vec<i32> {
        if !filter {
            return brokers.to_vec();
        }
        brokers
            .iter()
            .copied()
            .filter(|&id| {
                self.image
                    .cluster
                    .broker(id)
                    .is_some_and(|b| !b.fenced && b.listeners.contains_key(listener))
            })
            .collect()
    }

    // ---- brokers ----

    pub fn broker(&self, id: i32) -> Option<&Arc<BrokerRegistration>> {
        self.image.cluster.broker(id)
    }

    /// Registered and not fenced (Kafka's `hasAliveBroker`; a broker in controlled shutdown
    /// is still alive).
    pub fn has_alive_broker(&self, id: i32) -> bool {
        self.broker(id).is_some_and(|b| !b.fenced)
    }

    /// Registered and fenced; an unregistered broker is not "fenced".
    pub fn is_broker_fenced(&self, id: i32) -> bool {
        self.broker(id).is_some_and(|b| b.fenced)
    }

    pub fn is_broker_shutting_down(&self, id: i32) -> bool {
        self.broker(id).is_some_and(|b| b.in_controlled_shutdown)
    }

    /// The broker epoch of an alive broker.
    pub fn alive_broker_epoch(&self, id: i32) -> Option<i64> {
        self.broker(id).filter(|b| !b.fenced).map(|b| b.epoch)
    }

    /// Alive broker ids, in id order.
    pub fn alive_broker_ids(&self) -> Vec<i32> {
        self.image
            .cluster
            .brokers()
            .filter(|b| !b.fenced)
            .map(|b| b.id)
            .collect()
    }

    /// An alive broker's endpoint on `listener`.
    pub fn alive_broker_node(&self, id: i32, listener: &str) -> Option<BrokerNode> {
        self.broker(id)
            .filter(|b| !b.fenced)
            .and_then(|b| node(b, listener))
    }

    /// Every alive broker with an endpoint on `listener`, in id order: the brokers of a
    /// Metadata response.
    pub fn alive_broker_nodes(&self, listener: &str) -> Vec<BrokerNode> {
        self.image
            .cluster
            .brokers()
            .filter(|b| !b.fenced)
            .filter_map(|b| node(b, listener))
            .collect()
    }

    /// Every registered broker with an endpoint on `listener`, fenced ones included (Kafka's
    /// `getBrokerNodes`).
    pub fn broker_nodes(&self, listener: &str) -> Vec<BrokerNode> {
        self.image
            .cluster
            .brokers()
            .filter_map(|b| node(b, listener))
            .collect()
    }

    /// The alive brokers hosting a replica of the partition, by id, with their endpoint on
    /// `listener` (Kafka's `getPartitionReplicaEndpoints`).
    pub fn partition_replica_endpoints(
        &self,
        topic: &str,
        partition: i32,
        listener: &str,
    ) -> BTreeMap<i32, BrokerNode> {
        let Some(p) = self.partition(topic, partition) else {
            return BTreeMap::new();
        };
        p.replicas
            .iter()
            .filter_map(|&id| Some((id, self.alive_broker_node(id, listener)?)))
            .collect()
    }

    /// One alive broker picked with `random` (Kafka's `getRandomAliveBrokerId`; the caller
    /// supplies the randomness, so the choice can be replayed in tests).
    pub fn random_alive_broker_id(&self, random: u64) -> Option<i32> {
        let alive = self.alive_broker_ids();
        if alive.is_empty() {
            return None;
        }
        let index = (random % alive.len() as u64) as usize;
        Some(alive[index])
    }

    /// The `controller_id` of Metadata and DescribeCluster responses: in KRaft not the
    /// active controller (clients cannot reach it, KIP-590) but a random alive broker, which
    /// forwards what a client sends there; [`NO_CONTROLLER_ID`] when none is alive.
    pub fn controller_id_for_clients(&self, random: u64) -> i32 {
        self.random_alive_broker_id(random)
            .unwrap_or(NO_CONTROLLER_ID)
    }
}

/// A broker's endpoint on `listener`, if it has one (Kafka's `BrokerRegistration.node`).
fn node(broker: &BrokerRegistration, listener: &str) -> Option<BrokerNode> {
    broker.listeners.get(listener).map(|e| BrokerNode {
        id: broker.id,
        host: e.host.clone(),
        port: e.port,
        rack: broker.rack.clone(),
    })
}
