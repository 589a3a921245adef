//! The replay check for the transaction coordinator: what a client can read of a
//! [`TransactionCoordinatorShard`] — ListTransactions and DescribeTransactions of every
//! transactional id — and seeded random producers (InitProducerId, AddPartitionsToTxn v3 and
//! batched v4, AddOffsetsToTxn, EndTxn v3 and TV2's v5, their markers acknowledged through
//! [`TransactionCoordinatorShard::on_markers_written`], time passing so transactions time out
//! and idle ids expire) that drive a shard while the log of everything it wrote is kept.

use std::collections::BTreeMap;

use kraftd_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kraftd_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest,
    ListTransactionsRequest,
};

use super::group::Topics;
use super::{check_replay, ctx, line, query, Replica, Rng};
use crate::transaction::{
    EndTxnNeeds, TransactionCoordinatorConfig, TransactionCoordinatorShard, TxnShardRequest,
    TxnShardResponse,
};

/// What clients can read of `shard` about the transactional ids `ids` (besides
/// ListTransactions, which lists every one).
pub fn observe(shard: &mut TransactionCoordinatorShard, now: i64, ids: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    let TxnShardResponse::ListTransactions(listed) = query(
        shard,
        now,
        &ctx(1),
        TxnShardRequest::ListTransactions(ListTransactionsRequest {
            duration_filter: -1,
            ..Default::default()
        }),
    ) else {
        panic!("not a ListTransactions answer");
    };
    lines.push(line("ListTransactions", &listed));
    for id in ids {
        let TxnShardResponse::DescribeTransactions(described) = query(
            shard,
            now,
            &ctx(0),
            TxnShardRequest::DescribeTransactions(vec![id.clone()]),
        ) else {
            panic!("not a DescribeTransactions answer");
        };
        lines.push(line(&format!("DescribeTransactions {id}"), &described));
    }
    lines
}

/// [`check_replay`] for a transaction shard over the ids `ids`.
pub fn check(replica: &mut Replica<TransactionCoordinatorShard>, ids: &[String], label: &str) {
    check_replay(replica, label, |shard, now| observe(shard, now, ids));
}

const TRANSACTIONAL_IDS: &[&str] = &["t0", "t1", "t2", "t3"];
const TOPICS: &[(&str, i32)] = &[("a", 3), ("b", 2)];

/// Every transactional id the random producers use.
pub fn transactional_ids() -> Vec<String> {
    TRANSACTIONAL_IDS.iter().map(|s| s.to_string()).collect()
}

/// A producer as its client sees itself.
#[derive(Debug, Clone, Default)]
struct Producer {
    id: &'static str,
    producer_id: i64,
    epoch: i16,
    /// Uses transactions V2 (EndTxn v5, batched AddPartitionsToTxn as a broker sends it).
    tv2: bool,
}

/// The random producers of one case.
#[derive(Debug)]
pub struct Producers {
    pub replica: Replica<TransactionCoordinatorShard>,
    rng: Rng,
    producers: Vec<Producer>,
    next_producer_id: i64,
    pub markers_acknowledged: usize,
    pub checks: usize,
}

impl Producers {
    pub fn new(seed: u64) -> Self {
        let config = TransactionCoordinatorConfig {
            transactional_id_expiration_ms: 300_000,
            abort_timed_out_interval_ms: 5_000,
            remove_expired_interval_ms: 30_000,
            ..Default::default()
        };
        let mut rng = Rng::new(seed);
        let producers = TRANSACTIONAL_IDS
            .iter()
            .map(|id| Producer {
                id,
                producer_id: -1,
                epoch: -1,
                tv2: rng.chance(50),
            })
            .collect();
        Producers {
            replica: Replica::new(2, 5, config, Topics::of(TOPICS), 1_000),
            rng,
            producers,
            next_producer_id: 1_000,
            markers_acknowledged: 0,
            checks: 0,
        }
    }

    /// `steps` random steps, the replay check every `every` steps and at the end.
    pub fn run(&mut self, seed: u64, steps: usize, every: usize) {
        let ids = transactional_ids();
        for step in 0..steps {
            self.step();
            if (step + 1) % every == 0 || step + 1 == steps {
                check(&mut self.replica, &ids, &format!("seed {seed} step {step}"));
                self.checks += 1;
            }
        }
    }

    pub fn step(&mut self) {
        let i = self.rng.below(self.producers.len());
        match self.rng.below(100) {
            0..=14 => self.init(i),
            15..=39 => self.add_partitions(i),
            40..=46 => self.add_offsets(i),
            47..=64 => self.end(i),
            65..=84 => self.acknowledge_markers(),
            _ => {
                let ms = if self.rng.chance(20) {
                    30_000 + self.rng.below(300_000) as i64
                } else {
                    self.rng.below(5_000) as i64
                };
                self.replica.advance(ms);
            }
        }
    }

