//! The transaction handlers' checks for a principal with some ACLs, with Kafka's errors.

use kraftd_controller::auth::{AuthHelper, RequestAuth};
use kraftd_controller::control::acl::*;
use kraftd_controller::publisher::*;
use kraftd_controller::testing::acls::{authorizer_with, TestAcl};
use kraftd_controller::testing::records::{partition, topic, uuid};
use kraftd_controller::{MetadataDelta, MetadataImage};
use kraftd_net::KafkaPrincipal;
use kraftd_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kraftd_protocol::messages::describe_producers_response::{PartitionResponse, TopicResponse};
use kraftd_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kraftd_protocol::messages::list_transactions_response::TransactionState as Listed;
use kraftd_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kraftd_protocol::messages::{
    DescribeProducersResponse, ListTransactionsResponse, WriteTxnMarkersRequest,
};
use kraftd_protocol::ErrorCode;

use super::*;

const ALICE: &str = "User:alice";

fn alice(acls: &[TestAcl]) -> RequestAuth {
    let authorizer = authorizer_with(AuthorizerConfig::default(), acls);
    AuthHelper::new(&authorizer)
        .request(&KafkaPrincipal::user("alice"), "10.0.0.1".parse().unwrap())
}

fn writer() -> RequestAuth {
    alice(&[
        TestAcl::allow(RESOURCE_TYPE_TRANSACTIONAL_ID, "tx", ALICE, OPERATION_WRITE),
        TestAcl::allow(RESOURCE_TYPE_TOPIC, "orders", ALICE, OPERATION_WRITE),
        TestAcl::allow(
            RESOURCE_TYPE_TOPIC,
            "__consumer_offsets",
            ALICE,
            OPERATION_WRITE,
        ),
    ])
}

fn image() -> MetadataImage {
    let mut delta = MetadataDelta::new(&MetadataImage::empty());
    for (name, n) in [("orders", 1), ("payments", 2), ("__consumer_offsets", 3)] {
        delta.replay(&topic(name, uuid(n))).unwrap();
        delta.replay(&partition(uuid(n), 0, &[1], &[1], 1)).unwrap();
    }
    delta.apply()
}

fn topics(list: &[(&str, &[i32])]) -> Vec<AddPartitionsToTxnTopic> {
    list.iter()
        .map(|(name, partitions)| AddPartitionsToTxnTopic {
            name: name.to_string(),
            partitions: partitions.to_vec(),
            ..Default::default()
        })
        .collect()
}

fn codes(results: &[AddPartitionsToTxnTopicResult]) -> Vec<(String, i32, i16)> {
    results
        .iter()
        .flat_map(|t| {
            t.results_by_partition
                .iter()
                .map(move |p| (t.name.clone(), p.partition_index, p.partition_error_code))
        })
        .collect()
}

#[test]
fn adding_partitions_needs_write_on_the_transaction_and_each_topic() {
    let image = image();
    assert!(
        add_partitions_refusal(&writer(), &image, "tx", &topics(&[("orders", &[0])])).is_none()
    );
    let refused =
        add_partitions_refusal(&writer(), &image, "other", &topics(&[("orders", &[0])])).unwrap();
    assert_eq!(
        codes(&refused),
        [(
            "orders".into(),
            0,
            ErrorCode::TransactionalIdAuthorizationFailed.code()
        )]
    );
    let refused = add_partitions_refusal(
        &writer(),
        &image,
        "tx",
        &topics(&[
            ("orders", &[0, 5]),
            ("payments", &[0]),
            ("__consumer_offsets", &[0]),
        ]),
    )
    .unwrap();
    assert_eq!(
        codes(&refused),
        [
            ("orders".into(), 0, ErrorCode::OperationNotAttempted.code()),
            (
                "orders".into(),
                5,
                ErrorCode::UnknownTopicOrPartition.code()
            ),
            (
                "payments".into(),
                0,
                ErrorCode::TopicAuthorizationFailed.code()
            ),
            // Internal topics are never added by a client, whatever the ACLs say.
            (
                "__consumer_offsets".into(),
                0,
                ErrorCode::TopicAuthorizationFailed.code()
            ),
        ]
    );
}

