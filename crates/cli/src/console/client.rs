//! What the console learns as a client would, over the Kafka protocol: the groups
//! (ListGroups on every broker, FindCoordinator, DescribeGroups, OffsetFetch) and the
//! partitions' offsets (ListOffsets to each leader: earliest, latest, and latest under
//! read_committed for the LSO). These are the requests `kafka-consumer-groups --describe`
//! sends, so the lag shown is the lag the tool prints: the committed offset against the
//! leader's latest offset (the high watermark, read_uncommitted, as the tool's
//! `ListOffsetsOptions` default). The node's own group coordinator holds only the groups of
//! the `__consumer_offsets` partitions this broker leads, and other leaders' offsets are
//! only theirs to tell, so asking the brokers is the one way that sees the whole cluster.
//!
//! The console connects to the brokers' endpoints on one of this node's client listeners
//! (its name and the client security for it come from `mod.rs`), one cached `Channel` per
//! broker address. Cost: a group page is 1 FindCoordinator + 1 DescribeGroups + 1
//! OffsetFetch + one ListOffsets per leader of the group's partitions; the group list is one
//! ListGroups per broker; a topic page 3 ListOffsets per leader of its page's partitions.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, bail, Result};
use bytes::Buf;
use kraftd_controller::MetadataImage;
use kraftd_net::{Channel, ClientSecurity};
use kraftd_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kraftd_protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup;
use kraftd_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kraftd_protocol::messages::streams_group_describe_response::TaskIds as StreamsTaskIds;
use kraftd_protocol::messages::{
    ConsumerProtocolAssignment, DescribeGroupsRequest, DescribeLogDirsRequest,
    DescribeShareGroupOffsetsRequest, FindCoordinatorRequest, ListGroupsRequest,
    ListOffsetsRequest, OffsetFetchRequest, ShareGroupDescribeRequest, StreamsGroupDescribeRequest,
};
use kraftd_protocol::{ApiKey, ErrorCode, Message, RequestBody, ResponseBody};
use serde_json::{json, Value};

use crate::metadata_quorum::{self, api_versions, call, error_name, Versions};

/// Every partition of `topics` (by name) as `topic-partition` keys.
fn keyed(topics: impl IntoIterator<Item = (String, Vec<i32>)>) -> Vec<(String, i32)> {
    topics
        .into_iter()
        .flat_map(|(t, ps)| ps.into_iter().map(move |p| (t.clone(), p)))
        .collect()
}

/// The member a partition is assigned to, as a group page names it.
struct Owner {
    member_id: String,
    client_id: String,
    host: String,
}

impl Owner {
    fn of(member_id: &str, client_id: &str, host: &str) -> Owner {
        Owner {
            member_id: member_id.to_string(),
            client_id: client_id.to_string(),
            host: host.to_string(),
        }
    }
}

/// ListOffsets' timestamp for the latest offset (the HW under read_uncommitted, the LSO
/// under read_committed).
const LATEST_TIMESTAMP: i64 = -1;
/// ListOffsets' timestamp for the log start offset.
const EARLIEST_TIMESTAMP: i64 = -2;
/// FindCoordinator's key type of a group.
const GROUP_KEY_TYPE: i8 = 0;
/// The highest FindCoordinator version asked: v3 names one key and answers with one
/// coordinator, all one group page needs.
const FIND_COORDINATOR_MAX: i16 = 3;
/// The highest OffsetFetch version asked: v7 takes one group by name with topic names (v10
/// moves to topic ids).
const OFFSET_FETCH_MAX: i16 = 7;

/// A topic's figures on the topic list (see [`KafkaAccess::topic_totals`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TopicTotals {
    /// Bytes on disk over every replica.
    pub size_bytes: i64,
    /// The sum of its partitions' end offsets: records ever appended, less none.
    pub end_offsets: i64,
}

/// One partition's offsets as its leader tells them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartitionOffsets {
    pub log_start: Option<i64>,
    pub high_watermark: Option<i64>,
    pub last_stable: Option<i64>,
}

/// A broker's channel and, once asked, the versions it serves.
type Connection = (Channel, Option<Arc<Versions>>);

/// The brokers as a client reaches them on one listener.
pub struct KafkaAccess {
    listener: String,
    security: ClientSecurity,
    channels: Mutex<HashMap<String, Connection>>,
}

