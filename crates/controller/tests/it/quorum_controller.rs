//! The QuorumController driven by a fake Raft: replies wait for commit, leadership loss
//! reverts uncommitted state and fails pending operations with NOT_CONTROLLER, standbys
//! replaying the committed log reach the same image, broker epochs are record offsets, and
//! an idle leader writes no-op records.
#![allow(dead_code)]

use kraftd_controller::control::replication::MAX_ELECTIONS_PER_IMBALANCE;
use kraftd_controller::control::{ControllerResult, MAX_RECORDS_PER_BATCH};
use kraftd_controller::quorum_controller::{
    ops, CommittedBatch, ControllerError, ManagersConfig, ProposeError, QuorumController,
    QuorumControllerConfig, RaftClient, WriteOp,
};
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::broker_registration_request::Feature;
use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::{
    AllocateProducerIdsRequest, AllocateProducerIdsResponse, BrokerHeartbeatRequest,
    BrokerHeartbeatResponse, BrokerRegistrationRequest, BrokerRegistrationResponse,
    CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
};
use kraftd_protocol::{ErrorCode, MetadataRecord, Uuid};

use kraftd_controller::testing::records::{feature, partition, register_broker, topic, uuid};
use kraftd_controller::testing::{broker_registration, CLUSTER_ID, METADATA_VERSION};

/// The test's response type: one variant per operation used.
#[derive(Debug, Clone, PartialEq)]
pub enum Resp {
    Done,
    Registration(BrokerRegistrationResponse),
    Heartbeat(BrokerHeartbeatResponse),
    CreateTopics(CreateTopicsResponse),
    TopicCount(usize),
    ProducerIds(AllocateProducerIdsResponse),
    DeleteTopics(DeleteTopicsResponse),
    Unregistered(ErrorCode),
}

/// One shared metadata log: batches are appended by the leader and committed on request.
#[derive(Debug, Default)]
pub struct FakeRaft {
    pub leader: Option<i32>,
    pub epoch: i32,
    /// The offset the next record gets.
    pub end_offset: i64,
    /// Every committed batch, in order.
    pub committed: Vec<CommittedBatch>,
    /// Appended but not committed.
    pub uncommitted: Vec<CommittedBatch>,
    pub resigned: Vec<i32>,
    /// When set, proposals are refused.
    pub refuse: bool,
}

/// What a node's controller sees of the fake Raft: proposals go to the shared log only if
/// this node leads.
pub struct NodeRaft<'a> {
    pub node_id: i32,
    pub raft: &'a mut FakeRaft,
}

impl RaftClient for NodeRaft<'_> {
    fn propose(
        &mut self,
        epoch: i32,
        base_offset: i64,
        _metadata_version: kraftd_protocol::metadata_version::MetadataVersion,
        records: &[MetadataRecord],
    ) -> Result<(i64, i64), ProposeError> {
        let raft = &mut *self.raft;
        if raft.refuse {
            return Err(ProposeError::Refused("test".into()));
        }
        if raft.leader != Some(self.node_id) || raft.epoch != epoch {
            return Err(ProposeError::NotLeader { epoch });
        }
        if base_offset != raft.end_offset {
            return Err(ProposeError::UnexpectedBaseOffset {
                expected: base_offset,
                actual: raft.end_offset,
            });
        }
        let mut batch = CommittedBatch {
            epoch,
            last_offset: base_offset,
            records: Vec::new(),
        };
        for record in records {
            batch.records.push((raft.end_offset, record.clone()));
            batch.last_offset = raft.end_offset;
            raft.end_offset += 1;
        }
        raft.uncommitted.push(batch.clone());
        Ok((base_offset, batch.last_offset))
    }

    fn resign(&mut self, epoch: i32) {
        self.raft.resigned.push(epoch);
    }
}

