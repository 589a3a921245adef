//! Three in-process Raft nodes on loopback TCP with real log directories: elect, commit,
//! kill the leader, elect again, commit, identical committed data on the survivors, restart
//! the killed node from its directory and see it catch up, then shut down gracefully.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use kraftd_net::{Channel, ClientConfig};
use kraftd_protocol::messages::{describe_quorum_request, DescribeQuorumRequest};
use kraftd_protocol::records::Batches;
use kraftd_protocol::{RequestBody, ResponseBody};
use kraftd_raft::driver::{
    parse_bootstrap_servers, DriverConfig, QuorumConfig, RaftDriver, RaftHandle, VoterEndpoint,
};
use tokio::net::TcpListener;
use tokio::time::Instant;

const CLUSTER_ID: &str = "kraftd-network-test-AAAAAA";

fn deadline(secs: u64) -> Instant {
    Instant::now() + Duration::from_secs(secs)
}

/// A node's driver config with loopback-short timeouts (shared by the network tests).
pub(crate) fn config(
    id: i32,
    voters: &BTreeMap<i32, VoterEndpoint>,
    dir: &Path,
    incarnation: u64,
) -> DriverConfig {
    let mut c = DriverConfig::new(
        id,
        QuorumConfig::new(CLUSTER_ID, voters.clone(), dir.to_path_buf()),
    );
    // Loopback is fast: shorter timeouts keep the test quick without changing behaviour.
    c.quorum.raft.election_timeout_ms = 300;
    c.quorum.raft.fetch_timeout_ms = 600;
    c.quorum.raft.election_backoff_max_ms = 300;
    c.quorum.raft.request_timeout_ms = 500;
    c.quorum.raft.fetch_max_wait_ms = 100;
    c.quorum.raft.append_linger_ms = 2;
    c.seed = (id as u64) << 32 | incarnation;
    c
}

struct Cluster {
    voters: BTreeMap<i32, VoterEndpoint>,
    addrs: BTreeMap<i32, SocketAddr>,
    dirs: BTreeMap<i32, PathBuf>,
    nodes: BTreeMap<i32, RaftDriver>,
    root: tempfile::TempDir,
}

impl Cluster {
    async fn start(n: i32) -> Cluster {
        let root = tempfile::tempdir().expect("temp dir");
        let mut listeners = BTreeMap::new();
        let mut voters = BTreeMap::new();
        let mut addrs = BTreeMap::new();
        let mut dirs = BTreeMap::new();
        for id in 1..=n {
            let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = l.local_addr().expect("addr");
            voters.insert(
                id,
                VoterEndpoint {
                    id,
                    host: "127.0.0.1".into(),
                    port: addr.port(),
                },
            );
            addrs.insert(id, addr);
            dirs.insert(
                id,
                root.path().join(format!("node-{id}/__cluster_metadata-0")),
            );
            listeners.insert(id, l);
        }
        let mut nodes = BTreeMap::new();
        for (id, l) in listeners {
            let d = RaftDriver::start(config(id, &voters, &dirs[&id], 0), l)
                .await
                .expect("start");
            nodes.insert(id, d);
        }
        Cluster {
            voters,
            addrs,
            dirs,
            nodes,
            root,
        }
    }

    fn handle(&self, id: i32) -> RaftHandle {
        self.nodes[&id].handle()
    }

