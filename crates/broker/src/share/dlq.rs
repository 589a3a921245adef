//! Share groups' dead-letter queues (KIP-1191; Kafka's `org.apache.kafka.server.share.dlq`,
//! `ShareGroupDLQStateManager` and its `ProduceRequestHandler`). With `share.version` 2
//! finalized and `errors.deadletterqueue.topic.name` set on a share group, a record the
//! group rejects, or one past its delivery count limit, is written to that topic before it
//! is archived ([`super::share_partition`] holds it in ARCHIVING meanwhile).
//!
//! The DLQ record of source offset `o` has Kafka's headers, in this order, values UTF-8:
//! `__dlq.errors.topic` (the source topic's name), `__dlq.errors.partition`,
//! `__dlq.errors.offset`, `__dlq.errors.group`, `__dlq.errors.delivery.count` and
//! `__dlq.errors.message` (why); the timestamp is the time of the write; the key and value
//! are the source record's when the group has `errors.deadletterqueue.copy.record.enable`,
//! else null. The records of one DLQ batch go in one uncompressed batch (split where the DLQ
//! topic's `max.message.bytes` says) to partition `source partition % DLQ partitions`.
//!
//! Sans-IO here: the configuration check with Kafka's messages ([`validate_dlq_topic`]), the
//! headers and the batch ([`dlq_records`]). The tokio edge ([`ShareGroupDlqManager`]) reads
//! the source records from the local log (the share partition's leader is this broker),
//! creates a missing DLQ topic when `errors.deadletterqueue.auto.create.topics.enable` (as
//! Kafka: CreateTopics with `errors.deadletterqueue.group.enable=true` and
//! `message.timestamp.type=CreateTime`) and produces, acks=all, to the DLQ partition's leader
//! over the inter-broker listener — another broker, or this one — as Kafka's inter-broker
//! send thread does: one Produce in flight per leader, the writes that wait meanwhile
//! coalesced into the next ([`send_queue`]); retrying NOT_LEADER_OR_FOLLOWER and network
//! errors with Kafka's backoff (1 s doubling to 30 s, 5 attempts), and also the unknown-topic
//! answers of a leader whose metadata has not caught up with a DLQ topic just created. A DLQ write that fails is
//! logged; the record is archived regardless, as Kafka does.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kraftd_controller::image::{ConfigResource, ConfigResourceType};
use kraftd_controller::MetadataImage;
use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kraftd_protocol::messages::CreateTopicsRequest;
use kraftd_protocol::records::{
    Batches, Compression, Header, RecordBatchBuilder, RecordBatchError,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody, Uuid};

use super::metrics::ShareGroupMetrics;
use super::share_partition::DlqCause;
use crate::metadata::MetadataCache;
use crate::replica::replica_manager::{FetchOrigin, ReplicaManager};
use crate::replica::TopicIdPartition;
use crate::server::broker_channels::BrokerChannels;

pub const HEADER_DLQ_ERRORS_TOPIC: &str = "__dlq.errors.topic";
pub const HEADER_DLQ_ERRORS_PARTITION: &str = "__dlq.errors.partition";
pub const HEADER_DLQ_ERRORS_OFFSET: &str = "__dlq.errors.offset";
pub const HEADER_DLQ_ERRORS_GROUP: &str = "__dlq.errors.group";
pub const HEADER_DLQ_ERRORS_DELIVERY_COUNT: &str = "__dlq.errors.delivery.count";
pub const HEADER_DLQ_ERRORS_MESSAGE: &str = "__dlq.errors.message";

/// The group config naming the DLQ topic (Kafka's `GroupConfig`).
pub const ERRORS_DEADLETTERQUEUE_TOPIC_NAME: &str = "errors.deadletterqueue.topic.name";
/// The group config copying the source record's key and value.
pub const ERRORS_DEADLETTERQUEUE_COPY_RECORD_ENABLE: &str =
    "errors.deadletterqueue.copy.record.enable";