impl FakeRaft {
    pub fn node(&mut self, node_id: i32) -> NodeRaft<'_> {
        NodeRaft {
            node_id,
            raft: self,
        }
    }

    /// Commits the first `n` uncommitted batches and returns them.
    pub fn commit(&mut self, n: usize) -> Vec<CommittedBatch> {
        let n = n.min(self.uncommitted.len());
        let batches: Vec<_> = self.uncommitted.drain(..n).collect();
        self.committed.extend(batches.iter().cloned());
        batches
    }

    /// A new epoch led by `leader`: uncommitted batches are dropped (the new leader never
    /// had them), and the epoch starts with a committed control batch (LeaderChange).
    pub fn elect(&mut self, leader: i32) -> CommittedBatch {
        if let Some(first) = self.uncommitted.first() {
            self.end_offset = first.records.first().map_or(first.last_offset, |r| r.0);
        }
        self.uncommitted.clear();
        self.epoch += 1;
        self.leader = Some(leader);
        let batch = CommittedBatch {
            epoch: self.epoch,
            last_offset: self.end_offset,
            records: Vec::new(),
        };
        self.end_offset += 1;
        self.committed.push(batch.clone());
        batch
    }

    /// The image every committed record makes.
    pub fn committed_image(&self) -> MetadataImage {
        let records: Vec<MetadataRecord> = self
            .committed
            .iter()
            .flat_map(|b| b.records.iter().map(|r| r.1.clone()))
            .collect();
        MetadataImage::empty().replay_all(&records).unwrap()
    }

    /// The offset of the only record of `kind` in the whole log.
    pub fn offsets_of(&self, pred: impl Fn(&MetadataRecord) -> bool) -> Vec<i64> {
        self.committed
            .iter()
            .chain(self.uncommitted.iter())
            .flat_map(|b| b.records.iter())
            .filter(|r| pred(&r.1))
            .map(|r| r.0)
            .collect()
    }
}

pub fn controller(node_id: i32) -> QuorumController<Resp> {
    let mut managers = ManagersConfig::default();
    managers.cluster.cluster_id = CLUSTER_ID.into();
    managers.seed = 7;
    QuorumController::new(QuorumControllerConfig {
        node_id,
        managers,
        ..Default::default()
    })
}

/// Makes `leader` leader of a new epoch on every node: the others hear first, then the
/// epoch-start batch commits everywhere, then the new leader claims.
pub fn elect(raft: &mut FakeRaft, nodes: &mut [QuorumController<Resp>], leader: i32) {
    let start = raft.elect(leader);
    for node in nodes.iter_mut() {
        if node.node_id() != leader {
            node.handle_leader_change(Some(leader), raft.epoch);
        }
    }
    for node in nodes.iter_mut() {
        catch_up(raft, node);
    }
    let _ = start;
    for node in nodes.iter_mut() {
        if node.node_id() == leader {
            node.handle_leader_change(Some(leader), raft.epoch);
        }
    }
}

/// Delivers every committed batch the node has not seen.
pub fn catch_up(raft: &FakeRaft, node: &mut QuorumController<Resp>) {
    for batch in &raft.committed {
        if batch.last_offset > node.committed_offset() {
            node.handle_commit(batch).unwrap();
        }
    }
}

pub fn bootstrap_op() -> WriteOp<Resp> {
    WriteOp::new(|_ctx| {
        ControllerResult::atomic_of(
            vec![feature("metadata.version", METADATA_VERSION)],
            Resp::Done,
        )
    })
}

pub fn registration(id: i32) -> BrokerRegistrationRequest {
    let mut incarnation_id = uuid(0);
    incarnation_id.0[1] = id as u8;
    let features = vec![Feature {
        name: "metadata.version".into(),
        min_supported_version: 1,
        max_supported_version: METADATA_VERSION,
        ..Default::default()
    }];
    broker_registration(id, incarnation_id, features, -1)
}

pub fn register_op(id: i32) -> WriteOp<Resp> {
    ops::register_broker(3, registration(id), 0).map(Resp::Registration)
}

pub fn heartbeat_op(id: i32, epoch: i64, metadata_offset: i64) -> WriteOp<Resp> {
    ops::broker_heartbeat(BrokerHeartbeatRequest {
        broker_id: id,
        broker_epoch: epoch,
        current_metadata_offset: metadata_offset,
        want_fence: false,
        ..Default::default()
    })
    .map(Resp::Heartbeat)
}

pub fn create_topic_op(name: &str, partitions: i32, replication_factor: i16) -> WriteOp<Resp> {
    ops::create_topics(CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor,
            ..Default::default()
        }],
        ..Default::default()
    })
    .map(Resp::CreateTopics)
}

/// A leader (node 0) with the bootstrap record committed.
fn bootstrapped() -> (FakeRaft, QuorumController<Resp>) {
    let mut raft = FakeRaft::default();
    let mut nodes = vec![controller(0)];
    elect(&mut raft, &mut nodes, 0);
    let mut node = nodes.pop().unwrap();
    assert!(node.is_active());
    node.submit_write(bootstrap_op()).unwrap();
    node.process(&mut raft.node(0));
    for batch in raft.commit(usize::MAX) {
        node.handle_commit(&batch).unwrap();
    }
    assert_eq!(node.drain_completions().len(), 1);
    (raft, node)
}

