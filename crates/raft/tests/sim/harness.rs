//! The deterministic simulator: N voters and M observers running the real [`RaftCore`] over
//! a seeded network (drop, delay, duplicate, reorder, symmetric and one-way partitions, slow
//! links) and disks that lose unflushed data on a crash. Every message is encoded to bytes
//! and decoded again with the real codecs. The invariants are checked after every event and
//! each violation is recorded with the seed, time and node.
//!
//! Disks can also be lost: [`Sim::wipe`] kills a node and restarts it later with an empty
//! log and no `quorum-state` file. For an observer that is always safe (it never votes and
//! never counts toward the HW). For a voter it is not, in Raft as in Kafka with a static
//! quorum (KIP-853's directory ids are how Kafka tells a replaced disk apart; a static
//! quorum cannot): the voter forgets its votes, so it could vote twice in one epoch, and it
//! forgets its log, so committed data it helped to commit may be left on less than a
//! majority and a candidate without it could be elected. [`Sim::voter_wipe_is_safe`] states
//! the rule under which a wipe cannot break safety; random schedules wipe a voter only when it
//! holds, and [`Sim::wipe_unchecked`] exists for the scenario that shows what happens when
//! it does not.
//!
//! A crash ([`Sim::crash`]) is a process's: its kernel closes its connections, so every node
//! with a request in flight to it learns that the connection closed (after the network's
//! delay, or never when that notice is lost), and a later request to it is refused at once
//! while it is down; both reach the core as the driver reports them, the request failed and
//! [`RaftCore::handle_leader_connection_lost`]. [`Sim::crash_silent`] is a machine's loss:
//! no notice, requests time out. [`Sim::notify_connection_lost`] delivers a notice that is
//! false (a live peer), for the rule's safety under spurious signals.
//!
//! The driver side of the core's contract lives here too: request timeouts
//! (`controller.quorum.request.timeout.ms`) are tracked per outstanding request, and a
//! response that arrives after its request was given up is dropped, as Kafka's
//! NetworkClient does ("no longer needed").

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};

use bytes::Bytes;
use kraftd_log::SnapshotId;
use kraftd_raft::core::rng::Rng;
use kraftd_raft::{
    ApiKind, MemoryLog, Output, QuorumStateData, RaftConfig, RaftCore, RaftLog, RaftMessage,
    RoleName,
};

#[path = "dynamic.rs"]
mod dynamic;

/// How the network misbehaves; probabilities in per mille.
#[derive(Debug, Clone)]
pub struct NetworkFaults {
    pub drop_per_mille: u64,
    pub duplicate_per_mille: u64,
    pub delay_min_ms: u64,
    pub delay_max_ms: u64,
}

impl NetworkFaults {
    pub fn reliable() -> Self {
        NetworkFaults {
            drop_per_mille: 0,
            duplicate_per_mille: 0,
            delay_min_ms: 1,
            delay_max_ms: 5,
        }
    }
}

/// What a simulation runs.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub seed: u64,
    pub voters: Vec<i32>,
    pub observers: Vec<i32>,
    pub raft: RaftConfig,
    pub network: NetworkFaults,
    /// Per-node overrides of the election timeout (to make a given node win).
    pub election_timeout_ms: HashMap<i32, u64>,
    /// The durable state every node starts with.
    pub initial_state: Option<QuorumStateData>,
    /// Per-node time a leader's [`Output::Flush`] takes (its fsync); others take 0–2 ms.
    pub flush_delay_ms: HashMap<i32, u64>,
    /// Queue listener outputs in [`Sim::listener_outputs`] from the start.
    pub record_listener_outputs: bool,
    /// KIP-853: a dynamic quorum. Every node has a directory id (a new one after a wipe);
    /// `voters` are formatted with a bootstrap checkpoint naming them (`kraft.version` 1),
    /// observers with none; no node has static voters, and the voter set lives in the log.
    /// Membership changes go through [`Sim::add_voter`] and [`Sim::remove_voter`].
    pub dynamic: bool,
}

impl SimConfig {
    pub fn new(seed: u64, voters: &[i32], observers: &[i32]) -> Self {
        SimConfig {
            seed,
            voters: voters.to_vec(),
            observers: observers.to_vec(),
            raft: RaftConfig::new("sim-cluster-id-AAAAAAAA"),
            network: NetworkFaults::reliable(),
            election_timeout_ms: HashMap::new(),
            initial_state: None,
            flush_delay_ms: HashMap::new(),
            record_listener_outputs: false,
            dynamic: false,
        }
    }
}

struct Node {
    core: Option<RaftCore<MemoryLog>>,
    /// The disk of a node that is down.
    disk: Option<MemoryLog>,
    durable: Option<QuorumStateData>,
    incarnation: u64,
    /// The next offset this incarnation's listener expects.
    listener_next: i64,
    last_hw: i64,
    last_epoch: i32,
    /// KIP-853: the directory id of its disk (zero in a static quorum).
    directory_id: kraftd_protocol::Uuid,
    /// While down: its host refuses connections (a crashed process), rather than being
    /// silent (a lost machine).
    refuses: bool,
}

struct Packet {
    correlation_id: i32,
    from: i32,
    to: i32,
    kind: ApiKind,
    is_request: bool,
    bytes: Bytes,
}

struct Outstanding {
    correlation_id: i32,
    from: i32,
    to: i32,
    kind: ApiKind,
    deadline_ms: u64,
}

/// A fetch a node sent, for routing assertions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchSent {
    pub at_ms: u64,
    pub from: i32,
    pub to: i32,
}

/// A fetch response with an error a node received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchErrorSeen {
    pub at_ms: u64,
    pub node: i32,
    pub from: i32,
    pub error_code: i16,
    pub leader_id: i32,
}

