//! The controller listener's authorization, over Kafka's protocol on loopback: the nodes' own
//! APIs (registration, Raft's RPCs, Envelope) need CLUSTER_ACTION, so a principal that is not
//! the cluster's is refused with CLUSTER_AUTHORIZATION_FAILED; a request forwarded in an
//! Envelope is checked again as the client it names, per topic and resource with Kafka's
//! errors; without an authorizer the ACL APIs answer SECURITY_DISABLED.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kraftd_controller::auth::serialize_principal;
use kraftd_controller::control::acl::*;
use kraftd_controller::node::ControllerNode;
use kraftd_controller::publisher::*;
use kraftd_controller::testing::{start_controller_node_with, ControlHarness, CLUSTER_ID};
use kraftd_net::{Channel, ClientConfig, KafkaPrincipal};
use kraftd_protocol::api_versions::{supported_range, ApiVersionsTable, ListenerType};
use kraftd_protocol::header::{decode_response, encode_request};
use kraftd_protocol::messages::alter_configs_request;
use kraftd_protocol::messages::create_acls_request::AclCreation;
use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kraftd_protocol::messages::delete_topics_request::DeleteTopicState;
use kraftd_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kraftd_protocol::messages::{
    AlterConfigsRequest, BrokerHeartbeatRequest, BrokerRegistrationRequest, CreateAclsRequest,
    CreateTopicsRequest, DeleteAclsRequest, DeleteTopicsRequest, DescribeAclsRequest,
    DescribeClusterRequest, EnvelopeRequest, IncrementalAlterConfigsRequest, RequestHeader,
    VoteRequest,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};
use kraftd_raft::driver::RaftRequestRouter;

async fn start(dir: &std::path::Path, authorizer: AuthorizerConfig) -> (ControllerNode, Channel) {
    let (node, port) = start_controller_node_with(dir, CLUSTER_ID, authorizer).await;
    let channel = Channel::spawn(format!("127.0.0.1:{port}"), ClientConfig::new("authz-test"));
    (node, channel)
}

async fn call(channel: &Channel, body: RequestBody) -> ResponseBody {
    let version = supported_range(body.key()).max;
    call_at(channel, version, body).await
}

async fn call_at(channel: &Channel, version: i16, body: RequestBody) -> ResponseBody {
    channel
        .call(channel.next_correlation_id(), version, body)
        .await
        .unwrap()
}

/// `inner` forwarded in an Envelope as `principal` would be by a broker; the inner response.
async fn forwarded(channel: &Channel, principal: &str, inner: RequestBody) -> ResponseBody {
    let key = inner.key();
    let version = supported_range(key).max;
    let header = RequestHeader {
        request_api_key: key.code(),
        request_api_version: version,
        correlation_id: 5,
        client_id: Some("client".into()),
        ..Default::default()
    };
    let envelope = EnvelopeRequest {
        request_data: encode_request(&header, &inner).unwrap().into_bytes(),
        request_principal: Some(serialize_principal(&KafkaPrincipal::user(principal))),
        client_host_address: Bytes::from_static(&[10, 0, 0, 7]),
        ..Default::default()
    };
    let ResponseBody::Envelope(e) = call(channel, RequestBody::Envelope(envelope)).await else {
        panic!("not an Envelope response")
    };
    assert_eq!(e.error_code, 0, "the Envelope itself is refused");
    decode_response(key, version, e.response_data.unwrap())
        .unwrap()
        .1
}

