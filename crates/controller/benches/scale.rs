//! The controller at a million partitions (issue 19; not a test): the sans-IO
//! QuorumController driven directly, no network and no disk, with 10 registered brokers and
//! topics of 100 partitions at RF 3 created until the cluster holds `KRAFTD_BENCH_PARTITIONS`
//! (default 1,000,000). At each checkpoint on the way (10,000, 100,000, 1,000,000) it
//! measures the same operations, so a cost that grows with the total shows as a rate that
//! falls from one checkpoint to the next:
//! - create: CreateTopics of 10 topics × 100 partitions (partitions per second);
//! - delete: DeleteTopics of those topics (partitions per second);
//! - fence: a broker asks to be fenced (heartbeat `want_fence`): it leaves every ISR and
//!   the partitions it led elect new leaders (partitions changed per second);
//! - unfence: its next heartbeat unfences it and elects leaders for the partitions left
//!   leaderless (those whose ISR held only it), in ms; then fence and unfence again once
//!   nothing is left to change, which shows the fixed cost;
//! - heartbeat: a steady heartbeat of an unfenced broker, in µs;
//! - elect: ElectLeaders (preferred) of 1,000 named partitions whose preferred leader is
//!   back in the ISR (moves leadership back), partitions per second.
//!
//! Each write runs as on the active controller: the manager against the latest image, the
//! records replayed into it, proposed to a fake Raft that commits at once, replayed into the
//! committed image and fed to the controller's metrics publisher. The build-up itself is
//! timed as creates per second per decade.
//!
//! `cargo bench -p kraftd-controller --bench scale`; `KRAFTD_BENCH_PARTITIONS` sets the
//! final size (checkpoints are the powers of ten from 10,000 up to it, and it).

use std::collections::BTreeMap;
use std::time::Instant;

use kraftd_controller::control::ControllerResult;
use kraftd_controller::metrics::{ControllerMetadataMetricsPublisher, ControllerMetrics};
use kraftd_controller::quorum_controller::{
    ops, CommittedBatch, ManagersConfig, ProposeError, QuorumController, QuorumControllerConfig,
    RaftClient, WriteOp,
};
use kraftd_controller::testing::records::{feature, uuid};
use kraftd_controller::testing::{broker_registration, CLUSTER_ID, METADATA_VERSION};
use kraftd_controller::MetadataPublisher;
use kraftd_protocol::messages::alter_partition_request::{BrokerState, PartitionData, TopicData};
use kraftd_protocol::messages::broker_registration_request::Feature;
use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::elect_leaders_request::TopicPartitions;
use kraftd_protocol::messages::{
    AlterPartitionRequest, BrokerHeartbeatRequest, CreateTopicsRequest, DeleteTopicsRequest,
    ElectLeadersRequest,
};
use kraftd_protocol::{MetadataRecord, Uuid};

const BROKERS: i32 = 10;
const TOPIC_PARTITIONS: i32 = 100;
const RF: i16 = 3;

/// The response type of the bench's operations.
#[allow(dead_code)]
#[derive(Debug)]
enum Resp {
    Done,
    Epoch(i64),
    Other,
}

/// A Raft that commits what it is given as soon as the bench asks, keeping only the batches
/// not yet handed to the controller.
#[derive(Default)]
struct InstantRaft {
    end_offset: i64,
    uncommitted: Vec<CommittedBatch>,
}

impl RaftClient for InstantRaft {
    fn propose(
        &mut self,
        epoch: i32,
        base_offset: i64,
        _metadata_version: kraftd_protocol::metadata_version::MetadataVersion,
        records: &[MetadataRecord],
    ) -> Result<(i64, i64), ProposeError> {
        if base_offset != self.end_offset {
            return Err(ProposeError::UnexpectedBaseOffset {
                expected: base_offset,
                actual: self.end_offset,
            });
        }
        let mut batch = CommittedBatch {
            epoch,
            last_offset: base_offset,
            records: Vec::with_capacity(records.len()),
        };
        for record in records {
            batch.records.push((self.end_offset, record.clone()));
            batch.last_offset = self.end_offset;
            self.end_offset += 1;
        }
        self.uncommitted.push(batch);
        Ok((base_offset, self.end_offset - 1))
    }

    fn resign(&mut self, _epoch: i32) {}
}