pub struct Sim {
    pub cfg: SimConfig,
    pub now_ms: u64,
    rng: Rng,
    nodes: BTreeMap<i32, Node>,
    queue: BinaryHeap<Reverse<(u64, u64)>>,
    packets: HashMap<u64, Packet>,
    /// Flushes asked for ([`Output::Flush`]) and not yet done: (due, node, incarnation). A
    /// crash before one is due loses what it would have made durable.
    flushes: Vec<(u64, i32, u64)>,
    next_seq: u64,
    /// Connection-loss notices due: (due, node, its incarnation, the peer it lost).
    conn_lost: Vec<(u64, i32, u64, i32)>,
    /// Notices delivered to an up node.
    pub connection_notices: u64,
    outstanding: Vec<Outstanding>,
    /// Links cut: (from, to).
    blocked: HashSet<(i32, i32)>,
    /// Extra delay per link.
    slow: HashMap<(i32, i32), u64>,
    leaders: BTreeMap<i32, i32>,
    committed: BTreeMap<i64, (i64, Bytes)>,
    /// Snapshots listeners loaded, by id (the first node's bytes).
    snapshots: BTreeMap<SnapshotId, Bytes>,
    snapshots_delivered: u64,
    pub violations: Vec<String>,
    pub fetches: Vec<FetchSent>,
    pub fetch_errors: Vec<FetchErrorSeen>,
    pub events: u64,
    pub proposals: u64,
    /// Voters wiped (restart with lost disk and quorum state).
    pub voter_wipes: u64,
    /// The highest HW any node ever had: everything below it is committed.
    max_hw: i64,
    /// Every vote ever persisted, by (node, epoch), kept across wipes: a voter that lost its
    /// `quorum-state` must still never vote twice in one epoch.
    votes_cast: HashMap<(i32, kraftd_protocol::Uuid, i32), i32>,
    pub trace: bool,
    /// Responses that came after their request was given up (or twice): dropped.
    pub responses_dropped: u64,
    /// Record every message sent, for hostile-input tests.
    pub capture: bool,
    pub captured: Vec<(ApiKind, bool, Bytes)>,
    /// With [`SimConfig::record_listener_outputs`], every listener output (Committed,
    /// LeaderChange, Snapshot) is also queued here with its node, for a state machine driven
    /// on top of the simulator (`tests/tests/controller_sim`).
    pub listener_outputs: Option<Vec<(i32, Output)>>,
    /// Voter changes answered (KIP-853): (leader, token, error).
    pub voter_changes_done: Vec<(i32, u64, kraftd_protocol::ErrorCode)>,
    /// Wall time spent on each node's messages and timeouts (its core, its outputs' encoding
    /// and the harness's checks), for the figures of `observers.rs`; never asserted on.
    pub busy: HashMap<i32, std::time::Duration>,
}

impl Sim {
    pub fn new(cfg: SimConfig) -> Sim {
        let record_listener_outputs = cfg.record_listener_outputs;
        let mut sim = Sim {
            rng: Rng::new(cfg.seed),
            cfg,
            now_ms: 0,
            nodes: BTreeMap::new(),
            queue: BinaryHeap::new(),
            packets: HashMap::new(),
            flushes: Vec::new(),
            next_seq: 0,
            conn_lost: Vec::new(),
            connection_notices: 0,
            outstanding: Vec::new(),
            blocked: HashSet::new(),
            slow: HashMap::new(),
            leaders: BTreeMap::new(),
            committed: BTreeMap::new(),
            snapshots: BTreeMap::new(),
            snapshots_delivered: 0,
            violations: Vec::new(),
            fetches: Vec::new(),
            fetch_errors: Vec::new(),
            events: 0,
            proposals: 0,
            voter_wipes: 0,
            max_hw: 0,
            votes_cast: HashMap::new(),
            trace: std::env::var("SIM_TRACE").is_ok(),
            responses_dropped: 0,
            capture: false,
            captured: Vec::new(),
            listener_outputs: record_listener_outputs.then(Vec::new),
            voter_changes_done: Vec::new(),
            busy: HashMap::new(),
        };
        let ids: Vec<i32> = sim
            .cfg
            .voters
            .iter()
            .chain(sim.cfg.observers.iter())
            .copied()
            .collect();
        for id in &ids {
            let directory_id = if sim.cfg.dynamic {
                sim.new_directory_id()
            } else {
                kraftd_protocol::Uuid::ZERO
            };
            sim.nodes.insert(
                *id,
                Node {
                    core: None,
                    disk: Some(MemoryLog::new()),
                    durable: sim.cfg.initial_state,
                    incarnation: 0,
                    listener_next: 0,
                    last_hw: 0,
                    last_epoch: 0,
                    directory_id,
                    refuses: false,
                },
            );
        }
        if sim.cfg.dynamic {
            sim.format_initial_voters();
        }
        for id in ids {
            sim.start(id);
        }
        sim
    }

    // ----- controls -----

    pub fn ids(&self) -> Vec<i32> {
        self.nodes.keys().copied().collect()
    }

    pub fn is_up(&self, id: i32) -> bool {
        self.nodes[&id].core.is_some()
    }

    pub fn core(&self, id: i32) -> &RaftCore<MemoryLog> {
        self.nodes[&id].core.as_ref().expect("node is up")
    }

    /// The node that is Leader in the highest epoch, if any is up.
    pub fn leader(&self) -> Option<i32> {
        self.nodes
            .iter()
            .filter_map(|(id, n)| n.core.as_ref().map(|c| (id, c)))
            .filter(|(_, c)| c.role() == RoleName::Leader)
            .max_by_key(|(_, c)| c.epoch())
            .map(|(id, _)| *id)
    }

