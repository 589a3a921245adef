//! The internal topics a broker creates on first use, as Kafka's `AutoTopicCreationManager`
//! does for them: `__consumer_offsets` (FindCoordinator for a group, a Metadata naming it)
//! compacted with `offsets.topic.num.partitions`, `offsets.topic.replication.factor` (fewer
//! when the cluster has fewer brokers, with a warning) and `offsets.topic.segment.bytes`;
//! `__transaction_state` with Kafka's `transaction.state.log.*` settings;
//! `__share_group_state` with Kafka's `share.coordinator.state.topic.*` settings and the topic
//! configs KIP-932 gives it (delete policy, infinite retention). The CreateTopics
//! goes to the controller as the broker itself, not in an Envelope: no client asked for it,
//! so the broker's own principal is the one authorized.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use kraftd_controller::MetadataImage;
use kraftd_log::clock::unix_ms;
use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kraftd_protocol::messages::CreateTopicsRequest;
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::apis_context::{BrokerApisContext, FORWARD_TIMEOUT};
use kraftd_coordinator::group::GROUP_METADATA_TOPIC_NAME;
use kraftd_coordinator::share::SHARE_GROUP_STATE_TOPIC_NAME;
use kraftd_coordinator::transaction::TRANSACTION_STATE_TOPIC_NAME;

/// How often an absent internal topic is asked for again.
const CREATE_RETRY_MS: i64 = 5_000;

/// Creation of the internal topics, each asked at most every [`CREATE_RETRY_MS`].
#[derive(Debug, Default)]
pub struct InternalTopics {
    offsets: AtomicI64,
    transactions: AtomicI64,
    share_state: AtomicI64,
    /// A streams group's internal topics, by name: when each was last asked for.
    streams: std::sync::Mutex<std::collections::HashMap<String, i64>>,
}

/// An internal topic as the broker creates it on first use.
struct InternalTopic {
    name: &'static str,
    /// The replication setting, for the warning when there are fewer brokers.
    setting: &'static str,
    partitions: i32,
    replication: i16,
    configs: Vec<(&'static str, String)>,
}

impl InternalTopics {
    /// Asks the controller for `__consumer_offsets` (at most every few seconds).
    pub fn create_offsets_topic(context: &Arc<BrokerApisContext>, image: &MetadataImage) {
        let config = context.group_coordinator.config();
        let spec = InternalTopic {
            name: GROUP_METADATA_TOPIC_NAME,
            setting: "offsets.topic.replication.factor",
            partitions: config.offsets_topic_partitions,
            replication: config.offsets_topic_replication_factor,
            configs: vec![
                ("cleanup.policy", "compact".to_string()),
                ("compression.type", "producer".to_string()),
                (
                    "segment.bytes",
                    config.offsets_topic_segment_bytes.to_string(),
                ),
            ],
        };
        create_internal_topic(context, image, &context.internal_topics.offsets, spec)
    }