/// The topic config that lets a topic be a DLQ (Kafka's `TopicConfig`).
pub const ERRORS_DEADLETTERQUEUE_GROUP_ENABLE: &str = "errors.deadletterqueue.group.enable";
/// The broker config creating missing DLQ topics (Kafka's `GroupCoordinatorConfig`).
pub const ERRORS_DEADLETTERQUEUE_AUTO_CREATE_TOPICS_ENABLE: &str =
    "errors.deadletterqueue.auto.create.topics.enable";
/// The broker config every DLQ topic name must start with ("" for none).
pub const ERRORS_DEADLETTERQUEUE_TOPIC_NAME_PREFIX: &str =
    "errors.deadletterqueue.topic.name.prefix";
/// Its default.
pub const ERRORS_DEADLETTERQUEUE_TOPIC_NAME_PREFIX_DEFAULT: &str = "dlq.";

/// The most bytes one read of the source records takes (Kafka's `DLQ_MAX_FETCH_BYTES`).
const DLQ_MAX_FETCH_BYTES: usize = 1024 * 1024;
/// Kafka's `ShareGroupDLQStateManager` retry settings.
const REQUEST_BACKOFF_MS: u64 = 1_000;
const REQUEST_BACKOFF_MAX_MS: u64 = 30_000;
const MAX_REQUEST_ATTEMPTS: u32 = 5;
/// The produce timeout Kafka's DLQ produce carries (`ServerConfigs.REQUEST_TIMEOUT_MS_DEFAULT`).
const PRODUCE_TIMEOUT_MS: i32 = 30_000;
/// A v2 batch's header (Kafka's `RECORD_BATCH_OVERHEAD`).
const RECORD_BATCH_OVERHEAD: usize = 61;

/// What goes to the DLQ (Kafka's `ShareGroupDLQRecordParameter`): a range of one share
/// partition's offsets with one delivery count and cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupDlqRecordParameter {
    pub group_id: String,
    pub tp: TopicIdPartition,
    pub first_offset: i64,
    pub last_offset: i64,
    pub delivery_count: Option<i16>,
    pub cause: Option<DlqCause>,
}

/// Why a DLQ write did not happen; the text is Kafka's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DlqError {
    /// The group's DLQ configuration refuses the write (Kafka's `ConfigException`).
    #[error("{0}")]
    Config(String),
    /// The DLQ topic's leader or controller answered this error.
    #[error("{0:?}")]
    Code(ErrorCode),
    /// Retries ran out.
    #[error("Exhausted max retries to produce to DLQ topic without success.")]
    RetriesExhausted,
}

/// The DLQ settings of one group, resolved from the image: the group's configs and the
/// broker's (Kafka's `ShareGroupDLQMetadataCacheHelper`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DlqSettings {
    /// `errors.deadletterqueue.topic.name`, None when blank.
    pub topic_name: Option<String>,
    pub copy_record: bool,
    pub auto_create_topics: bool,
    pub topic_name_prefix: String,
}

/// The DLQ topic as the metadata shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DlqTopicState {
    Missing,
    /// The topic exists; whether `errors.deadletterqueue.group.enable` is true on it.
    Exists {
        dlq_enabled: bool,
    },
}

/// Kafka's `ProduceRequestHandler.validateDlqTopic`: a name is configured and does not
/// start with `__`; an existing topic allows DLQ writes; a missing one may be created; the
/// name has the broker's prefix.
pub fn validate_dlq_topic(
    group_id: &str,
    settings: &DlqSettings,
    topic: DlqTopicState,
) -> Result<(), DlqError> {
    let Some(name) = settings.topic_name.as_deref() else {
        return Err(DlqError::Config(format!(
            "Configured DLQ topic name in share group: {group_id} is empty."
        )));
    };
    if name.starts_with("__") {
        return Err(DlqError::Config(format!(
            "Configured DLQ topic name in share group: {group_id} cannot start with __, topic: {name}."
        )));
    }
    match topic {
        DlqTopicState::Exists { dlq_enabled: false } => {
            return Err(DlqError::Config(format!(
                "DLQ is not enabled on configured DLQ topic for share group: {group_id}, topic: {name}."
            )))
        }
        DlqTopicState::Missing if !settings.auto_create_topics => {
            return Err(DlqError::Config(format!(
                "DLQ topic does not exist and auto create is disabled on cluster for share group: {group_id}, topic: {name}."
            )))
        }
        _ => {}
    }
    let prefix = settings.topic_name_prefix.as_str();
    if !prefix.is_empty() && !name.starts_with(prefix) {
        return Err(DlqError::Config(format!(
            "Configured DLQ topic name does not comply with the DLQ topic prefix in share group: {group_id}, topic: {name}, prefix: {prefix}."
        )));
    }
    Ok(())
}

