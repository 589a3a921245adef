//! The broker's request checks against a StandardAuthorizer fed real ACL records: Produce's
//! transactional and per-topic refusals, InitProducerId's idempotent rule, auto-creation's
//! CREATE, DescribeConfigs per resource type, the cluster's authorized operations.

use bytes::Bytes;
use kraftd_controller::auth::{AuthHelper, RequestAuth};
use kraftd_controller::config_helper::{describe_configs_refusal, describe_configs_refused};
use kraftd_controller::control::acl::*;
use kraftd_controller::publisher::*;
use kraftd_controller::testing::acls::{authorizer_with, TestAcl};
use kraftd_controller::testing::records::{partition, topic, uuid};
use kraftd_controller::{MetadataDelta, MetadataImage};
use kraftd_net::KafkaPrincipal;
use kraftd_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kraftd_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kraftd_protocol::messages::{InitProducerIdRequest, ProduceRequest};
use kraftd_protocol::records::RecordBatchBuilder;
use kraftd_protocol::{ErrorCode, Uuid};

use super::*;

const ALICE: &str = "User:alice";

fn alice(acls: &[TestAcl]) -> RequestAuth {
    let authorizer = authorizer_with(AuthorizerConfig::default(), acls);
    AuthHelper::new(&authorizer)
        .request(&KafkaPrincipal::user("alice"), "10.0.0.1".parse().unwrap())
}

fn image() -> MetadataImage {
    let mut delta = MetadataDelta::new(&MetadataImage::empty());
    for (name, n) in [("orders", 1), ("payments", 2)] {
        delta.replay(&topic(name, uuid(n))).unwrap();
        delta.replay(&partition(uuid(n), 0, &[1], &[1], 1)).unwrap();
    }
    delta.apply()
}

fn batch(transactional: bool) -> Bytes {
    let mut builder = RecordBatchBuilder::new(0)
        .producer(7, 0, 0)
        .transactional(transactional);
    builder
        .append(0, None, Some(Bytes::from_static(b"v")), Vec::new())
        .unwrap();
    builder.build().unwrap()
}

