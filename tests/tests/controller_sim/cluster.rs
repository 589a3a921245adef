//! The controller quorum on the Raft simulator: one `QuorumController` per voter, fed from
//! that voter's Raft outputs (committed batches decoded from the real record-batch bytes,
//! leader changes), proposing through a `RaftClient` adapter into that voter's `RaftCore`
//! (only as leader of the named epoch and exactly at the log end), ticked by the simulated
//! clock. It also keeps the book the checks need: every operation submitted, its proposal
//! (epoch, base offset, global order) and how it completed.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use kraftd_controller::quorum_controller::{
    CommittedBatch, Completion, ControllerError, ManagersConfig, OpId, ProposeError,
    QuorumController, QuorumControllerConfig, RaftClient, WriteOp,
};
use kraftd_protocol::messages::{
    AllocateProducerIdsResponse, AlterUserScramCredentialsResponse, BrokerHeartbeatResponse,
    BrokerRegistrationResponse, CreateAclsResponse, CreateTopicsResponse, DeleteTopicsResponse,
    IncrementalAlterConfigsResponse,
};
use kraftd_protocol::metadata_record::{decode_metadata_record, encode_metadata_record};
use kraftd_protocol::records::Batches;
use kraftd_protocol::MetadataRecord;
use kraftd_raft::{Output, RaftLog, RoleName};

use crate::harness::{Sim, SimConfig};

pub const CLUSTER_ID: &str = "kraftd-controller-sim";

/// The simulator's response type: one variant per operation it submits.
#[derive(Debug, Clone, PartialEq)]
pub enum Resp {
    Done,
    Registration(BrokerRegistrationResponse),
    Heartbeat(BrokerHeartbeatResponse),
    CreateTopics(CreateTopicsResponse),
    DeleteTopics(DeleteTopicsResponse),
    Configs(IncrementalAlterConfigsResponse),
    Acls(CreateAclsResponse),
    Scram(AlterUserScramCredentialsResponse),
    ProducerIds(AllocateProducerIdsResponse),
}

/// What an operation was, with the unique values that let the checks find it in the log.
#[derive(Debug, Clone, PartialEq)]
pub enum OpKind {
    Bootstrap,
    Register { broker: i32 },
    Heartbeat { broker: i32 },
    CreateTopic { name: String },
    DeleteTopic { name: String },
    SetConfig { key: String, value: String },
    CreateAcl { principal: String },
    Scram { user: String, salt: Bytes },
    ProducerIds { broker: i32 },
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    InFlight,
    Ok(Resp),
    Failed(ControllerError),
    /// Its controller crashed before answering.
    Lost,
}

/// One submitted operation.
#[derive(Debug, Clone)]
pub struct OpRecord {
    pub kind: OpKind,
    pub node: i32,
    /// Global order of events (submissions and completions).
    pub submit_seq: u64,
    pub done_seq: Option<u64>,
    pub outcome: Outcome,
    /// (epoch, base offset, last offset, proposal order) of its batch, if it proposed one.
    pub proposal: Option<(i32, i64, i64, u64)>,
}

/// A batch some controller proposed and Raft took.
#[derive(Debug, Clone, Copy)]
pub struct Proposal {
    pub seq: u64,
    pub node: i32,
    pub last_offset: i64,
    pub op: Option<usize>,
}

/// Counters for the report.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub proposals: u64,
    pub refused_proposals: u64,
    pub resigns: u64,
    pub claims: u64,
    pub deferred_claims: u64,
    pub committed_batches: u64,
    pub crashes: u64,
}

