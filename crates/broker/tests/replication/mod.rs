//! An in-process replication harness: each broker hosts one [`Partition`] for the partition
//! under test, on real log files in a scratch directory. A fetch moves data from the leader
//! to a follower exactly as the fetcher does (position and last fetched epoch out, the
//! leader's read and follower-state update, then a truncation on divergence or an append
//! with the leader's HW back); brokers crash (optionally losing what was not flushed) and
//! restart from disk. Metadata is pushed as [`PartitionState`]s, either written by the test
//! (the data-plane scenarios) or taken from the real control managers ([`controller::ControllerExt`]).
#![allow(dead_code)]

pub mod controller;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use kraftd_broker::replica::log_manager::LogManager;
use kraftd_broker::replica::partition::{
    FetchIsolation, IsrChange, LeaderAppend, Partition, PartitionConfig, PartitionState, ReadParams,
};
use kraftd_broker::replica::TopicIdPartition;
use kraftd_log::LogConfig;
use kraftd_protocol::records::{Batches, RecordBatch, RecordBatchBuilder};
use kraftd_protocol::ErrorCode;

pub use kraftd_controller::testing::{TOPIC, TOPIC_ID};

pub fn tp() -> TopicIdPartition {
    TopicIdPartition {
        topic_id: TOPIC_ID,
        topic: TOPIC.into(),
        partition: 0,
    }
}

/// A producer's batch (offsets from 0; the leader assigns real ones) holding `values`.
pub fn batch(values: &[&str]) -> Bytes {
    let mut b = RecordBatchBuilder::new(0);
    for (i, v) in values.iter().enumerate() {
        b.append(i as i64, None, Some(Bytes::from(v.to_string())), Vec::new())
            .unwrap();
    }
    b.build().unwrap()
}

/// An idempotent producer's batch.
pub fn idempotent_batch(producer_id: i64, producer_epoch: i16, seq: i32, values: &[&str]) -> Bytes {
    let mut b = RecordBatchBuilder::new(0).producer(producer_id, producer_epoch, seq);
    for (i, v) in values.iter().enumerate() {
        b.append(i as i64, None, Some(Bytes::from(v.to_string())), Vec::new())
            .unwrap();
    }
    b.build().unwrap()
}

/// `n` values named `<prefix><i>`.
pub fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

pub fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Every batch of `bytes`.
pub fn parse_batches(bytes: &Bytes) -> Vec<RecordBatch> {
    Batches::new(bytes.clone()).map(|b| b.unwrap()).collect()
}

/// The values of the records of `batches` (with their offsets).
pub fn record_values(batches: &[RecordBatch]) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    for b in batches {
        for r in b.records().unwrap() {
            let r = r.unwrap();
            let v = r
                .value
                .as_ref()
                .map(|v| String::from_utf8_lossy(v).into_owned());
            out.push((
                b.base_offset() + r.offset_delta as i64,
                v.unwrap_or_default(),
            ));
        }
    }
    out
}

/// A state as the metadata would carry it (partition epoch and leader epoch as given).
pub fn state(
    leader: i32,
    leader_epoch: i32,
    partition_epoch: i32,
    replicas: &[i32],
    isr: &[i32],
) -> PartitionState {
    PartitionState {
        leader,
        leader_epoch,
        partition_epoch,
        replicas: replicas.to_vec(),
        isr: isr.to_vec(),
        elr: Vec::new(),
        leader_recovery_state: 0,
    }
}

/// What one fetch did on the follower.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// Records appended: [first, last] (last < first: nothing new).
    Appended { first: i64, last: i64 },
    /// The leader reported a diverging epoch; the follower truncated to this log end.
    Truncated {
        epoch: i32,
        end_offset: i64,
        new_end: i64,
    },
    /// The leader (or the follower's own state) refused the fetch.
    Error(ErrorCode),
}

/// One broker.
pub struct Node {
    pub id: i32,
    pub dir: PathBuf,
    /// The broker epoch of its current registration (sent in its fetches, KIP-903).
    pub broker_epoch: i64,
    pub partition: Option<Partition>,
    /// The LogManager that opened `partition` (it holds the log dir's checkpoints).
    pub manager: Option<LogManager>,
}