    /// Kills a node's process: its unflushed data is lost, its quorum-state file survives,
    /// and its peers with a request in flight to it learn that the connection closed (each
    /// after the network's delay, unless the network loses the notice); while it is down, a
    /// request to it is refused.
    pub fn crash(&mut self, id: i32) {
        if !self.is_up(id) {
            return;
        }
        let mut peers: Vec<i32> = self
            .outstanding
            .iter()
            .filter(|o| o.to == id && o.from != id && !self.blocked.contains(&(id, o.from)))
            .map(|o| o.from)
            .collect();
        peers.sort_unstable();
        peers.dedup();
        self.crash_silent(id);
        self.nodes.get_mut(&id).expect("known node").refuses = true;
        for peer in peers {
            if self.rng.below(1000) < self.cfg.network.drop_per_mille {
                continue;
            }
            let delay = self.network_delay(id, peer);
            self.schedule_connection_lost(peer, id, self.now_ms + delay);
        }
    }

    /// Kills a node as a lost machine would go: no notice reaches its peers, and requests to
    /// it time out. Its unflushed data is lost, its quorum-state file survives.
    pub fn crash_silent(&mut self, id: i32) {
        let node = self.nodes.get_mut(&id).expect("known node");
        let Some(core) = node.core.take() else { return };
        node.refuses = false;
        if self.trace {
            println!(
                "t={} node {id}: crash (leo {}, flushed {})",
                self.now_ms,
                core.log().end_offset(),
                core.log().flushed_offset()
            );
        }
        let mut log = core.into_log();
        log.crash();
        node.disk = Some(log);
        self.outstanding.retain(|o| o.from != id);
    }

    /// `node` is told its connection to `peer` closed and could not be made again, whether
    /// or not `peer` is down (a false notice when it is up).
    pub fn notify_connection_lost(&mut self, node: i32, peer: i32) {
        self.schedule_connection_lost(node, peer, self.now_ms);
    }

    fn schedule_connection_lost(&mut self, node: i32, peer: i32, due: u64) {
        let incarnation = self.nodes[&node].incarnation;
        self.conn_lost.push((due, node, incarnation, peer));
    }

    /// A message's delay from `from` to `to` under the current network.
    fn network_delay(&mut self, from: i32, to: i32) -> u64 {
        let net = &self.cfg.network;
        let (min, max) = (net.delay_min_ms, net.delay_max_ms);
        min + self.rng.below(max.saturating_sub(min) + 1)
            + self.slow.get(&(from, to)).copied().unwrap_or(0)
    }

    /// A due notice: the driver fails the requests in flight to `peer` and reports the loss.
    fn deliver_connection_lost(&mut self, node: i32, incarnation: u64, peer: i32) {
        let now = self.now_ms;
        let Some(n) = self.nodes.get_mut(&node) else {
            return;
        };
        if n.incarnation != incarnation {
            return;
        }
        let Some(core) = n.core.as_mut() else { return };
        let failed: Vec<Outstanding> = {
            let (gone, keep) = std::mem::take(&mut self.outstanding)
                .into_iter()
                .partition(|o| o.from == node && o.to == peer);
            self.outstanding = keep;
            gone
        };
        for o in failed {
            core.handle_request_failed(now, o.to, o.correlation_id, o.kind);
        }
        core.handle_leader_connection_lost(now, peer);
        self.connection_notices += 1;
        if self.trace {
            println!("t={now} node {node}: connection to {peer} lost");
        }
        self.drain(node);
        self.check_node(node);
    }

    /// Kills a node and wipes its disk and quorum-state file; it comes back empty on its
    /// next [`Sim::restart`]. Always allowed for an observer; a voter only when
    /// [`Sim::voter_wipe_is_safe`] says so (panics otherwise).
    pub fn wipe(&mut self, id: i32) {
        if let Err(why) = self.voter_wipe_is_safe(id) {
            panic!(
                "seed {}: wiping voter {id} could break Raft's safety: {why}",
                self.cfg.seed
            );
        }
        self.wipe_unchecked(id);
    }

    /// [`Sim::wipe`] without the safety rule, for the scenario that shows why it exists.
    pub fn wipe_unchecked(&mut self, id: i32) {
        self.crash(id);
        if self.trace {
            println!("t={} node {id}: wiped", self.now_ms);
        }
        if self.cfg.voters.contains(&id) {
            self.voter_wipes += 1;
        }
        // A disk is replaced over minutes, not milliseconds: nothing the old incarnation
        // sent or was sent is still in flight when the new one starts. (An old Fetch
        // arriving after the wipe would make the leader count data the node no longer has.)
        let gone: Vec<u64> = self
            .packets
            .iter()
            .filter(|(_, p)| p.from == id || p.to == id)
            .map(|(seq, _)| *seq)
            .collect();
        for seq in gone {
            self.packets.remove(&seq);
        }
        self.queue
            .retain(|Reverse((_, seq))| self.packets.contains_key(seq));
        let directory_id = if self.cfg.dynamic {
            self.new_directory_id()
        } else {
            kraftd_protocol::Uuid::ZERO
        };
        let node = self.nodes.get_mut(&id).expect("known node");
        node.disk = Some(MemoryLog::new());
        node.durable = None;
        node.last_epoch = 0;
        // A new disk is a new directory: not the voter the old one was (KIP-853).
        node.directory_id = directory_id;
    }

