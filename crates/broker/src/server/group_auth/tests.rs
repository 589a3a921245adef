//! The group handlers' checks for a principal with some ACLs: refused groups and topics get
//! Kafka's errors, answers drop what may not be seen.

use kraftd_controller::auth::{AuthHelper, RequestAuth};
use kraftd_controller::control::acl::*;
use kraftd_controller::publisher::*;
use kraftd_controller::testing::acls::{authorizer_with, TestAcl};
use kraftd_net::KafkaPrincipal;
use kraftd_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kraftd_protocol::messages::list_groups_response::ListedGroup;
use kraftd_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kraftd_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kraftd_protocol::messages::offset_fetch_response::OffsetFetchResponseTopics;
use kraftd_protocol::messages::{
    ConsumerGroupHeartbeatRequest, JoinGroupRequest, ListGroupsResponse, OffsetDeleteRequest,
};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody};

use super::*;

const ALICE: &str = "User:alice";

fn alice(acls: &[TestAcl]) -> RequestAuth {
    let authorizer = authorizer_with(AuthorizerConfig::default(), acls);
    AuthHelper::new(&authorizer)
        .request(&KafkaPrincipal::user("alice"), "10.0.0.1".parse().unwrap())
}

fn reader() -> RequestAuth {
    alice(&[
        TestAcl::allow(RESOURCE_TYPE_GROUP, "g1", ALICE, OPERATION_READ),
        TestAcl::allow(RESOURCE_TYPE_TOPIC, "orders", ALICE, OPERATION_READ),
    ])
}

#[test]
fn one_group_requests_need_read_on_the_group() {
    let join = |group: &str| {
        RequestBody::JoinGroup(JoinGroupRequest {
            group_id: group.into(),
            ..Default::default()
        })
    };
    assert!(single_group_refusal(&reader(), &join("g1")).is_none());
    let refused = single_group_refusal(&reader(), &join("g2")).unwrap();
    assert!(
        matches!(&refused, ResponseBody::JoinGroup(r) if r.error_code == ErrorCode::GroupAuthorizationFailed.code()),
        "{refused:?}"
    );
    // Deleting offsets needs DELETE: READ is not enough.
    let delete = RequestBody::OffsetDelete(OffsetDeleteRequest {
        group_id: "g1".into(),
        ..Default::default()
    });
    assert!(matches!(
        single_group_refusal(&reader(), &delete),
        Some(ResponseBody::OffsetDelete(r)) if r.error_code == ErrorCode::GroupAuthorizationFailed.code()
    ));
}

#[test]
fn a_consumer_heartbeat_needs_describe_on_every_subscribed_topic() {
    let heartbeat = |group: &str, topics: &[&str]| {
        RequestBody::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatRequest {
            group_id: group.into(),
            subscribed_topic_names: Some(topics.iter().map(|t| t.to_string()).collect()),
            ..Default::default()
        })
    };
    assert!(single_group_refusal(&reader(), &heartbeat("g1", &["orders"])).is_none());
    let Some(ResponseBody::ConsumerGroupHeartbeat(r)) =
        single_group_refusal(&reader(), &heartbeat("g1", &["orders", "payments"]))
    else {
        panic!("not refused")
    };
    assert_eq!(r.error_code, ErrorCode::TopicAuthorizationFailed.code());
    let Some(ResponseBody::ConsumerGroupHeartbeat(r)) =
        single_group_refusal(&reader(), &heartbeat("g2", &["orders"]))
    else {
        panic!("not refused")
    };
    assert_eq!(r.error_code, ErrorCode::GroupAuthorizationFailed.code());
    assert_eq!(
        r.error_message.as_deref(),
        Some("Group authorization failed.")
    );
}

