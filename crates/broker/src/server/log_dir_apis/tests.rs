//! The log-dir APIs' authorization as Kafka's: DESCRIBE on the cluster for DescribeLogDirs
//! (no results and CLUSTER_AUTHORIZATION_FAILED otherwise), ALTER on the cluster for
//! AlterReplicaLogDirs (every partition refused otherwise, nothing moved), DESCRIBE per
//! topic for DescribeTopicPartitions (refused named topics last, hidden from all-topics).

use kraftd_controller::auth::AuthHelper;
use kraftd_controller::control::acl::*;
use kraftd_controller::publisher::*;
use kraftd_controller::testing::acls::{authorizer_with, TestAcl};
use kraftd_controller::testing::records::{partition, topic, uuid};
use kraftd_controller::MetadataDelta;
use kraftd_net::KafkaPrincipal;
use kraftd_protocol::messages::alter_replica_log_dirs_request::{
    AlterReplicaLogDir, AlterReplicaLogDirTopic,
};
use kraftd_protocol::messages::describe_topic_partitions_request::TopicRequest;

use super::*;

const ALICE: &str = "User:alice";

fn alice(acls: &[TestAcl]) -> RequestAuth {
    let authorizer = authorizer_with(AuthorizerConfig::default(), acls);
    AuthHelper::new(&authorizer)
        .request(&KafkaPrincipal::user("alice"), "10.0.0.1".parse().unwrap())
}

fn cluster(operation: i8) -> TestAcl {
    TestAcl::allow(RESOURCE_TYPE_CLUSTER, "kafka-cluster", ALICE, operation)
}

#[test]
fn describe_log_dirs_needs_describe_on_the_cluster() {
    let request = DescribeLogDirsRequest {
        topics: None,
        ..Default::default()
    };
    let one = || vec![DescribeLogDirsResult::default()];
    let refused = describe_log_dirs(&request, &alice(&[]), |_| one());
    assert_eq!(
        refused.error_code,
        ErrorCode::ClusterAuthorizationFailed.code()
    );
    assert!(refused.results.is_empty());
    let allowed = describe_log_dirs(&request, &alice(&[cluster(OPERATION_DESCRIBE)]), |f| {
        assert!(f.is_none(), "a null topic list means all");
        one()
    });
    assert_eq!((allowed.error_code, allowed.results.len()), (0, 1));
}

#[test]
fn alter_replica_log_dirs_needs_alter_on_the_cluster() {
    let request = AlterReplicaLogDirsRequest {
        dirs: vec![
            AlterReplicaLogDir {
                path: "/d1".into(),
                topics: vec![AlterReplicaLogDirTopic {
                    name: "t".into(),
                    partitions: vec![0, 1],
                    ..Default::default()
                }],
                ..Default::default()
            },
            AlterReplicaLogDir {
                path: "/d2".into(),
                topics: vec![AlterReplicaLogDirTopic {
                    name: "t".into(),
                    partitions: vec![1],
                    ..Default::default()
                }],
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let refused = alter_replica_log_dirs(
        &request,
        &alice(&[cluster(OPERATION_DESCRIBE)]),
        |_, _, _| panic!("nothing is moved without ALTER"),
    );
    let codes: Vec<(i32, i16)> = refused.results[0]
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.error_code))
        .collect();
    let denied = ErrorCode::ClusterAuthorizationFailed.code();
    assert_eq!(codes, [(0, denied), (1, denied)]);
    let mut moved = Vec::new();
    let allowed =
        alter_replica_log_dirs(&request, &alice(&[cluster(OPERATION_ALTER)]), |t, p, d| {
            moved.push((t.to_string(), p, d.to_string()));
            ErrorCode::None
        });
    // Partition 1 is named twice: the last dir wins, as in Kafka's request map.
    assert_eq!(
        moved,
        [
            ("t".to_string(), 0, "/d1".to_string()),
            ("t".to_string(), 1, "/d2".to_string())
        ]
    );
    assert_eq!(allowed.results.len(), 1);
    assert!(allowed.results[0]
        .partitions
        .iter()
        .all(|p| p.error_code == 0));
}

#[test]
fn describe_topic_partitions_checks_describe_per_topic() {
    let mut delta = MetadataDelta::new(&MetadataImage::empty());
    for (name, n) in [("orders", 1), ("payments", 2)] {
        delta.replay(&topic(name, uuid(n))).unwrap();
        delta.replay(&partition(uuid(n), 0, &[1], &[1], 1)).unwrap();
    }
    let image = delta.apply();
    let auth = alice(&[TestAcl::allow(
        RESOURCE_TYPE_TOPIC,
        "orders",
        ALICE,
        OPERATION_DESCRIBE,
    )]);
    let named = DescribeTopicPartitionsRequest {
        topics: ["payments", "orders"]
            .iter()
            .map(|n| TopicRequest {
                name: n.to_string(),
                ..Default::default()
            })
            .collect(),
        response_partition_limit: 2000,
        ..Default::default()
    };
    let answer = describe_topic_partitions(&image, &named, "PLAINTEXT", None, &auth);
    let topics: Vec<(Option<String>, i16)> = answer
        .topics
        .iter()
        .map(|t| (t.name.clone(), t.error_code))
        .collect();
    assert_eq!(
        topics,
        [
            (Some("orders".into()), 0),
            (
                Some("payments".into()),
                ErrorCode::TopicAuthorizationFailed.code()
            )
        ]
    );
    // DESCRIBE is in the authorized operations of the topic it may describe.
    assert_ne!(
        answer.topics[0].topic_authorized_operations & (1 << OPERATION_DESCRIBE),
        0
    );
    let all = DescribeTopicPartitionsRequest {
        response_partition_limit: 2000,
        ..Default::default()
    };
    let answer = describe_topic_partitions(&image, &all, "PLAINTEXT", None, &auth);
    assert_eq!(answer.topics.len(), 1);
    assert_eq!(answer.topics[0].name.as_deref(), Some("orders"));
}
