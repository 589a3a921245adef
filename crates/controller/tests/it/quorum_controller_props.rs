//! A property test of the QuorumController over random operations, commits, elections and
//! clock ticks on three nodes: every node's committed image equals a replay of the
//! committed log prefix, the active controller's latest image equals a replay of
//! everything written, and every submitted operation completes exactly once.

use std::collections::BTreeMap;

use kraftd_controller::quorum_controller::{Completion, OpId, QuorumController};
use kraftd_controller::MetadataImage;
use kraftd_protocol::MetadataRecord;
use proptest::prelude::*;

use crate::quorum_controller::{
    allocate_producer_ids_op, bootstrap_op, catch_up, controller, create_topic_op, delete_topic_op,
    elect, heartbeat_op, register_op, FakeRaft, Resp,
};

#[derive(Debug, Clone)]
enum Action {
    Register(i32),
    Heartbeat(i32),
    CreateTopic(u8, i32, i16),
    Process,
    Commit(usize),
    Elect(i32),
    Tick(u64),
    SubmitToStandby(i32),
    AllocateProducerIds(i32),
    DeleteTopic(u8),
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        3 => (1..=4i32).prop_map(Action::Register),
        3 => (1..=4i32).prop_map(Action::Heartbeat),
        2 => (0..5u8, 1..=3i32, 1..=3i16).prop_map(|(n, p, r)| Action::CreateTopic(n, p, r)),
        4 => Just(Action::Process),
        4 => (0..4usize).prop_map(Action::Commit),
        1 => (0..3i32).prop_map(Action::Elect),
        2 => (0..4_000u64).prop_map(Action::Tick),
        1 => (0..3i32).prop_map(Action::SubmitToStandby),
        1 => (1..=4i32).prop_map(Action::AllocateProducerIds),
        1 => (0..5u8).prop_map(Action::DeleteTopic),
    ]
}

/// Everything written to the log (committed and not) replayed from scratch.
fn written_image(raft: &FakeRaft) -> MetadataImage {
    let records: Vec<MetadataRecord> = raft
        .committed
        .iter()
        .chain(raft.uncommitted.iter())
        .flat_map(|b| b.records.iter().map(|r| r.1.clone()))
        .collect();
    MetadataImage::empty().replay_all(&records).unwrap()
}

fn record(done: &mut BTreeMap<(i32, OpId), usize>, node: i32, completions: Vec<Completion<Resp>>) {
    for completion in completions {
        *done.entry((node, completion.id)).or_default() += 1;
    }
}

fn check(raft: &FakeRaft, nodes: &[QuorumController<Resp>]) {
    let committed = raft.committed_image();
    for node in nodes {
        assert_eq!(
            node.committed_image(),
            &committed,
            "node {}",
            node.node_id()
        );
        if node.is_active() {
            assert_eq!(
                node.latest_image(),
                &written_image(raft),
                "node {}",
                node.node_id()
            );
            assert_eq!(node.last_written_offset(), raft.end_offset - 1);
        } else {
            assert_eq!(node.latest_image(), node.committed_image());
            assert_eq!(node.pending_writes(), 0);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn committed_prefix_replay_equals_every_node_image(
        actions in proptest::collection::vec(action(), 1..80)
    ) {
        let mut raft = FakeRaft::default();
        let mut nodes = vec![controller(0), controller(1), controller(2)];
        let mut submitted = Vec::new();
        let mut done = BTreeMap::new();
        let mut now_ms = 0;
        elect(&mut raft, &mut nodes, 0);
        submitted.push((0, nodes[0].submit_write(bootstrap_op()).unwrap()));
        for action in actions {
            let leader = raft.leader.unwrap_or(0);
            let index = usize::try_from(leader).unwrap();
            match action {
                Action::Register(id) => {
                    submitted.push((leader, nodes[index].submit_write(register_op(id)).unwrap()));
                }
                Action::Heartbeat(id) => {
                    let epoch = nodes[index]
                        .latest_image()
                        .cluster
                        .broker(id)
                        .map_or(-1, |b| b.epoch);
                    let op = heartbeat_op(id, epoch, raft.end_offset - 1);
                    submitted.push((leader, nodes[index].submit_write(op).unwrap()));
                }
                Action::AllocateProducerIds(id) => {
                    let epoch = nodes[index]
                        .latest_image()
                        .cluster
                        .broker(id)
                        .map_or(-1, |b| b.epoch);
                    let op = allocate_producer_ids_op(id, epoch);
                    submitted.push((leader, nodes[index].submit_write(op).unwrap()));
                }
                Action::DeleteTopic(n) => {
                    let op = delete_topic_op(&format!("topic-{n}"));
                    submitted.push((leader, nodes[index].submit_write(op).unwrap()));
                }
                Action::CreateTopic(n, partitions, rf) => {
                    let op = create_topic_op(&format!("topic-{n}"), partitions, rf);
                    submitted.push((leader, nodes[index].submit_write(op).unwrap()));
                }
                Action::Process => {
                    for node in nodes.iter_mut() {
                        let id = node.node_id();
                        node.process(&mut raft.node(id));
                    }
                }
                Action::Commit(n) => {
                    for batch in raft.commit(n) {
                        for node in nodes.iter_mut() {
                            node.handle_commit(&batch).unwrap();
                        }
                    }
                }
                Action::Elect(new_leader) => elect(&mut raft, &mut nodes, new_leader),
                Action::Tick(advance) => {
                    now_ms += advance;
                    for node in nodes.iter_mut() {
                        let id = node.node_id();
                        node.tick(now_ms, &mut raft.node(id));
                    }
                }
                Action::SubmitToStandby(node_id) => {
                    let node = usize::try_from(node_id).unwrap();
                    submitted.push((node_id, nodes[node].submit_write(register_op(9)).unwrap()));
                }
            }
            for node in nodes.iter_mut() {
                let id = node.node_id();
                record(&mut done, id, node.drain_completions());
            }
            check(&raft, &nodes);
        }
        // Drain: run what is queued, commit everything, and every operation has completed
        // exactly once.
        for node in nodes.iter_mut() {
            let id = node.node_id();
            node.process(&mut raft.node(id));
        }
        for batch in raft.commit(usize::MAX) {
            for node in nodes.iter_mut() {
                node.handle_commit(&batch).unwrap();
            }
        }
        for node in nodes.iter_mut() {
            let id = node.node_id();
                record(&mut done, id, node.drain_completions());
            catch_up(&raft, node);
        }
        check(&raft, &nodes);
        for id in &submitted {
            prop_assert_eq!(done.get(id).copied(), Some(1), "op {:?}", id);
        }
    }
}