impl KafkaAccess {
    pub fn new(listener: String, security: ClientSecurity) -> KafkaAccess {
        KafkaAccess {
            listener,
            security,
            channels: Mutex::new(HashMap::new()),
        }
    }

    /// `host:port` of broker `id` on the console's listener, from the image.
    pub(super) fn address(&self, image: &MetadataImage, id: i32) -> Option<String> {
        let b = image.cluster.broker(id)?;
        let e = b.listeners.get(&self.listener)?;
        Some(format!("{}:{}", e.host, e.port))
    }

    /// The channel to `address` and the versions it serves, asked once per channel.
    async fn connect(&self, address: &str) -> Result<(Channel, Arc<Versions>)> {
        let cached = {
            let mut channels = self.channels.lock().expect("console channels");
            channels
                .entry(address.to_string())
                .or_insert_with(|| (metadata_quorum::channel(address, &self.security), None))
                .clone()
        };
        if let (channel, Some(versions)) = cached {
            return Ok((channel, versions));
        }
        let channel = cached.0;
        let versions = match api_versions(&channel).await {
            Ok(v) => Arc::new(v),
            Err(e) => {
                // A new channel next time: the broker may come back elsewhere.
                self.channels
                    .lock()
                    .expect("console channels")
                    .remove(address);
                return Err(e);
            }
        };
        if let Some(entry) = self
            .channels
            .lock()
            .expect("console channels")
            .get_mut(address)
        {
            entry.1 = Some(Arc::clone(&versions));
        }
        Ok((channel, versions))
    }

    pub(super) async fn ask(
        &self,
        address: &str,
        key: ApiKey,
        max: i16,
        body: RequestBody,
    ) -> Result<ResponseBody> {
        let (channel, versions) = self.connect(address).await?;
        let version = versions
            .pick(key)
            .ok_or_else(|| anyhow!("{address} does not serve {key:?} at a version kraftd speaks"))?
            .min(max);
        let result = call(&channel, version, body).await;
        if result.is_err() {
            self.channels
                .lock()
                .expect("console channels")
                .remove(address);
        }
        result
    }

    /// Every group every unfenced broker coordinates (ListGroups to each), by id.
    pub async fn groups(&self, image: &MetadataImage) -> Value {
        let mut groups = BTreeMap::new();
        let mut errors = Vec::new();
        for b in image.cluster.brokers().filter(|b| !b.fenced) {
            let Some(address) = self.address(image, b.id) else {
                continue;
            };
            let body = RequestBody::ListGroups(ListGroupsRequest::default());
            match self.ask(&address, ApiKey::ListGroups, i16::MAX, body).await {
                Ok(ResponseBody::ListGroups(r)) if r.error_code == 0 => {
                    for g in r.groups {
                        groups.insert(
                            g.group_id.clone(),
                            json!({
                                "group_id": g.group_id,
                                "protocol_type": g.protocol_type,
                                "state": g.group_state,
                                "type": g.group_type,
                                "coordinator": b.id,
                            }),
                        );
                    }
                }
                Ok(ResponseBody::ListGroups(r)) => {
                    errors.push(format!("broker {}: {}", b.id, error_name(r.error_code)))
                }
                Ok(_) => errors.push(format!("broker {}: another response", b.id)),
                Err(e) => errors.push(format!("broker {}: {e}", b.id)),
            }
        }
        json!({
            "groups": groups.into_values().collect::<Vec<_>>(),
            "errors": errors,
        })
    }

