//! DLQ writes queued per destination leader and sent as one Produce per leader at a time
//! (Kafka's `ShareGroupDLQStateManager.SendThread`: its `nodeRPCMap`, `inFlight` and
//! `coalesceProduceRequests`).
//!
//! While a Produce to a leader is in flight, further writes for that leader wait; when it
//! completes, everything waiting goes in the next request. The writes for one DLQ partition
//! are merged into one batch (a Produce carries one batch per partition), within the DLQ
//! topic's `max.message.bytes`: a write that would push the merged batch past it waits for the
//! next round, and the first write of a partition always goes, so every round moves on. Under
//! a burst of rejections that is one Produce per leader per round trip instead of one per
//! rejected batch, as Kafka does.
//!
//! [`coalesce`] is sans IO; [`SendQueue`] is the tokio edge: the first write for an idle
//! leader spawns its sender task, which runs until nothing waits for that leader.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kraftd_protocol::messages::{ProduceRequest, ProduceResponse};
use kraftd_protocol::records::{RecordBatch, RecordBatchBuilder, RecordBatchError};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody, Uuid};
use tokio::sync::oneshot;

use super::{Destination, DlqError, Retry, PRODUCE_TIMEOUT_MS};
use crate::metadata::MetadataCache;
use crate::server::broker_channels::BrokerChannels;

/// One DLQ batch for `dest`, and what to tell its writer (`done`).
#[derive(Debug)]
pub(super) struct Write<T> {
    pub dest: Destination,
    pub records: Bytes,
    pub done: T,
}

/// One round for a leader: the Produce, the writes it carries and those left for later.
#[derive(Debug)]
pub(super) struct Coalesced<T> {
    pub request: ProduceRequest,
    pub live: Vec<Write<T>>,
    pub deferred: Vec<Write<T>>,
}

/// Kafka's `coalesceProduceRequests`: the writes, all for one leader, as one acks=all
/// Produce with one batch per (topic, partition), in the order they were queued. A write is
/// deferred when its records would take its partition's merged batch past the DLQ topic's
/// `max.message.bytes` (never the first of a partition) — and with it every later write for
/// that partition, so none overtakes it — or when its batch cannot be merged
/// with the ones before it (then it goes on its own in a later round).
pub(super) fn coalesce<T>(writes: Vec<Write<T>>) -> Coalesced<T> {
    // (topic id, partition) -> the indexes of `live` admitted there, and their bytes so far.
    let mut by_partition: Vec<((Uuid, i32), Vec<usize>, usize)> = Vec::new();
    let mut live: Vec<Write<T>> = Vec::new();
    let mut deferred = Vec::new();
    // Partitions with a write deferred: their later writes wait too, so a DLQ partition
    // gets its writes in the order they were queued.
    let mut held: Vec<(Uuid, i32)> = Vec::new();
    for write in writes {
        let key = (write.dest.topic_id, write.dest.partition);
        let size = write.records.len();
        if held.contains(&key) {
            deferred.push(write);
            continue;
        }
        match by_partition.iter_mut().find(|(k, _, _)| *k == key) {
            None => {
                by_partition.push((key, vec![live.len()], size));
                live.push(write);
            }
            Some((_, members, running)) => {
                if *running + size > write.dest.max_message_bytes {
                    held.push(key);
                    deferred.push(write);
                } else {
                    *running += size;
                    members.push(live.len());
                    live.push(write);
                }
            }
        }
    }
    // Merge each partition's batches; a merge that fails keeps the first write and defers
    // the rest of that partition (each then goes first, alone, in a later round).
    let mut topics: Vec<TopicProduceData> = Vec::new();
    let mut dropped: Vec<usize> = Vec::new();
    for ((topic_id, partition), members, _) in &by_partition {
        let batches: Vec<&Bytes> = members.iter().map(|&i| &live[i].records).collect();
        let records = match merge_batches(&batches) {
            Ok(merged) => merged,
            Err(e) => {
                tracing::warn!(partition, error = %e,
                    "DLQ batches could not be merged; sending them one at a time");
                dropped.extend(&members[1..]);
                live[members[0]].records.clone()
            }
        };
        let name = live[members[0]].dest.topic.clone();
        let data = PartitionProduceData {
            index: *partition,
            records: Some(records),
            ..Default::default()
        };
        match topics.iter_mut().find(|t| t.topic_id == *topic_id) {
            Some(t) => t.partition_data.push(data),
            None => topics.push(TopicProduceData {
                name,
                topic_id: *topic_id,
                partition_data: vec![data],
                ..Default::default()
            }),
        }
    }
    if !dropped.is_empty() {
        dropped.sort_unstable();
        // Take from the back so the earlier indexes stay valid, then restore queue order.
        let mut moved: Vec<Write<T>> = dropped.iter().rev().map(|&i| live.remove(i)).collect();
        moved.reverse();
        moved.append(&mut deferred);
        deferred = moved;
    }
    Coalesced {
        request: ProduceRequest {
            transactional_id: None,
            acks: -1,
            timeout_ms: PRODUCE_TIMEOUT_MS,
            topic_data: topics,
            ..Default::default()
        },
        live,
        deferred,
    }
}

