//! Transaction coordinator tests, sans IO: the shard is driven through its public API
//! (`handle`, `on_markers_written`, `on_timeout`, `take_output`, `replay`, `on_loaded`)
//! with a hand-held clock. Every reply is checked to be answered once and to encode at its
//! request's version; every record written goes through Kafka's bytes into `log`.

use std::sync::Arc;

use bytes::Bytes;
use kraftd_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kraftd_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, EndTxnRequest,
    EndTxnResponse, InitProducerIdRequest, InitProducerIdResponse,
};
use kraftd_protocol::{ErrorCode, Message};

use super::config::TransactionCoordinatorConfig;
use super::metadata::TransactionMetadata;
use super::records::TransactionRecord;
use super::shard::{MarkerRequest, TransactionCoordinatorShard, TxnShardRequest, TxnShardResponse};
use crate::context::RequestContext;

mod fencing;
mod flows;
mod loading;
mod tv2;

pub(super) const TXN: &str = "txn-a";
pub(super) const TIMEOUT: i32 = 60_000;
pub(super) const PARTITION: i32 = 3;
pub(super) const COORDINATOR_EPOCH: i32 = 7;

pub(super) fn tp(topic: &str, p: i32) -> (String, i32) {
    (topic.to_string(), p)
}

/// The shard, its clock, the producer ids it may be handed and everything it wrote.
pub(super) struct H {
    pub shard: TransactionCoordinatorShard,
    pub now: i64,
    next_reply: u64,
    next_pid: i64,
    /// Every record written, as its key and value bytes.
    pub log: Vec<(Bytes, Option<Bytes>)>,
    /// The marker work of the last call.
    pub markers: Vec<MarkerRequest>,
    /// The records of the last call.
    pub records: Vec<TransactionRecord>,
}

impl H {
    pub fn new() -> H {
        Self::with_config(TransactionCoordinatorConfig::default())
    }

    pub fn with_config(config: TransactionCoordinatorConfig) -> H {
        let mut shard = TransactionCoordinatorShard::new(PARTITION, Arc::new(config), 7);
        shard.on_loaded(1_000);
        assert!(shard.take_output().is_empty());
        H {
            shard,
            now: 1_000,
            next_reply: 1,
            next_pid: 1_000,
            log: Vec::new(),
            markers: Vec::new(),
            records: Vec::new(),
        }
    }

    /// Keeps a call's output: records through their bytes into the log, markers.
    fn collect(&mut self) -> Vec<(u64, TxnShardResponse)> {
        let out = self.shard.take_output();
        for r in &out.records {
            let (k, v) = r.encode().expect("record encodes");
            let back = TransactionRecord::decode(k.clone(), v.clone()).expect("record decodes");
            assert_eq!(&back, r, "a record survives its bytes");
            self.log.push((k, v));
        }
        self.records = out.records;
        self.markers = out.markers;
        out.replies
    }

    /// One request at `version`; its one reply.
    pub fn call(&mut self, version: i16, request: TxnShardRequest) -> TxnShardResponse {
        let id = self.next_reply;
        self.next_reply += 1;
        let ctx = RequestContext {
            api_version: version,
            client_id: "test".into(),
            client_host: "/127.0.0.1".into(),
        };
        self.shard.handle(self.now, &ctx, id, request);
        let mut replies = self.collect();
        assert_eq!(replies.len(), 1, "one reply per request");
        let (rid, response) = replies.pop().unwrap();
        assert_eq!(rid, id);
        let encoded = match &response {
            TxnShardResponse::InitProducerId(r) => r.to_bytes(version).map(|_| ()),
            TxnShardResponse::AddPartitionsToTxn(r) => r.to_bytes(version).map(|_| ()),
            TxnShardResponse::AddOffsetsToTxn(r) => r.to_bytes(version).map(|_| ()),
            TxnShardResponse::EndTxn(r) => r.to_bytes(version).map(|_| ()),
            TxnShardResponse::ListTransactions(r) => r.to_bytes(version).map(|_| ()),
            TxnShardResponse::DescribeTransactions(_) => Ok(()),
        };
        encoded.expect("the reply encodes at its request's version");
        response
    }

    pub fn fresh_pid(&mut self) -> i64 {
        self.next_pid += 1;
        self.next_pid
    }

    /// InitProducerId v5 (KIP-360 fields given) for `id`.
    pub fn init_v(
        &mut self,
        version: i16,
        id: &str,
        pid: i64,
        epoch: i16,
    ) -> InitProducerIdResponse {
        let fresh = self.fresh_pid();
        let request = InitProducerIdRequest {
            transactional_id: Some(id.to_string()),
            transaction_timeout_ms: TIMEOUT,
            producer_id: pid,
            producer_epoch: epoch,
            ..Default::default()
        };
        match self.call(
            version,
            TxnShardRequest::InitProducerId {
                request,
                fresh_producer_id: fresh,
            },
        ) {
            TxnShardResponse::InitProducerId(r) => r,
            other => panic!("unexpected {other:?}"),
        }
    }

    /// InitProducerId v5 without a producer id: (producer id, epoch), asserting success.
    pub fn init(&mut self, id: &str) -> (i64, i16) {
        let r = self.init_v(5, id, -1, -1);
        assert_eq!(r.error_code, 0, "{r:?}");
        (r.producer_id, r.producer_epoch)
    }

    /// AddPartitionsToTxn v0–3: each partition's code.
    pub fn add_v(
        &mut self,
        version: i16,
        id: &str,
        pid: i64,
        epoch: i16,
        partitions: &[(&str, i32)],
    ) -> Vec<i16> {
        let request = AddPartitionsToTxnRequest {
            v3_and_below_transactional_id: id.to_string(),
            v3_and_below_producer_id: pid,
            v3_and_below_producer_epoch: epoch,
            v3_and_below_topics: topics(partitions),
            ..Default::default()
        };
        match self.call(version, TxnShardRequest::AddPartitionsToTxn(request)) {
            TxnShardResponse::AddPartitionsToTxn(r) => codes(&r.results_by_topic_v3_and_below),
            other => panic!("unexpected {other:?}"),
        }
    }