#[test]
fn offset_delete_and_fetch_refuse_topics_per_topic() {
    let mut request = OffsetDeleteRequest {
        group_id: "g1".into(),
        topics: ["orders", "payments"]
            .iter()
            .map(|name| OffsetDeleteRequestTopic {
                name: name.to_string(),
                partitions: vec![OffsetDeleteRequestPartition { partition_index: 3 }],
            })
            .collect(),
    };
    let refused = take_unreadable_topics(&reader(), &mut request);
    assert_eq!(request.topics.len(), 1);
    assert_eq!(refused[0].name, "payments");
    assert_eq!(
        (
            refused[0].partitions[0].partition_index,
            refused[0].partitions[0].error_code
        ),
        (3, ErrorCode::TopicAuthorizationFailed.code())
    );

    let mut topics = vec![
        OffsetFetchRequestTopics {
            name: "orders".into(),
            partition_indexes: vec![0],
            ..Default::default()
        },
        OffsetFetchRequestTopics {
            name: "payments".into(),
            partition_indexes: vec![0, 1],
            ..Default::default()
        },
    ];
    let refused = take_undescribable_topics(&reader(), &mut topics);
    assert_eq!(topics.len(), 1, "READ implies DESCRIBE");
    assert_eq!(refused[0].partitions.len(), 2);
    assert!(refused[0].partitions.iter().all(|p| p.error_code
        == ErrorCode::TopicAuthorizationFailed.code()
        && p.committed_offset == -1));

    let mut answered = vec![
        OffsetFetchResponseTopics {
            name: "orders".into(),
            ..Default::default()
        },
        OffsetFetchResponseTopics {
            name: "payments".into(),
            ..Default::default()
        },
    ];
    retain_describable(&reader(), &mut answered);
    assert_eq!(answered.len(), 1);

    let group = OffsetFetchRequestGroup {
        group_id: "g2".into(),
        topics: Some(vec![OffsetFetchRequestTopics {
            name: "orders".into(),
            partition_indexes: vec![0],
            ..Default::default()
        }]),
        ..Default::default()
    };
    let v1 = offset_fetch_group_refused(&group, 1);
    assert_eq!(
        v1.topics[0].partitions[0].error_code,
        ErrorCode::GroupAuthorizationFailed.code(),
        "v0-1 carry the error on each partition"
    );
    let v8 = offset_fetch_group_refused(&group, 8);
    assert_eq!(v8.error_code, ErrorCode::GroupAuthorizationFailed.code());
    assert!(v8.topics.is_empty());
}

#[test]
fn listing_and_describing_groups_shows_only_what_may_be_described() {
    let groups = vec!["g1".to_string(), "g2".to_string()];
    let (allowed, refused) = split_groups(&reader(), OPERATION_DESCRIBE, &groups);
    assert_eq!((allowed, refused), (vec!["g1".into()], vec!["g2".into()]));
    let listed = || ListGroupsResponse {
        groups: groups
            .iter()
            .map(|g| ListedGroup {
                group_id: g.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let mut response = listed();
    filter_listed_groups(&reader(), &mut response);
    assert_eq!(response.groups.len(), 1);
    let cluster = alice(&[TestAcl::allow(
        RESOURCE_TYPE_CLUSTER,
        CLUSTER_RESOURCE_NAME,
        ALICE,
        OPERATION_DESCRIBE,
    )]);
    let mut response = listed();
    filter_listed_groups(&cluster, &mut response);
    assert_eq!(
        response.groups.len(),
        2,
        "DESCRIBE on the cluster lists all"
    );

    let mut ops = i32::MIN;
    fill_group_operations(&reader(), [("g1", &mut ops)].into_iter());
    assert_eq!(ops, (1 << 3) | (1 << 8), "READ and the DESCRIBE it implies");
}

#[test]
fn a_described_consumer_group_naming_hidden_topics_is_refused() {
    let group = |topic: &str| DescribedGroup {
        group_id: "g1".into(),
        members: vec![Member {
            member_id: "m".into(),
            assignment: Assignment {
                topic_partitions: vec![TopicPartitions {
                    topic_name: topic.into(),
                    partitions: vec![0],
                    ..Default::default()
                }],
                ..Default::default()
            },
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut groups = vec![group("orders"), group("payments")];
    hide_groups_with_hidden_topics(&reader(), &mut groups);
    assert_eq!(groups[0].error_code, 0);
    assert_eq!(
        groups[1].error_code,
        ErrorCode::TopicAuthorizationFailed.code()
    );
    assert_eq!(groups[1].group_id, "g1");
    assert!(groups[1].members.is_empty());
    assert_eq!(
        groups[1].error_message.as_deref(),
        Some("The group has described topic(s) that the client is not authorized to describe.")
    );
}