pub struct Cluster {
    _tmp: tempfile::TempDir,
    pub nodes: BTreeMap<i32, Node>,
    pub config: PartitionConfig,
    pub now_ms: i64,
    /// ISR changes the leaders asked for, in order, not yet sent (leader, change).
    pub alter_partitions: Vec<(i32, IsrChange)>,
    /// Who may join an ISR at which broker epoch (None: anyone, the data-plane scenarios).
    pub eligible: Option<BTreeMap<i32, i64>>,
}

fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

impl Cluster {
    /// Brokers `ids`, each with an empty log for the partition, hosting it with no role.
    pub fn new(ids: &[i32], config: PartitionConfig) -> Cluster {
        let tmp = scratch();
        let mut c = Cluster {
            nodes: BTreeMap::new(),
            config,
            now_ms: 1_000,
            alter_partitions: Vec::new(),
            eligible: None,
            _tmp: tmp,
        };
        for id in ids {
            let dir = c._tmp.path().join(format!("broker-{id}"));
            c.nodes.insert(
                *id,
                Node {
                    id: *id,
                    dir,
                    broker_epoch: 100 + *id as i64,
                    partition: None,
                    manager: None,
                },
            );
            c.start(*id);
        }
        c
    }

    pub fn p(&self, id: i32) -> &Partition {
        self.nodes[&id]
            .partition
            .as_ref()
            .unwrap_or_else(|| panic!("broker {id} is down"))
    }

    pub fn pm(&mut self, id: i32) -> &mut Partition {
        self.nodes
            .get_mut(&id)
            .unwrap()
            .partition
            .as_mut()
            .unwrap_or_else(|| panic!("broker {id} is down"))
    }

    pub fn is_up(&self, id: i32) -> bool {
        self.nodes[&id].partition.is_some()
    }

    pub fn tick(&mut self, ms: i64) {
        self.now_ms += ms;
    }

    /// Opens the broker's log through its LogManager (HW from the checkpoint), as a start.
    pub fn start(&mut self, id: i32) {
        let now = self.now_ms;
        let config = self.config.clone();
        let node = self.nodes.get_mut(&id).unwrap();
        assert!(node.partition.is_none(), "broker {id} is already up");
        let manager = LogManager::open(vec![node.dir.clone()]).unwrap();
        let log = manager
            .get_or_create(TOPIC, TOPIC_ID, 0, LogConfig::default(), now)
            .unwrap();
        let hw = manager.recovered_high_watermark(TOPIC, 0);
        let mut partition = Partition::new(tp(), id, log, config, hw, now).unwrap();
        partition.set_local_broker_epoch(node.broker_epoch);
        node.partition = Some(partition);
        node.manager = Some(manager);
    }

    /// Checkpoints the broker's HW (as the periodic checkpoint does), then stops it. With
    /// `lose_unflushed`, every byte past the log's flushed offset is cut from the active
    /// segment, as a power loss would (the log recovers on open).
    pub fn crash(&mut self, id: i32, lose_unflushed: bool) {
        let node = self.nodes.get_mut(&id).unwrap();
        let partition = node.partition.take().expect("broker is up");
        let manager = node.manager.take().expect("broker is up");
        let log_dir = partition.log().dir().to_path_buf();
        partition
            .log()
            .note_high_watermark(partition.high_watermark());
        manager
            .write_checkpoints(kraftd_log::checkpoint::CheckpointKind::HighWatermark)
            .unwrap();
        let cut = lose_unflushed.then(|| {
            let log = partition.log();
            let flushed = log.flushed_offset();
            let base = *log.segment_base_offsets().last().unwrap();
            let mut position = 0u64;
            let mut offset = base;
            while offset < flushed {
                let r = log.read(offset, 1 << 20, flushed).unwrap();
                if r.bytes.is_empty() {
                    break;
                }
                position += r.bytes.len() as u64;
                offset = r.next_offset;
            }
            assert_eq!(
                offset.max(base),
                flushed.max(base),
                "flushed offset on a batch boundary"
            );
            (log_dir.join(format!("{base:020}.log")), position)
        });
        drop(partition);
        if let Some((path, position)) = cut {
            let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            file.set_len(position).unwrap();
        }
    }

    /// A crash and a start, with a new broker epoch (a new registration).
    pub fn restart(&mut self, id: i32, lose_unflushed: bool, new_broker_epoch: i64) {
        self.crash(id, lose_unflushed);
        self.nodes.get_mut(&id).unwrap().broker_epoch = new_broker_epoch;
        self.start(id);
    }

