//! KIP-853 over the network with real log directories: a quorum formatted standalone (a
//! bootstrap checkpoint naming node 1 and its directory id) grows to three voters by
//! AddRaftVoter, two controllers that start with only `controller.quorum.bootstrap.servers`
//! and join as observers first; DescribeQuorum v2 reports the three with their directory ids
//! and listeners; then RemoveRaftVoter shrinks it back to one, the leader removing itself
//! first, and the survivor keeps committing. Every wait polls a condition with a deadline.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use kraftd_net::{Channel, ClientConfig};
use kraftd_protocol::messages::{
    add_raft_voter_request, describe_quorum_request, AddRaftVoterRequest, DescribeQuorumRequest,
    RemoveRaftVoterRequest,
};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody, Uuid};
use kraftd_raft::core::endpoints::Endpoint;
use kraftd_raft::core::voter_set::{ReplicaKey, VoterNode, VoterSet};
use kraftd_raft::driver::{parse_bootstrap_servers, RaftDriver, VoterEndpoint};
use kraftd_raft::snapshot::{with_kraft_control, SnapshotWriter};
use tokio::net::TcpListener;
use tokio::time::Instant;

use crate::cluster::config;

const CLUSTER_ID: &str = "kraftd-network-test-AAAAAA";

fn directory_id(id: i32) -> Uuid {
    let mut b = [0x5au8; 16];
    b[15] = id as u8;
    Uuid(b)
}

fn listeners(port: u16) -> BTreeMap<String, Endpoint> {
    BTreeMap::from([(
        "CONTROLLER".to_string(),
        Endpoint {
            host: "127.0.0.1".into(),
            port,
        },
    )])
}

/// `kraftd format --standalone`'s bootstrap checkpoint, as the file format has it.
fn format_standalone(dir: &Path, id: i32, port: u16) {
    std::fs::create_dir_all(dir).unwrap();
    let set = VoterSet::from_nodes([VoterNode::new(
        ReplicaKey::new(id, directory_id(id)),
        listeners(port),
    )]);
    let empty = SnapshotWriter::new(0, -1, 0).unwrap().finish().unwrap();
    let bytes = with_kraft_control(&empty, 1, Some(set.to_record())).unwrap();
    std::fs::write(
        dir.join("00000000000000000000-0000000000.checkpoint"),
        &bytes,
    )
    .unwrap();
}

async fn call(admin: &Channel, corr: &mut i32, version: i16, body: RequestBody) -> ResponseBody {
    *corr += 1;
    admin.call(*corr, version, body).await.expect("answered")
}

