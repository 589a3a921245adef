//! KIP-853 leader endpoints on real sockets: an observer that knows the quorum only through
//! a bootstrap server naming no voter (`localhost:<port>`, an alias of one voter) learns
//! where the leader listens from the Raft responses themselves, and the voters learn it from
//! BeginQuorumEpoch. Self-contained (its own small cluster), so it shares no helpers with
//! [`crate::cluster`].

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use kraftd_raft::driver::{
    parse_bootstrap_servers, DriverConfig, RaftDriver, RaftHandle, VoterEndpoint,
};
use tokio::net::TcpListener;
use tokio::time::Instant;

/// The cluster tests' node config; each node here runs once (incarnation 0).
fn config(id: i32, voters: &BTreeMap<i32, VoterEndpoint>, dir: &Path) -> DriverConfig {
    crate::cluster::config(id, voters, dir, 0)
}

/// The leader once `handles` all name the same one and it says so itself.
async fn agreed_leader(handles: &[RaftHandle], by: Instant) -> i32 {
    loop {
        let views: Vec<(i32, i32)> = handles
            .iter()
            .map(|h| {
                let m = h.metrics().borrow().clone();
                (m.current_leader, m.current_epoch)
            })
            .collect();
        let (leader, _) = views[0];
        let leads = handles
            .iter()
            .any(|h| h.node_id() == leader && h.metrics().borrow().current_state == "leader");
        if leader >= 0 && leads && views.iter().all(|v| *v == views[0]) {
            return leader;
        }
        assert!(Instant::now() < by, "no agreed leader: {views:?}");
        let mut rx = handles[0].metrics();
        let _ = tokio::time::timeout(Duration::from_millis(50), rx.changed()).await;
    }
}

#[tokio::test]
async fn an_observer_behind_a_bootstrap_alias_learns_the_leaders_endpoint_from_responses() {
    let root = tempfile::tempdir().expect("temp dir");
    let by = Instant::now() + Duration::from_secs(60);
    let mut listeners = BTreeMap::new();
    let mut voters = BTreeMap::new();
    for id in 1..=3 {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = l.local_addr().expect("addr").port();
        let host = "127.0.0.1".to_string();
        voters.insert(id, VoterEndpoint { id, host, port });
        listeners.insert(id, l);
    }
    let mut nodes = Vec::new();
    for (id, l) in listeners {
        let dir = root.path().join(format!("node-{id}/__cluster_metadata-0"));
        let driver = RaftDriver::start(config(id, &voters, &dir), l)
            .await
            .expect("start voter");
        nodes.push(driver);
    }
    let handles: Vec<RaftHandle> = nodes.iter().map(|d| d.handle()).collect();
    let leader = agreed_leader(&handles, by).await;
    let leader_address = voters[&leader].address();

    // The voters heard it in BeginQuorumEpoch (or a Fetch response) from the leader itself.
    for h in handles.iter().filter(|h| h.node_id() != leader) {
        let learned = h
            .wait_for(by, |m| {
                m.learned_endpoints.get(&leader) == Some(&leader_address)
            })
            .await;
        assert!(learned, "voter {} learned {leader_address}", h.node_id());
    }

    // The observer knows the leader's id only from the replies of `localhost:<port>`, an
    // alias of one voter that names no voter (a negative id).
    let alias = voters
        .values()
        .find(|v| v.id != leader)
        .expect("a follower");
    let value = format!("localhost:{}", alias.port);
    let bootstrap = parse_bootstrap_servers(&value, &voters).expect("host:port");
    assert!(
        bootstrap.iter().all(|b| b.id < 0),
        "the alias names no voter"
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let dir = root.path().join("node-4/__cluster_metadata-0");
    let mut c = config(4, &voters, &dir);
    c.quorum.bootstrap_servers = bootstrap;
    let observer = RaftDriver::start(c, listener)
        .await
        .expect("start observer");
    let h = observer.handle();
    let learned = h
        .wait_for(by, |m| {
            m.current_leader == leader
                && m.high_watermark > 0
                && m.learned_endpoints.get(&leader) == Some(&leader_address)
        })
        .await;
    let m = h.metrics().borrow().clone();
    assert!(
        learned,
        "the observer learned leader {leader} at {leader_address}: leader {}, hw {}, learned {:?}",
        m.current_leader, m.high_watermark, m.learned_endpoints
    );
    assert_eq!(m.current_state, "observer");
    assert_eq!(
        m.learned_endpoints.len(),
        1,
        "only the leader's endpoint is learned: {:?}",
        m.learned_endpoints
    );

    observer.shutdown().await.expect("clean shutdown");
    for d in nodes {
        d.shutdown().await.expect("clean shutdown");
    }
}