/// Kafka's `mergeRecords`: one batch as is, several as one uncompressed batch of all their
/// records, each with its own timestamp, key, value and headers, in order.
fn merge_batches(batches: &[&Bytes]) -> Result<Bytes, RecordBatchError> {
    if let [one] = batches {
        return Ok((*one).clone());
    }
    let mut builder = RecordBatchBuilder::new(0);
    for bytes in batches {
        let batch = RecordBatch::parse((*bytes).clone())?;
        for record in batch.records()? {
            let record = record?;
            let timestamp = record.timestamp(&batch);
            builder.append(timestamp, record.key, record.value, record.headers)?;
        }
    }
    builder.build()
}

/// What the Produce's answer means for the write to (topic id, partition) of `topic`.
fn outcome(response: &ProduceResponse, dest: &Destination) -> Result<(), Retry> {
    let code = response
        .responses
        .iter()
        .filter(|t| t.topic_id == dest.topic_id || t.name == dest.topic)
        .flat_map(|t| &t.partition_responses)
        .find(|p| p.index == dest.partition)
        .map_or(ErrorCode::UnknownServerError.code(), |p| p.error_code);
    match ErrorCode::from_code(code) {
        Some(ErrorCode::None) => Ok(()),
        Some(ErrorCode::NotLeaderOrFollower | ErrorCode::RequestTimedOut) => {
            Err(Retry::Again(DlqError::Code(ErrorCode::NotLeaderOrFollower)))
        }
        // A DLQ topic just created may not have reached its leader's metadata yet: its
        // answer is retried as a producer retries it (Kafka's DLQ writer retries only
        // NOT_LEADER_OR_FOLLOWER, and can lose the first records to an auto-created topic so).
        Some(
            code @ (ErrorCode::UnknownTopicOrPartition
            | ErrorCode::UnknownTopicId
            | ErrorCode::LeaderNotAvailable),
        ) => Err(Retry::Again(DlqError::Code(code))),
        other => Err(Retry::Fatal(DlqError::Code(
            other.unwrap_or(ErrorCode::UnknownServerError),
        ))),
    }
}

type Reply = oneshot::Sender<Result<(), Retry>>;

/// The writes waiting for one leader, and whether a Produce to it is in flight.
#[derive(Debug, Default)]
struct LeaderQueue {
    in_flight: bool,
    waiting: Vec<Write<Reply>>,
}

/// The per-leader queues of one broker's DLQ writer (see the module docs).
#[derive(Debug)]
pub(super) struct SendQueue {
    metadata: MetadataCache,
    channels: Arc<BrokerChannels>,
    queues: Mutex<HashMap<i32, LeaderQueue>>,
}

impl SendQueue {
    pub fn new(metadata: MetadataCache, channels: Arc<BrokerChannels>) -> Self {
        SendQueue {
            metadata,
            channels,
            queues: Mutex::new(HashMap::new()),
        }
    }