    /// Whether voter `id` may lose its disk and quorum state now without breaking Raft's
    /// safety (`Ok` for an observer, always). The rule, and why each part is needed:
    ///
    /// 1. *Its data is held without it.* A majority of all voters, not counting `id`, hold
    ///    durably (flushed) every committed offset and every batch `id` holds durably, byte
    ///    for byte. Committed data then still sits on a majority, so every future winning
    ///    candidate needs the vote of one of them and therefore has it (the up-to-date check).
    ///    `id`'s own durable log is covered too because the leader may still count `id` at
    ///    the end offset it last reported until `id` fetches again: a HW computed from that
    ///    stale position is then still backed by a real majority.
    /// 2. *Its votes cannot be reused.* Every other voter (up: its current epoch; down: its
    ///    durable one) is at an epoch at least `id`'s durable epoch `E`, and none is a
    ///    Candidate in `E` (a candidate keeps asking voters that did not answer). Any
    ///    election `id` can then take part in is for an epoch above `E`, where it never
    ///    voted: a voter that forgot its vote cannot vote twice in one epoch. (A down voter
    ///    that voted for itself in `E` restarts Unattached in `E`, and its next election is
    ///    for `E + 1`.) Messages in flight to or from `id` are dropped by the wipe.
    ///
    /// Together they mean one voter at a time: a wiped voter counts neither as a holder
    /// (its log is empty) nor passes part 2 for the others (its epoch is 0) until it has
    /// caught up with the leader's log and epoch. A one- or two-voter quorum can never wipe a
    /// voter (the others are never a majority of all voters).
    pub fn voter_wipe_is_safe(&self, id: i32) -> Result<(), String> {
        if !self.cfg.voters.contains(&id) {
            return Ok(());
        }
        fn log_of(n: &Node) -> Option<&MemoryLog> {
            n.core.as_ref().map(|c| c.log()).or(n.disk.as_ref())
        }
        let me = &self.nodes[&id];
        let my_log = log_of(me).ok_or("no log")?;
        let my_flushed = my_log.flushed_offset();
        let bound = self.max_hw.max(my_flushed);
        let my_batches: Vec<(i64, &Bytes)> = my_log
            .batches()
            .filter(|(base, _, _)| *base < my_flushed)
            .map(|(base, _, b)| (base, b))
            .collect();
        let last_committed = self
            .committed
            .range(..self.max_hw)
            .next_back()
            .map(|(base, (_, b))| (*base, b));
        let holders = self
            .cfg
            .voters
            .iter()
            .filter(|v| **v != id)
            .filter(|v| {
                let Some(l) = log_of(&self.nodes[v]) else {
                    return false;
                };
                let start = l.start_offset();
                let covered_by_snapshot =
                    |base: i64| l.latest_snapshot().is_some_and(|s| s.end_offset > base);
                l.flushed_offset() >= bound
                    && my_batches.iter().all(|(base, b)| {
                        if *base < start {
                            covered_by_snapshot(*base)
                        } else {
                            l.batch_at(*base) == Some(*b)
                        }
                    })
                    && last_committed.is_none_or(|(base, b)| {
                        l.batch_at(base) == Some(b) || covered_by_snapshot(base)
                    })
            })
            .count();
        let majority = self.cfg.voters.len() / 2 + 1;
        if holders < majority {
            return Err(format!(
                "only {holders} other voters hold its log and the committed data up to {bound} (a majority is {majority})"
            ));
        }
        let epoch_of = |n: &Node| -> i32 {
            let durable = n.durable.map_or(0, |d| d.leader_epoch);
            n.core.as_ref().map_or(durable, |c| c.epoch().max(durable))
        };
        let my_epoch = epoch_of(me);
        for v in self.cfg.voters.iter().filter(|v| **v != id) {
            let n = &self.nodes[v];
            let e = match n.core.as_ref() {
                Some(c) => c.epoch(),
                None => n.durable.map_or(0, |d| d.leader_epoch),
            };
            if e < my_epoch {
                return Err(format!(
                    "voter {v} is at epoch {e}, below its epoch {my_epoch}"
                ));
            }
            if n.core
                .as_ref()
                .is_some_and(|c| c.role() == RoleName::Candidate && c.epoch() <= my_epoch)
            {
                return Err(format!("voter {v} is a candidate in its epoch {my_epoch}"));
            }
        }
        Ok(())
    }

    pub fn restart(&mut self, id: i32) {
        if !self.is_up(id) {
            if self.trace {
                println!("t={} node {id}: restart", self.now_ms);
            }
            self.start(id);
        }
    }

    /// Cuts both directions between `a` and `b`.
    pub fn partition(&mut self, a: i32, b: i32) {
        self.blocked.insert((a, b));
        self.blocked.insert((b, a));
    }

    /// Cuts `from` → `to` only.
    pub fn block(&mut self, from: i32, to: i32) {
        self.blocked.insert((from, to));
    }

    /// Cuts `id` from every other node.
    pub fn isolate(&mut self, id: i32) {
        for other in self.ids() {
            if other != id {
                self.partition(id, other);
            }
        }
    }

    pub fn slow_link(&mut self, from: i32, to: i32, extra_ms: u64) {
        self.slow.insert((from, to), extra_ms);
    }

    pub fn heal(&mut self) {
        self.blocked.clear();
        self.slow.clear();
    }

    /// Proposes `count` records of a few bytes at the current leader; returns whether one
    /// took them.
    pub fn propose(&mut self, count: usize) -> bool {
        let Some(leader) = self.leader() else {
            return false;
        };
        let now = self.now_ms;
        let n = self.proposals;
        let records: Vec<Bytes> = (0..count)
            .map(|i| Bytes::from(format!("record-{n}-{i}")))
            .collect();
        let node = self.nodes.get_mut(&leader).expect("leader exists");
        let core = node.core.as_mut().expect("leader is up");
        if core.propose(now, &records).is_ok() {
            self.proposals += 1;
            self.drain(leader);
            self.check_node(leader);
            true
        } else {
            false
        }
    }

