//! A controller node in process, on loopback with a real metadata log: the controller APIs
//! answer over Kafka's protocol (directly and inside an Envelope), the first active
//! controller writes the bootstrap metadata, and the publishers apply committed changes
//! (dynamic configs, SCRAM credentials, ACLs) without a restart.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kraftd_controller::auth::serialize_principal;
use kraftd_controller::control::acl::{OPERATION_READ, RESOURCE_TYPE_TOPIC};
use kraftd_controller::image::ScramMechanism;
use kraftd_controller::node::ControllerNode;
use kraftd_controller::publisher::AuthorizerConfig;
use kraftd_controller::testing::start_controller_node_with;
use kraftd_net::KafkaPrincipal;
use kraftd_net::{Channel, ClientConfig};
use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::header::{decode_response, encode_request};
use kraftd_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kraftd_protocol::messages::create_acls_request::AclCreation;
use kraftd_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kraftd_protocol::messages::{
    AlterUserScramCredentialsRequest, BrokerRegistrationRequest, CreateAclsRequest,
    EnvelopeRequest, IncrementalAlterConfigsRequest, RequestHeader,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};

const CLUSTER_ID: &str = "node-test-cluster-id1";

/// A node whose authorizer runs, with this test's connection (`User:ANONYMOUS` on
/// PLAINTEXT) and the Envelope's admin as super users, as a cluster's brokers are.
async fn start(dir: &std::path::Path) -> (ControllerNode, Channel) {
    let authorizer = AuthorizerConfig {
        enabled: true,
        super_users: AuthorizerConfig::parse_super_users("User:ANONYMOUS;User:admin"),
        ..Default::default()
    };
    let (node, port) = start_controller_node_with(dir, CLUSTER_ID, authorizer).await;
    let channel = Channel::spawn(format!("127.0.0.1:{port}"), ClientConfig::new("node-test"));
    (node, channel)
}

