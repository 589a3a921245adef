//! Three real `kraftd controller` processes on loopback, talked to over Kafka's protocol as a
//! broker would: brokers register and heartbeat, topics and SCRAM users are created; the
//! active controller is killed with SIGKILL; the other two elect a new one and keep
//! serving; the killed one restarts and catches up from a snapshot, since the leader's log
//! start moved past it meanwhile. Every node ends with the same metadata.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kraftd_net::{Channel, ClientConfig};
use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kraftd_protocol::messages::broker_registration_request::Listener;
use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
use kraftd_protocol::messages::{
    AlterUserScramCredentialsRequest, BrokerHeartbeatRequest, BrokerRegistrationRequest,
    CreateTopicsRequest, DescribeQuorumRequest, DescribeUserScramCredentialsRequest,
};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody, Uuid};

use common::{run, stop_gracefully, voters, write_config, Node, BIN};

mod common;

struct Client {
    channels: Vec<(i32, Channel)>,
}

impl Client {
    /// Channels to `(id, port)`s; inside the runtime.
    fn new(nodes: &[(i32, u16)]) -> Client {
        Client {
            channels: nodes
                .iter()
                .map(|&(id, port)| {
                    let config = ClientConfig {
                        request_timeout: Duration::from_secs(3),
                        ..ClientConfig::new("controller-quorum-test")
                    };
                    (id, Channel::spawn(format!("127.0.0.1:{port}"), config))
                })
                .collect(),
        }
    }

    fn channel(&self, id: i32) -> &Channel {
        &self.channels.iter().find(|(i, _)| *i == id).unwrap().1
    }

    async fn call(&self, id: i32, body: RequestBody) -> Option<ResponseBody> {
        let channel = self.channel(id);
        let version = supported_range(body.key()).max;
        channel
            .call(channel.next_correlation_id(), version, body)
            .await
            .ok()
    }

