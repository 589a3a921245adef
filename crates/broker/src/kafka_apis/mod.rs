//! KafkaApis: the answers a broker builds from its metadata for client requests (Metadata,
//! DescribeCluster, DescribeConfigs, ...), as pure functions of the image and the request.
//!
//! Each builder takes the `MetadataImage` the request is answered from (one image per
//! request, so every part of an answer is read at the same log offset, as Kafka's
//! `KRaftMetadataCache` reads its `currentImage` once), the decoded request, the request
//! version and a [`BrokerContext`], and returns the generated response type with every field
//! the version lacks left at its default, so the response encodes at that version. No IO,
//! no clock, no randomness: the "random alive broker" Kafka names as controller is chosen by a
//! seed the caller passes.

pub mod describe_cluster;
pub mod describe_topic_partitions;
pub mod list_config_resources;
pub mod metadata;

use kraftd_controller::image::BrokerRegistration;
use kraftd_controller::MetadataImage;

/// Kafka's default for "authorized operations" fields when they were not asked for
/// (`Integer.MIN_VALUE`). These builders leave it; the request handler, which knows the
/// principal, fills in the bit set of allowed operations when a client asks
/// ([`crate::server::auth_helper`]).
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

/// What an answer needs to know about the broker building it and the connection the request
/// came in on.
#[derive(Debug, Clone, Copy)]
pub struct BrokerContext<'a> {
    /// This broker's `node.id`.
    pub broker_id: i32,
    pub cluster_id: &'a str,
    /// The listener the request arrived on: brokers are described by their endpoint on it.
    pub listener_name: &'a str,
    /// Picks the broker named as "controller" among the alive ones (Kafka picks one at
    /// random per request); any value is fine, a fixed one makes answers reproducible.
    pub controller_seed: u64,
}

/// The id Kafka's KRaft brokers give clients as `controller_id` in Metadata and
/// DescribeCluster: a random unfenced broker (`KRaftMetadataCache.getRandomAliveBrokerId`),
/// since clients can only reach brokers; -1 when no broker is alive.
pub fn random_alive_broker_id(image: &MetadataImage, seed: u64) -> i32 {
    let alive: Vec<i32> = image
        .cluster
        .brokers()
        .filter(|b| !b.fenced)
        .map(|b| b.id)
        .collect();
    if alive.is_empty() {
        return -1;
    }
    // usize fits in u64 on every target Rust supports, and the result is below alive.len().
    let index = (seed % alive.len() as u64) as usize;
    alive[index]
}

/// A broker's endpoint on `listener`, if it has that listener (Kafka's
/// `BrokerRegistration.node(listenerName)`).
pub(crate) fn endpoint<'b>(
    broker: &'b BrokerRegistration,
    listener: &str,
) -> Option<&'b kraftd_controller::image::Endpoint> {
    broker.listeners.get(listener)
}

/// Where a broker is reached from another broker: `host:port` of its `listener` (the
/// inter-broker listener), or of its first listener when none is configured.
pub(crate) fn broker_address(
    broker: &BrokerRegistration,
    listener: Option<&str>,
) -> Option<String> {
    let e = match listener {
        Some(name) => endpoint(broker, name)?,
        None => broker.listeners.values().next()?,
    };
    Some(format!("{}:{}", e.host, e.port))
}
