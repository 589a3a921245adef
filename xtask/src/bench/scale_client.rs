//! The Kafka requests `bench scale` sends itself (no JVM per poll, so polling 100,000
//! partitions every half second costs the node under test, not the bench): CreateTopics of
//! many topics in one request, Metadata of every topic (which partitions have a leader, which
//! have a full ISR), and ListOffsets of every partition (which logs are open and readable).
//! One blocking connection to one broker; the same versions work on kraftd and Kafka 4.4.
//! `bench add-voter` and `bench cost` create their topics through it too.

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
use kraftd_protocol::messages::{
    CreateTopicsRequest, ListOffsetsRequest, MetadataRequest, RequestHeader,
};
use kraftd_protocol::{RequestBody, ResponseBody};

const CREATE_TOPICS_VERSION: i16 = 7;
const METADATA_VERSION: i16 = 12;
const LIST_OFFSETS_VERSION: i16 = 7;

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
}