#[test]
fn replies_only_after_commit() {
    let mut raft = FakeRaft::default();
    let mut nodes = vec![controller(0)];
    elect(&mut raft, &mut nodes, 0);
    let node = &mut nodes[0];
    let id = node.submit_write(bootstrap_op()).unwrap();
    assert!(node.drain_completions().is_empty());
    node.process(&mut raft.node(0));
    assert!(
        node.drain_completions().is_empty(),
        "no reply before commit"
    );
    assert_eq!(node.pending_writes(), 1);
    assert!(!node.latest_image().is_empty());
    assert!(node.committed_image().is_empty());

    // A read answers from the committed image, so it does not see the pending write.
    node.submit_read(kraftd_controller::quorum_controller::ReadOp::new(|image| {
        Resp::TopicCount(usize::from(!image.is_empty()))
    }))
    .unwrap();
    node.process(&mut raft.node(0));
    let reads = node.drain_completions();
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].result, Ok(Resp::TopicCount(0)));

    let batches = raft.commit(usize::MAX);
    assert_eq!(batches.len(), 1);
    node.handle_commit(&batches[0]).unwrap();
    let done = node.drain_completions();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].id, id);
    assert_eq!(done[0].result, Ok(Resp::Done));
    assert_eq!(node.pending_writes(), 0);
    assert_eq!(node.committed_image(), node.latest_image());
}

/// A control batch the Raft layer writes in the leader's own epoch (the VotersRecord of an
/// AddRaftVoter, KIP-853) moves the log past what the controller wrote: it stays active and
/// writes after it, instead of renouncing while Raft still names it leader.
#[test]
fn raft_control_batch_in_own_epoch_keeps_the_controller_active() {
    let (mut raft, mut node) = bootstrapped();
    let voters = CommittedBatch {
        epoch: raft.epoch,
        last_offset: raft.end_offset,
        records: Vec::new(),
    };
    raft.end_offset += 1;
    raft.committed.push(voters.clone());
    node.handle_commit(&voters).unwrap();
    assert!(node.is_active());
    assert_eq!(node.last_written_offset(), voters.last_offset);

    node.submit_write(register_op(1)).unwrap();
    node.process(&mut raft.node(0));
    assert!(
        raft.resigned.is_empty(),
        "the write lands after the control batch"
    );
    for batch in raft.commit(usize::MAX) {
        node.handle_commit(&batch).unwrap();
    }
    let done = node.drain_completions();
    assert_eq!(done.len(), 1);
    assert!(
        matches!(done[0].result, Ok(Resp::Registration(_))),
        "{done:?}"
    );
}

#[test]
fn leader_change_fails_pending_with_not_controller_and_reverts() {
    let (mut raft, mut node) = bootstrapped();
    let committed = node.committed_image().clone();
    let committed_offset = node.committed_offset();
    let id = node.submit_write(register_op(1)).unwrap();
    node.process(&mut raft.node(0));
    assert!(node.drain_completions().is_empty());
    assert!(node.latest_image().cluster.broker(1).is_some());
    assert!(node.last_written_offset() > committed_offset);

    node.handle_leader_change(Some(1), raft.epoch + 1);
    assert!(!node.is_active());
    let done = node.drain_completions();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].id, id);
    let error = done[0].result.clone().unwrap_err();
    assert_eq!(error, ControllerError::NotController { leader_id: Some(1) });
    assert_eq!(error.error_code(), ErrorCode::NotController);
    assert_eq!(node.latest_image(), &committed);
    assert_eq!(node.last_written_offset(), committed_offset);

    // Writes on a standby fail at once.
    node.submit_write(register_op(2)).unwrap();
    node.process(&mut raft.node(0));
    let done = node.drain_completions();
    assert!(matches!(
        done[0].result,
        Err(ControllerError::NotController { .. })
    ));
}

#[test]
fn refused_proposal_renounces_and_resigns() {
    let (mut raft, mut node) = bootstrapped();
    node.submit_write(register_op(1)).unwrap();
    node.process(&mut raft.node(0));
    raft.refuse = true;
    node.submit_write(register_op(2)).unwrap();
    node.process(&mut raft.node(0));
    let done = node.drain_completions();
    assert_eq!(done.len(), 2, "both the pending and the refused write fail");
    for completion in &done {
        assert!(matches!(
            completion.result,
            Err(ControllerError::NotController { .. })
        ));
    }
    assert!(!node.is_active());
    assert_eq!(raft.resigned, vec![raft.epoch]);
    assert_eq!(node.latest_image(), node.committed_image());
}