pub struct Cluster {
    pub sim: Sim,
    /// One controller per node: voters (which may become active) and observers (standbys
    /// replaying the log, as a broker's metadata loader does).
    pub controllers: BTreeMap<i32, QuorumController<Resp>>,
    /// How many controllers each node has had (seeds the id source of each incarnation).
    incarnations: BTreeMap<i32, u64>,
    /// Every batch a controller proposed, by (epoch, base offset): unique, since one leader
    /// per epoch appends each offset once.
    pub proposals: HashMap<(i32, i64), Proposal>,
    pub ops: Vec<OpRecord>,
    /// Operations waiting in a controller: (node, op id) → index in `ops`.
    inflight: HashMap<(i32, OpId), usize>,
    seq: u64,
    /// The operation being processed (its proposal is attributed to it).
    current_op: Option<usize>,
    /// Hold a node's own leadership notice until the epoch's first batch (the leader's
    /// LeaderChange control record) has committed there; see `main.rs` for why.
    pub defer_claim: bool,
    deferred: BTreeMap<i32, i32>,
    /// Highest epoch of a committed batch each controller replayed.
    committed_epoch: BTreeMap<i32, i32>,
    pub stats: Stats,
    pub violations: Vec<String>,
    /// Operations completed since the workload last looked.
    resolved: Vec<usize>,
}

/// A node's view of Raft, as its controller gets it.
struct NodeRaft<'a> {
    sim: &'a mut Sim,
    node: i32,
    proposals: &'a mut HashMap<(i32, i64), Proposal>,
    ops: &'a mut [OpRecord],
    current_op: Option<usize>,
    seq: &'a mut u64,
    stats: &'a mut Stats,
    violations: &'a mut Vec<String>,
}

/// A record at the version `metadata_version` implies, as the real driver writes it.
fn encode(
    metadata_version: kraftd_protocol::metadata_version::MetadataVersion,
    record: &MetadataRecord,
) -> Bytes {
    encode_metadata_record(record, metadata_version.record_version(record)).expect("record encodes")
}

impl RaftClient for NodeRaft<'_> {
    fn propose(
        &mut self,
        epoch: i32,
        base_offset: i64,
        metadata_version: kraftd_protocol::metadata_version::MetadataVersion,
        records: &[MetadataRecord],
    ) -> Result<(i64, i64), ProposeError> {
        let core = self.sim.core(self.node);
        if core.role() != RoleName::Leader || core.epoch() != epoch {
            self.stats.refused_proposals += 1;
            return Err(ProposeError::NotLeader { epoch });
        }
        let end = core.log().end_offset();
        if end != base_offset {
            self.stats.refused_proposals += 1;
            return Err(ProposeError::UnexpectedBaseOffset {
                expected: base_offset,
                actual: end,
            });
        }
        let values: Vec<Bytes> = records
            .iter()
            .map(|r| encode(metadata_version, r))
            .collect();
        for (record, value) in records.iter().zip(&values) {
            match decode_metadata_record(value.clone()) {
                Ok((back, _)) if back == *record => {}
                other => self.violations.push(format!(
                    "record does not round-trip through its encoding: {record:?} -> {other:?}"
                )),
            }
        }
        let (first, last) = self
            .sim
            .propose_at(self.node, epoch, base_offset, &values)
            .map_err(ProposeError::Refused)?;
        *self.seq += 1;
        let seq = *self.seq;
        self.stats.proposals += 1;
        self.proposals.insert(
            (epoch, first),
            Proposal {
                seq,
                node: self.node,
                last_offset: last,
                op: self.current_op,
            },
        );
        if let Some(i) = self.current_op {
            let op = &mut self.ops[i];
            if op.proposal.is_some() {
                self.violations
                    .push(format!("operation {i} ({:?}) proposed twice", op.kind));
            }
            op.proposal = Some((epoch, first, last, seq));
        }
        Ok((first, last))
    }

    fn resign(&mut self, epoch: i32) {
        self.stats.resigns += 1;
        let core = self.sim.core(self.node);
        if core.role() == RoleName::Leader && core.epoch() == epoch {
            self.sim.resign(self.node);
        }
    }
}