async fn call(channel: &Channel, body: RequestBody) -> ResponseBody {
    let version = supported_range(body.key()).max;
    channel
        .call(channel.next_correlation_id(), version, body)
        .await
        .unwrap()
}

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !check() {
        assert!(Instant::now() < deadline, "{what} never happened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_apis_answer_and_publishers_apply_committed_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (node, channel) = start(dir.path()).await;

    // SCRAM: the credential reaches the provider without a restart.
    let response = call(
        &channel,
        RequestBody::AlterUserScramCredentials(AlterUserScramCredentialsRequest {
            upsertions: vec![ScramCredentialUpsertion {
                name: "alice".into(),
                mechanism: 1,
                iterations: 4096,
                salt: Bytes::from_static(b"0123456789abcdef"),
                salted_password: Bytes::from(vec![9; 32]),
                ..Default::default()
            }],
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::AlterUserScramCredentials(r) = response else {
        panic!("{response:?}")
    };
    assert_eq!(r.results[0].error_code, 0, "{r:?}");
    let credentials = node.published().credentials.clone();
    eventually("the SCRAM credential published", || {
        credentials
            .credential("alice", ScramMechanism::ScramSha256)
            .is_some_and(|c| c.iterations == 4096)
    })
    .await;

    // A dynamic cluster-default broker config reaches the config view.
    let response = call(
        &channel,
        RequestBody::IncrementalAlterConfigs(IncrementalAlterConfigsRequest {
            resources: vec![AlterConfigsResource {
                resource_type: 4,
                resource_name: String::new(),
                configs: vec![AlterableConfig {
                    name: "log.retention.ms".into(),
                    config_operation: 0,
                    value: Some("123456".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::IncrementalAlterConfigs(r) = response else {
        panic!("{response:?}")
    };
    assert_eq!(r.responses[0].error_code, 0, "{r:?}");
    let configs = node.published().dynamic_configs.clone();
    eventually("the dynamic config published", || {
        configs.broker_config("log.retention.ms").as_deref() == Some("123456")
    })
    .await;

    // An ACL, forwarded inside an Envelope as a broker would, reaches the authorizer.
    let inner = RequestBody::CreateAcls(CreateAclsRequest {
        creations: vec![AclCreation {
            resource_type: RESOURCE_TYPE_TOPIC,
            resource_name: "orders".into(),
            resource_pattern_type: 3,
            principal: "User:bob".into(),
            host: "*".into(),
            operation: OPERATION_READ,
            permission_type: 3,
            ..Default::default()
        }],
        ..Default::default()
    });
    let inner_version = supported_range(ApiKey::CreateAcls).max;
    let header = RequestHeader {
        request_api_key: ApiKey::CreateAcls.code(),
        request_api_version: inner_version,
        correlation_id: 77,
        client_id: Some("admin".into()),
        ..Default::default()
    };
    let request_data = encode_request(&header, &inner).unwrap().into_bytes();
    let response = call(
        &channel,
        RequestBody::Envelope(EnvelopeRequest {
            request_data,
            request_principal: Some(serialize_principal(&KafkaPrincipal::user("admin"))),
            client_host_address: Bytes::from_static(&[127, 0, 0, 1]),
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::Envelope(envelope) = response else {
        panic!("{response:?}")
    };
    assert_eq!(envelope.error_code, 0);
    let (inner_header, inner_response) = decode_response(
        ApiKey::CreateAcls,
        inner_version,
        envelope.response_data.unwrap(),
    )
    .unwrap();
    assert_eq!(inner_header.correlation_id, 77);
    let ResponseBody::CreateAcls(r) = inner_response else {
        panic!("{inner_response:?}")
    };
    assert_eq!(r.results[0].error_code, 0, "{r:?}");
    let authorizer = node.published().authorizer.clone();
    eventually("the ACL published", || {
        authorizer.authorize(
            "User:bob",
            "10.0.0.1",
            OPERATION_READ,
            RESOURCE_TYPE_TOPIC,
            "orders",
        )
    })
    .await;
    assert!(!authorizer.authorize(
        "User:eve",
        "10.0.0.1",
        OPERATION_READ,
        RESOURCE_TYPE_TOPIC,
        "orders"
    ));

    // A broker of another cluster is refused.
    let response = call(
        &channel,
        RequestBody::BrokerRegistration(BrokerRegistrationRequest {
            broker_id: 5,
            cluster_id: "another-cluster-id-xyz".into(),
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::BrokerRegistration(r) = response else {
        panic!("{response:?}")
    };
    assert_eq!(r.error_code, ErrorCode::InconsistentClusterId.code());

    node.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_controller_rebuilds_its_image_and_publishers_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let (node, channel) = start(dir.path()).await;
    let response = call(
        &channel,
        RequestBody::AlterUserScramCredentials(AlterUserScramCredentialsRequest {
            upsertions: vec![ScramCredentialUpsertion {
                name: "carol".into(),
                mechanism: 2,
                iterations: 8192,
                salt: Bytes::from_static(b"salt"),
                salted_password: Bytes::from(vec![1; 64]),
                ..Default::default()
            }],
            ..Default::default()
        }),
    )
    .await;
    assert!(
        matches!(response, ResponseBody::AlterUserScramCredentials(ref r) if r.results[0].error_code == 0)
    );
    let before = node.committed_image();
    node.shutdown().await.unwrap();
    drop(channel);

    let (node, _channel) = start(dir.path()).await;
    let credentials = node.published().credentials.clone();
    eventually("the credential replayed after restart", || {
        credentials
            .credential("carol", ScramMechanism::ScramSha512)
            .is_some()
    })
    .await;
    let mut status = node.status();
    let deadline = Instant::now() + Duration::from_secs(5);
    while status.borrow().image.scram != before.scram {
        assert!(Instant::now() < deadline);
        let _ = tokio::time::timeout(Duration::from_millis(100), status.changed()).await;
    }
    node.shutdown().await.unwrap();
}

/// A standby (here a voter that can never be elected: the other voter of two never answers)
/// answers a forwarded write with NOT_CONTROLLER on the Envelope itself and no response in
/// it, as Kafka's controllers do: a Kafka broker's forwarding channel drops a controller
/// only on an Envelope-level NOT_CONTROLLER, and kept forwarding every client's
/// CreateTopics to a kraftd standby until the clients timed out (node_swap, controller
/// swap step 4). A request sent directly gets its own response with the error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_answers_a_forwarded_write_with_not_controller_on_the_envelope() {
    use kraftd_protocol::messages::create_topics_request::CreatableTopic;
    use kraftd_protocol::messages::CreateTopicsRequest;
    use kraftd_raft::driver::{QuorumConfig, VoterEndpoint};
    use std::collections::BTreeMap;

    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // Voter 2's port: bound then dropped, so nothing listens there.
    let absent = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let voters = BTreeMap::from([
        (
            1,
            VoterEndpoint {
                id: 1,
                host: "127.0.0.1".into(),
                port,
            },
        ),
        (
            2,
            VoterEndpoint {
                id: 2,
                host: "127.0.0.1".into(),
                port: absent,
            },
        ),
    ]);
    let quorum = QuorumConfig::new(CLUSTER_ID, voters, dir.path().join("__cluster_metadata-0"));
    let config = kraftd_controller::node::ControllerNodeConfig::new(1, quorum);
    let node = ControllerNode::start(config, listener).await.unwrap();
    let channel = Channel::spawn(format!("127.0.0.1:{port}"), ClientConfig::new("node-test"));

    let create = RequestBody::CreateTopics(CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: "orders".into(),
            num_partitions: 1,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 5_000,
        ..Default::default()
    });
    let ResponseBody::CreateTopics(direct) = call(&channel, create.clone()).await else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(
        direct.topics[0].error_code,
        ErrorCode::NotController.code(),
        "{direct:?}"
    );

    let inner_version = supported_range(ApiKey::CreateTopics).max;
    let header = RequestHeader {
        request_api_key: ApiKey::CreateTopics.code(),
        request_api_version: inner_version,
        correlation_id: 78,
        client_id: Some("admin".into()),
        ..Default::default()
    };
    let response = call(
        &channel,
        RequestBody::Envelope(EnvelopeRequest {
            request_data: encode_request(&header, &create).unwrap().into_bytes(),
            request_principal: Some(serialize_principal(&KafkaPrincipal::user("admin"))),
            client_host_address: Bytes::from_static(&[127, 0, 0, 1]),
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::Envelope(envelope) = response else {
        panic!("{response:?}")
    };
    assert_eq!(
        envelope.error_code,
        ErrorCode::NotController.code(),
        "{envelope:?}"
    );
    assert!(envelope.response_data.is_none(), "{envelope:?}");
    drop(node);
}
