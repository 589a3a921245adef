//! DescribeTopicPartitions against Kafka's cursor rules: topic order, a cut inside a topic,
//! a limit used up at a topic's end, the cap, named and refused topics, ELR fields.

use super::*;
use kraftd_protocol::messages::describe_topic_partitions_request::{
    Cursor as RequestCursor, TopicRequest,
};
use kraftd_protocol::metadata::register_broker_record::BrokerEndpoint;
use kraftd_protocol::metadata::{PartitionRecord, RegisterBrokerRecord, TopicRecord};
use kraftd_protocol::{Message, MetadataRecord};

/// Brokers 1 and 2 (2 fenced) on PLAINTEXT; topics `a` (3 partitions), `b` (2), `c` (1).
fn image() -> MetadataImage {
    let mut records = Vec::new();
    for (id, fenced) in [(1, false), (2, true)] {
        records.push(MetadataRecord::RegisterBroker(RegisterBrokerRecord {
            broker_id: id,
            incarnation_id: Uuid([id as u8; 16]),
            broker_epoch: 10,
            end_points: vec![BrokerEndpoint {
                name: "PLAINTEXT".into(),
                host: "h".into(),
                port: 9000 + id as u16,
                ..Default::default()
            }],
            fenced,
            ..Default::default()
        }));
    }
    for (n, (name, count)) in [("a", 3), ("b", 2), ("c", 1)].into_iter().enumerate() {
        let id = Uuid([n as u8 + 1; 16]);
        records.push(MetadataRecord::Topic(TopicRecord {
            name: name.into(),
            topic_id: id,
            ..Default::default()
        }));
        for p in 0..count {
            records.push(MetadataRecord::Partition(PartitionRecord {
                partition_id: p,
                topic_id: id,
                replicas: vec![1, 2],
                isr: vec![1],
                leader: 1,
                leader_epoch: 3,
                ..Default::default()
            }));
        }
    }
    MetadataImage::empty().replay_all(&records).unwrap()
}

fn request(
    topics: &[&str],
    limit: i32,
    cursor: Option<(&str, i32)>,
) -> DescribeTopicPartitionsRequest {
    DescribeTopicPartitionsRequest {
        topics: topics
            .iter()
            .map(|n| TopicRequest {
                name: n.to_string(),
                ..Default::default()
            })
            .collect(),
        response_partition_limit: limit,
        cursor: cursor.map(|(t, p)| RequestCursor {
            topic_name: t.into(),
            partition_index: p,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn answer(
    r: &DescribeTopicPartitionsRequest,
    describable: &dyn Fn(&str) -> bool,
) -> DescribeTopicPartitionsResponse {
    let response = describe_topic_partitions_response(
        &image(),
        r,
        "PLAINTEXT",
        MAX_REQUEST_PARTITION_SIZE_LIMIT,
        describable,
        &|_| 0b1000,
    );
    let mut bytes = response.to_bytes(0).unwrap();
    assert_eq!(
        DescribeTopicPartitionsResponse::decode(&mut bytes, 0).unwrap(),
        response
    );
    response
}

/// (topic, error, partitions) of each topic of an answer, and its next cursor.
type Shape = (Vec<(String, i16, Vec<i32>)>, Option<(String, i32)>);

fn shape(r: &DescribeTopicPartitionsResponse) -> Shape {
    (
        r.topics
            .iter()
            .map(|t| {
                (
                    t.name.clone().unwrap_or_default(),
                    t.error_code,
                    t.partitions.iter().map(|p| p.partition_index).collect(),
                )
            })
            .collect(),
        r.next_cursor
            .as_ref()
            .map(|c| (c.topic_name.clone(), c.partition_index)),
    )
}

fn s(v: &str) -> String {
    v.to_string()
}

#[test]
fn pages_of_two_walk_every_partition_in_topic_order() {
    let all = |_: &str| true;
    let first = answer(&request(&[], 2, None), &all);
    assert_eq!(
        shape(&first),
        (vec![(s("a"), 0, vec![0, 1])], Some((s("a"), 2)))
    );
    let second = answer(&request(&[], 2, Some(("a", 2))), &all);
    // a's last partition and b's first; b is cut after one.
    assert_eq!(
        shape(&second),
        (
            vec![(s("a"), 0, vec![2]), (s("b"), 0, vec![0])],
            Some((s("b"), 1))
        )
    );
    let third = answer(&request(&[], 2, Some(("b", 1))), &all);
    // The limit runs out exactly at c's end: no cursor.
    assert_eq!(
        shape(&third),
        (vec![(s("b"), 0, vec![1]), (s("c"), 0, vec![0])], None)
    );
}

#[test]
fn a_limit_used_up_at_a_topic_end_points_at_the_next_topic() {
    let r = answer(&request(&[], 3, None), &|_| true);
    assert_eq!(
        shape(&r),
        (vec![(s("a"), 0, vec![0, 1, 2])], Some((s("b"), 0)))
    );
}

#[test]
fn the_limit_is_capped_by_the_broker_setting() {
    let r = describe_topic_partitions_response(
        &image(),
        &request(&[], 100, None),
        "PLAINTEXT",
        1,
        &|_| true,
        &|_| 0,
    );
    assert_eq!(shape(&r), (vec![(s("a"), 0, vec![0])], Some((s("a"), 1))));
}

#[test]
fn named_topics_unknown_and_refused_ones() {
    let r = answer(
        &request(&["c", "zz", "b", "a", "bad/name"], 10, None),
        &|t| t != "b",
    );
    assert_eq!(
        shape(&r).0,
        vec![
            (s("a"), 0, vec![0, 1, 2]),
            (
                s("bad/name"),
                ErrorCode::InvalidTopicException.code(),
                vec![]
            ),
            (s("c"), 0, vec![0]),
            (s("zz"), ErrorCode::UnknownTopicOrPartition.code(), vec![]),
            (s("b"), ErrorCode::TopicAuthorizationFailed.code(), vec![]),
        ]
    );
    assert_eq!(r.topics[4].topic_id, Uuid::ZERO);
    // Refused topics are simply absent from an all-topics answer.
    let all = answer(&request(&[], 10, None), &|t| t != "b");
    assert_eq!(
        shape(&all)
            .0
            .iter()
            .map(|t| t.0.clone())
            .collect::<Vec<_>>(),
        ["a", "c"]
    );
}

#[test]
fn a_cursor_outside_the_named_topics_is_an_invalid_request() {
    let r = answer(&request(&["a", "b"], 10, Some(("c", 0))), &|_| true);
    assert_eq!(
        shape(&r).0,
        vec![
            (s("a"), ErrorCode::InvalidRequest.code(), vec![]),
            (s("b"), ErrorCode::InvalidRequest.code(), vec![])
        ]
    );
}

#[test]
fn partitions_carry_leader_elr_and_offline_replicas() {
    let r = answer(&request(&["c"], 10, None), &|_| true);
    let t = &r.topics[0];
    assert_eq!(t.topic_id, Uuid([3; 16]));
    assert_eq!(t.topic_authorized_operations, 0b1000);
    let p = &t.partitions[0];
    assert_eq!((p.leader_id, p.leader_epoch), (1, 3));
    assert_eq!(p.replica_nodes, [1, 2]);
    assert_eq!(p.isr_nodes, [1]);
    assert_eq!(p.offline_replicas, [2]);
    assert_eq!(p.eligible_leader_replicas, Some(vec![]));
    assert_eq!(p.last_known_elr, Some(vec![]));
}