    /// Proposes `records` at node `id` as its state machine would: only if it leads `epoch`
    /// and its log ends exactly at `base_offset`; returns the offsets of the batch. (Used by
    /// the controller simulator in `tests/tests/controller_sim`.)
    #[allow(dead_code)]
    pub fn propose_at(
        &mut self,
        id: i32,
        epoch: i32,
        base_offset: i64,
        records: &[Bytes],
    ) -> Result<(i64, i64), String> {
        let now = self.now_ms;
        let core = self
            .nodes
            .get_mut(&id)
            .and_then(|n| n.core.as_mut())
            .ok_or("node is down")?;
        if core.role() != RoleName::Leader || core.epoch() != epoch {
            return Err(format!(
                "not the leader of epoch {epoch} ({:?} in {})",
                core.role(),
                core.epoch()
            ));
        }
        let end = core.log().end_offset();
        if end != base_offset {
            return Err(format!("log ends at {end}, not {base_offset}"));
        }
        let range = core.propose(now, records).map_err(|e| e.to_string())?;
        self.proposals += 1;
        self.drain(id);
        self.check_node(id);
        Ok(range)
    }

    /// Hands `msg` to every up node as if `from` sent it (hostile-input tests); a response is
    /// given the correlation id of the node's fetch in flight, so it is not dropped as stale.
    pub fn inject(&mut self, from: i32, msg: RaftMessage) {
        let now = self.now_ms;
        for id in self.ids() {
            let Some(core) = self.nodes.get_mut(&id).and_then(|n| n.core.as_mut()) else {
                continue;
            };
            let corr = if msg.is_request() {
                i32::MAX
            } else {
                core.fetch_in_flight().map_or(0, |(_, c)| c)
            };
            let from = if msg.is_request() {
                from
            } else {
                core.fetch_in_flight().map_or(from, |(to, _)| to)
            };
            let _ = core.handle_message(now, from, corr, msg.clone());
            self.drain(id);
        }
    }

    /// Graceful resignation of a leader.
    pub fn resign(&mut self, id: i32) {
        let now = self.now_ms;
        if let Some(core) = self.nodes.get_mut(&id).and_then(|n| n.core.as_mut()) {
            core.resign(now);
            self.drain(id);
            self.check_node(id);
        }
    }

    // ----- running -----

    /// Runs until `until_ms`.
    pub fn run_until(&mut self, until_ms: u64) {
        while self.step(until_ms) {}
        self.now_ms = self.now_ms.max(until_ms);
    }

    pub fn run_for(&mut self, ms: u64) {
        let until = self.now_ms + ms;
        self.run_until(until);
    }

    /// Runs until `pred` holds (checked after every event) or `max_ms` passes.
    pub fn run_until_pred(&mut self, max_ms: u64, mut pred: impl FnMut(&Sim) -> bool) -> bool {
        let until = self.now_ms + max_ms;
        loop {
            if pred(self) {
                return true;
            }
            if !self.step(until) {
                self.now_ms = self.now_ms.max(until);
                return pred(self);
            }
        }
    }

    /// Runs with a client proposing every `interval_ms` at the leader.
    pub fn run_with_load(&mut self, ms: u64, interval_ms: u64) {
        let until = self.now_ms + ms;
        while self.now_ms < until {
            let next = (self.now_ms + interval_ms).min(until);
            self.run_until(next);
            let count = 1 + self.rng.below(3) as usize;
            self.propose(count);
        }
    }