    /// Queues `records` for `dest` and waits for the answer of the Produce that carries them.
    pub async fn send(self: &Arc<Self>, dest: Destination, records: Bytes) -> Result<(), Retry> {
        let (done, answer) = oneshot::channel();
        let leader = dest.leader;
        let start = {
            let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
            let queue = queues.entry(leader).or_default();
            queue.waiting.push(Write {
                dest,
                records,
                done,
            });
            !std::mem::replace(&mut queue.in_flight, true)
        };
        if start {
            tokio::spawn(Arc::clone(self).drive(leader));
        }
        answer.await.unwrap_or(Err(Retry::Again(DlqError::Code(
            ErrorCode::NetworkException,
        ))))
    }

    /// The sender of one leader: a round per Produce until nothing waits.
    async fn drive(self: Arc<Self>, leader: i32) {
        loop {
            let round = {
                let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
                let Some(queue) = queues.get_mut(&leader) else {
                    return;
                };
                if queue.waiting.is_empty() {
                    queues.remove(&leader);
                    return;
                }
                let round = coalesce(std::mem::take(&mut queue.waiting));
                queue.waiting = round.deferred;
                (round.request, round.live)
            };
            let (request, live) = round;
            let answer = self.produce(leader, request).await;
            for write in live {
                let result = match &answer {
                    Ok(response) => outcome(response, &write.dest),
                    Err(retry) => Err(retry.clone()),
                };
                // The writer may have gone (its task aborted): nothing to tell then.
                let _ = write.done.send(result);
            }
        }
    }

    /// One Produce to `leader` over the inter-broker listener.
    async fn produce(
        &self,
        leader: i32,
        request: ProduceRequest,
    ) -> Result<ProduceResponse, Retry> {
        let image = self.metadata.image();
        let address = self
            .channels
            .address(&image, leader)
            .ok_or(Retry::Again(DlqError::Code(ErrorCode::LeaderNotAvailable)))?;
        let channel = self.channels.channel(&address);
        let answer = channel
            .call(
                channel.next_correlation_id(),
                supported_range(ApiKey::Produce).max,
                RequestBody::Produce(request),
            )
            .await;
        match answer {
            Ok(ResponseBody::Produce(r)) => Ok(r),
            Ok(_) => Err(Retry::Fatal(DlqError::Code(ErrorCode::UnknownServerError))),
            Err(_) => Err(Retry::Again(DlqError::Code(ErrorCode::NetworkException))),
        }
    }
}

#[cfg(test)]
mod tests {
    use kraftd_protocol::records::{Batches, Header};

    use super::*;

    fn dest(topic: u8, partition: i32, max_message_bytes: usize) -> Destination {
        Destination {
            topic: format!("dlq.t{topic}"),
            topic_id: Uuid([topic; 16]),
            partition,
            leader: 2,
            max_message_bytes,
        }
    }

    /// A batch of `n` records with values `tag-0..`, stamped `ts`, one header each.
    fn batch(tag: &str, n: usize, ts: i64) -> Bytes {
        let mut b = RecordBatchBuilder::new(0);
        for i in 0..n {
            let header = Header::new("h", Some(Bytes::from(format!("{tag}-{i}"))));
            b.append(
                ts + i as i64,
                None,
                Some(Bytes::from(format!("{tag}-{i}"))),
                vec![header],
            )
            .unwrap();
        }
        b.build().unwrap()
    }

    fn write(dest: Destination, records: Bytes, id: u32) -> Write<u32> {
        Write {
            dest,
            records,
            done: id,
        }
    }