    /// AddPartitionsToTxn v3 asserting success.
    pub fn add(&mut self, id: &str, pid: i64, epoch: i16, partitions: &[(&str, i32)]) {
        let codes = self.add_v(3, id, pid, epoch, partitions);
        assert!(codes.iter().all(|c| *c == 0), "{codes:?}");
    }

    /// A batched (v4–5) AddPartitionsToTxn of one transaction: each partition's code.
    pub fn add_batched(
        &mut self,
        version: i16,
        id: &str,
        pid: i64,
        epoch: i16,
        verify_only: bool,
        partitions: &[(&str, i32)],
    ) -> Vec<i16> {
        let request = AddPartitionsToTxnRequest {
            transactions: vec![AddPartitionsToTxnTransaction {
                transactional_id: id.to_string(),
                producer_id: pid,
                producer_epoch: epoch,
                verify_only,
                topics: topics(partitions),
                ..Default::default()
            }],
            ..Default::default()
        };
        match self.call(version, TxnShardRequest::AddPartitionsToTxn(request)) {
            TxnShardResponse::AddPartitionsToTxn(AddPartitionsToTxnResponse {
                results_by_transaction,
                ..
            }) => {
                assert_eq!(results_by_transaction.len(), 1);
                assert_eq!(results_by_transaction[0].transactional_id, id);
                codes(&results_by_transaction[0].topic_results)
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    pub fn add_offsets(&mut self, version: i16, id: &str, pid: i64, epoch: i16, p: i32) -> i16 {
        let request = AddOffsetsToTxnRequest {
            transactional_id: id.to_string(),
            producer_id: pid,
            producer_epoch: epoch,
            group_id: "g".into(),
            ..Default::default()
        };
        match self.call(
            version,
            TxnShardRequest::AddOffsetsToTxn {
                request,
                offsets_partition: p,
            },
        ) {
            TxnShardResponse::AddOffsetsToTxn(r) => r.error_code,
            other => panic!("unexpected {other:?}"),
        }
    }

    /// EndTxn at `version`.
    pub fn end(
        &mut self,
        version: i16,
        id: &str,
        pid: i64,
        epoch: i16,
        commit: bool,
    ) -> EndTxnResponse {
        let fresh = EndTxnNeedsFresh::get(version, epoch).then(|| self.fresh_pid());
        let request = EndTxnRequest {
            transactional_id: id.to_string(),
            producer_id: pid,
            producer_epoch: epoch,
            committed: commit,
            ..Default::default()
        };
        match self.call(
            version,
            TxnShardRequest::EndTxn {
                request,
                fresh_producer_id: fresh,
            },
        ) {
            TxnShardResponse::EndTxn(r) => r,
            other => panic!("unexpected {other:?}"),
        }
    }

    /// The runtime's answer to marker work.
    pub fn markers_written(&mut self, m: &MarkerRequest) {
        self.shard.on_markers_written(
            self.now,
            &m.transactional_id,
            m.producer_id,
            m.producer_epoch,
        );
        assert!(self.collect().is_empty(), "no reply comes from markers");
    }

    /// Moves the clock and fires what is due.
    pub fn advance(&mut self, ms: i64) {
        self.now += ms;
        self.shard.on_timeout(self.now);
        assert!(self.collect().is_empty(), "no reply comes from timers");
    }

    pub fn txn(&self, id: &str) -> TransactionMetadata {
        self.shard
            .transaction(id)
            .cloned()
            .expect("transaction exists")
    }

    /// A fresh shard loaded from every record written so far (through their bytes).
    pub fn reload(&self) -> (TransactionCoordinatorShard, Vec<MarkerRequest>) {
        let config = Arc::new(self.shard.config().clone());
        let mut shard = TransactionCoordinatorShard::new(PARTITION, config, COORDINATOR_EPOCH + 1);
        for (offset, (k, v)) in self.log.iter().enumerate() {
            let record = TransactionRecord::decode(k.clone(), v.clone()).expect("decodes");
            shard.replay(offset as i64, -1, record).expect("replays");
        }
        shard.on_loaded(self.now);
        let out = shard.take_output();
        assert!(out.replies.is_empty());
        (shard, out.markers)
    }
}

/// The service's rule for allocating an id before an EndTxn.
struct EndTxnNeedsFresh;

impl EndTxnNeedsFresh {
    fn get(version: i16, epoch: i16) -> bool {
        super::shard::EndTxnNeeds::fresh_producer_id(version, epoch)
    }
}

fn topics(partitions: &[(&str, i32)]) -> Vec<AddPartitionsToTxnTopic> {
    let mut out: Vec<AddPartitionsToTxnTopic> = Vec::new();
    for (t, p) in partitions {
        match out.iter_mut().find(|x| x.name == *t) {
            Some(x) => x.partitions.push(*p),
            None => out.push(AddPartitionsToTxnTopic {
                name: t.to_string(),
                partitions: vec![*p],
                ..Default::default()
            }),
        }
    }
    out
}

fn codes(
    results: &[kraftd_protocol::messages::add_partitions_to_txn_response::AddPartitionsToTxnTopicResult],
) -> Vec<i16> {
    results
        .iter()
        .flat_map(|t| {
            t.results_by_partition
                .iter()
                .map(|p| p.partition_error_code)
        })
        .collect()
}

pub(super) fn c(code: ErrorCode) -> i16 {
    code.code()
}
