//! What the runtime asks of a coordinator's sans-IO state machine (Kafka's
//! `CoordinatorShard`): the group coordinator's shard and the transaction coordinator's
//! both implement [`CoordinatorShard`], and one runtime per coordinator (the broker's
//! `CoordinatorRuntime`) drives them through the same load, write, commit and timer rules.

use std::fmt::Debug;
use std::sync::Arc;

use bytes::Bytes;

use crate::context::{ReplyId, RequestContext, TopicMetadata};

/// One batch to append: coordinator records as key and value bytes (no value: a
/// tombstone), written transactionally for `producer` (id, epoch) when it is set (a
/// transactional offset commit), else as a plain batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputBatch {
    pub producer: Option<(i64, i16)>,
    pub records: Vec<(Bytes, Option<Bytes>)>,
}

/// What one call of a shard produced, in order: batches to append (already applied to the
/// shard's state), replies, and side work the runtime carries out once everything written
/// so far is committed (the transaction coordinator's markers).
#[derive(Debug)]
pub struct CoordinatorOutput<R, W> {
    pub batches: Vec<OutputBatch>,
    pub replies: Vec<(ReplyId, R)>,
    pub work: Vec<W>,
}

impl<R, W> Default for CoordinatorOutput<R, W> {
    fn default() -> Self {
        CoordinatorOutput {
            batches: Vec::new(),
            replies: Vec::new(),
            work: Vec::new(),
        }
    }
}

/// Metric labels: (name, value) pairs.
pub type Labels = Vec<(&'static str, String)>;

/// One gauge a shard reports: (name, labels, value).
pub type Gauge = (&'static str, Labels, u64);

/// Why a record of the log could not be replayed, the one error of every shard's replay:
/// bytes that do not decode ([`ReplayFailure::from_decode`]), or a decoded record the
/// shard cannot apply ([`ReplayFailure::corrupt_record`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayFailure {
    /// A record type this coordinator does not know (a newer Kafka's): skipped, as Kafka's
    /// loader skips unknown record types.
    #[error("a record of an unknown type: {0}")]
    UnknownType(String),
    /// The log holds something malformed: the load fails.
    #[error("{0}")]
    Corrupt(String),
}

impl ReplayFailure {
    /// A decoded record the shard of `topic`-`partition` cannot apply at `offset`: the
    /// partition's log holds something this coordinator does not understand.
    pub fn corrupt_record(topic: &str, partition: i32, offset: i64, reason: &str) -> Self {
        ReplayFailure::Corrupt(format!(
            "record at offset {offset} of {topic}-{partition}: {reason}"
        ))
    }

    /// A record that does not decode: an unknown record type (skipped on load, as Kafka
    /// does), or corrupt bytes.
    pub fn from_decode(e: kraftd_protocol::codec::DecodeError) -> Self {
        if matches!(
            e.kind,
            kraftd_protocol::codec::DecodeErrorKind::UnknownApiKey(_)
        ) {
            ReplayFailure::UnknownType(e.to_string())
        } else {
            ReplayFailure::Corrupt(e.to_string())
        }
    }
}

/// A coordinator's state machine over one partition of its topic (see the module docs).
pub trait CoordinatorShard: Sized + Send + 'static {
    type Config: Send + Sync + Debug + 'static;
    type Request: Send + Clone + Debug + 'static;
    type Response: Send + Debug + 'static;
    /// Work the runtime carries out once it is committed (the broker's `WorkHandler`); `()`
    /// when none.
    type Work: Send + Debug + 'static;

    /// The coordinator's topic (`__consumer_offsets`, `__transaction_state`).
    const TOPIC: &'static str;
    /// The metrics group its gauges go under (`group-coordinator-metrics`).
    const METRICS_GROUP: &'static str;
    /// Whether the `now` the shard is handed follows the wall clock's steps (an NTP step,
    /// `date -s`) or only monotonic time from the wall clock at the runtime's start. Kafka's
    /// group and share coordinators count their timeouts on a monotonic timer
    /// (`CoordinatorTimerImpl` over its hierarchical timing wheel), so a wall clock jumping hours ahead
    /// expires no session: `false`, the default. Kafka's transaction coordinator compares
    /// each transaction's last update with the wall clock (`TransactionStateManager.
    /// timedOutTransactions`, `time.milliseconds()`), so a jump ahead times open
    /// transactions out there: it says `true`.
    const WALL_CLOCK: bool = false;

    /// How many partitions the coordinator's topic is created with
    /// (`offsets.topic.num.partitions`, `transaction.state.log.num.partitions`): which
    /// partition owns a key until the topic exists; then the topic's own count rules.
    fn topic_partitions(config: &Self::Config) -> i32;

    /// An empty shard for `partition`, led here at `leader_epoch` (the transaction
    /// coordinator's coordinator epoch).
    fn new(
        partition: i32,
        leader_epoch: i32,
        config: Arc<Self::Config>,
        topics: Arc<dyn TopicMetadata>,
    ) -> Self;

    /// Applies one record of the log (loading): `producer` is its batch's (id, epoch) when
    /// the batch is transactional.
    fn replay(
        &mut self,
        offset: i64,
        producer: Option<(i64, i16)>,
        key: Bytes,
        value: Option<Bytes>,
    ) -> Result<(), ReplayFailure>;

    /// A transaction marker of the log (loading): the transactional records of
    /// `producer_id` before it are committed or aborted.
    fn replay_end_txn(&mut self, offset: i64, producer_id: i64, commit: bool);

    /// A batch [`CoordinatorShard::take_output`] handed back was appended with its first
    /// record at `base_offset` (batches are reported in the order handed back): a shard that
    /// tracks where its records live (the share coordinator, to prune its log) learns the
    /// offsets of what it wrote; loading gives them to [`CoordinatorShard::replay`].
    fn on_appended(&mut self, _base_offset: i64) {}

    fn on_loaded(&mut self, now_ms: i64);
    fn on_metadata_update(&mut self, topics: Arc<dyn TopicMetadata>);
    fn handle(&mut self, now_ms: i64, ctx: &RequestContext, reply: ReplyId, request: Self::Request);
    fn on_timeout(&mut self, now_ms: i64);
    fn next_deadline(&self) -> Option<i64>;
    fn take_output(&mut self) -> CoordinatorOutput<Self::Response, Self::Work>;

    /// Numbers for the metrics, collected at most once a second: (name, labels, value).
    fn gauges(&self) -> Vec<Gauge> {
        Vec::new()
    }

    /// Counters of what the shard wrote since the last call: (name, increment).
    fn take_counters(&mut self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}