/// The headers of the DLQ record for source `offset` (Kafka's `ProduceRequestHandler.headers`).
pub fn headers(param: &ShareGroupDlqRecordParameter, offset: i64) -> Vec<Header> {
    let text = |s: String| Some(Bytes::from(s));
    let mut out = vec![
        Header::new(HEADER_DLQ_ERRORS_TOPIC, text(param.tp.topic.clone())),
        Header::new(
            HEADER_DLQ_ERRORS_PARTITION,
            text(param.tp.partition.to_string()),
        ),
        Header::new(HEADER_DLQ_ERRORS_OFFSET, text(offset.to_string())),
        Header::new(HEADER_DLQ_ERRORS_GROUP, text(param.group_id.clone())),
    ];
    if let Some(count) = param.delivery_count {
        out.push(Header::new(
            HEADER_DLQ_ERRORS_DELIVERY_COUNT,
            text(count.to_string()),
        ));
    }
    if let Some(cause) = param.cause {
        out.push(Header::new(
            HEADER_DLQ_ERRORS_MESSAGE,
            text(cause.message().to_string()),
        ));
    }
    out
}

/// A source record's key and value, for `copy.record`.
pub type SourceRecord = (Option<Bytes>, Option<Bytes>);

/// The DLQ batch for `param`'s offsets from `from_offset`, stamped `now_ms`: each record
/// with [`headers`] and, when `originals` has its offset, the source key and value. Records
/// are added while the batch stays within `max_message_bytes` (the first always goes), as
/// Kafka's `topicProduceData`; the answer is the batch and the last offset it holds.
pub fn dlq_records(
    param: &ShareGroupDlqRecordParameter,
    from_offset: i64,
    to_offset: i64,
    originals: &HashMap<i64, SourceRecord>,
    now_ms: i64,
    max_message_bytes: usize,
) -> (Bytes, i64) {
    let mut builder = RecordBatchBuilder::new(0);
    let mut size = RECORD_BATCH_OVERHEAD;
    let mut last = from_offset - 1;
    for offset in from_offset..=to_offset.min(param.last_offset) {
        let (key, value) = originals.get(&offset).cloned().unwrap_or((None, None));
        let headers = headers(param, offset);
        let record_size = record_size(&key, &value, &headers, builder.len());
        if !builder.is_empty() && size + record_size > max_message_bytes {
            break;
        }
        if builder.append(now_ms, key, value, headers).is_err() {
            break;
        }
        size += record_size;
        last = offset;
        if size > max_message_bytes {
            break;
        }
    }
    // A batch of plain records with increasing offsets always builds.
    let batch = builder.build().unwrap_or_default();
    (batch, last)
}

/// Kafka's `DefaultRecord.sizeInBytes` for a record at `offset_delta` with timestamp delta 0.
fn record_size(
    key: &Option<Bytes>,
    value: &Option<Bytes>,
    headers: &[Header],
    offset_delta: usize,
) -> usize {
    let varint = |v: i64| -> usize {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        let mut n = 1;
        while z >= 0x80 {
            z >>= 7;
            n += 1;
        }
        n
    };
    let bytes = |b: Option<&[u8]>| b.map_or(varint(-1), |b| varint(b.len() as i64) + b.len());
    let mut body = 1 + varint(0) + varint(offset_delta as i64);
    body += bytes(key.as_deref()) + bytes(value.as_deref());
    body += varint(headers.len() as i64);
    for h in headers {
        body += bytes(Some(h.key.as_bytes())) + bytes(h.value.as_deref());
    }
    body + varint(body as i64)
}