    /// One group: its state and members with their assignments, and per partition the
    /// committed offset, the leader's latest offset and the lag.
    pub async fn group(&self, image: &MetadataImage, id: &str, bootstrap: &str) -> Result<Value> {
        let body = RequestBody::FindCoordinator(FindCoordinatorRequest {
            key: id.to_string(),
            key_type: GROUP_KEY_TYPE,
            ..Default::default()
        });
        let ResponseBody::FindCoordinator(found) = self
            .ask(
                bootstrap,
                ApiKey::FindCoordinator,
                FIND_COORDINATOR_MAX,
                body,
            )
            .await?
        else {
            bail!("{bootstrap}: answered FindCoordinator with another response");
        };
        if found.error_code != ErrorCode::None.code() {
            bail!("FindCoordinator for {id}: {}", error_name(found.error_code));
        }
        let coordinator = format!("{}:{}", found.host, found.port);
        let body = RequestBody::DescribeGroups(DescribeGroupsRequest {
            groups: vec![id.to_string()],
            ..Default::default()
        });
        let ResponseBody::DescribeGroups(described) = self
            .ask(&coordinator, ApiKey::DescribeGroups, i16::MAX, body)
            .await?
        else {
            bail!("{coordinator}: answered DescribeGroups with another response");
        };
        let group = described
            .groups
            .into_iter()
            .next()
            .ok_or_else(|| anyhow!("{coordinator}: DescribeGroups named no group"))?;
        if group.error_code == ErrorCode::GroupIdNotFound.code() {
            // Not a classic or consumer group: a share group answers ShareGroupDescribe
            // (DescribeGroups does not describe it, as in Kafka).
            return self
                .share_group(image, id, &coordinator, found.node_id)
                .await;
        }
        if group.error_code != ErrorCode::None.code() {
            bail!("DescribeGroups for {id}: {}", error_name(group.error_code));
        }
        let committed = self.committed_offsets(&coordinator, id).await?;
        // (topic, partition) → the member it is assigned to.
        let mut owners: BTreeMap<(String, i32), Owner> = BTreeMap::new();
        let mut members = Vec::new();
        for m in &group.members {
            let assignment = decode_assignment(&m.member_assignment);
            for (topic, partitions) in &assignment {
                for p in partitions {
                    owners.insert(
                        (topic.clone(), *p),
                        Owner::of(&m.member_id, &m.client_id, &m.client_host),
                    );
                }
            }
            members.push(json!({
                "member_id": m.member_id,
                "instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "host": m.client_host,
                "assignment": assignment
                    .iter()
                    .map(|(t, ps)| json!({"topic": t, "partitions": ps}))
                    .collect::<Vec<_>>(),
            }));
        }
        let (partitions, total_lag) = self.lag_rows(image, &owners, &committed).await;
        Ok(json!({
            "group_id": group.group_id,
            "state": group.group_state,
            "protocol_type": group.protocol_type,
            "assignor": group.protocol_data,
            "coordinator": found.node_id,
            "members": members,
            "partitions": partitions,
            "total_lag": total_lag,
        }))
    }

    /// The offsets group `id` committed, by (topic, partition): OffsetFetch of every
    /// partition to its coordinator (classic, consumer and streams groups commit alike).
    async fn committed_offsets(
        &self,
        coordinator: &str,
        id: &str,
    ) -> Result<BTreeMap<(String, i32), i64>> {
        let body = RequestBody::OffsetFetch(OffsetFetchRequest {
            group_id: id.to_string(),
            topics: None,
            ..Default::default()
        });
        let ResponseBody::OffsetFetch(fetched) = self
            .ask(coordinator, ApiKey::OffsetFetch, OFFSET_FETCH_MAX, body)
            .await?
        else {
            bail!("{coordinator}: answered OffsetFetch with another response");
        };
        if fetched.error_code != ErrorCode::None.code() {
            bail!("OffsetFetch for {id}: {}", error_name(fetched.error_code));
        }
        let mut committed = BTreeMap::new();
        for t in &fetched.topics {
            for p in &t.partitions {
                if p.error_code == ErrorCode::None.code() && p.committed_offset >= 0 {
                    committed.insert((t.name.clone(), p.partition_index), p.committed_offset);
                }
            }
        }
        Ok(committed)
    }

    /// A group page's partition rows — every partition owned or committed: the committed
    /// offset, the leader's latest offset, the lag and the owning member — and the total lag.
    async fn lag_rows(
        &self,
        image: &MetadataImage,
        owners: &BTreeMap<(String, i32), Owner>,
        committed: &BTreeMap<(String, i32), i64>,
    ) -> (Vec<Value>, i64) {
        let keys: BTreeSet<(String, i32)> =
            owners.keys().chain(committed.keys()).cloned().collect();
        let ends = self.latest_offsets(image, &keys, 0).await;
        let mut total_lag = 0i64;
        let rows = keys
            .iter()
            .map(|key| {
                let offset = committed.get(key).copied();
                let end = ends.get(key).copied();
                let lag = match (offset, end) {
                    (Some(o), Some(e)) => Some((e - o).max(0)),
                    _ => None,
                };
                total_lag += lag.unwrap_or(0);
                let owner = owners.get(key);
                json!({
                    "topic": key.0,
                    "partition": key.1,
                    "committed": offset,
                    "log_end": end,
                    "lag": lag,
                    "member_id": owner.map(|o| &o.member_id),
                    "client_id": owner.map(|o| &o.client_id),
                    "host": owner.map(|o| &o.host),
                })
            })
            .collect();
        (rows, total_lag)
    }