    /// (value, timestamp, header value) of every record of a partition's batch.
    fn records_of(bytes: &Bytes) -> Vec<(String, i64, String)> {
        let batches: Vec<RecordBatch> = Batches::new(bytes.clone()).map(|b| b.unwrap()).collect();
        assert_eq!(batches.len(), 1, "one batch per partition");
        let b = &batches[0];
        b.records()
            .unwrap()
            .map(|r| {
                let r = r.unwrap();
                let text = |v: &Option<Bytes>| String::from_utf8(v.clone().unwrap().to_vec());
                (
                    text(&r.value).unwrap(),
                    r.timestamp(b),
                    text(&r.headers[0].value).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn writes_for_one_leader_go_in_one_produce_merged_per_partition_in_queue_order() {
        let c = coalesce(vec![
            write(dest(1, 0, 1 << 20), batch("a", 2, 100), 1),
            write(dest(1, 1, 1 << 20), batch("b", 1, 200), 2),
            write(dest(3, 0, 1 << 20), batch("c", 1, 300), 3),
            write(dest(1, 0, 1 << 20), batch("d", 3, 400), 4),
        ]);
        assert!(c.deferred.is_empty());
        assert_eq!(
            c.live.iter().map(|w| w.done).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
        assert_eq!(c.request.acks, -1);
        assert_eq!(c.request.timeout_ms, PRODUCE_TIMEOUT_MS);
        let topics: Vec<(&str, Vec<i32>)> = c
            .request
            .topic_data
            .iter()
            .map(|t| {
                let partitions = t.partition_data.iter().map(|p| p.index).collect();
                (t.name.as_str(), partitions)
            })
            .collect();
        assert_eq!(topics, [("dlq.t1", vec![0, 1]), ("dlq.t3", vec![0])]);
        let merged = c.request.topic_data[0].partition_data[0]
            .records
            .as_ref()
            .unwrap();
        let expected: Vec<(String, i64, String)> = [("a", 0, 100), ("a", 1, 101)]
            .into_iter()
            .chain([("d", 0, 400), ("d", 1, 401), ("d", 2, 402)])
            .map(|(tag, i, ts)| (format!("{tag}-{i}"), ts, format!("{tag}-{i}")))
            .collect();
        assert_eq!(
            records_of(merged),
            expected,
            "each record keeps its timestamp and headers"
        );
        // A partition written once keeps its batch byte for byte.
        let single = c.request.topic_data[0].partition_data[1]
            .records
            .as_ref()
            .unwrap();
        assert_eq!(single, &batch("b", 1, 200));
    }

    #[test]
    fn a_write_past_max_message_bytes_waits_for_the_next_round_but_a_partitions_first_always_goes()
    {
        let big = batch("big", 20, 0);
        let small = batch("z", 1, 0);
        let limit = big.len() + small.len();
        let c = coalesce(vec![
            write(dest(1, 0, limit), big.clone(), 1),
            write(dest(1, 0, limit), batch("x", 5, 0), 2),
            write(dest(1, 1, limit), batch("y", 1, 0), 3),
            // Small enough to fit, but queued after the deferred 2: it waits behind it.
            write(dest(1, 0, limit), small, 4),
        ]);
        assert_eq!(c.live.iter().map(|w| w.done).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(
            c.deferred.iter().map(|w| w.done).collect::<Vec<_>>(),
            [2, 4]
        );
        // The next round carries the deferred writes first, in their order.
        let next = coalesce(c.deferred);
        assert_eq!(next.live.iter().map(|w| w.done).collect::<Vec<_>>(), [2, 4]);
        let over = coalesce(vec![write(dest(1, 0, 1), big, 9)]);
        assert_eq!(
            over.live.len(),
            1,
            "the first write of a partition always goes"
        );
    }

    #[test]
    fn batches_that_cannot_be_merged_go_one_at_a_time() {
        let c = coalesce(vec![
            write(dest(1, 0, 1 << 20), batch("a", 1, 0), 1),
            write(dest(1, 0, 1 << 20), Bytes::from_static(b"not a batch"), 2),
            write(dest(1, 0, 1 << 20), batch("c", 1, 0), 3),
            write(dest(1, 1, 1 << 20), batch("d", 1, 0), 4),
        ]);
        assert_eq!(c.live.iter().map(|w| w.done).collect::<Vec<_>>(), [1, 4]);
        assert_eq!(
            c.deferred.iter().map(|w| w.done).collect::<Vec<_>>(),
            [2, 3]
        );
        let first = c.request.topic_data[0].partition_data[0]
            .records
            .as_ref()
            .unwrap();
        assert_eq!(first, &batch("a", 1, 0));
    }
}