/// The Raft leader's own control batch (a voter change's VotersRecord) right after the
/// controller's writes: announced, the controller writes after it and stays active when it
/// commits; nothing is refused, no one resigns.
#[test]
fn a_leader_control_batch_moves_the_next_write_past_it() {
    let (mut raft, mut node) = bootstrapped();
    node.submit_write(register_op(1)).unwrap();
    node.process(&mut raft.node(0));
    let base = raft.end_offset;
    let control = CommittedBatch {
        epoch: raft.epoch,
        last_offset: base,
        records: Vec::new(),
    };
    raft.uncommitted.push(control);
    raft.end_offset += 1;
    node.handle_leader_append(raft.epoch, base, base + 1);
    assert_eq!(node.last_written_offset(), base);
    node.submit_write(register_op(2)).unwrap();
    node.process(&mut raft.node(0));
    for batch in raft.commit(usize::MAX) {
        node.handle_commit(&batch).unwrap();
    }
    let done = node.drain_completions();
    assert_eq!(done.len(), 2);
    assert!(done
        .iter()
        .all(|c| matches!(c.result, Ok(Resp::Registration(_)))));
    assert!(node.is_active());
    assert!(raft.resigned.is_empty());

    // Announced where a write of the controller's own is in flight: ignored (the refusal of
    // that write renounces).
    node.submit_write(register_op(3)).unwrap();
    node.process(&mut raft.node(0));
    let written = node.last_written_offset();
    node.handle_leader_append(raft.epoch, written, written + 1);
    assert_eq!(node.last_written_offset(), written);
}

#[test]
fn standby_replaying_committed_records_has_identical_image() {
    let mut raft = FakeRaft::default();
    let mut nodes = vec![controller(0), controller(1), controller(2)];
    elect(&mut raft, &mut nodes, 0);
    nodes[0].submit_write(bootstrap_op()).unwrap();
    for id in 1..=3 {
        nodes[0].submit_write(register_op(id)).unwrap();
    }
    nodes[0].process(&mut raft.node(0));
    for batch in raft.commit(usize::MAX) {
        for node in nodes.iter_mut() {
            node.handle_commit(&batch).unwrap();
        }
    }
    let epochs: Vec<i64> = (1..=3)
        .map(|id| nodes[0].committed_image().cluster.broker(id).unwrap().epoch)
        .collect();
    for (id, epoch) in (1..=3).zip(epochs) {
        nodes[0]
            .submit_write(heartbeat_op(id, epoch, raft.end_offset - 1))
            .unwrap();
    }
    nodes[0]
        .submit_write(create_topic_op("events", 3, 3))
        .unwrap();
    nodes[0].process(&mut raft.node(0));
    for batch in raft.commit(usize::MAX) {
        for node in nodes.iter_mut() {
            node.handle_commit(&batch).unwrap();
        }
    }
    let done = nodes[0].drain_completions();
    assert_eq!(done.len(), 8);
    let Some(Ok(Resp::CreateTopics(created))) = done.last().map(|c| c.result.clone()) else {
        panic!("no CreateTopics reply: {done:?}");
    };
    assert_eq!(created.topics[0].error_code, 0, "{created:?}");
    let expected = raft.committed_image();
    assert!(expected.topics.get_by_name("events").is_some());
    for node in &nodes {
        assert_eq!(node.committed_image(), &expected, "node {}", node.node_id());
        assert_eq!(node.latest_image(), &expected, "node {}", node.node_id());
    }
}

#[test]
fn broker_epoch_is_the_registration_record_offset() {
    let (mut raft, mut node) = bootstrapped();
    // Two registrations in flight at once: the second's epoch is predicted from the
    // uncommitted last written offset.
    let first = node.submit_write(register_op(1)).unwrap();
    let second = node.submit_write(register_op(2)).unwrap();
    node.process(&mut raft.node(0));
    for batch in raft.commit(usize::MAX) {
        node.handle_commit(&batch).unwrap();
    }
    let done = node.drain_completions();
    assert_eq!(done.len(), 2);
    let offsets = raft.offsets_of(|r| matches!(r, MetadataRecord::RegisterBroker(_)));
    assert_eq!(offsets.len(), 2);
    for (completion, (id, offset)) in done.iter().zip([(first, offsets[0]), (second, offsets[1])]) {
        assert_eq!(completion.id, id);
        let Ok(Resp::Registration(response)) = &completion.result else {
            panic!("{completion:?}");
        };
        assert_eq!(response.error_code, 0);
        assert_eq!(response.broker_epoch, offset);
    }
    assert_eq!(
        node.committed_image().cluster.broker(2).unwrap().epoch,
        offsets[1]
    );
}

