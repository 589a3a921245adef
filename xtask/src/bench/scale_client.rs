//! The Kafka requests `bench scale` sends itself (no JVM per poll, so polling 100,000
//! partitions every half second costs the node under test, not the bench): CreateTopics of
//! many topics in one request, Metadata of every topic (which partitions have a leader, which
//! have a full ISR), and ListOffsets of every partition (which logs are open and readable).
//! One blocking connection to one broker; the same versions work on kraftd and Kafka 4.4.
//! `bench add-voter` and `bench cost` create their topics through it too; `bench clients`
//! opens its many connections and sends its producers' and groups' requests through it.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use bytes::Bytes;
use kraftd_protocol::header::{decode_response, encode_request};
use kraftd_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use kraftd_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kraftd_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kraftd_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kraftd_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kraftd_protocol::messages::{
    ApiVersionsRequest, CreateTopicsRequest, FindCoordinatorRequest, InitProducerIdRequest,
    ListOffsetsRequest, MetadataRequest, OffsetCommitRequest, OffsetFetchRequest, ProduceRequest,
    RequestHeader,
};
use kraftd_protocol::records::RecordBatchBuilder;
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody};

const CREATE_TOPICS_VERSION: i16 = 7;
const METADATA_VERSION: i16 = 12;
const LIST_OFFSETS_VERSION: i16 = 7;
const API_VERSIONS_VERSION: i16 = 3;
const INIT_PRODUCER_ID_VERSION: i16 = 4;
const PRODUCE_VERSION: i16 = 9;
const FIND_COORDINATOR_VERSION: i16 = 4;
/// The last version naming topics by name (v10 names them by id).
const OFFSET_COMMIT_VERSION: i16 = 9;
/// The first version taking groups in a list, the last naming topics by name.
const OFFSET_FETCH_VERSION: i16 = 9;

pub(super) struct Conn {
    stream: TcpStream,
    correlation: i32,
}

/// What a Metadata response says of the topics whose names start with a prefix.
#[derive(Debug, Default)]
pub(super) struct PartitionsSeen {
    /// Partitions with a leader (>= 0).
    pub(super) led: usize,
    /// Partitions whose ISR has every replica.
    pub(super) full_isr: usize,
    /// Partition indexes per topic (for ListOffsets).
    pub(super) topics: BTreeMap<String, Vec<i32>>,
}