/// One round's read of the source records to copy (Kafka's `ShareGroupDLQRecordFetcher`),
/// sans IO: the reads' batches are handed to [`SourceRead::collect`] one read at a time.
///
/// The round's budget (the DLQ topic's `max.message.bytes`: no DLQ batch could carry more)
/// bounds both what a compressed batch may decompress to — one that decompresses past it on
/// its own can never be copied, its records go with headers only — and what the round keeps:
/// once the records collected reach the budget, or one does not fit beside them, the round
/// stops, and the rest of the range waits for the next round, with a budget of its own. So a
/// source batch that compresses well cannot make the broker hold more than one DLQ batch's
/// worth of records, however large the acknowledged range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRead {
    /// The records collected, by offset.
    pub records: HashMap<i64, SourceRecord>,
    /// Every offset from the round's first through this one has its outcome: collected, or
    /// never to be copied (its DLQ record goes with headers only). Offsets past it were not
    /// reached this round.
    pub last_resolved: i64,
    last_offset: i64,
    budget: usize,
    collected_bytes: usize,
    /// A record fits the budget but not beside what was collected: the round ends before it.
    deferred: bool,
}

impl SourceRead {
    /// A round reading `[first, last]` within `budget` bytes.
    pub fn new(first: i64, last: i64, budget: usize) -> Self {
        SourceRead {
            records: HashMap::new(),
            last_resolved: first - 1,
            last_offset: last,
            budget,
            collected_bytes: 0,
            deferred: false,
        }
    }

    /// Whether the round has what it can use: the budget is spent, or a record waits for
    /// the next round.
    pub fn is_done(&self) -> bool {
        self.deferred || self.collected_bytes >= self.budget
    }

    /// Whether the round stopped for its budget (the next round goes on from
    /// [`SourceRead::last_resolved`]), not for the end of the range or a failure.
    pub fn was_deferred(&self) -> bool {
        self.deferred
    }

    /// A read failed or made no progress: the rest of the range will not be read, its
    /// records go with headers only (Kafka's `completeGivingUpOnRemainder`).
    pub fn give_up(&mut self) {
        self.last_resolved = self.last_offset;
    }

    /// Collects the records of one read's batches from `from` on; the offset to read next
    /// (never below `from`).
    pub fn collect(&mut self, records: &Bytes, from: i64) -> i64 {
        let mut next = from;
        for batch in Batches::new(records.clone()) {
            if self.is_done() {
                return next;
            }
            let Ok(batch) = batch else {
                break;
            };
            if batch.last_offset() < next {
                continue;
            }
            let in_range_last = batch.last_offset().min(self.last_offset);
            if batch.is_control() {
                // Markers are never acquired, so never in a DLQ range; stepped over.
                self.last_resolved = self.last_resolved.max(in_range_last);
                next = next.max(in_range_last + 1);
                continue;
            }
            let compressed = batch.compression() != Compression::None;
            let iter = match batch.records_with_limit(self.budget) {
                Ok(iter) => iter,
                Err(
                    RecordBatchError::DecompressedTooLarge { .. }
                    | RecordBatchError::RecordCountImplausible { .. },
                ) if compressed => {
                    // Too large on its own for any round: its records go with headers only.
                    self.last_resolved = self.last_resolved.max(in_range_last);
                    next = next.max(in_range_last + 1);
                    continue;
                }
                Err(_) => {
                    self.give_up();
                    return next;
                }
            };
            for record in iter {
                let Ok(record) = record else {
                    self.give_up();
                    return next;
                };
                let offset = record.offset(&batch);
                if offset < next {
                    continue;
                }
                if offset > self.last_offset {
                    return next;
                }
                let size = record.encoded_len().unwrap_or(usize::MAX);
                if !compressed && size > self.budget {
                    // A record no round could carry: headers only.
                    self.last_resolved = self.last_resolved.max(offset);
                    next = next.max(offset + 1);
                    continue;
                }
                if self.collected_bytes.saturating_add(size) > self.budget {
                    self.deferred = true;
                    return next;
                }
                self.collected_bytes += size;
                self.records.insert(offset, (record.key, record.value));
                self.last_resolved = self.last_resolved.max(offset);
                next = next.max(offset + 1);
            }
        }
        next
    }
}