    /// The latest offset of each of `keys` from its leader (`isolation` 0: the HW; 1: the
    /// LSO); a partition without a leader or whose leader refused is left out.
    async fn latest_offsets(
        &self,
        image: &MetadataImage,
        keys: &BTreeSet<(String, i32)>,
        isolation: i8,
    ) -> BTreeMap<(String, i32), i64> {
        self.offsets_at(image, keys, LATEST_TIMESTAMP, isolation)
            .await
    }

    async fn offsets_at(
        &self,
        image: &MetadataImage,
        keys: &BTreeSet<(String, i32)>,
        timestamp: i64,
        isolation: i8,
    ) -> BTreeMap<(String, i32), i64> {
        let mut by_leader: BTreeMap<i32, BTreeMap<String, Vec<i32>>> = BTreeMap::new();
        for (topic, partition) in keys {
            let Some(t) = image.topics.get_by_name(topic) else {
                continue;
            };
            let Some(p) = t.partition(*partition) else {
                continue;
            };
            if p.has_leader() {
                by_leader
                    .entry(p.leader)
                    .or_default()
                    .entry(topic.clone())
                    .or_default()
                    .push(*partition);
            }
        }
        let mut out = BTreeMap::new();
        for (leader, topics) in by_leader {
            let Some(address) = self.address(image, leader) else {
                continue;
            };
            let body = RequestBody::ListOffsets(ListOffsetsRequest {
                replica_id: -1,
                isolation_level: isolation,
                topics: topics
                    .into_iter()
                    .map(|(name, partitions)| ListOffsetsTopic {
                        name,
                        partitions: partitions
                            .into_iter()
                            .map(|p| ListOffsetsPartition {
                                partition_index: p,
                                current_leader_epoch: -1,
                                timestamp,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            });
            let Ok(ResponseBody::ListOffsets(r)) = self
                .ask(&address, ApiKey::ListOffsets, i16::MAX, body)
                .await
            else {
                continue;
            };
            for t in r.topics {
                for p in t.partitions {
                    if p.error_code == ErrorCode::None.code() && p.offset >= 0 {
                        out.insert((t.name.clone(), p.partition_index), p.offset);
                    }
                }
            }
        }
        out
    }

    /// Log start, HW and LSO of `partitions` of `topic`, from their leaders.
    /// A share group's page as `kafka-share-groups --describe --members --offsets` shows it:
    /// ShareGroupDescribe (members and the partitions each is assigned; several members may
    /// share one) and DescribeShareGroupOffsets (each partition's share-partition start
    /// offset and lag), both to the group's coordinator.
    async fn share_group(
        &self,
        image: &MetadataImage,
        id: &str,
        coordinator: &str,
        coordinator_id: i32,
    ) -> Result<Value> {
        let body = RequestBody::ShareGroupDescribe(ShareGroupDescribeRequest {
            group_ids: vec![id.to_string()],
            ..Default::default()
        });
        let ResponseBody::ShareGroupDescribe(described) = self
            .ask(coordinator, ApiKey::ShareGroupDescribe, i16::MAX, body)
            .await?
        else {
            bail!("{coordinator}: answered ShareGroupDescribe with another response");
        };
        let group = described
            .groups
            .into_iter()
            .next()
            .ok_or_else(|| anyhow!("{coordinator}: ShareGroupDescribe named no group"))?;
        if group.error_code == ErrorCode::GroupIdNotFound.code() {
            return self
                .streams_group(image, id, coordinator, coordinator_id)
                .await;
        }
        if group.error_code != ErrorCode::None.code() {
            bail!(
                "ShareGroupDescribe for {id}: {}",
                error_name(group.error_code)
            );
        }
        let body = RequestBody::DescribeShareGroupOffsets(DescribeShareGroupOffsetsRequest {
            groups: vec![DescribeShareGroupOffsetsRequestGroup {
                group_id: id.to_string(),
                topics: None,
                ..Default::default()
            }],
            ..Default::default()
        });
        let ResponseBody::DescribeShareGroupOffsets(offsets) = self
            .ask(
                coordinator,
                ApiKey::DescribeShareGroupOffsets,
                i16::MAX,
                body,
            )
            .await?
        else {
            bail!("{coordinator}: answered DescribeShareGroupOffsets with another response");
        };
        // (topic, partition) → (start offset, lag), and the members assigned each.
        let mut starts: BTreeMap<(String, i32), (i64, i64)> = BTreeMap::new();
        for g in offsets.groups.iter().filter(|g| g.error_code == 0) {
            for t in &g.topics {
                for p in t.partitions.iter().filter(|p| p.error_code == 0) {
                    starts.insert(
                        (t.topic_name.clone(), p.partition_index),
                        (p.start_offset, p.lag),
                    );
                }
            }
        }
        let mut owners: BTreeMap<(String, i32), Vec<String>> = BTreeMap::new();
        let members: Vec<Value> = group
            .members
            .iter()
            .map(|m| {
                let assignment: Vec<(String, Vec<i32>)> = m
                    .assignment
                    .topic_partitions
                    .iter()
                    .map(|t| (t.topic_name.clone(), t.partitions.clone()))
                    .collect();
                for key in keyed(assignment.clone()) {
                    owners.entry(key).or_default().push(m.member_id.clone());
                }
                json!({
                    "member_id": m.member_id,
                    "instance_id": Value::Null,
                    "client_id": m.client_id,
                    "host": m.client_host,
                    "assignment": assignment
                        .iter()
                        .map(|(t, ps)| json!({"topic": t, "partitions": ps}))
                        .collect::<Vec<_>>(),
                })
            })
            .collect();
        let keys: BTreeSet<(String, i32)> = owners.keys().chain(starts.keys()).cloned().collect();
        let ends = self.latest_offsets(image, &keys, 0).await;
        let mut total_lag = 0;
        let partitions: Vec<Value> = keys
            .iter()
            .map(|key| {
                let (start, lag) = match starts.get(key) {
                    // -1: the share partition has no state yet.
                    Some((s, l)) if *s >= 0 => (Some(*s), Some(*l)),
                    _ => (None, None),
                };
                total_lag += lag.unwrap_or(0).max(0);
                let assigned = owners.get(key).map(|m| m.join(","));
                json!({
                    "topic": key.0,
                    "partition": key.1,
                    "committed": start,
                    "log_end": ends.get(key).copied(),
                    "lag": lag,
                    "member_id": assigned,
                    "client_id": Value::Null,
                    "host": Value::Null,
                })
            })
            .collect();
        Ok(json!({
            "group_id": group.group_id,
            "state": group.group_state,
            "protocol_type": "share",
            "assignor": group.assignor_name,
            "coordinator": coordinator_id,
            "members": members,
            "partitions": partitions,
            "total_lag": total_lag,
        }))
    }

    /// A streams group's page as `kafka-streams-groups --describe --members --offsets`
    /// shows it: StreamsGroupDescribe (members, their active, standby and warm-up tasks, and
    /// the topology naming each subtopology's source topics) and OffsetFetch (the offsets
    /// the group committed), each source partition owned by the member with its active task.
    async fn streams_group(
        &self,
        image: &MetadataImage,
        id: &str,
        coordinator: &str,
        coordinator_id: i32,
    ) -> Result<Value> {
        let body = RequestBody::StreamsGroupDescribe(StreamsGroupDescribeRequest {
            group_ids: vec![id.to_string()],
            ..Default::default()
        });
        let ResponseBody::StreamsGroupDescribe(described) = self
            .ask(coordinator, ApiKey::StreamsGroupDescribe, i16::MAX, body)
            .await?
        else {
            bail!("{coordinator}: answered StreamsGroupDescribe with another response");
        };
        let group = described
            .groups
            .into_iter()
            .next()
            .ok_or_else(|| anyhow!("{coordinator}: StreamsGroupDescribe named no group"))?;
        if group.error_code != ErrorCode::None.code() {
            bail!("no group {id}: {}", error_name(group.error_code));
        }
        let sources: BTreeMap<String, Vec<String>> = group
            .topology
            .as_ref()
            .and_then(|t| t.subtopologies.as_ref())
            .map(|subs| {
                subs.iter()
                    .map(|s| (s.subtopology_id.clone(), s.source_topics.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let tasks = |t: &[StreamsTaskIds]| {
            t.iter()
                .flat_map(|t| {
                    t.partitions
                        .iter()
                        .map(move |p| format!("{}_{p}", t.subtopology_id))
                })
                .collect::<Vec<_>>()
        };
        let mut owners: BTreeMap<(String, i32), Owner> = BTreeMap::new();
        let mut members = Vec::new();
        for m in &group.members {
            for t in &m.assignment.active_tasks {
                for topic in sources.get(&t.subtopology_id).into_iter().flatten() {
                    for p in &t.partitions {
                        owners.insert(
                            (topic.clone(), *p),
                            Owner::of(&m.member_id, &m.client_id, &m.client_host),
                        );
                    }
                }
            }
            members.push(json!({
                "member_id": m.member_id,
                "instance_id": m.instance_id,
                "client_id": m.client_id,
                "host": m.client_host,
                "process_id": m.process_id,
                "active_tasks": tasks(&m.assignment.active_tasks),
                "standby_tasks": tasks(&m.assignment.standby_tasks),
                "warmup_tasks": tasks(&m.assignment.warmup_tasks),
                "assignment": [],
            }));
        }
        let committed = self.committed_offsets(coordinator, id).await?;
        let (partitions, total_lag) = self.lag_rows(image, &owners, &committed).await;
        Ok(json!({
            "group_id": group.group_id,
            "state": group.group_state,
            "protocol_type": "streams",
            "assignor": group.assignor_name,
            "coordinator": coordinator_id,
            "members": members,
            "partitions": partitions,
            "total_lag": total_lag,
        }))
    }

    /// The size in bytes of each replica of `topic`'s `partitions`, by (partition, broker),
    /// from DescribeLogDirs to every broker holding one (future replicas of a move between
    /// dirs left out). A broker that refuses (DescribeLogDirs needs DESCRIBE on the cluster)
    /// or does not answer is missing from the map.
    /// Each replica's size on disk of `topic`'s `partitions`, keyed (partition, broker).
    pub async fn replica_sizes(
        &self,
        image: &MetadataImage,
        topic: &str,
        partitions: &[i32],
    ) -> BTreeMap<(i32, i32), i64> {
        let wanted = BTreeMap::from([(topic.to_string(), partitions.to_vec())]);
        self.replica_sizes_of(image, &wanted)
            .await
            .into_iter()
            .map(|((_, partition, broker), bytes)| ((partition, broker), bytes))
            .collect()
    }

    /// For a page of the topic list: each topic's size on disk over all its replicas, and
    /// the sum of its partitions' end offsets (the page derives records/s from two polls).
    /// One DescribeLogDirs per replica broker and one ListOffsets per leader for the page's
    /// topics, as `kafka-log-dirs` and `kafka-get-offsets` would ask.
    pub async fn topic_totals(
        &self,
        image: &MetadataImage,
        topics: &[String],
    ) -> BTreeMap<String, TopicTotals> {
        let wanted: BTreeMap<String, Vec<i32>> = topics
            .iter()
            .filter_map(|name| {
                let t = image.topics.get_by_name(name)?;
                Some((name.clone(), t.partitions.keys().copied().collect()))
            })
            .collect();
        let keys: BTreeSet<(String, i32)> = wanted
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p)))
            .collect();
        let (sizes, ends) = tokio::join!(
            self.replica_sizes_of(image, &wanted),
            self.latest_offsets(image, &keys, 0),
        );
        let mut out: BTreeMap<String, TopicTotals> = BTreeMap::new();
        for ((topic, _, _), bytes) in sizes {
            out.entry(topic).or_default().size_bytes += bytes;
        }
        for ((topic, _), end) in ends {
            out.entry(topic).or_default().end_offsets += end;
        }
        out
    }

    /// Replica sizes of `wanted` (topic → partitions), keyed (topic, partition, broker):
    /// one DescribeLogDirs to each broker holding a replica, naming only what it holds.
    async fn replica_sizes_of(
        &self,
        image: &MetadataImage,
        wanted: &BTreeMap<String, Vec<i32>>,
    ) -> BTreeMap<(String, i32, i32), i64> {
        let mut by_broker: BTreeMap<i32, BTreeMap<&str, Vec<i32>>> = BTreeMap::new();
        for (topic, partitions) in wanted {
            let Some(t) = image.topics.get_by_name(topic) else {
                continue;
            };
            for p in partitions {
                for broker in t.partitions.get(p).map_or(&[][..], |r| &r.replicas[..]) {
                    by_broker
                        .entry(*broker)
                        .or_default()
                        .entry(topic.as_str())
                        .or_default()
                        .push(*p);
                }
            }
        }
        let mut sizes = BTreeMap::new();
        for (broker, topics) in by_broker {
            let Some(address) = self.address(image, broker) else {
                continue;
            };
            let body = RequestBody::DescribeLogDirs(DescribeLogDirsRequest {
                topics: Some(
                    topics
                        .iter()
                        .map(|(topic, partitions)| DescribableLogDirTopic {
                            topic: topic.to_string(),
                            partitions: partitions.clone(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            });
            let Ok(ResponseBody::DescribeLogDirs(r)) = self
                .ask(&address, ApiKey::DescribeLogDirs, i16::MAX, body)
                .await
            else {
                continue;
            };
            for dir in r.results.iter().filter(|d| d.error_code == 0) {
                for tp in dir.topics.iter().filter(|tp| wanted.contains_key(&tp.name)) {
                    for p in tp.partitions.iter().filter(|p| !p.is_future_key) {
                        sizes.insert(
                            (tp.name.clone(), p.partition_index, broker),
                            p.partition_size,
                        );
                    }
                }
            }
        }
        sizes
    }

    pub async fn partition_offsets(
        &self,
        image: &MetadataImage,
        topic: &str,
        partitions: &[i32],
    ) -> BTreeMap<i32, PartitionOffsets> {
        let keys: BTreeSet<(String, i32)> =
            partitions.iter().map(|p| (topic.to_string(), *p)).collect();
        let (start, hw, lso) = tokio::join!(
            self.offsets_at(image, &keys, EARLIEST_TIMESTAMP, 0),
            self.latest_offsets(image, &keys, 0),
            self.latest_offsets(image, &keys, 1),
        );
        partitions
            .iter()
            .map(|p| {
                let key = (topic.to_string(), *p);
                (
                    *p,
                    PartitionOffsets {
                        log_start: start.get(&key).copied(),
                        high_watermark: hw.get(&key).copied(),
                        last_stable: lso.get(&key).copied(),
                    },
                )
            })
            .collect()
    }
}

/// A classic member's assignment bytes (Kafka's `ConsumerProtocol`: an i16 version, then
/// ConsumerProtocolAssignment) as (topic, partitions); empty when absent or not the
/// consumer protocol's (a Connect worker's). A version above ours is read as our highest,
/// as Kafka's `ConsumerProtocol.deserializeAssignment` does.
pub fn decode_assignment(bytes: &bytes::Bytes) -> Vec<(String, Vec<i32>)> {
    let mut b = bytes.clone();
    if b.remaining() < 2 {
        return Vec::new();
    }
    let version = b.get_i16();
    if version < 0 {
        return Vec::new();
    }
    let version = version.min(ConsumerProtocolAssignment::VERSIONS.max);
    match ConsumerProtocolAssignment::decode(&mut b, version) {
        Ok(a) => a
            .assigned_partitions
            .into_iter()
            .map(|t| (t.topic, t.partitions))
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kraftd_protocol::messages::consumer_protocol_assignment::TopicPartition;
    use kraftd_protocol::Encoder;

    #[test]
    fn an_assignment_decodes_from_the_consumer_protocol_bytes() {
        let assignment = ConsumerProtocolAssignment {
            assigned_partitions: vec![TopicPartition {
                topic: "t".into(),
                partitions: vec![0, 2],
            }],
            ..Default::default()
        };
        let mut e = Encoder::new();
        e.put_i16(1);
        assignment.encode(&mut e, 1).unwrap();
        let bytes = e.into_bytes();
        assert_eq!(
            decode_assignment(&bytes),
            vec![("t".to_string(), vec![0, 2])]
        );
        assert!(decode_assignment(&bytes::Bytes::new()).is_empty());
        assert!(decode_assignment(&bytes::Bytes::from_static(&[0, 1, 0xff])).is_empty());
    }
}