impl Conn {
    pub(super) fn connect(port: u16) -> Result<Conn> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(120)))?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            correlation: 0,
        })
    }

    pub(super) fn call(&mut self, version: i16, body: RequestBody) -> Result<ResponseBody> {
        let key = body.key();
        self.correlation += 1;
        let header = RequestHeader {
            request_api_key: key.code(),
            request_api_version: version,
            correlation_id: self.correlation,
            client_id: Some("xtask-bench-scale".into()),
            ..Default::default()
        };
        let frame = encode_request(&header, &body)?.into_bytes();
        self.stream.write_all(&(frame.len() as i32).to_be_bytes())?;
        self.stream.write_all(&frame)?;
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size)?;
        let mut buf = vec![0u8; i32::from_be_bytes(size).max(0) as usize];
        self.stream.read_exact(&mut buf)?;
        let (_, response) = decode_response(key, version, Bytes::from(buf))?;
        Ok(response)
    }

    /// CreateTopics of `names`, `partitions` each, every partition on `replicas` (the first
    /// the preferred leader); fails on any topic's error.
    pub(super) fn create_topics(
        &mut self,
        names: &[String],
        partitions: i32,
        replicas: &[i32],
    ) -> Result<()> {
        let topics = names
            .iter()
            .map(|name| CreatableTopic {
                name: name.clone(),
                num_partitions: -1,
                replication_factor: -1,
                assignments: (0..partitions)
                    .map(|p| CreatableReplicaAssignment {
                        partition_index: p,
                        broker_ids: replicas.to_vec(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        self.create(topics)
    }

    /// CreateTopics of `names`, `partitions` each with `replication_factor` replicas placed
    /// by the controller; fails on any topic's error.
    pub(super) fn create_topics_placed(
        &mut self,
        names: &[String],
        partitions: i32,
        replication_factor: i16,
    ) -> Result<()> {
        self.create_topics_configured(names, partitions, replication_factor, &[])
    }

    /// [`Conn::create_topics_placed`] with topic `configs` (as `min.insync.replicas`, `2`).
    pub(super) fn create_topics_configured(
        &mut self,
        names: &[String],
        partitions: i32,
        replication_factor: i16,
        configs: &[(&str, &str)],
    ) -> Result<()> {
        let topics = names
            .iter()
            .map(|name| CreatableTopic {
                name: name.clone(),
                num_partitions: partitions,
                replication_factor,
                configs: configs
                    .iter()
                    .map(|(name, value)| CreatableTopicConfig {
                        name: name.to_string(),
                        value: Some(value.to_string()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        self.create(topics)
    }

    fn create(&mut self, topics: Vec<CreatableTopic>) -> Result<()> {
        let body = RequestBody::CreateTopics(CreateTopicsRequest {
            topics,
            timeout_ms: 120_000,
            ..Default::default()
        });
        let ResponseBody::CreateTopics(response) = self.call(CREATE_TOPICS_VERSION, body)? else {
            bail!("not a CreateTopics response");
        };
        for topic in &response.topics {
            if topic.error_code != 0 {
                bail!(
                    "CreateTopics {}: error {} {}",
                    topic.name,
                    topic.error_code,
                    topic.error_message.as_deref().unwrap_or("")
                );
            }
        }
        Ok(())
    }

    /// Metadata of every topic: the brokers listed and the partitions of topics named
    /// `prefix*`.
    pub(super) fn metadata(&mut self, prefix: &str) -> Result<(Vec<i32>, PartitionsSeen)> {
        let body = RequestBody::Metadata(MetadataRequest {
            topics: None,
            ..Default::default()
        });
        let ResponseBody::Metadata(response) = self.call(METADATA_VERSION, body)? else {
            bail!("not a Metadata response");
        };
        let brokers = response.brokers.iter().map(|b| b.node_id).collect();
        let mut seen = PartitionsSeen::default();
        for topic in &response.topics {
            let Some(name) = topic.name.as_deref() else {
                continue;
            };
            if !name.starts_with(prefix) || topic.error_code != 0 {
                continue;
            }
            let mut indexes = Vec::with_capacity(topic.partitions.len());
            for p in &topic.partitions {
                if p.leader_id >= 0 {
                    seen.led += 1;
                }
                if !p.replica_nodes.is_empty() && p.isr_nodes.len() == p.replica_nodes.len() {
                    seen.full_isr += 1;
                }
                indexes.push(p.partition_index);
            }
            seen.topics.insert(name.to_string(), indexes);
        }
        Ok((brokers, seen))
    }

    /// ListOffsets (latest) of every partition in `topics`: how many answered without error.
    pub(super) fn readable(&mut self, topics: &BTreeMap<String, Vec<i32>>) -> Result<usize> {
        let body = RequestBody::ListOffsets(ListOffsetsRequest {
            replica_id: -1,
            topics: topics
                .iter()
                .map(|(name, partitions)| ListOffsetsTopic {
                    name: name.clone(),
                    partitions: partitions
                        .iter()
                        .map(|&p| ListOffsetsPartition {
                            partition_index: p,
                            current_leader_epoch: -1,
                            timestamp: -1,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            timeout_ms: 30_000,
            ..Default::default()
        });
        let ResponseBody::ListOffsets(response) = self.call(LIST_OFFSETS_VERSION, body)? else {
            return Err(anyhow!("not a ListOffsets response"));
        };
        Ok(response
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .filter(|p| p.error_code == 0)
            .count())
    }

    /// ApiVersions, as every client sends first on a new connection; fails on an error code.
    pub(super) fn api_versions(&mut self) -> Result<()> {
        let body = RequestBody::ApiVersions(ApiVersionsRequest {
            client_software_name: "kraftd-xtask-bench".into(),
            client_software_version: "1".into(),
            ..Default::default()
        });
        let ResponseBody::ApiVersions(response) = self.call(API_VERSIONS_VERSION, body)? else {
            bail!("not an ApiVersions response");
        };
        check(response.error_code, "ApiVersions")
    }

    /// InitProducerId without a transactional id (an idempotent producer): its producer id
    /// and epoch, or the error code (a retriable one while the node allocates ids).
    pub(super) fn init_producer_id(&mut self) -> Result<Result<(i64, i16), i16>> {
        let body = RequestBody::InitProducerId(InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: -1,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        });
        let ResponseBody::InitProducerId(r) = self.call(INIT_PRODUCER_ID_VERSION, body)? else {
            bail!("not an InitProducerId response");
        };
        Ok(match r.error_code {
            0 => Ok((r.producer_id, r.producer_epoch)),
            code => Err(code),
        })
    }

    /// One acks=1 Produce of one `value` record as the idempotent producer `(id, epoch)`, its
    /// first batch (sequence 0), to `topic`-`partition`; fails on an error code.
    pub(super) fn produce_first(
        &mut self,
        topic: &str,
        partition: i32,
        (id, epoch): (i64, i16),
        value: &Bytes,
    ) -> Result<()> {
        let mut batch = RecordBatchBuilder::new(0).producer(id, epoch, 0);
        batch.append(now_ms(), None, Some(value.clone()), Vec::new())?;
        let body = RequestBody::Produce(ProduceRequest {
            acks: 1,
            timeout_ms: 30_000,
            topic_data: vec![TopicProduceData {
                name: topic.into(),
                partition_data: vec![PartitionProduceData {
                    index: partition,
                    records: Some(batch.build()?),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        });
        let ResponseBody::Produce(r) = self.call(PRODUCE_VERSION, body)? else {
            bail!("not a Produce response");
        };
        for p in r.responses.iter().flat_map(|t| &t.partition_responses) {
            check(p.error_code, "Produce")?;
        }
        Ok(())
    }

    /// FindCoordinator of consumer group `group`: the coordinator's node id, or the error
    /// code (a retriable one while the offsets topic is created or loaded).
    pub(super) fn find_group_coordinator(&mut self, group: &str) -> Result<Result<i32, i16>> {
        let body = RequestBody::FindCoordinator(FindCoordinatorRequest {
            key_type: 0,
            coordinator_keys: vec![group.to_string()],
            ..Default::default()
        });
        let ResponseBody::FindCoordinator(r) = self.call(FIND_COORDINATOR_VERSION, body)? else {
            bail!("not a FindCoordinator response");
        };
        let c = r
            .coordinators
            .first()
            .ok_or_else(|| anyhow!("FindCoordinator answered no coordinator for {group}"))?;
        Ok(match c.error_code {
            0 => Ok(c.node_id),
            code => Err(code),
        })
    }

    /// A simple OffsetCommit (generation -1, no member, as `kafka-consumer-groups
    /// --reset-offsets` sends) of `offset` for `partitions` of `topic` in `group`: the first
    /// partition's error code, 0 when all committed.
    pub(super) fn commit_offsets(
        &mut self,
        group: &str,
        topic: &str,
        partitions: i32,
        offset: i64,
    ) -> Result<i16> {
        let body = RequestBody::OffsetCommit(OffsetCommitRequest {
            group_id: group.to_string(),
            generation_id_or_member_epoch: -1,
            member_id: String::new(),
            retention_time_ms: -1,
            topics: vec![OffsetCommitRequestTopic {
                name: topic.to_string(),
                partitions: (0..partitions)
                    .map(|p| OffsetCommitRequestPartition {
                        partition_index: p,
                        committed_offset: offset,
                        committed_leader_epoch: -1,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        });
        let ResponseBody::OffsetCommit(r) = self.call(OFFSET_COMMIT_VERSION, body)? else {
            bail!("not an OffsetCommit response");
        };
        Ok(r.topics
            .iter()
            .flat_map(|t| &t.partitions)
            .map(|p| p.error_code)
            .find(|&c| c != 0)
            .unwrap_or(0))
    }

    /// OffsetFetch of `partitions` of `topic` in `group`: how many have a committed offset,
    /// or the group's error code.
    pub(super) fn fetch_offsets(
        &mut self,
        group: &str,
        topic: &str,
        partitions: i32,
    ) -> Result<Result<usize, i16>> {
        let body = RequestBody::OffsetFetch(OffsetFetchRequest {
            groups: vec![OffsetFetchRequestGroup {
                group_id: group.to_string(),
                member_epoch: -1,
                topics: Some(vec![OffsetFetchRequestTopics {
                    name: topic.to_string(),
                    partition_indexes: (0..partitions).collect(),
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            ..Default::default()
        });
        let ResponseBody::OffsetFetch(r) = self.call(OFFSET_FETCH_VERSION, body)? else {
            bail!("not an OffsetFetch response");
        };
        let g = r
            .groups
            .first()
            .ok_or_else(|| anyhow!("OffsetFetch answered no group for {group}"))?;
        if g.error_code != 0 {
            return Ok(Err(g.error_code));
        }
        Ok(Ok(g
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .filter(|p| p.error_code == 0 && p.committed_offset >= 0)
            .count()))
    }
}

/// Ok for error code 0, else an error naming the code and the request.
pub(super) fn check(code: i16, what: &str) -> Result<()> {
    match code {
        0 => Ok(()),
        code => bail!("{what}: error {code} ({})", error_name(code)),
    }
}

/// Kafka's name of an error code ("UNKNOWN" for a code it does not know).
pub(super) fn error_name(code: i16) -> &'static str {
    ErrorCode::from_code(code).map_or("UNKNOWN", ErrorCode::name)
}

/// Whether Kafka's clients retry on an error code.
pub(super) fn retriable(code: i16) -> bool {
    ErrorCode::from_code(code).is_some_and(ErrorCode::is_retriable)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