/// A Raft committed batch as the controller takes it: the metadata records with their
/// offsets, decoded from the batch bytes (none for a control batch).
pub fn decode_batch(
    epoch: i32,
    last_offset: i64,
    is_control: bool,
    bytes: Bytes,
) -> Result<CommittedBatch, String> {
    let mut records = Vec::new();
    if !is_control {
        for batch in Batches::new(bytes) {
            let batch = batch.map_err(|e| format!("batch: {e}"))?;
            let base = batch.base_offset();
            for record in batch.records().map_err(|e| format!("records: {e}"))? {
                let record = record.map_err(|e| format!("record: {e}"))?;
                let value = record.value.ok_or("a metadata record without a value")?;
                let (decoded, _) =
                    decode_metadata_record(value).map_err(|e| format!("metadata record: {e}"))?;
                records.push((base + i64::from(record.offset_delta), decoded));
            }
        }
    }
    Ok(CommittedBatch {
        epoch,
        last_offset,
        records,
    })
}

impl Cluster {
    /// The cluster on `cfg`, with a fresh controller on every node.
    pub fn new(mut cfg: SimConfig, defer_claim: bool) -> Cluster {
        // Recorded from the start: a lone voter is leader as soon as it starts.
        cfg.record_listener_outputs = true;
        let sim = Sim::new(cfg);
        let mut cluster = Cluster {
            sim,
            controllers: BTreeMap::new(),
            incarnations: BTreeMap::new(),
            proposals: HashMap::new(),
            ops: Vec::new(),
            inflight: HashMap::new(),
            seq: 0,
            current_op: None,
            defer_claim,
            deferred: BTreeMap::new(),
            committed_epoch: BTreeMap::new(),
            stats: Stats::default(),
            violations: Vec::new(),
            resolved: Vec::new(),
        };
        for id in cluster.sim.ids() {
            cluster.new_controller(id);
        }
        cluster.pump();
        cluster
    }

    fn new_controller(&mut self, id: i32) {
        let incarnation = self.incarnations.entry(id).or_insert(0);
        *incarnation += 1;
        let mut managers = ManagersConfig::default();
        managers.cluster.cluster_id = CLUSTER_ID.into();
        // Each incarnation draws its own topic and ACL ids, as random UUIDs would.
        managers.seed = self
            .sim
            .cfg
            .seed
            .wrapping_mul(1_000_003)
            .wrapping_add((id as u64) << 32)
            .wrapping_add(*incarnation);
        let controller = QuorumController::new(QuorumControllerConfig {
            node_id: id,
            managers,
            ..Default::default()
        });
        self.controllers.insert(id, controller);
        self.deferred.remove(&id);
        self.committed_epoch.remove(&id);
    }