#[test]
fn idle_leader_writes_no_op_records() {
    let (mut raft, mut node) = bootstrapped();
    let start = 10_000;
    node.tick(start, &mut raft.node(0));
    let noops = |raft: &FakeRaft| {
        raft.offsets_of(|r| matches!(r, MetadataRecord::NoOp(_)))
            .len()
    };
    let before = noops(&raft);
    assert_eq!(before, 1, "idle since activation at 0");
    node.tick(start + 499, &mut raft.node(0));
    assert_eq!(noops(&raft), 1);
    node.tick(start + 500, &mut raft.node(0));
    assert_eq!(noops(&raft), 2);
    // A write resets the idle timer.
    node.submit_write(register_op(1)).unwrap();
    node.process(&mut raft.node(0));
    node.tick(start + 999, &mut raft.node(0));
    assert_eq!(noops(&raft), 2);
    for batch in raft.commit(usize::MAX) {
        node.handle_commit(&batch).unwrap();
    }
    assert_eq!(node.pending_writes(), 0);
    assert!(node.drain_completions().len() == 1);

    // A standby writes nothing.
    let mut standby = controller(1);
    catch_up(&raft, &mut standby);
    let end = raft.end_offset;
    standby.tick(start + 100_000, &mut raft.node(1));
    assert_eq!(raft.end_offset, end);
}

/// [`bootstrapped`] with broker 1 registered and unfenced at 1,000 ms.
fn broker_one_unfenced() -> (FakeRaft, QuorumController<Resp>) {
    let (mut raft, mut node) = bootstrapped();
    node.tick(1_000, &mut raft.node(0));
    node.submit_write(register_op(1)).unwrap();
    node.process(&mut raft.node(0));
    for batch in raft.commit(usize::MAX) {
        node.handle_commit(&batch).unwrap();
    }
    let epoch = node.committed_image().cluster.broker(1).unwrap().epoch;
    node.submit_write(heartbeat_op(1, epoch, raft.end_offset - 1))
        .unwrap();
    node.process(&mut raft.node(0));
    for batch in raft.commit(usize::MAX) {
        node.handle_commit(&batch).unwrap();
    }
    (raft, node)
}

#[test]
fn expired_session_fences_the_broker_on_tick() {
    let (mut raft, mut node) = broker_one_unfenced();
    node.drain_completions();
    assert!(!node.committed_image().cluster.broker(1).unwrap().fenced);
    node.tick(1_000 + 9_001, &mut raft.node(0));
    for batch in raft.commit(usize::MAX) {
        node.handle_commit(&batch).unwrap();
    }
    assert!(node.committed_image().cluster.broker(1).unwrap().fenced);
}

/// Two topics of RF 1 on broker 1 that together hold more partitions than one Raft batch.
fn create_more_partitions_than_one_batch_holds(
    raft: &mut FakeRaft,
    node: &mut QuorumController<Resp>,
) {
    let per_topic = (MAX_RECORDS_PER_BATCH / 2 + 100) as i32;
    for name in ["a", "b"] {
        node.submit_write(create_topic_op(name, per_topic, 1))
            .unwrap();
        node.process(&mut raft.node(0));
        for batch in raft.commit(usize::MAX) {
            node.handle_commit(&batch).unwrap();
        }
    }
}

/// Commits a write that was too large for one batch: the controller stayed active, the
/// write went in two or more batches of at most `MAX_RECORDS_PER_BATCH`; returns them.
fn commit_split_write(
    raft: &mut FakeRaft,
    node: &mut QuorumController<Resp>,
) -> Vec<CommittedBatch> {
    assert!(node.is_active(), "the controller renounced");
    assert!(raft.resigned.is_empty());
    let batches = raft.commit(usize::MAX);
    let sizes: Vec<usize> = batches.iter().map(|b| b.records.len()).collect();
    assert!(sizes.len() >= 2, "one batch of {sizes:?}");
    assert!(
        sizes.iter().all(|&n| n <= MAX_RECORDS_PER_BATCH),
        "{sizes:?}"
    );
    for batch in &batches {
        node.handle_commit(batch).unwrap();
    }
    batches
}