    /// One event at or before `until_ms`; false when there is none.
    pub fn step(&mut self, until_ms: u64) -> bool {
        let next_packet = self.queue.peek().map(|Reverse((t, _))| *t);
        let next_timeout = self.outstanding.iter().map(|o| o.deadline_ms).min();
        let next_node = self
            .nodes
            .iter()
            .filter_map(|(id, n)| n.core.as_ref().map(|c| (c.poll_timeout(), *id)))
            .min();
        let next_flush = self.flushes.iter().map(|f| f.0).min();
        let next_conn = self.conn_lost.iter().map(|c| c.0).min();
        let t = [
            next_packet,
            next_timeout,
            next_node.map(|(t, _)| t),
            next_flush,
            next_conn,
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(t) = t else { return false };
        if t > until_ms {
            return false;
        }
        self.now_ms = self.now_ms.max(t);
        self.events += 1;
        assert!(
            self.events < 50_000_000,
            "seed {}: event budget exhausted (livelock?)",
            self.cfg.seed
        );
        if next_conn == Some(t) {
            let i = self.conn_lost.iter().position(|c| c.0 == t).expect("found");
            let (_, node, incarnation, peer) = self.conn_lost.remove(i);
            self.deliver_connection_lost(node, incarnation, peer);
        } else if next_flush == Some(t) {
            let i = self.flushes.iter().position(|f| f.0 == t).expect("found");
            let (_, id, incarnation) = self.flushes.remove(i);
            let now = self.now_ms;
            let node = self.nodes.get_mut(&id).expect("known node");
            if node.incarnation == incarnation {
                if let Some(core) = node.core.as_mut() {
                    core.flush(now);
                    self.drain(id);
                    self.check_node(id);
                }
            }
        } else if next_packet == Some(t) {
            let Reverse((_, seq)) = self.queue.pop().expect("peeked");
            let packet = self.packets.remove(&seq).expect("queued packet");
            let (to, started) = (packet.to, std::time::Instant::now());
            self.deliver(packet);
            *self.busy.entry(to).or_default() += started.elapsed();
        } else if next_timeout == Some(t) {
            let i = self
                .outstanding
                .iter()
                .position(|o| o.deadline_ms == t)
                .expect("found");
            let o = self.outstanding.remove(i);
            if let Some(core) = self.nodes.get_mut(&o.from).and_then(|n| n.core.as_mut()) {
                core.handle_request_failed(self.now_ms, o.to, o.correlation_id, o.kind);
                self.drain(o.from);
                self.check_node(o.from);
            }
        } else if let Some((_, id)) = next_node {
            let (now, started) = (self.now_ms, std::time::Instant::now());
            let core = self
                .nodes
                .get_mut(&id)
                .and_then(|n| n.core.as_mut())
                .expect("up");
            core.handle_timeout(now);
            assert!(
                core.poll_timeout() > now,
                "seed {}: node {id} deadline {} not after now {now} ({:?})",
                self.cfg.seed,
                core.poll_timeout(),
                core.role()
            );
            self.drain(id);
            self.check_node(id);
            *self.busy.entry(id).or_default() += started.elapsed();
        }
        true
    }

    fn start(&mut self, id: i32) {
        let mut raft = self.cfg.raft.clone();
        if let Some(t) = self.cfg.election_timeout_ms.get(&id) {
            raft.election_timeout_ms = *t;
        }
        let node = self.nodes.get_mut(&id).expect("known node");
        node.incarnation += 1;
        node.listener_next = 0;
        node.last_hw = 0;
        let log = node.disk.take().expect("a down node has its disk");
        let seed = self
            .cfg
            .seed
            .wrapping_mul(31)
            .wrapping_add(node.incarnation);
        let static_voters: Vec<i32> = if self.cfg.dynamic {
            raft.directory_id = node.directory_id;
            // `controller.quorum.bootstrap.servers`: every controller.
            raft.bootstrap_servers = self
                .cfg
                .voters
                .iter()
                .chain(self.cfg.observers.iter())
                .copied()
                .collect();
            raft.local_listeners = dynamic::listeners(id);
            Vec::new()
        } else {
            self.cfg.voters.clone()
        };
        let core = RaftCore::new(
            raft,
            id,
            static_voters,
            node.durable,
            log,
            seed,
            self.now_ms,
        );
        node.core = Some(core);
        self.drain(id);
        self.check_node(id);
    }

    fn deliver(&mut self, p: Packet) {
        if self.blocked.contains(&(p.from, p.to)) {
            return;
        }
        if self.nodes.get(&p.to).is_none_or(|n| n.core.is_none()) {
            return;
        }
        if !p.is_request {
            // Match the request by correlation id; none means it was given up ("no longer
            // needed") or answered already (a duplicate).
            let Some(i) = self.outstanding.iter().position(|o| {
                o.correlation_id == p.correlation_id
                    && o.from == p.to
                    && o.to == p.from
                    && o.kind == p.kind
            }) else {
                self.responses_dropped += 1;
                return;
            };
            self.outstanding.remove(i);
        }
        let msg = match RaftMessage::decode(p.kind, p.is_request, p.kind.version(), p.bytes) {
            Ok(m) => m,
            Err(e) => {
                self.violation(p.to, format!("decode of our own encoding failed: {e}"));
                return;
            }
        };
        if let RaftMessage::FetchResponse(r) = &msg {
            for part in r.responses.iter().flat_map(|t| t.partitions.iter()) {
                if part.error_code != 0 {
                    self.fetch_errors.push(FetchErrorSeen {
                        at_ms: self.now_ms,
                        node: p.to,
                        from: p.from,
                        error_code: part.error_code,
                        leader_id: part.current_leader.leader_id,
                    });
                }
            }
        }
        let now = self.now_ms;
        let core = self
            .nodes
            .get_mut(&p.to)
            .and_then(|n| n.core.as_mut())
            .expect("up");
        if let Err(e) = core.handle_message(now, p.from, p.correlation_id, msg) {
            self.violation(p.to, format!("fatal error: {e}"));
            if self.trace {
                self.dump_logs();
            }
        }
        self.drain(p.to);
        self.check_node(p.to);
    }

    fn drain(&mut self, id: i32) {
        loop {
            let Some(out) = self
                .nodes
                .get_mut(&id)
                .and_then(|n| n.core.as_mut())
                .and_then(|c| c.poll_output())
            else {
                return;
            };
            if let Some(outs) = self.listener_outputs.as_mut() {
                if matches!(
                    out,
                    Output::Committed(_) | Output::LeaderChange { .. } | Output::Snapshot { .. }
                ) {
                    outs.push((id, out.clone()));
                }
            }
            match out {
                Output::PersistQuorumState(d) => self.on_persist(id, d),
                Output::Send {
                    to,
                    correlation_id,
                    msg,
                } => self.send(id, to, correlation_id, msg),
                Output::Flush => {
                    // The fsync takes 0–2 ms while the node goes on (the driver's overlaps
                    // the followers' fetch); a crash before it loses the unflushed tail.
                    let delay = match self.cfg.flush_delay_ms.get(&id) {
                        Some(d) => *d,
                        None => self.rng.below(3),
                    };
                    let due = self.now_ms + delay;
                    let incarnation = self.nodes[&id].incarnation;
                    self.flushes.push((due, id, incarnation));
                }
                Output::Committed(b) => self.on_committed(id, b),
                Output::Snapshot { id: snap, bytes } => self.on_snapshot(id, snap, bytes),
                Output::VoterChangeDone { token, error, .. } => {
                    self.voter_changes_done.push((id, token, error));
                }
                Output::LeaderChange { epoch, leader_id } => {
                    if self.trace {
                        let c = self.nodes[&id].core.as_ref().expect("up");
                        println!(
                            "t={} node {id}: epoch {epoch} leader {leader_id:?} role {:?} leo {} flushed {} hw {}",
                            self.now_ms,
                            c.role(),
                            c.log().end_offset(),
                            c.log().flushed_offset(),
                            c.high_watermark()
                        );
                    }
                }
            }
        }
    }

    fn send(&mut self, from: i32, to: i32, correlation_id: i32, msg: RaftMessage) {
        let kind = msg.kind();
        let is_request = msg.is_request();
        let bytes = match msg.encode() {
            Ok(b) => b,
            Err(e) => {
                self.violation(from, format!("encode of {kind:?} failed: {e}"));
                return;
            }
        };
        if self.capture {
            self.captured.push((kind, is_request, bytes.clone()));
        }
        if is_request {
            if kind == ApiKind::Fetch {
                self.fetches.push(FetchSent {
                    at_ms: self.now_ms,
                    from,
                    to,
                });
            }
            self.outstanding.push(Outstanding {
                correlation_id,
                from,
                to,
                kind,
                deadline_ms: self.now_ms + self.cfg.raft.request_timeout_ms,
            });
        }
        if self.blocked.contains(&(from, to)) {
            return;
        }
        let refused = self
            .nodes
            .get(&to)
            .is_some_and(|n| n.core.is_none() && n.refuses);
        if is_request && refused && !self.blocked.contains(&(to, from)) {
            // A crashed process's port refuses the connect: the request fails at once and
            // the driver reports the peer gone.
            let due = self.now_ms + self.network_delay(from, to) + self.network_delay(to, from);
            self.schedule_connection_lost(from, to, due);
            return;
        }
        let net = self.cfg.network.clone();
        if self.rng.below(1000) < net.drop_per_mille {
            return;
        }
        let copies = if self.rng.below(1000) < net.duplicate_per_mille {
            2
        } else {
            1
        };
        for _ in 0..copies {
            let delay = net.delay_min_ms
                + self
                    .rng
                    .below(net.delay_max_ms.saturating_sub(net.delay_min_ms) + 1)
                + self.slow.get(&(from, to)).copied().unwrap_or(0);
            self.next_seq += 1;
            let seq = self.next_seq;
            self.packets.insert(
                seq,
                Packet {
                    correlation_id,
                    from,
                    to,
                    kind,
                    is_request,
                    bytes: bytes.clone(),
                },
            );
            self.queue.push(Reverse((self.now_ms + delay, seq)));
        }
    }

    /// Prints each node's log as epoch ranges.
    pub fn dump_logs(&self) {
        for (id, n) in &self.nodes {
            let log = n.core.as_ref().map(|c| c.log()).or(n.disk.as_ref());
            let Some(log) = log else { continue };
            let mut ranges: Vec<(i32, i64, i64)> = Vec::new();
            for (base, epoch, _) in log.batches() {
                match ranges.last_mut() {
                    Some(r) if r.0 == epoch => r.2 = base,
                    _ => ranges.push((epoch, base, base)),
                }
            }
            println!(
                "node {id} log (epoch, first base, last base): {ranges:?} leo {}",
                log.end_offset()
            );
        }
    }

    // ----- invariants -----

    fn violation(&mut self, node: i32, what: String) {
        let line = format!(
            "seed {} t={}ms node {node}: {what}",
            self.cfg.seed, self.now_ms
        );
        if self.violations.len() < 50 {
            self.violations.push(line);
        }
    }

    fn on_persist(&mut self, id: i32, d: QuorumStateData) {
        let prev = self.nodes[&id].durable;
        if let Some(p) = prev {
            if d.leader_epoch < p.leader_epoch {
                self.violation(id, format!("durable epoch went back: {p:?} -> {d:?}"));
            }
            if d.leader_epoch == p.leader_epoch && p.voted_id >= 0 && d.voted_id != p.voted_id {
                self.violation(id, format!("second vote in one epoch: {p:?} -> {d:?}"));
            }
        }
        if d.voted_id >= 0 {
            // One vote per voter key and epoch: a node with a new disk is another key.
            let key = (id, self.nodes[&id].directory_id, d.leader_epoch);
            match self.votes_cast.get(&key) {
                Some(v) if *v != d.voted_id => {
                    let v = *v;
                    self.violation(
                        id,
                        format!(
                            "voted for {} in epoch {} after voting for {v} (a lost quorum-state)",
                            d.voted_id, d.leader_epoch
                        ),
                    );
                }
                Some(_) => {}
                None => {
                    self.votes_cast.insert(key, d.voted_id);
                }
            }
        }
        self.nodes.get_mut(&id).expect("known").durable = Some(d);
    }

    /// A listener loads a snapshot: it must be ahead of what the listener has, and identical
    /// on every node.
    fn on_snapshot(&mut self, id: i32, snap: SnapshotId, bytes: Bytes) {
        let expected = self.nodes[&id].listener_next;
        if snap.end_offset < expected {
            self.violation(
                id,
                format!(
                    "listener got snapshot ending at {} but already has {expected}",
                    snap.end_offset
                ),
            );
        }
        self.nodes.get_mut(&id).expect("known").listener_next = snap.end_offset;
        self.snapshots_delivered += 1;
        // The simulator's snapshots hold the committed batches below their end offset.
        let expected: Vec<u8> = self
            .committed
            .range(..snap.end_offset)
            .flat_map(|(_, (_, b))| b.iter().copied())
            .collect();
        if expected != bytes {
            self.violation(
                id,
                format!("snapshot {snap:?} is not the committed data below its end offset"),
            );
        }
        match self.snapshots.get(&snap) {
            Some(first) if *first != bytes => {
                self.violation(id, format!("snapshot {snap:?} differs between nodes"));
            }
            Some(_) => {}
            None => {
                self.snapshots.insert(snap, bytes);
            }
        }
    }

    /// How many snapshots listeners loaded.
    pub fn snapshots_delivered(&self) -> u64 {
        self.snapshots_delivered
    }

    /// Node `id` snapshots its committed state at its HW (the snapshot holds the committed
    /// batches below it, as a state machine's state would) and deletes its log before it.
    pub fn snapshot_and_trim(&mut self, id: i32) -> Option<SnapshotId> {
        let core = self.nodes.get_mut(&id)?.core.as_mut()?;
        let hw = core.high_watermark();
        // The state below the log start is the latest snapshot's.
        let (mut data, mut epoch, from) = match core.log().latest_snapshot() {
            Some(s) => (
                core.log()
                    .snapshot(s)
                    .map(|b| b.to_vec())
                    .unwrap_or_default(),
                Some(s.epoch),
                s.end_offset,
            ),
            None => (Vec::new(), None, 0),
        };
        for (base, e, bytes) in core.log().batches() {
            if base < from {
                continue;
            }
            if base >= hw {
                break;
            }
            data.extend_from_slice(bytes);
            epoch = Some(e);
        }
        let snap = SnapshotId {
            end_offset: hw,
            epoch: epoch?,
        };
        core.create_snapshot(snap, &data).ok()?;
        core.delete_log_before_latest_snapshot();
        Some(snap)
    }

    fn on_committed(&mut self, id: i32, b: kraftd_raft::CommittedBatch) {
        let expected = self.nodes[&id].listener_next;
        if b.base_offset != expected {
            self.violation(
                id,
                format!(
                    "listener got batch at {} but expected {expected} (twice or out of order)",
                    b.base_offset
                ),
            );
        }
        self.nodes.get_mut(&id).expect("known").listener_next = b.last_offset + 1;
        match self.committed.get(&b.base_offset) {
            Some((last, bytes)) => {
                if *last != b.last_offset || *bytes != b.bytes {
                    self.violation(
                        id,
                        format!(
                            "committed batch at {} differs between nodes (epoch {})",
                            b.base_offset, b.epoch
                        ),
                    );
                }
            }
            None => {
                self.committed
                    .insert(b.base_offset, (b.last_offset, b.bytes.clone()));
            }
        }
    }

    fn check_node(&mut self, id: i32) {
        let Some(core) = self.nodes[&id].core.as_ref() else {
            return;
        };
        let (role, epoch, hw) = (core.role(), core.epoch(), core.high_watermark());
        let node = &self.nodes[&id];
        let (last_hw, last_epoch) = (node.last_hw, node.last_epoch);
        if hw < last_hw {
            self.violation(id, format!("HW went back from {last_hw} to {hw}"));
        }
        if epoch < last_epoch {
            self.violation(id, format!("epoch went back from {last_epoch} to {epoch}"));
        }
        if role == RoleName::Leader {
            match self.leaders.get(&epoch) {
                Some(l) if *l != id => {
                    let l = *l;
                    self.violation(id, format!("second leader in epoch {epoch} (first {l})"));
                }
                _ => {
                    self.leaders.insert(epoch, id);
                }
            }
        }
        let node = self.nodes.get_mut(&id).expect("known");
        node.last_hw = hw;
        node.last_epoch = epoch;
        self.max_hw = self.max_hw.max(hw);
        if hw > 0 {
            self.check_majority_holds(id, hw);
        }
        if self.cfg.dynamic {
            self.check_membership(id);
        }
    }

    /// A majority of voters hold, durably, the last batch below `hw` as it was committed.
    fn check_majority_holds(&mut self, id: i32, hw: i64) {
        let Some((&base, (_, bytes))) = self.committed.range(..hw).next_back() else {
            return;
        };
        if self.cfg.dynamic {
            let bytes = bytes.clone();
            self.check_no_majority_lacks(id, base, &bytes);
            return;
        }
        let bytes = bytes.clone();
        let holders = self
            .cfg
            .voters
            .iter()
            .filter(|v| {
                let n = &self.nodes[v];
                let log = n.core.as_ref().map(|c| c.log()).or(n.disk.as_ref());
                log.is_some_and(|l| {
                    l.flushed_offset() > base
                        && (l.batch_at(base).is_some_and(|b| *b == bytes)
                            || l.latest_snapshot().is_some_and(|s| s.end_offset > base))
                })
            })
            .count();
        if holders < self.cfg.voters.len() / 2 + 1 {
            if self.trace && self.violations.is_empty() {
                self.dump_logs();
            }
            self.violation(
                id,
                format!("committed batch at {base} held by only {holders} voters"),
            );
        }
    }

    /// After faults heal: one leader that every up node follows, everything committed on
    /// every up node (observers included).
    pub fn check_converged(&self) -> Result<(), String> {
        let leader = self.leader().ok_or("no leader")?;
        let l = self.core(leader);
        let (epoch, hw, leo) = (l.epoch(), l.high_watermark(), l.log().end_offset());
        if hw != leo {
            return Err(format!(
                "leader {leader} HW {hw} below its end offset {leo}"
            ));
        }
        for (id, n) in &self.nodes {
            let Some(c) = n.core.as_ref() else { continue };
            if c.epoch() != epoch || c.leader_id() != Some(leader) {
                return Err(format!(
                    "node {id} at epoch {} leader {:?}, not {leader} at {epoch}",
                    c.epoch(),
                    c.leader_id()
                ));
            }
            if c.high_watermark() != hw {
                return Err(format!(
                    "node {id} HW {} but leader HW {hw}",
                    c.high_watermark()
                ));
            }
        }
        Ok(())
    }
}