    fn fresh_producer_id(&mut self) -> i64 {
        self.next_producer_id += 1;
        self.next_producer_id
    }

    fn init(&mut self, i: usize) {
        let p = self.producers[i].clone();
        let fresh = self.fresh_producer_id();
        // KIP-360: sometimes the client names its current producer id and epoch.
        let (producer_id, producer_epoch) = if self.rng.chance(30) {
            (p.producer_id, p.epoch)
        } else {
            (-1, -1)
        };
        let timeout = if self.rng.chance(50) { 10_000 } else { 60_000 };
        let request = InitProducerIdRequest {
            transactional_id: Some(p.id.into()),
            transaction_timeout_ms: timeout,
            producer_id,
            producer_epoch,
            ..Default::default()
        };
        let TxnShardResponse::InitProducerId(r) = self.replica.ask(
            &ctx(5),
            TxnShardRequest::InitProducerId {
                request,
                fresh_producer_id: fresh,
            },
        ) else {
            panic!("not an InitProducerId answer");
        };
        if r.error_code == 0 {
            self.producers[i].producer_id = r.producer_id;
            self.producers[i].epoch = r.producer_epoch;
        }
    }

    fn partitions(&mut self) -> Vec<AddPartitionsToTxnTopic> {
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for _ in 0..1 + self.rng.below(3) {
            let (t, n) = *self.rng.pick(TOPICS);
            let p = self.rng.below(n as usize) as i32;
            let ps = by_topic.entry(t).or_default();
            if !ps.contains(&p) {
                ps.push(p);
            }
        }
        by_topic
            .into_iter()
            .map(|(name, partitions)| AddPartitionsToTxnTopic {
                name: name.into(),
                partitions,
                ..Default::default()
            })
            .collect()
    }

    fn add_partitions(&mut self, i: usize) {
        let p = self.producers[i].clone();
        let topics = self.partitions();
        let (version, request) = if p.tv2 {
            (
                4,
                AddPartitionsToTxnRequest {
                    transactions: vec![AddPartitionsToTxnTransaction {
                        transactional_id: p.id.into(),
                        producer_id: p.producer_id,
                        producer_epoch: p.epoch,
                        verify_only: false,
                        topics,
                        ..Default::default()
                    }],
                    ..Default::default()
                },
            )
        } else {
            (
                3,
                AddPartitionsToTxnRequest {
                    v3_and_below_transactional_id: p.id.into(),
                    v3_and_below_producer_id: p.producer_id,
                    v3_and_below_producer_epoch: p.epoch,
                    v3_and_below_topics: topics,
                    ..Default::default()
                },
            )
        };
        self.replica
            .ask(&ctx(version), TxnShardRequest::AddPartitionsToTxn(request));
    }

    fn add_offsets(&mut self, i: usize) {
        let p = self.producers[i].clone();
        let request = AddOffsetsToTxnRequest {
            transactional_id: p.id.into(),
            producer_id: p.producer_id,
            producer_epoch: p.epoch,
            group_id: "g".into(),
            ..Default::default()
        };
        self.replica.ask(
            &ctx(3),
            TxnShardRequest::AddOffsetsToTxn {
                request,
                offsets_partition: 7,
            },
        );
    }

    fn end(&mut self, i: usize) {
        let p = self.producers[i].clone();
        let version = if p.tv2 { 5 } else { 3 };
        let fresh =
            EndTxnNeeds::fresh_producer_id(version, p.epoch).then(|| self.fresh_producer_id());
        let request = EndTxnRequest {
            transactional_id: p.id.into(),
            producer_id: p.producer_id,
            producer_epoch: p.epoch,
            committed: self.rng.chance(60),
            ..Default::default()
        };
        let TxnShardResponse::EndTxn(r) = self.replica.ask(
            &ctx(version),
            TxnShardRequest::EndTxn {
                request,
                fresh_producer_id: fresh,
            },
        ) else {
            panic!("not an EndTxn answer");
        };
        if r.error_code == 0 && version >= 5 {
            // TV2: the epoch moves on with every transaction.
            self.producers[i].producer_id = r.producer_id;
            self.producers[i].epoch = r.producer_epoch;
        }
    }

    /// The markers of one pending piece of work written: the shard is told, as the broker's
    /// marker channel tells it.
    fn acknowledge_markers(&mut self) {
        if self.replica.work.is_empty() {
            return;
        }
        let w = self.rng.below(self.replica.work.len());
        let m = self.replica.work.remove(w);
        self.replica.call(|shard, now| {
            shard.on_markers_written(now, &m.transactional_id, m.producer_id, m.producer_epoch)
        });
        self.markers_acknowledged += 1;
    }
}
