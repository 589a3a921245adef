//! Checks for tests, built with the cargo feature `testing` (and for the crate's own tests,
//! `testing/tests/`), as `kraftd-raft`'s `core::log::conformance` is:
//!
//! - [`writer`] — the contract every [`PartitionWriter`] meets, run against any
//!   implementation (`writer::check(MemoryWriter::new)`);
//! - [`Replica`] and [`check_replay`] — the replay check: a shard driven through requests,
//!   timers and transaction markers with a hand-held clock, every batch it hands back
//!   appended to a [`MemoryWriter`]; a fresh shard loaded from that log as the runtime loads
//!   one must answer every read as the live shard does (the state a failover hands to the
//!   next leader is the state clients saw);
//! - [`group`], [`transaction`] — what "answers every read as" means for each coordinator,
//!   and seeded random sequences of requests that drive them ([`Rng`]).

pub mod group;
pub mod transaction;
pub mod writer;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use crate::context::{ReplyId, RequestContext, TopicMetadata};
use crate::shard::CoordinatorShard;
use crate::writer::{load, MemoryWriter, PartitionWriter};

/// A small deterministic generator (xorshift64*), so a failing case is its seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// In `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
}

/// A request context at `api_version`.
pub fn ctx(api_version: i16) -> RequestContext {
    RequestContext {
        api_version,
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
    }
}

/// A shard as its runtime drives it, with the runtime's IO replaced by a [`MemoryWriter`]
/// and a clock held by the test: loaded from its (empty) log, every call's batches
/// appended and committed, replies and work kept.
#[derive(Debug)]
pub struct Replica<S: CoordinatorShard> {
    pub shard: S,
    pub log: MemoryWriter,
    pub now: i64,
    pub partition: i32,
    pub leader_epoch: i32,
    pub config: Arc<S::Config>,
    pub topics: Arc<dyn TopicMetadata>,
    /// Replies not yet taken by the test.
    pub replies: HashMap<ReplyId, S::Response>,
    /// Work handed back and not yet taken by the test.
    pub work: Vec<S::Work>,
    next_reply: ReplyId,
}

impl<S: CoordinatorShard> Replica<S> {
    pub fn new(
        partition: i32,
        leader_epoch: i32,
        config: S::Config,
        topics: Arc<dyn TopicMetadata>,
        now: i64,
    ) -> Self {
        let config = Arc::new(config);
        let log = MemoryWriter::new();
        let mut shard = S::new(partition, leader_epoch, config.clone(), topics.clone());
        load(&log, &mut shard).expect("an empty log loads");
        shard.on_loaded(now);
        let mut replica = Replica {
            shard,
            log,
            now,
            partition,
            leader_epoch,
            config,
            topics,
            replies: HashMap::new(),
            work: Vec::new(),
            next_reply: 0,
        };
        replica.drain();
        replica
    }

    /// Hands the shard a request; its reply, when given, lands in `replies` under the id
    /// returned.
    pub fn send(&mut self, ctx: &RequestContext, request: S::Request) -> ReplyId {
        self.next_reply += 1;
        let id = self.next_reply;
        self.shard.handle(self.now, ctx, id, request);
        self.drain();
        id
    }

    /// Sends a request answered at once and returns the answer.
    pub fn ask(&mut self, ctx: &RequestContext, request: S::Request) -> S::Response {
        let id = self.send(ctx, request);
        self.replies
            .remove(&id)
            .expect("the request is answered at once")
    }

    /// Calls into the shard outside a request (a marker written, a transaction completed),
    /// as the runtime's `ShardCall` does.
    pub fn call(&mut self, f: impl FnOnce(&mut S, i64)) {
        f(&mut self.shard, self.now);
        self.drain();
    }

    /// Moves the clock `ms` on, firing every timer due on the way at its deadline.
    pub fn advance(&mut self, ms: i64) {
        let target = self.now + ms;
        while let Some(deadline) = self.shard.next_deadline() {
            if deadline > target {
                break;
            }
            self.now = self.now.max(deadline);
            self.shard.on_timeout(self.now);
            self.drain();
        }
        self.now = target;
    }

    /// Appends a transaction marker to the log (the broker's WriteTxnMarkers on this
    /// partition); the caller then tells the shard, as the broker does.
    pub fn append_marker(&mut self, producer_id: i64, producer_epoch: i16, commit: bool) {
        self.log
            .append_end_txn(producer_id, producer_epoch, 0, commit)
            .expect("a marker appends");
        self.log.commit_all();
    }

    /// A fresh shard loaded from the log as the runtime loads one (at the same leader epoch
    /// and time), its load-time output dropped.
    pub fn reload(&self) -> S {
        let mut shard = S::new(
            self.partition,
            self.leader_epoch,
            self.config.clone(),
            self.topics.clone(),
        );
        load(&self.log, &mut shard).expect("the log loads");
        shard.on_loaded(self.now);
        let _ = shard.take_output();
        shard
    }

    fn drain(&mut self) {
        let out = self.shard.take_output();
        for batch in &out.batches {
            if !batch.records.is_empty() {
                let appended = self.log.append(batch).expect("a batch appends");
                self.shard.on_appended(appended.base_offset);
            }
        }
        self.log.commit_all();
        for (id, response) in out.replies {
            let previous = self.replies.insert(id, response);
            assert!(previous.is_none(), "reply {id} given twice");
        }
        self.work.extend(out.work);
    }
}

/// Asks `shard` one read at `now` (no reply id the replica uses) and returns its answer;
/// panics if the read wrote anything.
pub fn query<S: CoordinatorShard>(
    shard: &mut S,
    now: i64,
    ctx: &RequestContext,
    request: S::Request,
) -> S::Response {
    const QUERY_REPLY: ReplyId = u64::MAX;
    shard.handle(now, ctx, QUERY_REPLY, request);
    let out = shard.take_output();
    assert!(
        out.batches.iter().all(|b| b.records.is_empty()),
        "a read wrote records: {:?}",
        out.batches
    );
    let mut replies = out.replies.into_iter();
    let (id, response) = replies.next().expect("a read is answered at once");
    assert_eq!(id, QUERY_REPLY);
    assert!(replies.next().is_none(), "a read answered more than itself");
    response
}

/// The replay check: what `observe` sees of the live shard equals what it sees of a shard
/// loaded from the replica's log. `observe` answers lines (one per thing compared); the
/// first that differs is reported with `label` (the case's seed and step).
pub fn check_replay<S: CoordinatorShard>(
    replica: &mut Replica<S>,
    label: &str,
    observe: impl Fn(&mut S, i64) -> Vec<String>,
) {
    let mut loaded = replica.reload();
    let live = observe(&mut replica.shard, replica.now);
    let replayed = observe(&mut loaded, replica.now);
    if live != replayed {
        let at = live
            .iter()
            .zip(&replayed)
            .position(|(a, b)| a != b)
            .unwrap_or(live.len().min(replayed.len()));
        panic!(
            "{label}: replaying the log does not give the live state (line {at} of {} live, {} replayed)\n live:     {}\n replayed: {}\nlog: {:?}",
            live.len(),
            replayed.len(),
            live.get(at).map_or("<none>", String::as_str),
            replayed.get(at).map_or("<none>", String::as_str),
            replica.log.entries().len(),
        );
    }
}

/// `{:?}` of a value, for observation lines.
pub fn line(what: &str, value: &impl Debug) -> String {
    format!("{what}: {value:?}")
}