/// Fencing a broker that leads more partitions than one Raft proposal holds (issue 19: a
/// broker of 20,000 partitions killed) is written in several batches of at most
/// `MAX_RECORDS_PER_BATCH` records, as Kafka splits a non-atomic result; the controller
/// stays active and every partition loses its leader.
#[test]
fn fencing_a_broker_of_many_partitions_splits_the_write() {
    let (mut raft, mut node) = broker_one_unfenced();
    create_more_partitions_than_one_batch_holds(&mut raft, &mut node);
    node.drain_completions();
    let before = raft.committed.len();
    node.tick(1_000 + 9_001, &mut raft.node(0));
    let batches = commit_split_write(&mut raft, &mut node);
    assert_eq!(raft.committed.len(), before + batches.len());
    let image = node.committed_image();
    assert!(image.cluster.broker(1).unwrap().fenced);
    let led = image
        .topics
        .iter()
        .flat_map(|t| t.partitions.values())
        .filter(|p| p.leader >= 0)
        .count();
    assert_eq!(led, 0);
    assert_eq!(*image, raft.committed_image());
}

/// A broker that comes back without a clean shutdown while in more ISRs than one Raft batch
/// holds (issue 19: a 10,000-partition node killed with -9 never came back, its registration
/// refused by Raft and the controller renouncing at every retry): the ISR changes go in
/// batches, the registration last with its own offset as the broker epoch.
#[test]
fn an_unclean_restart_of_a_broker_in_many_isrs_registers_in_batches() {
    let (mut raft, mut node) = broker_one_unfenced();
    // ELR on (kraftd's default for a new cluster): an unclean restart leaves the ISRs.
    node.submit_write(WriteOp::new(|_ctx| {
        ControllerResult::atomic_of(
            vec![feature("eligible.leader.replicas.version", 1)],
            Resp::Done,
        )
    }))
    .unwrap();
    node.process(&mut raft.node(0));
    for batch in raft.commit(usize::MAX) {
        node.handle_commit(&batch).unwrap();
    }
    create_more_partitions_than_one_batch_holds(&mut raft, &mut node);
    // Its session expires (a kill -9): fenced, still the last member of every ISR.
    node.tick(1_000 + 9_001, &mut raft.node(0));
    for batch in raft.commit(usize::MAX) {
        node.handle_commit(&batch).unwrap();
    }
    assert!(node.committed_image().cluster.broker(1).unwrap().fenced);
    node.drain_completions();
    let mut again = registration(1);
    again.incarnation_id = uuid(0xfe);
    again.previous_broker_epoch = -1;
    again.features.push(Feature {
        name: "eligible.leader.replicas.version".into(),
        min_supported_version: 0,
        max_supported_version: 1,
        ..Default::default()
    });
    node.submit_write(ops::register_broker(3, again, 0).map(Resp::Registration))
        .unwrap();
    node.process(&mut raft.node(0));
    let batches = commit_split_write(&mut raft, &mut node);
    let image = node.committed_image();
    let broker = image.cluster.broker(1).unwrap();
    assert_eq!(broker.incarnation_id, uuid(0xfe));
    // The epoch is the registration record's own offset: the last record written.
    assert_eq!(broker.epoch, batches.last().unwrap().last_offset);
    assert_eq!(*image, raft.committed_image());
}

/// Unregistering a broker that is in more ISRs than one Raft batch holds (issue 19): the
/// partition changes go in batches and the UnregisterBrokerRecord last, where an atomic write
/// was refused by Raft and the controller renounced. A write stopped midway (a failover after
/// the first batch) leaves the broker registered and the image consistent; the retry changes
/// only the partitions left and unregisters it.
#[test]
fn unregistering_a_broker_in_many_isrs_writes_in_batches_and_survives_a_stop_midway() {
    let (mut raft, mut node) = broker_one_unfenced();
    create_more_partitions_than_one_batch_holds(&mut raft, &mut node);
    let partitions = 2 * (MAX_RECORDS_PER_BATCH / 2 + 100);
    node.drain_completions();
    let unregister = || ops::unregister_broker(1).map(Resp::Unregistered);

    // First try: only the first batch commits, then a new epoch drops the rest.
    node.submit_write(unregister()).unwrap();
    node.process(&mut raft.node(0));
    assert!(node.is_active(), "the controller renounced");
    assert!(raft.resigned.is_empty());
    assert!(raft.uncommitted.len() >= 2, "one batch");
    assert!(raft
        .uncommitted
        .iter()
        .all(|b| b.records.len() <= MAX_RECORDS_PER_BATCH));
    let last = raft.uncommitted.last().unwrap().records.last().unwrap();
    assert!(matches!(last.1, MetadataRecord::UnregisterBroker(_)));
    for batch in raft.commit(1) {
        node.handle_commit(&batch).unwrap();
    }
    elect(&mut raft, std::slice::from_mut(&mut node), 0);
    let failed = node.drain_completions();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].result.is_err(), "{failed:?}");
    let image = raft.committed_image();
    image.check_invariants().unwrap();
    assert!(image.cluster.broker(1).is_some(), "still registered");
    let leaderless = image.topics.leaderless().len();
    assert_eq!(leaderless, MAX_RECORDS_PER_BATCH);

    // The retry changes the partitions left, then unregisters.
    let before = raft.end_offset;
    node.submit_write(unregister()).unwrap();
    node.process(&mut raft.node(0));
    for batch in raft.commit(usize::MAX) {
        node.handle_commit(&batch).unwrap();
    }
    assert_eq!(
        raft.end_offset - before,
        (partitions - MAX_RECORDS_PER_BATCH + 1) as i64
    );
    let done = node.drain_completions();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].result, Ok(Resp::Unregistered(ErrorCode::None)));
    let image = node.committed_image();
    assert!(image.cluster.broker(1).is_none());
    assert_eq!(image.topics.leaderless().len(), partitions);
    assert_eq!(*image, raft.committed_image());
}