/// The DLQ settings of `group_id` on broker `node_id` (a broker config's value: this
/// broker's dynamic one, the cluster default, the properties file, Kafka's default).
pub fn dlq_settings(
    image: &MetadataImage,
    node_id: i32,
    static_configs: &BTreeMap<String, String>,
    group_id: &str,
) -> DlqSettings {
    let group = ConfigResource::new(ConfigResourceType::Group, group_id);
    let group_value = |key: &str| image.configs.value(&group, key).map(str::trim);
    let broker_value = |key: &str| -> Option<String> {
        let own = ConfigResource::new(ConfigResourceType::Broker, node_id.to_string());
        let default = ConfigResource::new(ConfigResourceType::Broker, "");
        image
            .configs
            .value(&own, key)
            .or_else(|| image.configs.value(&default, key))
            .or_else(|| static_configs.get(key).map(String::as_str))
            .map(|v| v.trim().to_string())
    };
    DlqSettings {
        topic_name: group_value(ERRORS_DEADLETTERQUEUE_TOPIC_NAME)
            .filter(|v| !v.is_empty())
            .map(str::to_string),
        copy_record: group_value(ERRORS_DEADLETTERQUEUE_COPY_RECORD_ENABLE)
            .is_some_and(|v| v.eq_ignore_ascii_case("true")),
        auto_create_topics: broker_value(ERRORS_DEADLETTERQUEUE_AUTO_CREATE_TOPICS_ENABLE)
            .is_some_and(|v| v.eq_ignore_ascii_case("true")),
        topic_name_prefix: broker_value(ERRORS_DEADLETTERQUEUE_TOPIC_NAME_PREFIX)
            .unwrap_or_else(|| ERRORS_DEADLETTERQUEUE_TOPIC_NAME_PREFIX_DEFAULT.to_string()),
    }
}

/// The DLQ writer of one broker (see the module docs).
#[derive(Debug)]
pub struct ShareGroupDlqManager {
    node_id: i32,
    replica_manager: Arc<ReplicaManager>,
    metadata: MetadataCache,
    static_configs: BTreeMap<String, String>,
    channels: Arc<BrokerChannels>,
    send_queue: Arc<send_queue::SendQueue>,
    metrics: Arc<ShareGroupMetrics>,
}

/// A resolved DLQ destination.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Destination {
    topic: String,
    topic_id: Uuid,
    partition: i32,
    leader: i32,
    max_message_bytes: usize,
}

impl ShareGroupDlqManager {
    pub fn new(
        node_id: i32,
        replica_manager: Arc<ReplicaManager>,
        metadata: MetadataCache,
        static_configs: BTreeMap<String, String>,
        metrics: Arc<ShareGroupMetrics>,
        channels: Arc<BrokerChannels>,
    ) -> Self {
        let send_queue = Arc::new(send_queue::SendQueue::new(
            metadata.clone(),
            Arc::clone(&channels),
        ));
        ShareGroupDlqManager {
            node_id,
            replica_manager,
            metadata,
            static_configs,
            channels,
            send_queue,
            metrics,
        }
    }