fn acl(resource_type: i8, name: &str, principal: &str, operation: i8) -> AclCreation {
    AclCreation {
        resource_type,
        resource_name: name.into(),
        resource_pattern_type: PATTERN_TYPE_LITERAL,
        principal: principal.into(),
        host: "*".into(),
        operation,
        permission_type: PERMISSION_ALLOW,
        ..Default::default()
    }
}

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !check() {
        assert!(Instant::now() < deadline, "{what} never happened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_listener_admits_only_the_clusters_principals() {
    let dir = tempfile::tempdir().unwrap();
    // No super user, no ACL: this connection (User:ANONYMOUS) is not the cluster's.
    let strict = AuthorizerConfig {
        enabled: true,
        ..Default::default()
    };
    let (node, channel) = start(dir.path(), strict).await;
    let refused = ErrorCode::ClusterAuthorizationFailed.code();

    let registration = call(
        &channel,
        RequestBody::BrokerRegistration(BrokerRegistrationRequest {
            broker_id: 7,
            cluster_id: CLUSTER_ID.into(),
            ..Default::default()
        }),
    )
    .await;
    assert!(
        matches!(&registration, ResponseBody::BrokerRegistration(r) if r.error_code == refused),
        "{registration:?}"
    );

    let mut raft_table = ApiVersionsTable::new(ListenerType::Controller);
    RaftRequestRouter::advertise(&mut raft_table);
    let vote_version = raft_table.range(ApiKey::Vote).unwrap().max;
    let vote = call_at(
        &channel,
        vote_version,
        RequestBody::Vote(VoteRequest {
            cluster_id: Some(CLUSTER_ID.into()),
            voter_id: 1,
            ..Default::default()
        }),
    )
    .await;
    assert!(
        matches!(&vote, ResponseBody::Vote(r) if r.error_code == refused),
        "{vote:?}"
    );

    let envelope = call(
        &channel,
        RequestBody::Envelope(EnvelopeRequest {
            request_data: Bytes::new(),
            request_principal: Some(serialize_principal(&KafkaPrincipal::user("admin"))),
            client_host_address: Bytes::from_static(&[127, 0, 0, 1]),
            ..Default::default()
        }),
    )
    .await;
    assert!(
        matches!(&envelope, ResponseBody::Envelope(r) if r.error_code == refused && r.response_data.is_none()),
        "{envelope:?}"
    );

    // DescribeCluster on a controller needs ALTER on the cluster, as in Kafka.
    let described = call(
        &channel,
        RequestBody::DescribeCluster(DescribeClusterRequest {
            endpoint_type: 2,
            ..Default::default()
        }),
    )
    .await;
    assert!(
        matches!(&described, ResponseBody::DescribeCluster(r) if r.error_code == refused),
        "{described:?}"
    );
    node.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarded_request_is_authorized_again_as_its_client() {
    let dir = tempfile::tempdir().unwrap();
    // This connection plays the broker (a super user, as brokers are); alice is a client.
    let config = AuthorizerConfig {
        enabled: true,
        super_users: AuthorizerConfig::parse_super_users("User:ANONYMOUS"),
        ..Default::default()
    };
    let (node, channel) = start(dir.path(), config).await;
    let alice = "User:alice";
    let created = call(
        &channel,
        RequestBody::CreateAcls(CreateAclsRequest {
            creations: vec![
                acl(RESOURCE_TYPE_TOPIC, "orders", alice, OPERATION_CREATE),
                acl(RESOURCE_TYPE_TOPIC, "described", alice, OPERATION_CREATE),
                acl(
                    RESOURCE_TYPE_TOPIC,
                    "described",
                    alice,
                    OPERATION_ALTER_CONFIGS,
                ),
            ],
            ..Default::default()
        }),
    )
    .await;
    assert!(
        matches!(&created, ResponseBody::CreateAcls(r) if r.results.iter().all(|x| x.error_code == 0)),
        "{created:?}"
    );
    let authorizer = node.published().authorizer.clone();
    eventually("the ACLs published", || authorizer.acls().len() == 3).await;
    // A broker to place topics on, registered and unfenced by this (super user) connection.
    let registration = ControlHarness::new(false, 1).registration_request(2, -1);
    let response = call(&channel, RequestBody::BrokerRegistration(registration)).await;
    let ResponseBody::BrokerRegistration(r) = response else {
        panic!("{response:?}")
    };
    assert_eq!(r.error_code, 0, "{r:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let heartbeat = RequestBody::BrokerHeartbeat(BrokerHeartbeatRequest {
            broker_id: 2,
            broker_epoch: r.broker_epoch,
            current_metadata_offset: i64::MAX / 2,
            want_fence: false,
            ..Default::default()
        });
        match call(&channel, heartbeat).await {
            ResponseBody::BrokerHeartbeat(h) if h.error_code == 0 && !h.is_fenced => break,
            other => assert!(Instant::now() < deadline, "never unfenced: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // CreateTopics: CREATE per topic; configs shown only with DESCRIBE_CONFIGS.
    let topic = |name: &str| CreatableTopic {
        name: name.into(),
        num_partitions: 1,
        replication_factor: 1,
        ..Default::default()
    };
    let response = forwarded(
        &channel,
        "alice",
        RequestBody::CreateTopics(CreateTopicsRequest {
            topics: vec![topic("orders"), topic("payments"), topic("described")],
            timeout_ms: 5000,
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::CreateTopics(r) = response else {
        panic!("{response:?}")
    };
    let by_name = |name: &str| r.topics.iter().find(|t| t.name == name).unwrap();
    let payments = by_name("payments");
    assert_eq!(
        payments.error_code,
        ErrorCode::TopicAuthorizationFailed.code()
    );
    assert_eq!(
        payments.error_message.as_deref(),
        Some("Authorization failed.")
    );
    // Created, but alice may not see its configs: Kafka answers without them.
    let orders = by_name("orders");
    assert_eq!(orders.error_code, 0, "{orders:?}");
    assert_eq!(
        orders.topic_config_error_code,
        ErrorCode::TopicAuthorizationFailed.code()
    );
    assert_eq!((orders.num_partitions, orders.replication_factor), (-1, -1));
    assert!(orders.configs.iter().flatten().next().is_none());
    // ALTER_CONFIGS implies DESCRIBE_CONFIGS: the topic's details shown.
    let described = by_name("described");
    assert_eq!(described.error_code, 0, "{described:?}");
    assert_eq!(described.topic_config_error_code, 0);
    assert_eq!(
        (described.num_partitions, described.replication_factor),
        (1, 1)
    );

    // DeleteTopics by a name alice may not describe: refused without saying more.
    let response = forwarded(
        &channel,
        "alice",
        RequestBody::DeleteTopics(DeleteTopicsRequest {
            topics: vec![DeleteTopicState {
                name: Some("payments".into()),
                ..Default::default()
            }],
            timeout_ms: 5000,
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::DeleteTopics(r) = response else {
        panic!("{response:?}")
    };
    let codes: Vec<_> = r.responses.iter().map(|t| t.error_code).collect();
    assert_eq!(codes, [ErrorCode::TopicAuthorizationFailed.code()]);

    // IncrementalAlterConfigs: ALTER_CONFIGS per resource, the cluster's for brokers; a
    // broker logger needs CLUSTER_ACTION on the cluster (Kafka 4.4's RuntimeLoggerManager).
    let alter = |resource_type: i8, name: &str| AlterConfigsResource {
        resource_type,
        resource_name: name.into(),
        configs: vec![AlterableConfig {
            name: "retention.ms".into(),
            config_operation: 0,
            value: Some("1000".into()),
            ..Default::default()
        }],
        ..Default::default()
    };
    let response = forwarded(
        &channel,
        "alice",
        RequestBody::IncrementalAlterConfigs(IncrementalAlterConfigsRequest {
            resources: vec![alter(2, "payments"), alter(4, ""), alter(8, "1")],
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::IncrementalAlterConfigs(r) = response else {
        panic!("{response:?}")
    };
    let codes: Vec<_> = r
        .responses
        .iter()
        .map(|x| (x.resource_type, x.error_code, x.error_message.clone()))
        .collect();
    assert!(codes.contains(&(
        2,
        ErrorCode::TopicAuthorizationFailed.code(),
        Some("Topic authorization failed.".into())
    )));
    for cluster_resource in [4, 8] {
        assert!(codes.contains(&(
            cluster_resource,
            ErrorCode::ClusterAuthorizationFailed.code(),
            Some("Cluster authorization failed.".into())
        )));
    }
    // AlterConfigs never alters a broker logger: INVALID_REQUEST whoever asks, as in Kafka.
    let response = forwarded(
        &channel,
        "alice",
        RequestBody::AlterConfigs(AlterConfigsRequest {
            resources: vec![alter_configs_request::AlterConfigsResource {
                resource_type: 8,
                resource_name: "1".into(),
                ..Default::default()
            }],
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::AlterConfigs(r) = response else {
        panic!("{response:?}")
    };
    let codes: Vec<_> = r.responses.iter().map(|x| x.error_code).collect();
    assert_eq!(codes, [ErrorCode::InvalidRequest.code()]);

    // CreateAcls needs ALTER on the cluster: refused for alice, as a whole.
    let response = forwarded(
        &channel,
        "alice",
        RequestBody::CreateAcls(CreateAclsRequest {
            creations: vec![acl(RESOURCE_TYPE_TOPIC, "x", alice, OPERATION_ALL)],
            ..Default::default()
        }),
    )
    .await;
    assert!(
        matches!(&response, ResponseBody::CreateAcls(r) if r.results[0].error_code == ErrorCode::ClusterAuthorizationFailed.code()),
        "{response:?}"
    );
    node.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_authorizer_the_acl_apis_answer_security_disabled() {
    let dir = tempfile::tempdir().unwrap();
    let (node, channel) = start(dir.path(), AuthorizerConfig::default()).await;
    let disabled = ErrorCode::SecurityDisabled.code();
    let response = call(
        &channel,
        RequestBody::CreateAcls(CreateAclsRequest {
            creations: vec![acl(RESOURCE_TYPE_TOPIC, "t", "User:a", OPERATION_READ)],
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::CreateAcls(r) = response else {
        panic!("{response:?}")
    };
    assert_eq!(r.results[0].error_code, disabled);
    assert_eq!(
        r.results[0].error_message.as_deref(),
        Some("No Authorizer is configured.")
    );
    let response = call(
        &channel,
        RequestBody::DeleteAcls(DeleteAclsRequest {
            filters: vec![DeleteAclsFilter {
                resource_type_filter: RESOURCE_TYPE_ANY,
                pattern_type_filter: PATTERN_TYPE_ANY,
                operation: OPERATION_ANY,
                permission_type: PERMISSION_ANY,
                ..Default::default()
            }],
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::DeleteAcls(r) = response else {
        panic!("{response:?}")
    };
    assert_eq!(r.filter_results[0].error_code, disabled);
    let response = call(
        &channel,
        RequestBody::DescribeAcls(DescribeAclsRequest {
            resource_type_filter: RESOURCE_TYPE_ANY,
            pattern_type_filter: PATTERN_TYPE_ANY,
            operation: OPERATION_ANY,
            permission_type: PERMISSION_ANY,
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::DescribeAcls(r) = response else {
        panic!("{response:?}")
    };
    assert_eq!(r.error_code, disabled);
    assert_eq!(
        r.error_message.as_deref(),
        Some("No Authorizer is configured on the broker")
    );
    node.shutdown().await.unwrap();
}

/// AlterPartitionReassignments needs ALTER and ListPartitionReassignments DESCRIBE on the
/// cluster (Kafka's `ControllerApis`); a principal with them gets Kafka's per-partition
/// answers through the controller's event loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reassignment_apis_need_alter_and_describe_on_the_cluster() {
    use kraftd_protocol::messages::alter_partition_reassignments_request::{
        ReassignablePartition, ReassignableTopic,
    };
    use kraftd_protocol::messages::{
        AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest,
    };
    let dir = tempfile::tempdir().unwrap();
    let config = AuthorizerConfig {
        enabled: true,
        super_users: AuthorizerConfig::parse_super_users("User:ANONYMOUS"),
        ..Default::default()
    };
    let (node, channel) = start(dir.path(), config).await;
    let alter = RequestBody::AlterPartitionReassignments(AlterPartitionReassignmentsRequest {
        topics: vec![ReassignableTopic {
            name: "absent".into(),
            partitions: vec![ReassignablePartition {
                partition_index: 0,
                replicas: Some(vec![1]),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    let list =
        RequestBody::ListPartitionReassignments(ListPartitionReassignmentsRequest::default());

    let refused = ErrorCode::ClusterAuthorizationFailed.code();
    let response = forwarded(&channel, "alice", alter.clone()).await;
    assert!(
        matches!(&response, ResponseBody::AlterPartitionReassignments(r)
            if r.error_code == refused && r.responses[0].partitions[0].error_code == refused),
        "{response:?}"
    );
    let response = forwarded(&channel, "alice", list.clone()).await;
    assert!(
        matches!(&response, ResponseBody::ListPartitionReassignments(r) if r.error_code == refused),
        "{response:?}"
    );

    let response = forwarded(&channel, "ANONYMOUS", alter).await;
    let ResponseBody::AlterPartitionReassignments(r) = response else {
        panic!("{response:?}")
    };
    assert_eq!(r.error_code, 0);
    assert_eq!(
        (
            r.responses[0].partitions[0].error_code,
            r.responses[0].partitions[0].error_message.as_deref()
        ),
        (
            ErrorCode::UnknownTopicOrPartition.code(),
            Some("Unable to find a topic named absent.")
        )
    );
    let response = forwarded(&channel, "ANONYMOUS", list).await;
    assert!(
        matches!(&response, ResponseBody::ListPartitionReassignments(r)
            if r.error_code == 0 && r.topics.is_empty()),
        "{response:?}"
    );
    node.shutdown().await.unwrap();
}