    /// The leader every running node agrees on, once they do.
    async fn agreed_leader(&self, above_epoch: i32, by: Instant) -> (i32, i32) {
        loop {
            let views: Vec<(i32, i32, &'static str)> = self
                .nodes
                .values()
                .map(|d| {
                    let m = d.handle().metrics().borrow().clone();
                    (m.current_leader, m.current_epoch, m.current_state)
                })
                .collect();
            let (leader, epoch, _) = views[0];
            if leader >= 0
                && epoch > above_epoch
                && views.iter().all(|v| (v.0, v.1) == (leader, epoch))
                && self.nodes.contains_key(&leader)
                && self.handle(leader).metrics().borrow().current_state == "leader"
            {
                return (leader, epoch);
            }
            assert!(
                Instant::now() < by,
                "no agreed leader above epoch {above_epoch}: {views:?}"
            );
            // Wake on any node's metrics change, bounded so a quiet cluster is re-checked.
            let mut rx = self
                .nodes
                .values()
                .next()
                .expect("a node")
                .handle()
                .metrics();
            let _ = tokio::time::timeout(Duration::from_millis(50), rx.changed()).await;
        }
    }

    async fn restart(&mut self, id: i32, incarnation: u64) {
        let by = deadline(20);
        let listener = loop {
            match TcpListener::bind(self.addrs[&id]).await {
                Ok(l) => break l,
                Err(e) => {
                    assert!(Instant::now() < by, "rebinding {}: {e}", self.addrs[&id]);
                    tokio::task::yield_now().await;
                }
            }
        };
        let d = RaftDriver::start(
            config(id, &self.voters, &self.dirs[&id], incarnation),
            listener,
        )
        .await
        .expect("restart");
        self.nodes.insert(id, d);
    }
}

fn record(i: usize) -> Bytes {
    Bytes::from(format!("record-{i:05}-{}", "x".repeat(40)))
}

/// Proposes `range` one record per proposal on whichever node leads, each answered once
/// committed, retrying through leader changes; returns the offset after the last record.
async fn propose_all(cluster: &Cluster, range: std::ops::Range<usize>, by: Instant) -> i64 {
    let mut end = 0;
    for i in range {
        loop {
            let (leader, _) = cluster.agreed_leader(0, by).await;
            match cluster
                .handle(leader)
                .propose_committed(vec![record(i)])
                .await
            {
                Ok((_, last)) => {
                    end = last + 1;
                    break;
                }
                Err(e) => assert!(Instant::now() < by, "proposal {i} never accepted: {e}"),
            }
        }
    }
    end
}

async fn wait_hw(h: &RaftHandle, hw: i64, by: Instant) {
    let ok = h.wait_for(by, |m| m.high_watermark >= hw).await;
    assert!(
        ok,
        "node {} HW never reached {hw}: {:?}",
        h.node_id(),
        h.metrics().borrow()
    );
}

async fn committed(h: &RaftHandle, upto: i64) -> Bytes {
    let mut out = Vec::new();
    let mut from = 0;
    while from < upto {
        let chunk = h.read_committed(from, 1 << 20).await.expect("read");
        assert!(
            !chunk.is_empty(),
            "node {} has nothing committed at {from}",
            h.node_id()
        );
        for b in Batches::new(chunk.clone()) {
            let b = b.expect("whole batches");
            from = b.next_offset();
        }
        out.extend_from_slice(&chunk);
    }
    Bytes::from(out)
}

fn holds(data: &[u8], i: usize) -> bool {
    let r = record(i);
    data.windows(r.len()).any(|w| w == &r[..])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_elect_commit_fail_over_and_catch_up() {
    let mut cluster = Cluster::start(3).await;
    let by = deadline(60);

    let (first_leader, first_epoch) = cluster.agreed_leader(0, by).await;
    let end = propose_all(&cluster, 0..10, by).await;
    for id in 1..=3 {
        wait_hw(&cluster.handle(id), end, by).await;
    }
    for id in 1..=3 {
        let m = cluster.handle(id).metrics().borrow().clone();
        assert_eq!(m.number_of_voters, 3);
        assert_eq!(m.current_epoch, first_epoch);
        assert!(m.elections >= 1, "node {id}: {m:?}");
        if id == first_leader {
            assert_eq!(m.current_state, "leader");
            assert!(m.append_records_total >= 10 && m.commits >= 10, "{m:?}");
            // Windowed (two samples of 30 s): the appends just made are in the window.
            assert!(m.append_records_rate > 0.0, "{m:?}");
            assert!(m.commit_latency_max_ms >= m.commit_latency_avg_ms, "{m:?}");
        } else {
            assert_eq!(m.current_state, "follower");
            assert!(m.fetch_records_total >= 10, "node {id}: {m:?}");
            assert!(m.fetch_records_rate > 0.0, "node {id}: {m:?}");
            assert!(m.destinations[&first_leader].requests_sent > 0);
        }
    }

    // DescribeQuorum over the wire, as `kafka-metadata-quorum describe` asks it.
    let admin = Channel::spawn(
        cluster.addrs[&first_leader].to_string(),
        ClientConfig::new("admin"),
    );
    let request = DescribeQuorumRequest {
        topics: vec![describe_quorum_request::TopicData {
            topic_name: "__cluster_metadata".into(),
            partitions: vec![describe_quorum_request::PartitionData {
                partition_index: 0,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let response = admin
        .call(1, 1, RequestBody::DescribeQuorum(request.clone()))
        .await
        .expect("DescribeQuorum answered");
    let ResponseBody::DescribeQuorum(r) = response else {
        panic!("not a DescribeQuorum response: {response:?}");
    };
    let p = &r.topics[0].partitions[0];
    assert_eq!((r.error_code, p.error_code), (0, 0), "{r:?}");
    assert_eq!(p.leader_id, first_leader);
    assert_eq!(p.current_voters.len(), 3);
    assert!(p.high_watermark >= end);
    assert!(r.nodes.is_empty(), "v1 has no Nodes");

    // v2 adds every voter's endpoint under the controller listener's name (Kafka's Nodes,
    // which kafka-metadata-quorum prints as "endpoints": ["CONTROLLER://host:port"]).
    let response = admin
        .call(2, 2, RequestBody::DescribeQuorum(request.clone()))
        .await
        .expect("DescribeQuorum v2 answered");
    let ResponseBody::DescribeQuorum(r) = response else {
        panic!("not a DescribeQuorum response: {response:?}");
    };
    let p = &r.topics[0].partitions[0];
    assert_eq!((r.error_code, p.error_code), (0, 0), "{r:?}");
    let mut voters: Vec<i32> = p.current_voters.iter().map(|v| v.replica_id).collect();
    voters.sort();
    // As kafka-metadata-quorum prints them: "NAME://host:port".
    let nodes: Vec<(i32, Vec<String>)> = r
        .nodes
        .iter()
        .map(|n| {
            let listeners = n
                .listeners
                .iter()
                .map(|l| format!("{}://{}:{}", l.name, l.host, l.port))
                .collect();
            (n.node_id, listeners)
        })
        .collect();
    let expected: Vec<(i32, Vec<String>)> = voters
        .iter()
        .map(|id| (*id, vec![format!("CONTROLLER://{}", cluster.addrs[id])]))
        .collect();
    let mut sorted = nodes.clone();
    sorted.sort();
    assert_eq!(sorted, expected, "{r:?}");

    // A follower answers NOT_LEADER_OR_FOLLOWER, without Nodes (as Kafka's error answer).
    let follower = (1..=3).find(|id| *id != first_leader).expect("a follower");
    let to_follower = Channel::spawn(
        cluster.addrs[&follower].to_string(),
        ClientConfig::new("admin"),
    );
    let response = to_follower
        .call(3, 2, RequestBody::DescribeQuorum(request))
        .await
        .expect("DescribeQuorum v2 answered by a follower");
    let ResponseBody::DescribeQuorum(r) = response else {
        panic!("not a DescribeQuorum response: {response:?}");
    };
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        kraftd_protocol::ErrorCode::NotLeaderOrFollower.code()
    );
    assert!(r.nodes.is_empty(), "{r:?}");

    // Every node's vote and epoch are on disk in Kafka's quorum-state form.
    for id in 1..=3 {
        let store = kraftd_log::quorum_state::QuorumStateStore::new(&cluster.dirs[&id]);
        let bytes = store.read().expect("readable").expect("written");
        let (data, version) =
            kraftd_raft::driver::log::quorum_state_file::decode(&bytes).expect("Kafka's JSON");
        assert_eq!(version, 1, "node {id}");
        let state = kraftd_raft::QuorumStateData::from_data(&data);
        assert_eq!(state.leader_epoch, first_epoch, "node {id}");
        assert_eq!(state.leader_id, first_leader, "node {id}");
    }

    // Kill the leader: no resignation, its tasks just stop.
    let killed = cluster.nodes.remove(&first_leader).expect("leader");
    killed.kill().await;
    let (second_leader, _) = cluster.agreed_leader(first_epoch, by).await;
    assert_ne!(second_leader, first_leader);

    let end = propose_all(&cluster, 10..20, by).await;
    let survivors: Vec<i32> = cluster.nodes.keys().copied().collect();
    for &id in &survivors {
        wait_hw(&cluster.handle(id), end, by).await;
    }
    let a = committed(&cluster.handle(survivors[0]), end).await;
    let b = committed(&cluster.handle(survivors[1]), end).await;
    assert_eq!(a, b, "committed data differs between the survivors");
    for i in 0..20 {
        assert!(holds(&a, i), "record {i} is not committed");
    }

    // The killed node comes back from its directory and catches up.
    cluster.restart(first_leader, 1).await;
    let back = cluster.handle(first_leader);
    wait_hw(&back, end, by).await;
    let c = committed(&back, end).await;
    assert_eq!(a, c, "the restarted node's committed data differs");

    // A graceful shutdown of the leader resigns (EndQuorumEpoch); the other two elect a
    // new leader and keep committing.
    let (leader, epoch) = cluster.agreed_leader(0, by).await;
    let leader_driver = cluster.nodes.remove(&leader).expect("leader");
    leader_driver.shutdown().await.expect("clean shutdown");
    let (next, _) = cluster.agreed_leader(epoch, by).await;
    assert_ne!(next, leader);
    let end = propose_all(&cluster, 20..21, by).await;
    let remaining: Vec<i32> = cluster.nodes.keys().copied().collect();
    for &id in &remaining {
        wait_hw(&cluster.handle(id), end, by).await;
    }
    let a = committed(&cluster.handle(remaining[0]), end).await;
    let b = committed(&cluster.handle(remaining[1]), end).await;
    assert_eq!(a, b, "committed data differs after the graceful failover");
    assert!(holds(&a, 20));
    for (_, d) in std::mem::take(&mut cluster.nodes) {
        d.shutdown().await.expect("clean shutdown");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_observer_follows_the_leader_over_the_network() {
    let cluster = Cluster::start(3).await;
    let by = deadline(60);
    cluster.agreed_leader(0, by).await;
    let end = propose_all(&cluster, 0..5, by).await;

    // Node 4 is no voter: it fetches through the bootstrap servers (the voters).
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let dir = cluster.root.path().join("node-4/__cluster_metadata-0");
    let mut c = config(4, &cluster.voters, &dir, 0);
    c.quorum.raft.bootstrap_servers = cluster.voters.keys().copied().collect();
    let observer = RaftDriver::start(c, listener)
        .await
        .expect("start observer");
    let h = observer.handle();
    wait_hw(&h, end, by).await;
    assert_eq!(h.metrics().borrow().current_state, "observer");
    let (leader, _) = cluster.agreed_leader(0, by).await;
    let expected = committed(&cluster.handle(leader), end).await;
    assert_eq!(committed(&h, end).await, expected);
    observer.shutdown().await.expect("clean shutdown");
}

/// `controller.quorum.bootstrap.servers` given as the voters' `host:port` only: each entry
/// maps to the voter it names, and the observer follows the quorum through a leader kill.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_observer_follows_the_quorum_from_host_port_bootstrap_servers() {
    let mut cluster = Cluster::start(3).await;
    let by = deadline(60);
    let (first_leader, first_epoch) = cluster.agreed_leader(0, by).await;
    let end = propose_all(&cluster, 0..5, by).await;

    let value = cluster
        .addrs
        .values()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let bootstrap = parse_bootstrap_servers(&value, &cluster.voters).expect("host:port list");
    let ids: Vec<i32> = bootstrap.iter().map(|b| b.id).collect();
    assert_eq!(ids, vec![1, 2, 3], "each entry names a voter");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let dir = cluster.root.path().join("node-4/__cluster_metadata-0");
    let mut c = config(4, &cluster.voters, &dir, 0);
    c.quorum.bootstrap_servers = bootstrap;
    let observer = RaftDriver::start(c, listener)
        .await
        .expect("start observer");
    let h = observer.handle();
    wait_hw(&h, end, by).await;
    assert_eq!(h.metrics().borrow().current_leader, first_leader);

    // The leader dies: the observer finds its successor and reaches the new HW.
    let killed = cluster.nodes.remove(&first_leader).expect("leader");
    killed.kill().await;
    let (second_leader, _) = cluster.agreed_leader(first_epoch, by).await;
    let end = propose_all(&cluster, 5..10, by).await;
    wait_hw(&h, end, by).await;
    assert!(
        h.wait_for(by, |m| m.current_leader == second_leader).await,
        "the observer follows {second_leader}"
    );
    let expected = committed(&cluster.handle(second_leader), end).await;
    assert_eq!(committed(&h, end).await, expected);
    observer.shutdown().await.expect("clean shutdown");
}

/// Bootstrap servers that name no voter get negative ids (-2, -3, as Kafka): a dead
/// endpoint, and the voters under another name (`localhost` where the voters say
/// 127.0.0.1). The observer asks them, goes to the leader they name by its voter
/// endpoint, and reaches the leader's HW.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_observer_reaches_the_leader_through_bootstrap_servers_that_name_no_voter() {
    let cluster = Cluster::start(3).await;
    let by = deadline(60);
    cluster.agreed_leader(0, by).await;
    let end = propose_all(&cluster, 0..5, by).await;

    // A port nobody listens on: bound, then released.
    let dead = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind")
        .local_addr()
        .expect("addr");
    let mut value = format!("{dead}");
    for addr in cluster.addrs.values() {
        value.push_str(&format!(",localhost:{}", addr.port()));
    }
    let bootstrap = parse_bootstrap_servers(&value, &cluster.voters).expect("host:port list");
    let ids: Vec<i32> = bootstrap.iter().map(|b| b.id).collect();
    assert_eq!(ids, vec![-2, -3, -4, -5], "no entry names a voter");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let dir = cluster.root.path().join("node-4/__cluster_metadata-0");
    let mut c = config(4, &cluster.voters, &dir, 0);
    c.quorum.bootstrap_servers = bootstrap;
    let observer = RaftDriver::start(c, listener)
        .await
        .expect("start observer");
    let h = observer.handle();
    wait_hw(&h, end, by).await;
    let (leader, _) = cluster.agreed_leader(0, by).await;
    assert_eq!(h.metrics().borrow().current_leader, leader);
    assert_eq!(h.metrics().borrow().current_state, "observer");
    let expected = committed(&cluster.handle(leader), end).await;
    assert_eq!(committed(&h, end).await, expected);
    observer.shutdown().await.expect("clean shutdown");
}