    /// Writes `param`'s records to the group's DLQ topic (Kafka's `enqueue`).
    pub async fn enqueue(&self, param: &ShareGroupDlqRecordParameter) -> Result<(), DlqError> {
        if param.first_offset < 0 || param.last_offset < param.first_offset {
            return Err(DlqError::Config(
                "DLQ records parameters last offset cannot be less than first offset.".into(),
            ));
        }
        let image = self.metadata.image();
        let settings = dlq_settings(&image, self.node_id, &self.static_configs, &param.group_id);
        let topic_state = self.topic_state(&image, settings.topic_name.as_deref());
        validate_dlq_topic(&param.group_id, &settings, topic_state)?;
        let name = settings.topic_name.clone().unwrap_or_default();
        if topic_state == DlqTopicState::Missing {
            self.create_topic(&name).await?;
        }
        // Round by round, as Kafka's `resolveRound`: the source records of what is left are
        // read within the DLQ topic's max.message.bytes, and produced up to the last offset
        // the read resolved; a retry of a round reuses its read.
        let mut next = param.first_offset;
        let mut attempts = 0;
        let mut round: Option<SourceRead> = None;
        while next <= param.last_offset {
            let outcome = match self.destination(&name, param.tp.partition) {
                Ok(dest) => {
                    let read = match round.take() {
                        Some(read) => read,
                        None if settings.copy_record => {
                            self.read_source(param, next, dest.max_message_bytes).await
                        }
                        None => {
                            let mut nothing = SourceRead::new(next, param.last_offset, 0);
                            nothing.give_up();
                            nothing
                        }
                    };
                    // At least `next` itself goes (headers only if unread), so every round
                    // moves on.
                    let round_end = next.max(read.last_resolved.min(param.last_offset));
                    let (records, last) = dlq_records(
                        param,
                        next,
                        round_end,
                        &read.records,
                        kraftd_log::clock::unix_ms(),
                        dest.max_message_bytes,
                    );
                    self.metrics.record_dlq_produce(&param.group_id);
                    let sent = self.produce(&dest, records).await;
                    match &sent {
                        Ok(()) => self
                            .metrics
                            .record_dlq_records(&param.group_id, (last - next + 1) as u64),
                        Err(_) => self.metrics.record_dlq_produce_failed(&param.group_id),
                    }
                    let done_with_round = sent.as_ref().is_ok_and(|()| last >= round_end);
                    if !done_with_round {
                        round = Some(read);
                    }
                    sent.map(|()| last)
                }
                Err(e) => Err(e),
            };
            match outcome {
                Ok(last) => {
                    next = last + 1;
                    attempts = 0;
                }
                Err(Retry::Fatal(e)) => return Err(e),
                Err(Retry::Again(e)) => {
                    attempts += 1;
                    if attempts >= MAX_REQUEST_ATTEMPTS {
                        tracing::warn!(group = %param.group_id, topic = %name, error = %e,
                            "Exhausted max retries to produce to DLQ topic");
                        return Err(DlqError::RetriesExhausted);
                    }
                    tokio::time::sleep(backoff(attempts)).await;
                }
            }
        }
        Ok(())
    }

    fn topic_state(&self, image: &MetadataImage, name: Option<&str>) -> DlqTopicState {
        let Some(name) = name else {
            return DlqTopicState::Missing;
        };
        if image.topics.get_by_name(name).is_none() {
            return DlqTopicState::Missing;
        }
        let configs = kraftd_controller::config_helper::effective_topic_configs(
            image,
            self.node_id,
            &self.static_configs,
            name,
        );
        DlqTopicState::Exists {
            dlq_enabled: configs
                .get(ERRORS_DEADLETTERQUEUE_GROUP_ENABLE)
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
        }
    }

    /// Kafka's `populateDLQTopicData`: partition `source partition % partitions` and its
    /// leader; a topic not (yet) in the metadata or without a leader is retried.
    fn destination(&self, name: &str, source_partition: i32) -> Result<Destination, Retry> {
        let image = self.metadata.image();
        let again = |what: &str| {
            Retry::Again(DlqError::Config(format!(
                "DLQ topic {what} could not be found for DLQ topic {name}."
            )))
        };
        let topic = image.topics.get_by_name(name).ok_or_else(|| again("id"))?;
        let partitions = topic.partitions.len() as i32;
        if partitions == 0 {
            return Err(again("partition count"));
        }
        let partition = source_partition % partitions;
        let leader = topic
            .partitions
            .get(&partition)
            .map(|p| p.leader)
            .filter(|l| *l >= 0)
            .ok_or_else(|| again("partition leader"))?;
        let configs = kraftd_controller::config_helper::effective_topic_configs(
            &image,
            self.node_id,
            &self.static_configs,
            name,
        );
        let max_message_bytes = configs
            .get("max.message.bytes")
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(1_048_588);
        Ok(Destination {
            topic: name.to_string(),
            topic_id: topic.id,
            partition,
            leader,
            max_message_bytes,
        })
    }