pub fn allocate_producer_ids_op(id: i32, epoch: i64) -> WriteOp<Resp> {
    ops::allocate_producer_ids(AllocateProducerIdsRequest {
        broker_id: id,
        broker_epoch: epoch,
        ..Default::default()
    })
    .map(Resp::ProducerIds)
}

pub fn delete_topic_op(name: &str) -> WriteOp<Resp> {
    ops::delete_topics(DeleteTopicsRequest {
        topic_names: vec![name.into()],
        ..Default::default()
    })
    .map(Resp::DeleteTopics)
}

/// A leader (node 0) whose periodic elections run at the given intervals, with the
/// bootstrap record committed, brokers 1 and 2 registered and unfenced, and `records`
/// written and committed after them.
fn periodic_cluster(
    balance_interval_ms: Option<u64>,
    unclean_interval_ms: u64,
    records: Vec<MetadataRecord>,
) -> (FakeRaft, QuorumController<Resp>) {
    let mut raft = FakeRaft::default();
    let mut config = QuorumControllerConfig {
        leader_imbalance_check_interval_ms: balance_interval_ms,
        unclean_leader_election_interval_ms: unclean_interval_ms,
        ..QuorumControllerConfig::default()
    };
    config.managers.cluster.cluster_id = CLUSTER_ID.into();
    let mut nodes = vec![QuorumController::new(config)];
    elect(&mut raft, &mut nodes, 0);
    let mut node = nodes.pop().unwrap();
    let mut all = vec![
        feature("metadata.version", METADATA_VERSION),
        register_broker(1, 10, false),
        register_broker(2, 11, false),
    ];
    all.extend(records);
    node.submit_write(WriteOp::new(move |_ctx| {
        ControllerResult::atomic_of(all, Resp::Done)
    }))
    .unwrap();
    node.process(&mut raft.node(0));
    commit_all(&mut raft, &mut node);
    node.drain_completions();
    (raft, node)
}

fn commit_all(raft: &mut FakeRaft, node: &mut QuorumController<Resp>) {
    for batch in raft.commit(usize::MAX) {
        node.handle_commit(&batch).unwrap();
    }
}

/// The leader of each partition of topic `id`, by partition id.
fn leaders(node: &QuorumController<Resp>, id: Uuid) -> Vec<i32> {
    let topic = node.committed_image().topics.get(&id).unwrap().clone();
    topic.partitions.values().map(|p| p.leader).collect()
}

fn partition_changes(raft: &FakeRaft) -> usize {
    raft.offsets_of(|r| matches!(r, MetadataRecord::PartitionChange(_)))
        .len()
}

/// `auto.leader.rebalance.enable` (Kafka's QuorumController `maybeBalancePartitionLeaders`):
/// a partition led by another than its preferred replica is given back to it one check
/// interval after the imbalance was seen, where that replica is in the ISR and active; one
/// whose preferred replica is out of the ISR stays, and moves at a later round once the
/// replica is back in it.
#[test]
fn leadership_returns_to_the_preferred_replica_after_the_check_interval() {
    let t = uuid(9);
    let (mut raft, mut node) = periodic_cluster(
        Some(1_000),
        300_000,
        vec![
            topic("t", t),
            partition(t, 0, &[1, 2], &[1, 2], 2),
            partition(t, 1, &[2, 1], &[2, 1], 2),
            partition(t, 2, &[1, 2], &[2], 2),
        ],
    );
    node.tick(1_000, &mut raft.node(0));
    node.tick(1_999, &mut raft.node(0));
    assert_eq!(partition_changes(&raft), 0, "before the interval");
    node.tick(2_000, &mut raft.node(0));
    assert_eq!(partition_changes(&raft), 1);
    commit_all(&mut raft, &mut node);
    assert_eq!(leaders(&node, t), vec![1, 2, 2]);
    // Partition 2's preferred replica is not in its ISR: the next round elects nothing.
    node.tick(3_000, &mut raft.node(0));
    assert_eq!(partition_changes(&raft), 1);
    // Back in the ISR, it leads after the next interval.
    node.submit_write(WriteOp::new(move |_ctx| {
        let mut c = kraftd_controller::testing::records::change(t, 2);
        c.isr = Some(vec![2, 1]);
        ControllerResult::atomic_of(vec![MetadataRecord::PartitionChange(c)], Resp::Done)
    }))
    .unwrap();
    node.process(&mut raft.node(0));
    commit_all(&mut raft, &mut node);
    node.tick(3_500, &mut raft.node(0));
    assert_eq!(leaders(&node, t), vec![1, 2, 2]);
    node.tick(4_000, &mut raft.node(0));
    commit_all(&mut raft, &mut node);
    assert_eq!(leaders(&node, t), vec![1, 2, 1]);
    assert!(!node.committed_image().topics.any_imbalanced());
}