    pub fn flush(&mut self, id: i32) {
        self.pm(id).log_mut().flush().unwrap();
    }

    /// Applies a metadata state on every running broker named in it.
    pub fn apply(&mut self, state: &PartitionState) {
        let ids: Vec<i32> = state.replicas.clone();
        for id in ids {
            self.apply_to(id, state);
        }
    }

    /// Applies a metadata state on one broker (others may not have learned it yet).
    pub fn apply_to(&mut self, id: i32, state: &PartitionState) {
        if !self.is_up(id) {
            return;
        }
        let now = self.now_ms;
        let p = self.pm(id);
        if state.leader == id {
            p.make_leader(state, now).unwrap();
        } else {
            p.make_follower(state);
        }
    }

    /// A produce request to `leader`.
    pub fn produce(
        &mut self,
        leader: i32,
        records: Bytes,
        acks: i16,
    ) -> Result<LeaderAppend, ErrorCode> {
        let now = self.now_ms;
        self.pm(leader)
            .append_as_leader(records, acks, now)
            .map_err(|e| e.error_code())
    }

    /// Produces one batch of `vals` with acks=1 and returns its offsets.
    pub fn write(&mut self, leader: i32, vals: &[&str]) -> (i64, i64) {
        let a = self.produce(leader, batch(vals), 1).unwrap();
        (a.first_offset, a.last_offset)
    }

    /// One fetch by `follower` from the leader its metadata names (see the module docs),
    /// with its current leader epoch.
    pub fn fetch(&mut self, follower: i32) -> Fetched {
        self.fetch_with(follower, 1 << 20)
    }

    pub fn fetch_with(&mut self, follower: i32, max_bytes: usize) -> Fetched {
        let leader = match self.p(follower).role() {
            kraftd_broker::replica::partition::Role::Follower { leader } => leader,
            other => panic!("broker {follower} is not a follower: {other:?}"),
        };
        let epoch = self.p(follower).leader_epoch();
        self.fetch_from(follower, leader, epoch, max_bytes)
    }

    /// A fetch to an explicit broker with an explicit current leader epoch.
    pub fn fetch_from(
        &mut self,
        follower: i32,
        leader: i32,
        current_leader_epoch: i32,
        max_bytes: usize,
    ) -> Fetched {
        if !self.is_up(leader) {
            return Error(ErrorCode::NotLeaderOrFollower);
        }
        let now = self.now_ms;
        let (fetch_offset, last_fetched_epoch) = self.p(follower).fetch_position();
        let follower_start = self.p(follower).log_start_offset();
        let broker_epoch = self.nodes[&follower].broker_epoch;
        let params = ReadParams {
            fetch_offset,
            max_bytes,
            current_leader_epoch,
            last_fetched_epoch,
            isolation: FetchIsolation::LogEnd,
        };
        let info = match self.p(leader).read(&params) {
            Ok(info) => info,
            Err(e) => return Error(e.error_code()),
        };
        if let Some((epoch, end_offset)) = info.diverging_epoch {
            let new_end = self
                .pm(follower)
                .truncate_on_divergence(epoch, end_offset, now)
                .unwrap();
            return Fetched::Truncated {
                epoch,
                end_offset,
                new_end,
            };
        }
        let bytes = info.read.expect("a read").execute().unwrap().bytes;
        // The leader records the fetch after its read; the HW in the answer is the one the
        // read saw (Kafka's order).
        let eligible = self.eligible.clone();
        let eligibility = move |broker: i32, epoch: i64| {
            eligible
                .as_ref()
                .is_none_or(|m| m.get(&broker).is_some_and(|e| *e == epoch))
        };
        let update = self
            .pm(leader)
            .update_follower_fetch_state(
                follower,
                broker_epoch,
                fetch_offset,
                follower_start,
                now,
                &eligibility,
            )
            .unwrap();
        if let Some(change) = update.isr_change {
            self.alter_partitions.push((leader, change));
        }
        let appended = self
            .pm(follower)
            .append_as_follower(bytes, info.high_watermark, now)
            .unwrap();
        Fetched::Appended {
            first: appended.first_offset,
            last: appended.last_offset,
        }
    }