    /// One round's source records of `param` from `from` on, from the local log read as a
    /// consumer up to the HW, within `budget` bytes (see [`SourceRead`]).
    async fn read_source(
        &self,
        param: &ShareGroupDlqRecordParameter,
        from: i64,
        budget: usize,
    ) -> SourceRead {
        let mut read = SourceRead::new(from, param.last_offset, budget);
        let mut offset = from;
        while offset <= param.last_offset && !read.is_done() {
            let result = super::local_read::read_local(
                &self.replica_manager,
                FetchOrigin::Consumer,
                &param.tp,
                offset,
                -1,
                DLQ_MAX_FETCH_BYTES as i32,
                DLQ_MAX_FETCH_BYTES,
            )
            .await;
            let Some(result) = result.filter(|r| r.error == ErrorCode::None) else {
                read.give_up();
                break;
            };
            let next = read.collect(&result.records, offset);
            if next <= offset {
                // No progress: a dead end unless the budget stopped it.
                if !read.was_deferred() {
                    read.give_up();
                }
                break;
            }
            offset = next;
        }
        read
    }

    /// Kafka's CreateTopics for a missing DLQ topic: the broker's default partitions and
    /// replication, DLQ writes enabled, CreateTime timestamps. Sent to this broker, which
    /// forwards it to the controller; TOPIC_ALREADY_EXISTS is fine (another write made it).
    async fn create_topic(&self, name: &str) -> Result<(), DlqError> {
        let image = self.metadata.image();
        let address = self
            .channels
            .address(&image, self.node_id)
            .ok_or(DlqError::Code(ErrorCode::BrokerNotAvailable))?;
        let channel = self.channels.channel(&address);
        let request = CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: name.to_string(),
                num_partitions: -1,
                replication_factor: -1,
                configs: vec![
                    CreatableTopicConfig {
                        name: ERRORS_DEADLETTERQUEUE_GROUP_ENABLE.into(),
                        value: Some("true".into()),
                        ..Default::default()
                    },
                    CreatableTopicConfig {
                        name: "message.timestamp.type".into(),
                        value: Some("CreateTime".into()),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }],
            timeout_ms: PRODUCE_TIMEOUT_MS,
            ..Default::default()
        };
        let mut attempts = 0;
        loop {
            let answer = channel
                .call(
                    channel.next_correlation_id(),
                    supported_range(ApiKey::CreateTopics).max,
                    RequestBody::CreateTopics(request.clone()),
                )
                .await;
            let code = match answer {
                Ok(ResponseBody::CreateTopics(r)) => r
                    .topics
                    .first()
                    .map_or(ErrorCode::UnknownTopicOrPartition.code(), |t| t.error_code),
                Ok(_) => ErrorCode::UnknownServerError.code(),
                Err(_) => ErrorCode::NetworkException.code(),
            };
            match ErrorCode::from_code(code) {
                Some(ErrorCode::None | ErrorCode::TopicAlreadyExists) => return Ok(()),
                Some(
                    ErrorCode::NetworkException
                    | ErrorCode::RequestTimedOut
                    | ErrorCode::ThrottlingQuotaExceeded,
                ) => {
                    attempts += 1;
                    if attempts >= MAX_REQUEST_ATTEMPTS {
                        return Err(DlqError::Config(
                            "Exhausted max retries to create DLQ topic without success.".into(),
                        ));
                    }
                    tokio::time::sleep(backoff(attempts)).await;
                }
                other => {
                    return Err(DlqError::Code(
                        other.unwrap_or(ErrorCode::UnknownServerError),
                    ))
                }
            }
        }
    }

    /// One Produce (acks=all) of `records` to the destination's leader, coalesced with the
    /// other writes for that leader ([`send_queue`]).
    async fn produce(&self, dest: &Destination, records: Bytes) -> Result<(), Retry> {
        self.send_queue.send(dest.clone(), records).await
    }
}

/// A failed step: tried again after a backoff, or the end of the write.
#[derive(Debug, Clone)]
enum Retry {
    Again(DlqError),
    Fatal(DlqError),
}

/// Kafka's `ExponentialBackoffManager` without its jitter: 1 s doubling, at most 30 s.
fn backoff(attempt: u32) -> Duration {
    let ms = REQUEST_BACKOFF_MS.saturating_mul(1 << attempt.saturating_sub(1).min(10));
    Duration::from_millis(ms.min(REQUEST_BACKOFF_MAX_MS))
}

mod send_queue;
#[cfg(test)]
mod tests;