/// `auto.leader.rebalance.enable=false`: leadership stays where it is.
#[test]
fn no_preferred_elections_when_auto_leader_rebalance_is_off() {
    let t = uuid(9);
    let (mut raft, mut node) = periodic_cluster(
        None,
        300_000,
        vec![topic("t", t), partition(t, 0, &[1, 2], &[1, 2], 2)],
    );
    for now in (1_000..8_000).step_by(500) {
        node.tick(now, &mut raft.node(0));
    }
    commit_all(&mut raft, &mut node);
    assert_eq!(partition_changes(&raft), 0);
    assert_eq!(leaders(&node, t), vec![2]);
}

/// More imbalanced partitions than one round may move
/// ([`MAX_ELECTIONS_PER_IMBALANCE`]): the round stops at the cap and the next runs at
/// once (10 ms later), not after another interval.
#[test]
fn a_balancing_round_at_its_cap_runs_again_at_once() {
    let t = uuid(9);
    let count = MAX_ELECTIONS_PER_IMBALANCE as i32 + 5;
    let mut records = vec![topic("t", t)];
    records.extend((0..count).map(|p| partition(t, p, &[1, 2], &[1, 2], 2)));
    let (mut raft, mut node) = periodic_cluster(Some(60_000), 300_000, records);
    node.tick(1_000, &mut raft.node(0));
    node.tick(61_000, &mut raft.node(0));
    assert_eq!(partition_changes(&raft), MAX_ELECTIONS_PER_IMBALANCE);
    commit_all(&mut raft, &mut node);
    node.tick(61_009, &mut raft.node(0));
    assert_eq!(partition_changes(&raft), MAX_ELECTIONS_PER_IMBALANCE);
    node.tick(61_010, &mut raft.node(0));
    commit_all(&mut raft, &mut node);
    assert_eq!(partition_changes(&raft), count as usize);
    assert!(leaders(&node, t).iter().all(|l| *l == 1));
}

/// `unclean.leader.election.enable` turned on for a topic whose partition is already
/// offline (its only ISR member fenced): the periodic unclean election
/// (`unclean.leader.election.interval.ms`) gives it a live replica without waiting for a
/// broker or ISR change. A topic that does not allow it stays offline.
#[test]
fn an_offline_partition_gets_an_unclean_leader_at_the_next_periodic_check() {
    let (t, u) = (uuid(9), uuid(10));
    let (mut raft, mut node) = periodic_cluster(
        None,
        1_000,
        vec![
            register_broker(3, 12, true),
            topic("t", t),
            partition(t, 0, &[3, 2], &[3], -1),
            topic("u", u),
            partition(u, 0, &[3, 2], &[3], -1),
        ],
    );
    node.submit_write(WriteOp::new(|_ctx| {
        ControllerResult::atomic_of(
            vec![kraftd_controller::testing::records::config(
                2,
                "t",
                "unclean.leader.election.enable",
                Some("true"),
            )],
            Resp::Done,
        )
    }))
    .unwrap();
    node.process(&mut raft.node(0));
    commit_all(&mut raft, &mut node);
    node.tick(1_000, &mut raft.node(0));
    node.tick(1_999, &mut raft.node(0));
    commit_all(&mut raft, &mut node);
    assert_eq!(leaders(&node, t), vec![-1]);
    node.tick(2_000, &mut raft.node(0));
    commit_all(&mut raft, &mut node);
    assert_eq!(leaders(&node, t), vec![2]);
    assert_eq!(leaders(&node, u), vec![-1]);
}