    /// The leader as `asked` reports it, with the high watermark.
    async fn leader_seen_by(&self, asked: i32) -> Option<(i32, i64)> {
        let request = RequestBody::DescribeQuorum(DescribeQuorumRequest {
            topics: vec![TopicData {
                topic_name: "__cluster_metadata".into(),
                partitions: vec![PartitionData {
                    partition_index: 0,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        });
        match self.call(asked, request).await? {
            ResponseBody::DescribeQuorum(r) => {
                let p = r.topics.first()?.partitions.first()?;
                (p.error_code == 0 && p.leader_id >= 0).then_some((p.leader_id, p.high_watermark))
            }
            _ => None,
        }
    }

    /// Waits until a live node names a leader among `candidates`.
    async fn wait_for_leader(&self, live: &[i32], candidates: &[i32]) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            for id in live {
                if let Some((leader, _)) = self.leader_seen_by(*id).await {
                    if candidates.contains(&leader) {
                        return leader;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no leader among {candidates:?} within 30 s");
    }

    /// Sends a controller request to the active controller, retrying NOT_CONTROLLER and
    /// timeouts, until `done` accepts the response.
    async fn to_controller(
        &self,
        live: &[i32],
        body: RequestBody,
        done: impl Fn(&ResponseBody) -> bool,
    ) -> ResponseBody {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            assert!(
                Instant::now() < deadline,
                "no controller accepted {:?}",
                body.key()
            );
            let leader = self.wait_for_leader(live, live).await;
            if let Some(response) = self.call(leader, body.clone()).await {
                if done(&response) {
                    return response;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn register(broker_id: i32, cluster_id: &str) -> RequestBody {
    RequestBody::BrokerRegistration(BrokerRegistrationRequest {
        broker_id,
        cluster_id: cluster_id.to_string(),
        incarnation_id: Uuid([broker_id as u8 + 1; 16]),
        listeners: vec![Listener {
            name: "PLAINTEXT".into(),
            host: "127.0.0.1".into(),
            port: 9000 + broker_id as u16,
            security_protocol: 0,
            ..Default::default()
        }],
        features: kraftd_broker::server::supported_features(),
        previous_broker_epoch: -1,
        ..Default::default()
    })
}

fn heartbeat(broker_id: i32, epoch: i64) -> RequestBody {
    RequestBody::BrokerHeartbeat(BrokerHeartbeatRequest {
        broker_id,
        broker_epoch: epoch,
        current_metadata_offset: i64::MAX / 2,
        want_fence: false,
        ..Default::default()
    })
}

fn create_topics(names: impl IntoIterator<Item = String>) -> RequestBody {
    RequestBody::CreateTopics(CreateTopicsRequest {
        topics: names
            .into_iter()
            .map(|name| CreatableTopic {
                name,
                num_partitions: 1,
                replication_factor: 3,
                ..Default::default()
            })
            .collect(),
        timeout_ms: 10_000,
        ..Default::default()
    })
}

fn upsert_user(name: &str) -> RequestBody {
    RequestBody::AlterUserScramCredentials(AlterUserScramCredentialsRequest {
        upsertions: vec![ScramCredentialUpsertion {
            name: name.into(),
            mechanism: 1,
            iterations: 4096,
            salt: Bytes::from_static(b"salt-salt-salt"),
            salted_password: Bytes::from(vec![7u8; 32]),
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn describe_users() -> RequestBody {
    RequestBody::DescribeUserScramCredentials(DescribeUserScramCredentialsRequest {
        users: None,
        ..Default::default()
    })
}

fn users_of(response: &ResponseBody) -> Vec<String> {
    match response {
        ResponseBody::DescribeUserScramCredentials(r) => {
            let mut users: Vec<String> = r.results.iter().map(|u| u.user.clone()).collect();
            users.sort();
            users
        }
        other => panic!("unexpected response {other:?}"),
    }
}

/// Whether every topic of a CreateTopics response was created (or already existed, after a
/// retried request whose first attempt committed).
fn topics_created(response: &ResponseBody) -> bool {
    match response {
        ResponseBody::CreateTopics(r) => r.topics.iter().all(|t| {
            t.error_code == ErrorCode::None.code()
                || t.error_code == ErrorCode::TopicAlreadyExists.code()
        }),
        _ => false,
    }
}

fn segment_base_offsets(dir: &Path) -> Vec<i64> {
    let mut bases: Vec<i64> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().to_string();
                    name.strip_suffix(".log").and_then(|b| b.parse().ok())
                })
                .collect()
        })
        .unwrap_or_default();
    bases.sort();
    bases
}

#[test]
fn three_controllers_survive_kill_9_of_the_leader_and_the_restarted_one_catches_up() {
    let root = tempfile::tempdir().unwrap();
    let cluster_id = run(&["random-uuid"]).trim().to_string();
    let mut nodes: Vec<Node> = (1..=3).map(|id| Node::new(root.path(), id)).collect();
    let voters = voters(&nodes);
    for node in &nodes {
        std::fs::create_dir_all(&node.dir).unwrap();
        write_config(node, &voters);
        let config = node.config_path();
        run(&[
            "format",
            "--config",
            config.to_str().unwrap(),
            "--cluster-id",
            &cluster_id,
        ]);
        assert!(node.dir.join("data/meta.properties").exists());
        assert!(node.dir.join("data/bootstrap.checkpoint").exists());
    }
    // Starting on an unformatted directory fails with one line naming it.
    let unformatted = root.path().join("unformatted.properties");
    std::fs::write(
        &unformatted,
        std::fs::read_to_string(nodes[0].config_path())
            .unwrap()
            .replace(
                &nodes[0].dir.join("data").display().to_string(),
                &root.path().join("empty").display().to_string(),
            ),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["controller", "--config", unformatted.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not formatted"));

    for node in &mut nodes {
        node.start();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let endpoints: Vec<(i32, u16)> = nodes.iter().map(|n| (n.id, n.port)).collect();
    runtime.block_on(async {
        let client = Client::new(&endpoints);
        let all = [1, 2, 3];
        let first_leader = client.wait_for_leader(&all, &all).await;

        // Three brokers register and get unfenced.
        let mut epochs = Vec::new();
        for broker in [100, 101, 102] {
            let r = client
                .to_controller(&all, register(broker, &cluster_id), |r| {
                    matches!(r, ResponseBody::BrokerRegistration(b) if b.error_code == 0)
                })
                .await;
            let ResponseBody::BrokerRegistration(r) = r else { unreachable!() };
            epochs.push((broker, r.broker_epoch));
        }
        for (broker, epoch) in &epochs {
            client
                .to_controller(&all, heartbeat(*broker, *epoch), |r| {
                    matches!(r, ResponseBody::BrokerHeartbeat(h) if h.error_code == 0 && !h.is_fenced)
                })
                .await;
        }
        let r = client
            .to_controller(&all, create_topics((0..10).map(|i| format!("t{i}"))), topics_created)
            .await;
        assert!(topics_created(&r), "{r:?}");
        client
            .to_controller(&all, upsert_user("alice"), |r| {
                matches!(r, ResponseBody::AlterUserScramCredentials(a) if a.results.iter().all(|x| x.error_code == 0))
            })
            .await;
        let (_, hw_at_kill) = client.leader_seen_by(first_leader).await.unwrap();

        // kill -9 the active controller.
        let killed = first_leader;
        nodes.iter_mut().find(|n| n.id == killed).unwrap().kill9();
        let live: Vec<i32> = all.iter().copied().filter(|i| *i != killed).collect();
        let second_leader = client.wait_for_leader(&live, &live).await;
        assert_ne!(second_leader, killed);

        // The survivors keep serving: brokers heartbeat to the new controller, more topics
        // and users are created.
        for (broker, epoch) in &epochs {
            client
                .to_controller(&live, heartbeat(*broker, *epoch), |r| {
                    matches!(r, ResponseBody::BrokerHeartbeat(h) if h.error_code == 0)
                })
                .await;
        }
        let r = client
            .to_controller(&live, create_topics((10..20).map(|i| format!("t{i}"))), topics_created)
            .await;
        assert!(topics_created(&r), "{r:?}");
        client
            .to_controller(&live, upsert_user("bob"), |r| {
                matches!(r, ResponseBody::AlterUserScramCredentials(a) if a.results.iter().all(|x| x.error_code == 0))
            })
            .await;

        // Write "filler" (at least once: the leader's log may already start past the killed
        // node's end) until the leader's log starts past everything the killed node had, so
        // it can only catch up from a snapshot.
        let leader_dir = nodes.iter().find(|n| n.id == second_leader).unwrap().metadata_dir();
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            client
                .to_controller(&live, upsert_user("filler"), |r| {
                    matches!(r, ResponseBody::AlterUserScramCredentials(a) if a.results.iter().all(|x| x.error_code == 0))
                })
                .await;
            let bases = segment_base_offsets(&leader_dir);
            if bases.first().is_some_and(|b| *b > hw_at_kill + 1) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the leader's log never started past {hw_at_kill}: segments {bases:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }

        // Restart the killed node: it follows the new leader and loads the snapshot.
        nodes.iter_mut().find(|n| n.id == killed).unwrap().start();
        let expected = vec!["alice".to_string(), "bob".to_string(), "filler".to_string()];
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let seen = client.call(killed, describe_users()).await.map(|r| users_of(&r));
            if seen.as_ref() == Some(&expected) {
                break;
            }
            if Instant::now() >= deadline {
                let tail = |id: i32| {
                    let logs = nodes.iter().find(|n| n.id == id).unwrap().logs();
                    let lines: Vec<&str> = logs.lines().collect();
                    lines[lines.len().saturating_sub(60)..].join("\n")
                };
                panic!(
                    "the restarted node sees {seen:?}\n--- node {killed} (restarted):\n{}\n--- node {second_leader} (leader):\n{}",
                    tail(killed),
                    tail(second_leader)
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        for id in all {
            let users = users_of(&client.call(id, describe_users()).await.unwrap());
            assert_eq!(users, expected, "node {id}");
        }
        let restarted = nodes.iter().find(|n| n.id == killed).unwrap();
        let logs = restarted.logs();
        assert!(
            logs.contains("loaded a snapshot"),
            "the restarted node did not load a snapshot:\n{logs}"
        );
    });
    stop_gracefully(&mut nodes);
}