struct Bench {
    raft: InstantRaft,
    controller: QuorumController<Resp>,
    publisher: ControllerMetadataMetricsPublisher,
    epochs: Vec<i64>,
    next_topic: usize,
}

impl Bench {
    fn new() -> Bench {
        let mut managers = ManagersConfig::default();
        managers.cluster.cluster_id = CLUSTER_ID.into();
        managers.seed = 19;
        let mut controller = QuorumController::new(QuorumControllerConfig {
            node_id: 0,
            managers,
            ..Default::default()
        });
        let mut raft = InstantRaft::default();
        // The epoch-start control batch, committed, then this node claims.
        let start = CommittedBatch {
            epoch: 1,
            last_offset: 0,
            records: Vec::new(),
        };
        raft.end_offset = 1;
        controller.handle_commit(&start).expect("start batch");
        controller.handle_leader_change(Some(0), 1);
        let mut bench = Bench {
            raft,
            controller,
            publisher: ControllerMetadataMetricsPublisher::new(ControllerMetrics::new()),
            epochs: Vec::new(),
            next_topic: 0,
        };
        bench.write(WriteOp::new(|_ctx| {
            ControllerResult::atomic_of(
                vec![feature("metadata.version", METADATA_VERSION)],
                Resp::Done,
            )
        }));
        for id in 0..BROKERS {
            let mut incarnation = uuid(0);
            incarnation.0[1] = id as u8 + 1;
            let features = vec![Feature {
                name: "metadata.version".into(),
                min_supported_version: 1,
                max_supported_version: METADATA_VERSION,
                ..Default::default()
            }];
            let request = broker_registration(id, incarnation, features, -1);
            let epoch = match bench
                .write(ops::register_broker(3, request, 0).map(|r| Resp::Epoch(r.broker_epoch)))
            {
                Resp::Epoch(e) => e,
                other => panic!("registration: {other:?}"),
            };
            bench.epochs.push(epoch);
        }
        for id in 0..BROKERS {
            bench.heartbeat(id, false);
        }
        bench
    }

    /// Runs one write to its commit, as the active controller's event loop does.
    fn write(&mut self, op: WriteOp<Resp>) -> Resp {
        self.controller.submit_write(op).expect("queued");
        self.controller.process(&mut self.raft);
        for batch in std::mem::take(&mut self.raft.uncommitted) {
            self.controller.handle_commit(&batch).expect("replays");
            if let Some(delta) = self.controller.take_commit_delta() {
                let image = self.controller.committed_image().clone();
                self.publisher.on_metadata_update(&delta, &image);
            }
        }
        let mut done = self.controller.drain_completions();
        assert_eq!(done.len(), 1, "one completion");
        done.pop().unwrap().result.expect("write succeeds")
    }

    fn heartbeat(&mut self, id: i32, want_fence: bool) {
        let request = BrokerHeartbeatRequest {
            broker_id: id,
            broker_epoch: self.epochs[id as usize],
            current_metadata_offset: i64::MAX / 2,
            want_fence,
            ..Default::default()
        };
        self.write(ops::broker_heartbeat(request).map(|r| {
            assert_eq!(r.error_code, 0, "heartbeat");
            Resp::Done
        }));
    }

    /// Topic names `t{n}` for the next `count` topics.
    fn new_names(&mut self, count: usize) -> Vec<String> {
        let names = (self.next_topic..self.next_topic + count)
            .map(|n| format!("t{n:07}"))
            .collect();
        self.next_topic += count;
        names
    }

    fn create(&mut self, names: &[String]) {
        let request = CreateTopicsRequest {
            topics: names
                .iter()
                .map(|name| CreatableTopic {
                    name: name.clone(),
                    num_partitions: TOPIC_PARTITIONS,
                    replication_factor: RF,
                    ..Default::default()
                })
                .collect(),
            timeout_ms: 30_000,
            ..Default::default()
        };
        self.write(ops::create_topics(request).map(|r| {
            for t in &r.topics {
                assert_eq!(t.error_code, 0, "create {}: {:?}", t.name, t.error_message);
            }
            Resp::Done
        }));
    }

    fn delete(&mut self, names: &[String]) {
        let request = DeleteTopicsRequest {
            topic_names: names.to_vec(),
            timeout_ms: 30_000,
            ..Default::default()
        };
        self.write(ops::delete_topics(request).map(|r| {
            for t in &r.responses {
                assert_eq!(t.error_code, 0, "delete {:?}", t.name);
            }
            Resp::Done
        }));
    }