/// Sends a voter change to `admin` until it is not REQUEST_TIMED_OUT (a voter catching up,
/// a change committing) or NOT_LEADER_OR_FOLLOWER (an election); its final error.
async fn change(admin: &Channel, corr: &mut i32, version: i16, body: RequestBody) -> i16 {
    let by = Instant::now() + Duration::from_secs(20);
    loop {
        let code = match call(admin, corr, version, body.clone()).await {
            ResponseBody::AddRaftVoter(r) => r.error_code,
            ResponseBody::RemoveRaftVoter(r) => r.error_code,
            other => panic!("unexpected {other:?}"),
        };
        let retriable = code == ErrorCode::RequestTimedOut.code()
            || code == ErrorCode::NotLeaderOrFollower.code();
        if !retriable || Instant::now() > by {
            return code;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn add_voter(id: i32, port: u16) -> RequestBody {
    RequestBody::AddRaftVoter(AddRaftVoterRequest {
        cluster_id: Some(CLUSTER_ID.into()),
        timeout_ms: 5_000,
        voter_id: id,
        voter_directory_id: directory_id(id),
        listeners: vec![add_raft_voter_request::Listener {
            name: "CONTROLLER".into(),
            host: "127.0.0.1".into(),
            port,
            ..Default::default()
        }],
        ack_when_committed: true,
        ..Default::default()
    })
}

fn remove_voter(id: i32) -> RequestBody {
    RequestBody::RemoveRaftVoter(RemoveRaftVoterRequest {
        cluster_id: Some(CLUSTER_ID.into()),
        voter_id: id,
        voter_directory_id: directory_id(id),
        ..Default::default()
    })
}

fn describe() -> RequestBody {
    RequestBody::DescribeQuorum(DescribeQuorumRequest {
        topics: vec![describe_quorum_request::TopicData {
            topic_name: "__cluster_metadata".into(),
            partitions: vec![describe_quorum_request::PartitionData {
                partition_index: 0,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// Polls until the node's metrics say `pred`.
async fn wait(
    driver: &RaftDriver,
    what: &str,
    pred: impl Fn(&kraftd_raft::driver::RaftMetrics) -> bool,
) {
    let by = Instant::now() + Duration::from_secs(20);
    let mut rx = driver.handle().metrics();
    loop {
        if pred(&rx.borrow()) {
            return;
        }
        assert!(Instant::now() < by, "timed out waiting for {what}");
        let _ = tokio::time::timeout(Duration::from_millis(100), rx.changed()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_quorum_grows_to_three_voters_and_shrinks_back_to_one() {
    let root = tempfile::tempdir().unwrap();
    let mut listeners_by_id = BTreeMap::new();
    let mut ports = BTreeMap::new();
    for id in 1..=3 {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        ports.insert(id, l.local_addr().unwrap().port());
        listeners_by_id.insert(id, l);
    }
    let dir = |id: i32| root.path().join(format!("node-{id}/__cluster_metadata-0"));
    format_standalone(&dir(1), 1, ports[&1]);
    let bootstrap =
        parse_bootstrap_servers(&format!("127.0.0.1:{}", ports[&1]), &BTreeMap::new()).unwrap();
    let no_voters: BTreeMap<i32, VoterEndpoint> = BTreeMap::new();
    let mut nodes = BTreeMap::new();
    for (id, l) in listeners_by_id {
        let mut c = config(id, &no_voters, &dir(id), 0);
        c.directory_id = directory_id(id);
        c.local_listeners = listeners(ports[&id]);
        c.quorum.bootstrap_servers = bootstrap.clone();
        nodes.insert(id, RaftDriver::start(c, l).await.expect("starts"));
    }
    wait(&nodes[&1], "node 1 to lead", |m| {
        m.current_state == "leader"
    })
    .await;
    nodes[&1]
        .handle()
        .propose_committed(vec![Bytes::from_static(b"one voter")])
        .await
        .unwrap();
    // The controllers with bootstrap servers only follow as observers.
    for id in [2, 3] {
        wait(&nodes[&id], "an observer to follow node 1", |m| {
            m.current_leader == 1 && m.high_watermark > 0
        })
        .await;
    }
    let admin = Channel::spawn(
        format!("127.0.0.1:{}", ports[&1]),
        ClientConfig::new("admin"),
    );
    let mut corr = 0;
    for id in [2, 3] {
        let code = change(&admin, &mut corr, 1, add_voter(id, ports[&id])).await;
        assert_eq!(code, 0, "adding {id}");
    }
    let ResponseBody::DescribeQuorum(d) = call(&admin, &mut corr, 2, describe()).await else {
        panic!("not DescribeQuorum");
    };
    let p = &d.topics[0].partitions[0];
    let mut voters: Vec<(i32, Uuid)> = p
        .current_voters
        .iter()
        .map(|v| (v.replica_id, v.replica_directory_id))
        .collect();
    voters.sort();
    assert_eq!(
        voters,
        vec![
            (1, directory_id(1)),
            (2, directory_id(2)),
            (3, directory_id(3))
        ]
    );
    assert_eq!(d.nodes.len(), 3, "{:?}", d.nodes);
    // Every node's number-of-voters is the set in effect, not `controller.quorum.voters`
    // (empty here): the chaos harness's `--voters` found it stuck at 0.
    for (id, node) in &nodes {
        wait(node, &format!("node {id}'s number-of-voters at 3"), |m| {
            m.number_of_voters == 3 && m.current_state != "observer"
        })
        .await;
    }
    assert!(d
        .nodes
        .iter()
        .all(|n| n.listeners.len() == 1 && n.listeners[0].port == ports[&n.node_id]));
    nodes[&1]
        .handle()
        .propose_committed(vec![Bytes::from_static(b"three voters")])
        .await
        .unwrap();
    // The leader removes itself: it resigns once the change commits; 2 or 3 leads.
    assert_eq!(change(&admin, &mut corr, 0, remove_voter(1)).await, 0);
    wait(&nodes[&2], "a new leader among 2 and 3", |m| {
        m.current_leader == 2 || m.current_leader == 3
    })
    .await;
    let leader = nodes[&2].handle().metrics().borrow().current_leader;
    let other = 5 - leader;
    let admin = Channel::spawn(
        format!("127.0.0.1:{}", ports[&leader]),
        ClientConfig::new("admin"),
    );
    assert_eq!(change(&admin, &mut corr, 0, remove_voter(other)).await, 0);
    nodes[&leader]
        .handle()
        .propose_committed(vec![Bytes::from_static(b"one voter again")])
        .await
        .unwrap();
    let ResponseBody::DescribeQuorum(d) = call(&admin, &mut corr, 2, describe()).await else {
        panic!("not DescribeQuorum");
    };
    let p = &d.topics[0].partitions[0];
    assert_eq!(p.current_voters.len(), 1);
    assert_eq!(p.current_voters[0].replica_id, leader);
    // The removed nodes follow on as observers, and know the set has one voter.
    for id in [1, other] {
        wait(
            &nodes[&id],
            "a removed voter to follow as an observer",
            |m| {
                m.current_leader == leader
                    && m.current_state == "observer"
                    && m.number_of_voters == 1
            },
        )
        .await;
    }
    for (_, n) in nodes {
        n.shutdown().await.ok();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observer_controllers_with_auto_join_add_themselves_and_a_new_disk_replaces_its_old_key() {
    let root = tempfile::tempdir().unwrap();
    let mut ports = BTreeMap::new();
    let mut listeners_by_id = BTreeMap::new();
    for id in 1..=3 {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        ports.insert(id, l.local_addr().unwrap().port());
        listeners_by_id.insert(id, l);
    }
    let dir = |id: i32| root.path().join(format!("node-{id}/__cluster_metadata-0"));
    format_standalone(&dir(1), 1, ports[&1]);
    let bootstrap =
        parse_bootstrap_servers(&format!("127.0.0.1:{}", ports[&1]), &BTreeMap::new()).unwrap();
    let no_voters: BTreeMap<i32, VoterEndpoint> = BTreeMap::new();
    let node_config = |id: i32, directory: Uuid, incarnation: u64| {
        let mut c = config(id, &no_voters, &dir(id), incarnation);
        c.directory_id = directory;
        c.local_listeners = listeners(ports[&id]);
        c.quorum.bootstrap_servers = bootstrap.clone();
        c.auto_join = true;
        c
    };
    let mut nodes = BTreeMap::new();
    for (id, l) in listeners_by_id {
        let d = RaftDriver::start(node_config(id, directory_id(id), 0), l)
            .await
            .unwrap();
        nodes.insert(id, d);
        if id == 1 {
            wait(&nodes[&1], "node 1 to lead", |m| {
                m.current_state == "leader"
            })
            .await;
        }
    }
    let mut corr = 0;
    // The voters as the current leader reports them.
    async fn voters_now(ports: &BTreeMap<i32, u16>, corr: &mut i32) -> Vec<(i32, Uuid)> {
        for port in ports.values() {
            let admin = Channel::spawn(format!("127.0.0.1:{port}"), ClientConfig::new("admin"));
            let Ok(ResponseBody::DescribeQuorum(d)) =
                tokio::time::timeout(Duration::from_secs(2), call(&admin, corr, 2, describe()))
                    .await
            else {
                continue;
            };
            let p = &d.topics[0].partitions[0];
            if p.error_code == 0 {
                let mut v: Vec<(i32, Uuid)> = p
                    .current_voters
                    .iter()
                    .map(|v| (v.replica_id, v.replica_directory_id))
                    .collect();
                v.sort();
                return v;
            }
        }
        Vec::new()
    }
    let all_three: Vec<(i32, Uuid)> = (1..=3).map(|id| (id, directory_id(id))).collect();
    let by = Instant::now() + Duration::from_secs(30);
    while voters_now(&ports, &mut corr).await != all_three {
        assert!(Instant::now() < by, "nodes 2 and 3 never joined");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Node 3's disk is replaced: it comes back with a new directory id, an observer, and
    // removes its old key then adds its new one by itself.
    nodes.remove(&3).unwrap().kill().await;
    std::fs::remove_dir_all(dir(3)).unwrap();
    let new_id = Uuid([0x77; 16]);
    let l3 = TcpListener::bind(("127.0.0.1", ports[&3])).await.unwrap();
    nodes.insert(
        3,
        RaftDriver::start(node_config(3, new_id, 1), l3)
            .await
            .unwrap(),
    );
    let replaced = vec![(1, directory_id(1)), (2, directory_id(2)), (3, new_id)];
    let by = Instant::now() + Duration::from_secs(30);
    loop {
        let now = voters_now(&ports, &mut corr).await;
        if now == replaced {
            break;
        }
        assert!(
            Instant::now() < by,
            "node 3's new disk never replaced its key: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for (_, n) in nodes {
        n.shutdown().await.ok();
    }
}

/// KIP-853's UpdateRaftVoter: a voter restarted on another port (same disk, same directory
/// id) tells the leader its new listener itself, and DescribeQuorum then names the new port;
/// an UpdateRaftVoter for a node that is no voter, or of another cluster, gets Kafka's
/// refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voter_restarted_on_another_port_updates_its_listener_at_the_leader() {
    use kraftd_protocol::messages::{update_raft_voter_request, UpdateRaftVoterRequest};
    let root = tempfile::tempdir().unwrap();
    let dir = |id: i32| root.path().join(format!("node-{id}/__cluster_metadata-0"));
    let bind = || async { TcpListener::bind("127.0.0.1:0").await.unwrap() };
    let (l1, l2) = (bind().await, bind().await);
    let port1 = l1.local_addr().unwrap().port();
    let port2 = l2.local_addr().unwrap().port();
    format_standalone(&dir(1), 1, port1);
    let bootstrap =
        parse_bootstrap_servers(&format!("127.0.0.1:{port1}"), &BTreeMap::new()).unwrap();
    let node_config = |id: i32, port: u16| {
        let mut c = config(id, &BTreeMap::new(), &dir(id), 0);
        c.directory_id = directory_id(id);
        c.local_listeners = listeners(port);
        c.quorum.bootstrap_servers = bootstrap.clone();
        c
    };
    let n1 = RaftDriver::start(node_config(1, port1), l1).await.unwrap();
    let n2 = RaftDriver::start(node_config(2, port2), l2).await.unwrap();
    wait(&n1, "node 1 to lead", |m| m.current_state == "leader").await;
    let admin = Channel::spawn(format!("127.0.0.1:{port1}"), ClientConfig::new("admin"));
    let mut corr = 0;
    assert_eq!(change(&admin, &mut corr, 1, add_voter(2, port2)).await, 0);

    // Node 2 comes back on a new port.
    n2.shutdown().await.ok();
    let l2 = bind().await;
    let new_port = l2.local_addr().unwrap().port();
    let n2 = RaftDriver::start(node_config(2, new_port), l2)
        .await
        .unwrap();
    let by = Instant::now() + Duration::from_secs(20);
    loop {
        let ResponseBody::DescribeQuorum(d) = call(&admin, &mut corr, 2, describe()).await else {
            panic!("not DescribeQuorum");
        };
        let port = d
            .nodes
            .iter()
            .find(|n| n.node_id == 2)
            .and_then(|n| n.listeners.first())
            .map(|l| l.port);
        if port == Some(new_port) {
            break;
        }
        assert!(
            Instant::now() < by,
            "node 2's listener is still {port:?}, not {new_port}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    n1.handle()
        .propose_committed(vec![Bytes::from_static(b"after the update")])
        .await
        .unwrap();

    let update = |cluster_id: &str, voter_id: i32| {
        RequestBody::UpdateRaftVoter(UpdateRaftVoterRequest {
            cluster_id: Some(cluster_id.into()),
            current_leader_epoch: n1.handle().metrics().borrow().current_epoch,
            voter_id,
            voter_directory_id: directory_id(voter_id),
            listeners: vec![update_raft_voter_request::Listener {
                name: "CONTROLLER".into(),
                host: "127.0.0.1".into(),
                port: 9,
                ..Default::default()
            }],
            k_raft_version_feature: update_raft_voter_request::KRaftVersionFeature {
                min_supported_version: 0,
                max_supported_version: 1,
                ..Default::default()
            },
            ..Default::default()
        })
    };
    let code = |r: ResponseBody| match r {
        ResponseBody::UpdateRaftVoter(r) => r.error_code,
        other => panic!("unexpected {other:?}"),
    };
    let not_a_voter = code(call(&admin, &mut corr, 0, update(CLUSTER_ID, 7)).await);
    assert_eq!(not_a_voter, ErrorCode::VoterNotFound.code());
    let other_cluster = code(call(&admin, &mut corr, 0, update("another-cluster", 2)).await);
    assert_eq!(other_cluster, ErrorCode::InconsistentClusterId.code());
    for n in [n1, n2] {
        n.shutdown().await.ok();
    }
}