    /// Asks the controller for `__transaction_state` (at most every few seconds), with
    /// Kafka's `transaction.state.log.*` settings.
    pub fn create_transaction_state_topic(context: &Arc<BrokerApisContext>, image: &MetadataImage) {
        let config = context.txn_coordinator.config();
        let spec = InternalTopic {
            name: TRANSACTION_STATE_TOPIC_NAME,
            setting: "transaction.state.log.replication.factor",
            partitions: config.state_log_partitions,
            replication: config.state_log_replication_factor,
            configs: vec![
                ("cleanup.policy", "compact".to_string()),
                ("compression.type", "uncompressed".to_string()),
                ("segment.bytes", config.state_log_segment_bytes.to_string()),
                // Never above the replicas it will have (fewer brokers than configured).
                ("min.insync.replicas", config.state_log_min_isr.to_string()),
            ],
        };
        create_internal_topic(context, image, &context.internal_topics.transactions, spec)
    }
}

impl InternalTopics {
    /// Asks the controller for `__share_group_state` (at most every few seconds), with
    /// Kafka's `ShareCoordinatorService.shareGroupStateTopicConfigs`.
    pub fn create_share_state_topic(context: &Arc<BrokerApisContext>, image: &MetadataImage) {
        let config = context.share_coordinator.config();
        let spec = InternalTopic {
            name: SHARE_GROUP_STATE_TOPIC_NAME,
            setting: "share.coordinator.state.topic.replication.factor",
            partitions: config.state_topic_partitions,
            replication: config.state_topic_replication_factor,
            configs: vec![
                ("cleanup.policy", "delete".to_string()),
                ("compression.type", "producer".to_string()),
                (
                    "segment.bytes",
                    config.state_topic_segment_bytes.to_string(),
                ),
                // Never above the replicas it will have (fewer brokers than configured).
                (
                    "min.insync.replicas",
                    config.state_topic_min_isr.to_string(),
                ),
                ("retention.ms", "-1".to_string()),
            ],
        };
        create_internal_topic(context, image, &context.internal_topics.share_state, spec)
    }
}

impl InternalTopics {
    /// Asks the controller for a streams group's missing internal topics, as the group
    /// coordinator configured them (Kafka's `AutoTopicCreationManager.createStreamsInternalTopics`):
    /// each at most every few seconds, as the broker itself (the client's CREATE was checked).
    pub fn create_streams_internal_topics(
        context: &Arc<BrokerApisContext>,
        topics: Vec<CreatableTopic>,
    ) {
        let now = unix_ms();
        let topics: Vec<CreatableTopic> = {
            let mut asked = context
                .internal_topics
                .streams
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            asked.retain(|_, at| now - *at < CREATE_RETRY_MS);
            topics
                .into_iter()
                .filter(|t| asked.insert(t.name.clone(), now).is_none())
                .collect()
        };
        if topics.is_empty() {
            return;
        }
        let names: Vec<String> = topics.iter().map(|t| t.name.clone()).collect();
        info!(topics = ?names, "creating a streams group's internal topics");
        let create = CreateTopicsRequest {
            topics,
            timeout_ms: FORWARD_TIMEOUT.as_millis() as i32,
            ..Default::default()
        };
        let context = Arc::clone(context);
        let version = supported_range(ApiKey::CreateTopics).max;
        tokio::spawn(async move {
            let deadline = Instant::now() + FORWARD_TIMEOUT;
            match context
                .forwarding
                .send_direct(version, RequestBody::CreateTopics(create), deadline)
                .await
            {
                Ok(ResponseBody::CreateTopics(r)) => {
                    for t in r.topics {
                        if t.error_code != 0 && t.error_code != ErrorCode::TopicAlreadyExists.code()
                        {
                            warn!(topic = t.name, error = ?ErrorCode::from_code(t.error_code), message = ?t.error_message, "creating a streams internal topic failed");
                        }
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    debug!(topics = ?names, error = %e, "creating streams internal topics failed")
                }
            }
        });
    }
}

/// Sends the CreateTopics for `spec` unless one went out within [`CREATE_RETRY_MS`].
fn create_internal_topic(
    context: &Arc<BrokerApisContext>,
    image: &MetadataImage,
    last_create_ms: &AtomicI64,
    mut spec: InternalTopic,
) {
    let now = unix_ms();
    let last = last_create_ms.load(Ordering::Relaxed);
    if now - last < CREATE_RETRY_MS
        || last_create_ms
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    let alive = image.cluster.brokers().filter(|b| !b.fenced).count() as i16;
    let mut replication = spec.replication;
    if alive > 0 && alive < replication {
        warn!(
            topic = spec.name,
            configured = replication,
            alive,
            "{} exceeds the live brokers; creating {} with {alive} replicas",
            spec.setting,
            spec.name
        );
        replication = alive;
    }
    for (k, v) in &mut spec.configs {
        if *k == "min.insync.replicas" {
            let min: i16 = v.parse().unwrap_or(1);
            *v = min.clamp(1, replication.max(1)).to_string();
        }
    }
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: spec.name.into(),
            num_partitions: spec.partitions,
            replication_factor: replication,
            configs: spec
                .configs
                .iter()
                .map(|(k, v)| CreatableTopicConfig {
                    name: (*k).into(),
                    value: Some(v.clone()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        timeout_ms: FORWARD_TIMEOUT.as_millis() as i32,
        ..Default::default()
    };
    info!(
        topic = spec.name,
        partitions = spec.partitions,
        replication,
        "creating an internal topic"
    );
    let context = Arc::clone(context);
    let name = spec.name;
    let version = supported_range(ApiKey::CreateTopics).max;
    tokio::spawn(async move {
        let deadline = Instant::now() + FORWARD_TIMEOUT;
        // As the broker itself (its own principal on the controller listener), as
        // Kafka's AutoTopicCreationManager sends internal topics: no client asked.
        let result = context
            .forwarding
            .send_direct(version, RequestBody::CreateTopics(create), deadline)
            .await;
        match result {
            Ok(ResponseBody::CreateTopics(r)) => {
                for t in r.topics {
                    if t.error_code != 0 && t.error_code != ErrorCode::TopicAlreadyExists.code() {
                        warn!(topic = name, error = ?ErrorCode::from_code(t.error_code), message = ?t.error_message, "creating an internal topic failed");
                    }
                }
            }
            Ok(_) => {}
            Err(e) => debug!(topic = name, error = %e, "creating an internal topic failed"),
        }
    });
}