#[test]
fn markers_need_alter_or_cluster_action_on_the_cluster() {
    assert!(!may_write_markers(&writer()));
    for op in [OPERATION_ALTER, OPERATION_CLUSTER_ACTION] {
        let broker = alice(&[TestAcl::allow(
            RESOURCE_TYPE_CLUSTER,
            CLUSTER_RESOURCE_NAME,
            ALICE,
            op,
        )]);
        assert!(may_write_markers(&broker));
    }
    let request = WriteTxnMarkersRequest {
        markers: vec![WritableTxnMarker {
            producer_id: 9,
            topics: vec![WritableTxnMarkerTopic {
                name: "orders".into(),
                partition_indexes: vec![0, 1],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let refused = markers_refused(&request, ErrorCode::ClusterAuthorizationFailed);
    assert_eq!(refused.markers[0].producer_id, 9);
    let partitions = &refused.markers[0].topics[0].partitions;
    assert_eq!(partitions.len(), 2);
    assert!(partitions
        .iter()
        .all(|p| p.error_code == ErrorCode::ClusterAuthorizationFailed.code()));
}

#[test]
fn describing_and_listing_transactions_shows_only_what_may_be_described() {
    let auth = alice(&[
        TestAcl::allow(
            RESOURCE_TYPE_TRANSACTIONAL_ID,
            "tx",
            ALICE,
            OPERATION_DESCRIBE,
        ),
        TestAcl::allow(RESOURCE_TYPE_TOPIC, "orders", ALICE, OPERATION_READ),
    ]);
    let (allowed, refused) = split_describable(&auth, &["tx".into(), "other".into()]);
    assert_eq!(allowed, ["tx".to_string()]);
    assert_eq!(refused[0].transactional_id, "other");
    assert_eq!(
        refused[0].error_code,
        ErrorCode::TransactionalIdAuthorizationFailed.code()
    );
    let mut states = vec![TransactionState {
        transactional_id: "tx".into(),
        topics: ["orders", "payments"]
            .iter()
            .map(|t| TopicData {
                topic: t.to_string(),
                partitions: vec![0],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }];
    retain_describable_topics(&auth, &mut states);
    assert_eq!(states[0].topics.len(), 1);
    let mut listed = ListTransactionsResponse {
        transaction_states: ["tx", "other"]
            .iter()
            .map(|id| Listed {
                transactional_id: id.to_string(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    filter_listed(&auth, &mut listed);
    assert_eq!(listed.transaction_states.len(), 1);
}

#[test]
fn describing_producers_needs_read_on_the_topic() {
    let auth = alice(&[TestAcl::allow(
        RESOURCE_TYPE_TOPIC,
        "orders",
        ALICE,
        OPERATION_READ,
    )]);
    let topic = |name: &str, code: ErrorCode| TopicResponse {
        name: name.into(),
        partitions: vec![PartitionResponse {
            partition_index: 0,
            error_code: code.code(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut response = DescribeProducersResponse {
        topics: vec![
            topic("orders", ErrorCode::None),
            topic("payments", ErrorCode::None),
            topic("missing", ErrorCode::UnknownTopicOrPartition),
            topic("bad name!", ErrorCode::InvalidTopicException),
        ],
        ..Default::default()
    };
    refuse_unreadable_producers(&auth, &mut response);
    let codes: Vec<i16> = response
        .topics
        .iter()
        .map(|t| t.partitions[0].error_code)
        .collect();
    assert_eq!(
        codes,
        [
            0,
            ErrorCode::TopicAuthorizationFailed.code(),
            ErrorCode::TopicAuthorizationFailed.code(),
            ErrorCode::InvalidTopicException.code(),
        ]
    );
}