    pub fn now(&self) -> u64 {
        self.sim.now_ms
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Submits a write at `node` and processes it at once (the controller's event loop runs
    /// whenever it has work). Returns the operation's index, or None if the node is down.
    pub fn submit(&mut self, node: i32, kind: OpKind, op: WriteOp<Resp>) -> Option<usize> {
        if !self.sim.is_up(node) {
            return None;
        }
        let index = self.ops.len();
        let submit_seq = self.next_seq();
        self.ops.push(OpRecord {
            kind,
            node,
            submit_seq,
            done_seq: None,
            outcome: Outcome::InFlight,
            proposal: None,
        });
        let controller = self.controllers.get_mut(&node).expect("an up node has one");
        match controller.submit_write(op) {
            Ok(id) => {
                self.inflight.insert((node, id), index);
            }
            Err(e) => {
                self.ops[index].outcome = Outcome::Failed(e);
                self.ops[index].done_seq = Some(self.next_seq());
                self.resolved.push(index);
                return Some(index);
            }
        }
        self.current_op = Some(index);
        self.process(node);
        self.current_op = None;
        self.pump();
        Some(index)
    }

    /// Runs the node's queued operations and collects what completed.
    fn process(&mut self, node: i32) {
        let Some(controller) = self.controllers.get_mut(&node) else {
            return;
        };
        let mut raft = NodeRaft {
            sim: &mut self.sim,
            node,
            proposals: &mut self.proposals,
            ops: &mut self.ops,
            current_op: self.current_op,
            seq: &mut self.seq,
            stats: &mut self.stats,
            violations: &mut self.violations,
        };
        controller.process(&mut raft);
        self.collect(node);
    }

    fn tick(&mut self, node: i32) {
        let Some(controller) = self.controllers.get_mut(&node) else {
            return;
        };
        let now = self.sim.now_ms;
        let mut raft = NodeRaft {
            sim: &mut self.sim,
            node,
            proposals: &mut self.proposals,
            ops: &mut self.ops,
            current_op: None,
            seq: &mut self.seq,
            stats: &mut self.stats,
            violations: &mut self.violations,
        };
        controller.tick(now, &mut raft);
        self.collect(node);
    }

    fn collect(&mut self, node: i32) {
        let Some(controller) = self.controllers.get_mut(&node) else {
            return;
        };
        let done: Vec<Completion<Resp>> = controller.drain_completions();
        for completion in done {
            let Some(index) = self.inflight.remove(&(node, completion.id)) else {
                self.violations.push(format!(
                    "node {node}: completion for unknown operation {:?}",
                    completion.id
                ));
                continue;
            };
            let seq = self.next_seq();
            let op = &mut self.ops[index];
            op.done_seq = Some(seq);
            op.outcome = match completion.result {
                Ok(r) => Outcome::Ok(r),
                Err(e) => Outcome::Failed(e),
            };
            self.resolved.push(index);
        }
    }

    /// Operations completed since the last call.
    pub fn take_resolved(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.resolved)
    }

    /// Hands every listener output to its node's controller, then ticks every controller,
    /// until nothing more comes out.
    pub fn pump(&mut self) {
        for _ in 0..1_000 {
            let outputs = self
                .sim
                .listener_outputs
                .as_mut()
                .map(std::mem::take)
                .unwrap_or_default();
            for (id, out) in outputs {
                self.feed(id, out);
            }
            for id in self.sim.ids() {
                if self.sim.is_up(id) {
                    self.tick(id);
                    self.process(id);
                }
            }
            if self
                .sim
                .listener_outputs
                .as_ref()
                .is_none_or(|o| o.is_empty())
            {
                return;
            }
        }
        self.violations
            .push("listener outputs keep coming (a feedback loop?)".into());
    }

    fn feed(&mut self, id: i32, out: Output) {
        let Some(controller) = self.controllers.get_mut(&id) else {
            return;
        };
        match out {
            Output::Committed(b) => {
                self.stats.committed_batches += 1;
                let batch = match decode_batch(b.epoch, b.last_offset, b.is_control, b.bytes) {
                    Ok(batch) => batch,
                    Err(e) => {
                        self.violations.push(format!(
                            "node {id}: committed batch at {} does not decode: {e}",
                            b.base_offset
                        ));
                        return;
                    }
                };
                if batch.last_offset <= controller.committed_offset() {
                    self.violations.push(format!(
                        "node {id}: committed batch at {} again (controller at {})",
                        b.base_offset,
                        controller.committed_offset()
                    ));
                }
                if let Err(e) = controller.handle_commit(&batch) {
                    self.violations.push(format!(
                        "t={} node {id}: committed batch {}..={} does not replay: {e}",
                        self.sim.now_ms, b.base_offset, b.last_offset
                    ));
                }
                let seen = self.committed_epoch.entry(id).or_insert(0);
                *seen = (*seen).max(b.epoch);
                if let Some(&epoch) = self.deferred.get(&id) {
                    if b.epoch >= epoch {
                        self.deferred.remove(&id);
                        self.claim(id, epoch);
                    }
                }
            }
            Output::LeaderChange { epoch, leader_id } => {
                self.deferred.remove(&id);
                let own = leader_id == Some(id);
                let seen = self.committed_epoch.get(&id).copied().unwrap_or(0);
                if own && self.defer_claim && seen < epoch {
                    self.stats.deferred_claims += 1;
                    self.deferred.insert(id, epoch);
                    // Others learn of the leader at once; only the claim waits.
                    return;
                }
                if own {
                    self.claim(id, epoch);
                } else {
                    controller.handle_leader_change(leader_id, epoch);
                    self.collect(id);
                }
            }
            Output::Snapshot { id: snap, .. } => {
                self.violations.push(format!(
                    "node {id}: snapshot {snap:?} delivered, but the controller simulator takes none"
                ));
            }
            _ => {}
        }
    }

    fn claim(&mut self, id: i32, epoch: i32) {
        let Some(controller) = self.controllers.get_mut(&id) else {
            return;
        };
        self.stats.claims += 1;
        // As the real node does: the claim starts writing at the Raft log's end, past the
        // epoch's uncommitted LeaderChange record.
        let log_end = self.sim.core(id).log().end_offset();
        controller.handle_leader_change_at(Some(id), epoch, Some(log_end));
        self.collect(id);
    }

    /// Runs the simulation to `until_ms`, feeding the controllers after every event.
    pub fn run_until(&mut self, until_ms: u64) {
        while self.sim.step(until_ms) {
            self.pump();
        }
        self.sim.now_ms = self.sim.now_ms.max(until_ms);
        self.pump();
    }

    pub fn run_for(&mut self, ms: u64) {
        let until = self.sim.now_ms + ms;
        self.run_until(until);
    }

    /// Runs until `pred` holds (checked after every event) or `max_ms` passes.
    pub fn run_until_pred(&mut self, max_ms: u64, pred: impl Fn(&Cluster) -> bool) -> bool {
        let until = self.sim.now_ms + max_ms;
        loop {
            if pred(self) {
                return true;
            }
            if !self.sim.step(until) {
                self.sim.now_ms = self.sim.now_ms.max(until);
                self.pump();
                return pred(self);
            }
            self.pump();
        }
    }

    /// Kills a node: Raft loses its unflushed data, the controller everything (it is
    /// rebuilt from the log at restart); what it had not answered is lost.
    pub fn crash(&mut self, id: i32) {
        if !self.sim.is_up(id) {
            return;
        }
        self.stats.crashes += 1;
        self.sim.crash(id);
        self.controllers.remove(&id);
        self.deferred.remove(&id);
        // In submission order, so a replayed seed resolves them alike.
        let mut lost: Vec<(i32, OpId)> = self
            .inflight
            .keys()
            .filter(|(node, _)| *node == id)
            .copied()
            .collect();
        lost.sort();
        for key in lost {
            let index = self.inflight.remove(&key).expect("listed");
            let seq = self.next_seq();
            self.ops[index].outcome = Outcome::Lost;
            self.ops[index].done_seq = Some(seq);
            self.resolved.push(index);
        }
    }

    /// Kills an observer and wipes its disk: it comes back empty and fetches everything.
    pub fn wipe(&mut self, id: i32) {
        self.crash(id);
        self.sim.wipe(id);
    }

    /// Restarts a node with an empty controller that replays the log from the start.
    pub fn restart(&mut self, id: i32) {
        if self.sim.is_up(id) {
            return;
        }
        self.new_controller(id);
        self.sim.restart(id);
        self.pump();
    }

    /// Whether everything is quiet and agreed: one leader whose controller is active, every
    /// node's Raft converged and every controller at the high watermark.
    pub fn settled(&self) -> bool {
        if self.sim.check_converged().is_err() {
            return false;
        }
        let Some(leader) = self.sim.leader() else {
            return false;
        };
        let hw = self.sim.core(leader).high_watermark();
        self.controllers.get(&leader).is_some_and(|c| c.is_active())
            && self
                .controllers
                .values()
                .all(|c| c.committed_offset() == hw - 1 && c.pending_writes() == 0)
    }
}