fn produce(
    transactional_id: Option<&str>,
    topics: &[(&str, Uuid)],
    transactional: bool,
) -> ProduceRequest {
    ProduceRequest {
        transactional_id: transactional_id.map(str::to_string),
        acks: -1,
        topic_data: topics
            .iter()
            .map(|(name, id)| TopicProduceData {
                name: name.to_string(),
                topic_id: *id,
                partition_data: vec![PartitionProduceData {
                    index: 0,
                    records: Some(batch(transactional)),
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

#[test]
fn produce_needs_write_on_each_topic_even_one_that_does_not_exist() {
    let auth = alice(&[TestAcl::allow(
        RESOURCE_TYPE_TOPIC,
        "orders",
        ALICE,
        OPERATION_WRITE,
    )]);
    let request = produce(
        None,
        &[
            ("orders", Uuid::ZERO),
            ("payments", Uuid::ZERO),
            ("nope", Uuid::ZERO),
        ],
        false,
    );
    let refused = produce_refusals(&auth, &image(), 9, &request);
    assert_eq!(refused.len(), 2);
    assert_eq!(
        refused[&("payments".to_string(), Uuid::ZERO, 0)],
        ErrorCode::TopicAuthorizationFailed
    );
    assert_eq!(
        refused[&("nope".to_string(), Uuid::ZERO, 0)],
        ErrorCode::TopicAuthorizationFailed
    );
    // v13 names topics by id: checked by the id's name; an unknown id is the append's.
    let by_id = produce(None, &[("", uuid(1)), ("", uuid(2)), ("", uuid(9))], false);
    let refused = produce_refusals(&auth, &image(), 13, &by_id);
    assert_eq!(
        refused.keys().cloned().collect::<Vec<_>>(),
        [(String::new(), uuid(2), 0)]
    );
}

#[test]
fn transactional_batches_need_write_on_the_transactional_id() {
    let topic_only = alice(&[TestAcl::allow(
        RESOURCE_TYPE_TOPIC,
        "orders",
        ALICE,
        OPERATION_WRITE,
    )]);
    for txn_id in [None, Some("tx")] {
        let request = produce(txn_id, &[("orders", Uuid::ZERO)], true);
        let refused = produce_refusals(&topic_only, &image(), 9, &request);
        assert_eq!(
            refused.values().copied().collect::<Vec<_>>(),
            [ErrorCode::TransactionalIdAuthorizationFailed],
            "{txn_id:?}"
        );
    }
    let both = alice(&[
        TestAcl::allow(RESOURCE_TYPE_TOPIC, "orders", ALICE, OPERATION_WRITE),
        TestAcl::allow(RESOURCE_TYPE_TRANSACTIONAL_ID, "tx", ALICE, OPERATION_WRITE),
    ]);
    assert!(produce_refusals(
        &both,
        &image(),
        9,
        &produce(Some("tx"), &[("orders", Uuid::ZERO)], true)
    )
    .is_empty());
    // Non-transactional batches need no transactional id.
    assert!(produce_refusals(
        &topic_only,
        &image(),
        9,
        &produce(None, &[("orders", Uuid::ZERO)], false)
    )
    .is_empty());
}

#[test]
fn without_an_authorizer_nothing_is_refused() {
    let auth =
        AuthHelper::disabled().request(&KafkaPrincipal::anonymous(), "127.0.0.1".parse().unwrap());
    let request = produce(Some("tx"), &[("payments", Uuid::ZERO)], true);
    assert!(produce_refusals(&auth, &image(), 9, &request).is_empty());
    let idempotent = InitProducerIdRequest {
        transactional_id: None,
        ..Default::default()
    };
    assert_eq!(init_producer_id_refusal(&auth, &idempotent), None);
    assert!(uncreatable(&auth, &["new".to_string()]).is_empty());
    assert_eq!(
        cluster_authorized_operations(&auth),
        (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12)
    );
}

#[test]
fn init_producer_id_checks_as_kafka() {
    let txn = |id: &str, two_pc: bool| InitProducerIdRequest {
        transactional_id: Some(id.into()),
        enable2_pc: two_pc,
        ..Default::default()
    };
    let writer = alice(&[TestAcl::allow(
        RESOURCE_TYPE_TRANSACTIONAL_ID,
        "tx",
        ALICE,
        OPERATION_WRITE,
    )]);
    assert_eq!(init_producer_id_refusal(&writer, &txn("tx", false)), None);
    assert_eq!(
        init_producer_id_refusal(&writer, &txn("other", false)),
        Some(ErrorCode::TransactionalIdAuthorizationFailed)
    );
    assert_eq!(
        init_producer_id_refusal(&writer, &txn("tx", true)),
        Some(ErrorCode::TransactionalIdAuthorizationFailed),
        "KIP-939 needs TWO_PHASE_COMMIT too"
    );
    let idempotent = InitProducerIdRequest {
        transactional_id: None,
        ..Default::default()
    };
    assert_eq!(
        init_producer_id_refusal(&alice(&[]), &idempotent),
        Some(ErrorCode::ClusterAuthorizationFailed)
    );
    assert_eq!(
        init_producer_id_refusal(
            &alice(&[TestAcl::allow(
                RESOURCE_TYPE_CLUSTER,
                CLUSTER_RESOURCE_NAME,
                ALICE,
                OPERATION_IDEMPOTENT_WRITE
            )]),
            &idempotent
        ),
        None
    );
    assert_eq!(
        init_producer_id_refusal(
            &alice(&[TestAcl::allow(RESOURCE_TYPE_TOPIC, "or", ALICE, OPERATION_WRITE).prefixed()]),
            &idempotent
        ),
        None,
        "WRITE on any topic is enough"
    );
}

#[test]
fn creating_needs_create_on_the_cluster_or_the_topic() {
    let missing = vec!["orders-new".to_string(), "other".to_string()];
    let by_topic =
        alice(&[TestAcl::allow(RESOURCE_TYPE_TOPIC, "orders", ALICE, OPERATION_CREATE).prefixed()]);
    assert_eq!(
        uncreatable(&by_topic, &missing)
            .into_iter()
            .collect::<Vec<_>>(),
        ["other".to_string()]
    );
    let cluster = alice(&[TestAcl::allow(
        RESOURCE_TYPE_CLUSTER,
        CLUSTER_RESOURCE_NAME,
        ALICE,
        OPERATION_CREATE,
    )]);
    assert!(uncreatable(&cluster, &missing).is_empty());
}

#[test]
fn describe_configs_checks_the_resource_as_kafka() {
    let resource = |resource_type: i8, name: &str| DescribeConfigsResource {
        resource_type,
        resource_name: name.into(),
        ..Default::default()
    };
    let auth = alice(&[
        TestAcl::allow(
            RESOURCE_TYPE_TOPIC,
            "orders",
            ALICE,
            OPERATION_ALTER_CONFIGS,
        ),
        TestAcl::allow(RESOURCE_TYPE_GROUP, "g1", ALICE, OPERATION_DESCRIBE_CONFIGS),
    ]);
    assert_eq!(
        describe_configs_refusal(&auth, &resource(2, "orders")),
        None,
        "ALTER_CONFIGS implies DESCRIBE_CONFIGS"
    );
    assert_eq!(
        describe_configs_refusal(&auth, &resource(2, "payments")),
        Some(ErrorCode::TopicAuthorizationFailed)
    );
    assert_eq!(describe_configs_refusal(&auth, &resource(32, "g1")), None);
    assert_eq!(
        describe_configs_refusal(&auth, &resource(32, "g2")),
        Some(ErrorCode::GroupAuthorizationFailed)
    );
    for broker_like in [4, 8, 16] {
        assert_eq!(
            describe_configs_refusal(&auth, &resource(broker_like, "1")),
            Some(ErrorCode::ClusterAuthorizationFailed)
        );
    }
    let refused = describe_configs_refused(
        &resource(2, "payments"),
        ErrorCode::TopicAuthorizationFailed,
    );
    assert_eq!(
        refused.error_message.as_deref(),
        Some("Topic authorization failed.")
    );
    assert!(refused.configs.is_empty());
    assert_eq!(
        cluster_authorized_operations(&auth),
        0,
        "no DESCRIBE on the cluster"
    );
}