    fn partitions(&self) -> usize {
        self.controller
            .committed_image()
            .topics
            .iter()
            .map(|t| t.partitions.len())
            .sum()
    }

    /// Up to `count` partitions whose preferred leader (first replica) is in the ISR but
    /// does not lead, as (topic, partition).
    fn imbalanced(&self, count: usize) -> Vec<(String, i32)> {
        let image = self.controller.committed_image();
        let mut found = Vec::new();
        for topic in image.topics.iter() {
            for (id, p) in topic.partitions.iter() {
                if p.leader != p.replicas[0] && p.isr.contains(&p.replicas[0]) {
                    found.push((topic.name.clone(), *id));
                    if found.len() == count {
                        return found;
                    }
                }
            }
        }
        found
    }

    /// AlterPartition from each partition's leader putting `broker` back into the ISR of up
    /// to `count` partitions it replicates but is out of the ISR of: (topic, partition).
    fn rejoin_isr(&mut self, broker: i32, count: usize) -> Vec<(String, i32)> {
        let image = self.controller.committed_image().clone();
        let mut by_leader: BTreeMap<i32, BTreeMap<Uuid, Vec<PartitionData>>> = BTreeMap::new();
        let mut chosen = Vec::new();
        'outer: for topic in image.topics.iter() {
            for (id, p) in topic.partitions.iter() {
                if p.replicas[0] == broker && !p.isr.contains(&broker) && p.leader >= 0 {
                    let mut isr: Vec<i32> = p.isr.clone();
                    isr.push(broker);
                    by_leader
                        .entry(p.leader)
                        .or_default()
                        .entry(topic.id)
                        .or_default()
                        .push(PartitionData {
                            partition_index: *id,
                            leader_epoch: p.leader_epoch,
                            new_isr_with_epochs: isr
                                .iter()
                                .map(|b| BrokerState {
                                    broker_id: *b,
                                    broker_epoch: self.epochs[*b as usize],
                                    ..Default::default()
                                })
                                .collect(),
                            leader_recovery_state: 0,
                            partition_epoch: p.partition_epoch,
                            ..Default::default()
                        });
                    chosen.push((topic.name.clone(), *id));
                    if chosen.len() == count {
                        break 'outer;
                    }
                }
            }
        }
        for (leader, topics) in by_leader {
            let request = AlterPartitionRequest {
                broker_id: leader,
                broker_epoch: self.epochs[leader as usize],
                topics: topics
                    .into_iter()
                    .map(|(topic_id, partitions)| TopicData {
                        topic_id,
                        partitions,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            self.write(ops::alter_partition(3, request).map(|_| Resp::Other));
        }
        chosen
    }
}

fn per_sec(n: usize, secs: f64) -> String {
    format!("{:>10.0}/s", n as f64 / secs)
}

/// The operations measured at one size.
fn checkpoint(bench: &mut Bench, broker: i32) {
    let total = bench.partitions();
    println!("--- at {total} partitions ---");
    // create and delete
    let rounds = 5;
    let mut created = Vec::new();
    let t0 = Instant::now();
    for _ in 0..rounds {
        let names = bench.new_names(10);
        bench.create(&names);
        created.extend(names);
    }
    let n = rounds * 10 * TOPIC_PARTITIONS as usize;
    println!(
        "  create  {} ({rounds} CreateTopics of 10 × {TOPIC_PARTITIONS}, RF {RF}; {:.2} ms each)",
        per_sec(n, t0.elapsed().as_secs_f64()),
        t0.elapsed().as_secs_f64() * 1e3 / rounds as f64
    );
    let t0 = Instant::now();
    for chunk in created.chunks(10) {
        bench.delete(chunk);
    }
    println!(
        "  delete  {} ({rounds} DeleteTopics of 10 topics; {:.2} ms each)",
        per_sec(n, t0.elapsed().as_secs_f64()),
        t0.elapsed().as_secs_f64() * 1e3 / rounds as f64
    );
    // heartbeat
    let beats = 200;
    let t0 = Instant::now();
    for i in 0..beats {
        bench.heartbeat(i % BROKERS, false);
    }
    println!(
        "  heartbeat {:>8.1} µs each ({beats}, steady, unfenced)",
        t0.elapsed().as_secs_f64() * 1e6 / beats as f64
    );
    // fence / unfence
    let before = bench.raft.end_offset;
    let t0 = Instant::now();
    bench.heartbeat(broker, true);
    let secs = t0.elapsed().as_secs_f64();
    let changed = (bench.raft.end_offset - before - 1) as usize;
    println!(
        "  fence   {} (broker {broker} leaves {changed} ISRs; {:.1} ms)",
        per_sec(changed, secs),
        secs * 1e3
    );
    let before = bench.raft.end_offset;
    let t0 = Instant::now();
    bench.heartbeat(broker, false);
    let elected = (bench.raft.end_offset - before - 1) as usize;
    println!(
        "  unfence {:>10.2} ms (broker {broker}; {elected} leaderless partitions get a leader; \
         the time includes freeing what the fence replaced)",
        t0.elapsed().as_secs_f64() * 1e3
    );
    // The same again, now that nothing is left to free or elect.
    bench.heartbeat(broker, true);
    bench.heartbeat(broker, false);
    let t0 = Instant::now();
    bench.heartbeat(broker, true);
    let fence_again = t0.elapsed();
    let t0 = Instant::now();
    bench.heartbeat(broker, false);
    println!(
        "  fence+unfence again: fence {:.1} ms, unfence {:.2} ms (the broker is in no ISR now)",
        fence_again.as_secs_f64() * 1e3,
        t0.elapsed().as_secs_f64() * 1e3
    );
    // elect: back into 1,000 ISRs, then preferred election of those
    let rejoined = bench.rejoin_isr(broker, 1000);
    let wanted: Vec<(String, i32)> = bench.imbalanced(usize::MAX);
    let wanted: Vec<(String, i32)> = wanted
        .into_iter()
        .filter(|p| rejoined.contains(p))
        .take(1000)
        .collect();
    let mut topics: BTreeMap<String, Vec<i32>> = Default::default();
    for (t, p) in &wanted {
        topics.entry(t.clone()).or_default().push(*p);
    }
    let request = ElectLeadersRequest {
        election_type: 0,
        topic_partitions: Some(
            topics
                .into_iter()
                .map(|(topic, partitions)| TopicPartitions {
                    topic,
                    partitions,
                    ..Default::default()
                })
                .collect(),
        ),
        timeout_ms: 30_000,
        ..Default::default()
    };
    let before = bench.raft.end_offset;
    let t0 = Instant::now();
    bench.write(ops::elect_leaders(request).map(|_| Resp::Other));
    let secs = t0.elapsed().as_secs_f64();
    let moved = (bench.raft.end_offset - before) as usize;
    println!(
        "  elect   {} (preferred, {} partitions named, {moved} moved; {:.2} ms)",
        per_sec(moved, secs),
        wanted.len(),
        secs * 1e3
    );
}

fn main() {
    let target: usize = std::env::var("KRAFTD_BENCH_PARTITIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let mut checkpoints: Vec<usize> = std::iter::successors(Some(10_000usize), |c| Some(c * 10))
        .take_while(|c| *c < target)
        .collect();
    checkpoints.push(target);
    println!(
        "controller scale: {BROKERS} brokers, topics of {TOPIC_PARTITIONS} partitions at RF {RF}, \
         up to {target} partitions (QuorumController driven directly, commits at once)"
    );
    let mut bench = Bench::new();
    let batch = 10usize; // topics per CreateTopics while building
    let mut built = 0usize;
    for (i, &checkpoint_at) in checkpoints.iter().enumerate() {
        let t0 = Instant::now();
        let from = built;
        while built < checkpoint_at {
            let topics = batch.min((checkpoint_at - built).div_ceil(TOPIC_PARTITIONS as usize));
            let names = bench.new_names(topics);
            bench.create(&names);
            built += topics * TOPIC_PARTITIONS as usize;
        }
        let secs = t0.elapsed().as_secs_f64();
        println!(
            "built {from} → {built} partitions in {secs:.1} s: {} (CreateTopics of {batch} × \
             {TOPIC_PARTITIONS})",
            per_sec(built - from, secs)
        );
        checkpoint(&mut bench, (i as i32) % BROKERS);
    }
}