    /// Fetches until a fetch brings nothing new (the last one reports the follower's end to
    /// the leader).
    pub fn catch_up(&mut self, follower: i32) {
        for _ in 0..100 {
            match self.fetch(follower) {
                Fetched::Appended { first, last } if last < first => return,
                Fetched::Error(e) => panic!("broker {follower} fetch failed: {e:?}"),
                _ => {}
            }
        }
        panic!("broker {follower} never caught up");
    }

    /// Commits the leaders' queued ISR changes as proposed (the data-plane scenarios, where
    /// the controller's checks are not under test) and publishes the new state.
    pub fn commit_isr_changes(&mut self) {
        for (leader, change) in std::mem::take(&mut self.alter_partitions) {
            let isr: Vec<i32> = change.new_isr.iter().map(|(r, _)| *r).collect();
            let partition_epoch = change.partition_epoch + 1;
            let now = self.now_ms;
            let p = self.pm(leader);
            let replicas = p.replicas().to_vec();
            p.complete_isr_change(Ok((change.leader_epoch, partition_epoch, isr.clone())), now);
            let s = state(
                leader,
                change.leader_epoch,
                partition_epoch,
                &replicas,
                &isr,
            );
            for id in replicas {
                if id != leader {
                    self.apply_to(id, &s);
                }
            }
        }
    }

    /// Every batch of the broker's log, start to end.
    pub fn log_batches(&self, id: i32) -> Vec<RecordBatch> {
        let log = self.p(id).log();
        let mut out = Vec::new();
        let mut offset = log.log_start_offset();
        while offset < log.log_end_offset() {
            let r = log.read(offset, 1 << 20, i64::MAX).unwrap();
            assert!(!r.bytes.is_empty());
            let bs = parse_batches(&r.bytes);
            offset = bs.last().unwrap().next_offset();
            out.extend(bs);
        }
        out
    }

    /// (offset, value) of every record in the broker's log.
    pub fn log_values(&self, id: i32) -> Vec<(i64, String)> {
        record_values(&self.log_batches(id))
    }

    /// (base offset, last offset, leader epoch) of every batch.
    pub fn batch_shape(&self, id: i32) -> Vec<(i64, i64, i32)> {
        self.log_batches(id)
            .iter()
            .map(|b| (b.base_offset(), b.last_offset(), b.partition_leader_epoch()))
            .collect()
    }

    /// Asserts the brokers' logs are identical, batch for batch, byte for byte.
    #[track_caller]
    pub fn assert_identical(&self, ids: &[i32]) {
        let first = self.log_batches(ids[0]);
        for id in &ids[1..] {
            let other = self.log_batches(*id);
            assert_eq!(
                self.batch_shape(ids[0]),
                self.batch_shape(*id),
                "batches of {} and {id}",
                ids[0]
            );
            for (a, b) in first.iter().zip(&other) {
                assert_eq!(
                    a.as_bytes(),
                    b.as_bytes(),
                    "batch at {} differs on {id}",
                    a.base_offset()
                );
            }
            // A leader's epoch with nothing written yet exists only on the leader.
            let written = |id: i32| -> Vec<(i32, i64)> {
                let end = self.p(id).log_end_offset();
                self.p(id)
                    .log()
                    .epoch_entries()
                    .iter()
                    .filter(|e| e.start_offset < end)
                    .map(|e| (e.epoch, e.start_offset))
                    .collect()
            };
            assert_eq!(
                written(ids[0]),
                written(*id),
                "epoch caches of {} and {id}",
                ids[0]
            );
        }
    }

    /// What a consumer (read_uncommitted) reading from offset 0 gets from `leader`.
    pub fn consume(&self, leader: i32) -> Vec<String> {
        let mut out = Vec::new();
        let mut offset = self.p(leader).log_start_offset();
        loop {
            let info = self
                .p(leader)
                .read(&ReadParams {
                    fetch_offset: offset,
                    max_bytes: 1 << 20,
                    current_leader_epoch: -1,
                    last_fetched_epoch: -1,
                    isolation: FetchIsolation::HighWatermark,
                })
                .unwrap();
            let r = info.read.unwrap().execute().unwrap();
            if r.bytes.is_empty() {
                return out;
            }
            out.extend(
                record_values(&parse_batches(&r.bytes))
                    .into_iter()
                    .filter(|(o, _)| *o >= offset)
                    .map(|(_, v)| v),
            );
            offset = r.next_offset;
        }
    }
}

use Fetched::Error;
