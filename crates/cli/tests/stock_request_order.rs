//! A client's requests take effect in the order it sent them, and its next request sees
//! what it was told is done (issue 35, parts 1 and 5), on 3 controllers + 3 brokers with
//! StandardAuthorizer on (open unless an ACL names a resource):
//!
//! - `pipelined_conflicting_requests_end_in_the_last_state_sent`: one raw connection sends
//!   a batch of conflicting requests before reading any answer — forty OffsetCommits of
//!   rising offsets then an OffsetFetch; CreateTopics, DeleteTopics, Metadata;
//!   CreatePartitions then Metadata; a reassignment then Metadata; UpdateFeatures down, then
//!   up, each followed by ApiVersions; ten IncrementalAlterConfigs then DescribeConfigs;
//!   CreateAcls, DescribeAcls, DeleteAcls, DescribeAcls; SCRAM upsert, describe, delete,
//!   describe; five AlterClientQuotas then DescribeClientQuotas — and checks every read in
//!   the batch and the final state are those of the last write sent before it.
//! - `async_commits_of_stock_consumers_end_at_the_last_offset`:
//!   `tests/python/commit_order.py` runs groups of three confluent-kafka members (classic
//!   and `group.protocol=consumer`) that commit every record asynchronously, then
//!   synchronously, then close; every partition's committed offset must be its end offset
//!   (the last one committed), in every run.

mod common;

use common::python::{python, run_until_all_ok, wait_until_brokers_listed};
use common::raw::Raw;
use common::{addresses, all_logs, formatted_cluster, stop_gracefully, Node};
use kraftd_protocol::messages::{
    alter_client_quotas_request, alter_partition_reassignments_request, create_acls_request,
    create_partitions_request, create_topics_request, delete_acls_request, delete_topics_request,
    describe_client_quotas_request, describe_configs_request,
    describe_user_scram_credentials_request, incremental_alter_configs_request, metadata_request,
    offset_commit_request, offset_fetch_request, update_features_request, AlterClientQuotasRequest,
    AlterPartitionReassignmentsRequest, AlterUserScramCredentialsRequest, ApiVersionsRequest,
    CreateAclsRequest, CreatePartitionsRequest, CreateTopicsRequest, DeleteAclsRequest,
    DeleteTopicsRequest, DescribeAclsRequest, DescribeClientQuotasRequest, DescribeConfigsRequest,
    DescribeUserScramCredentialsRequest, FindCoordinatorRequest, IncrementalAlterConfigsRequest,
    MetadataRequest, OffsetCommitRequest, OffsetFetchRequest, UpdateFeaturesRequest,
};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody};

const AUTHORIZER: [&str; 2] = [
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found=true",
];

fn start_cluster(root: &std::path::Path) -> (Vec<Node>, Vec<Node>) {
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root, 3, 3);
    for node in controllers.iter().chain(&brokers) {
        node.add_config(&AUTHORIZER);
    }
    for broker in &brokers {
        broker.add_config(&[
            "group.initial.rebalance.delay.ms=500",
            "group.consumer.min.session.timeout.ms=6000",
            "group.consumer.session.timeout.ms=6000",
            "group.consumer.min.heartbeat.interval.ms=500",
            "group.consumer.heartbeat.interval.ms=500",
            "offsets.topic.num.partitions=6",
        ]);
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    wait_until_brokers_listed(&addresses(&brokers), 3, || all_logs(&brokers));
    (controllers, brokers)
}

#[test]
fn request_order_on_a_three_by_three_cluster() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (mut controllers, mut brokers) = start_cluster(root.path());
    let bootstrap = addresses(&brokers);
    std::thread::scope(|s| {
        let (bootstrap, brokers) = (&bootstrap, &brokers);
        s.spawn(move || {
            run_until_all_ok("commit_order.py", &[bootstrap, "5", "3"], || {
                all_logs(brokers)
            });
        });
        let checked = std::panic::catch_unwind(|| {
            pipelined_conflicting_requests_end_in_the_last_state_sent(brokers)
        });
        if let Err(panic) = checked {
            eprintln!("the brokers' logs:\n{}", all_logs(brokers));
            std::panic::resume_unwind(panic);
        }
    });
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}

fn create_topic(name: &str, partitions: i32) -> RequestBody {
    RequestBody::CreateTopics(CreateTopicsRequest {
        topics: vec![create_topics_request::CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: 3,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    })
}

fn delete_topic(name: &str) -> RequestBody {
    RequestBody::DeleteTopics(DeleteTopicsRequest {
        topics: vec![delete_topics_request::DeleteTopicState {
            name: Some(name.into()),
            ..Default::default()
        }],
        topic_names: vec![name.into()],
        timeout_ms: 30_000,
        ..Default::default()
    })
}

fn metadata(name: &str) -> RequestBody {
    RequestBody::Metadata(MetadataRequest {
        topics: Some(vec![metadata_request::MetadataRequestTopic {
            name: Some(name.into()),
            ..Default::default()
        }]),
        allow_auto_topic_creation: false,
        ..Default::default()
    })
}

/// The topic's error code and partition count in a Metadata answer.
fn topic_state(response: &ResponseBody) -> (i16, usize) {
    let ResponseBody::Metadata(m) = response else {
        panic!("not a Metadata answer: {response:?}")
    };
    let t = &m.topics[0];
    (t.error_code, t.partitions.len())
}

fn no_errors(what: &str, response: &ResponseBody) {
    let text = format!("{response:?}");
    // Every error code of these answers is a field named `error_code`; all must be 0.
    for part in text.split("error_code: ").skip(1) {
        let code: i16 = part
            .split(|c: char| !c.is_ascii_digit() && c != '-')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(code, 0, "{what} failed: {response:?}");
    }
}

/// Each family's conflicting requests, pipelined on one connection.
fn pipelined_conflicting_requests_end_in_the_last_state_sent(brokers: &[Node]) {
    let mut raw = Raw::connect(&brokers[0].address());

    // Topics: create then delete then read, create then read, three times over.
    for round in 0..3 {
        let gone = format!("order-gone-{round}");
        let answers = raw.pipeline(vec![
            (7, create_topic(&gone, 3)),
            (6, delete_topic(&gone)),
            (12, metadata(&gone)),
        ]);
        no_errors("CreateTopics", &answers[0]);
        no_errors("DeleteTopics", &answers[1]);
        assert_eq!(
            topic_state(&answers[2]).0,
            ErrorCode::UnknownTopicOrPartition.code(),
            "the Metadata after a pipelined create and delete still lists the topic: {:?}",
            answers[2]
        );
        let kept = format!("order-kept-{round}");
        let answers = raw.pipeline(vec![(7, create_topic(&kept, 4)), (12, metadata(&kept))]);
        no_errors("CreateTopics", &answers[0]);
        assert_eq!(topic_state(&answers[1]), (0, 4), "{:?}", answers[1]);
    }

    // Partitions: 4 then 6 then read; the replicas reordered then read.
    let grow = RequestBody::CreatePartitions(CreatePartitionsRequest {
        topics: vec![create_partitions_request::CreatePartitionsTopic {
            name: "order-kept-1".into(),
            count: 6,
            assignments: None,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    });
    let answers = raw.pipeline(vec![(3, grow), (12, metadata("order-kept-1"))]);
    no_errors("CreatePartitions", &answers[0]);
    assert_eq!(topic_state(&answers[1]), (0, 6), "{:?}", answers[1]);
    let ResponseBody::Metadata(m) = raw.call(12, metadata("order-kept-2")) else {
        panic!("not a Metadata answer")
    };
    let mut reversed = m.topics[0].partitions[0].replica_nodes.clone();
    reversed.reverse();
    let reassign = RequestBody::AlterPartitionReassignments(AlterPartitionReassignmentsRequest {
        timeout_ms: 30_000,
        topics: vec![alter_partition_reassignments_request::ReassignableTopic {
            name: "order-kept-2".into(),
            partitions: vec![
                alter_partition_reassignments_request::ReassignablePartition {
                    partition_index: 0,
                    replicas: Some(reversed.clone()),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }],
        ..Default::default()
    });
    let answers = raw.pipeline(vec![(0, reassign), (12, metadata("order-kept-2"))]);
    no_errors("AlterPartitionReassignments", &answers[0]);
    let ResponseBody::Metadata(m) = &answers[1] else {
        panic!("{:?}", answers[1])
    };
    assert_eq!(m.topics[0].partitions[0].replica_nodes, reversed, "{m:?}");

    // Features: eligible leader replicas off, read, on, read (ApiVersions' finalized levels).
    let elr = |level: i16, upgrade_type: i8| {
        RequestBody::UpdateFeatures(UpdateFeaturesRequest {
            timeout_ms: 30_000,
            feature_updates: vec![update_features_request::FeatureUpdateKey {
                feature: "eligible.leader.replicas.version".into(),
                max_version_level: level,
                upgrade_type,
                ..Default::default()
            }],
            ..Default::default()
        })
    };
    let versions = RequestBody::ApiVersions(ApiVersionsRequest {
        client_software_name: "order".into(),
        client_software_version: "1".into(),
        ..Default::default()
    });
    let elr_level = |r: &ResponseBody| {
        let ResponseBody::ApiVersions(v) = r else {
            panic!("{r:?}")
        };
        v.finalized_features
            .iter()
            .find(|f| f.name == "eligible.leader.replicas.version")
            .map_or(0, |f| f.max_version_level)
    };
    let answers = raw.pipeline(vec![
        (1, elr(0, 2)),
        (3, versions.clone()),
        (1, elr(1, 1)),
        (3, versions),
    ]);
    no_errors("UpdateFeatures", &answers[0]);
    no_errors("UpdateFeatures", &answers[2]);
    assert_eq!(elr_level(&answers[1]), 0, "{:?}", answers[1]);
    assert_eq!(elr_level(&answers[3]), 1, "{:?}", answers[3]);

    // Configs: retention.ms set ten times, then read, in one batch.
    let topic = "order-kept-0";
    let set = |value: i64| {
        RequestBody::IncrementalAlterConfigs(IncrementalAlterConfigsRequest {
            resources: vec![incremental_alter_configs_request::AlterConfigsResource {
                resource_type: 2,
                resource_name: topic.into(),
                configs: vec![incremental_alter_configs_request::AlterableConfig {
                    name: "retention.ms".into(),
                    config_operation: 0,
                    value: Some(value.to_string()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        })
    };
    let describe = RequestBody::DescribeConfigs(DescribeConfigsRequest {
        resources: vec![describe_configs_request::DescribeConfigsResource {
            resource_type: 2,
            resource_name: topic.into(),
            configuration_keys: Some(vec!["retention.ms".into()]),
            ..Default::default()
        }],
        ..Default::default()
    });
    let mut batch: Vec<_> = (1..=10).map(|i| (1, set(60_000 * i))).collect();
    batch.push((4, describe.clone()));
    let answers = raw.pipeline(batch);
    for a in &answers[..10] {
        no_errors("IncrementalAlterConfigs", a);
    }
    let ResponseBody::DescribeConfigs(d) = &answers[10] else {
        panic!("{:?}", answers[10])
    };
    let value = d.results[0].configs[0].value.clone();
    assert_eq!(value.as_deref(), Some("600000"), "{d:?}");

    // ACLs: create, read, delete, read.
    let acl_topic = "order-acl-topic";
    let create_acl = RequestBody::CreateAcls(CreateAclsRequest {
        creations: vec![create_acls_request::AclCreation {
            resource_type: 2,
            resource_name: acl_topic.into(),
            resource_pattern_type: 3,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: 3,
            permission_type: 3,
            ..Default::default()
        }],
        ..Default::default()
    });
    let describe_acls = RequestBody::DescribeAcls(DescribeAclsRequest {
        resource_type_filter: 2,
        resource_name_filter: Some(acl_topic.into()),
        pattern_type_filter: 1,
        principal_filter: None,
        host_filter: None,
        operation: 1,
        permission_type: 1,
        ..Default::default()
    });
    let delete_acl = RequestBody::DeleteAcls(DeleteAclsRequest {
        filters: vec![delete_acls_request::DeleteAclsFilter {
            resource_type_filter: 2,
            resource_name_filter: Some(acl_topic.into()),
            pattern_type_filter: 1,
            principal_filter: None,
            host_filter: None,
            operation: 1,
            permission_type: 1,
            ..Default::default()
        }],
        ..Default::default()
    });
    let acl_count = |r: &ResponseBody| {
        let ResponseBody::DescribeAcls(d) = r else {
            panic!("{r:?}")
        };
        assert_eq!(d.error_code, 0, "{d:?}");
        d.resources.iter().map(|r| r.acls.len()).sum::<usize>()
    };
    for _ in 0..3 {
        let answers = raw.pipeline(vec![
            (3, create_acl.clone()),
            (3, describe_acls.clone()),
            (3, delete_acl.clone()),
            (3, describe_acls.clone()),
        ]);
        no_errors("CreateAcls", &answers[0]);
        no_errors("DeleteAcls", &answers[2]);
        assert_eq!(acl_count(&answers[1]), 1, "{:?}", answers[1]);
        assert_eq!(acl_count(&answers[3]), 0, "{:?}", answers[3]);
    }

    // SCRAM: upsert, read, delete, read.
    let upsert = RequestBody::AlterUserScramCredentials(AlterUserScramCredentialsRequest {
        upsertions: vec![
            kraftd_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion {
                name: "order-user".into(),
                mechanism: 1,
                iterations: 4096,
                salt: bytes::Bytes::from_static(b"0123456789abcdef"),
                salted_password: bytes::Bytes::from(vec![7u8; 32]),
                ..Default::default()
            },
        ],
        ..Default::default()
    });
    let delete_user = RequestBody::AlterUserScramCredentials(AlterUserScramCredentialsRequest {
        deletions: vec![
            kraftd_protocol::messages::alter_user_scram_credentials_request::ScramCredentialDeletion {
                name: "order-user".into(),
                mechanism: 1,
                ..Default::default()
            },
        ],
        ..Default::default()
    });
    let describe_user =
        RequestBody::DescribeUserScramCredentials(DescribeUserScramCredentialsRequest {
            users: Some(vec![describe_user_scram_credentials_request::UserName {
                name: "order-user".into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
    let user_code = |r: &ResponseBody| {
        let ResponseBody::DescribeUserScramCredentials(d) = r else {
            panic!("{r:?}")
        };
        d.results[0].error_code
    };
    for _ in 0..3 {
        let answers = raw.pipeline(vec![
            (0, upsert.clone()),
            (0, describe_user.clone()),
            (0, delete_user.clone()),
            (0, describe_user.clone()),
        ]);
        no_errors("AlterUserScramCredentials", &answers[0]);
        no_errors("AlterUserScramCredentials", &answers[2]);
        assert_eq!(user_code(&answers[1]), 0, "{:?}", answers[1]);
        assert_eq!(
            user_code(&answers[3]),
            ErrorCode::ResourceNotFound.code(),
            "{:?}",
            answers[3]
        );
    }

    // Quotas: set five times, then read.
    let quota = |rate: f64| {
        RequestBody::AlterClientQuotas(AlterClientQuotasRequest {
            entries: vec![alter_client_quotas_request::EntryData {
                entity: vec![alter_client_quotas_request::EntityData {
                    entity_type: "user".into(),
                    entity_name: Some("order-user".into()),
                    ..Default::default()
                }],
                ops: vec![alter_client_quotas_request::OpData {
                    key: "producer_byte_rate".into(),
                    value: rate,
                    remove: false,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        })
    };
    let describe_quota = RequestBody::DescribeClientQuotas(DescribeClientQuotasRequest {
        components: vec![describe_client_quotas_request::ComponentData {
            entity_type: "user".into(),
            match_type: 0,
            r#match: Some("order-user".into()),
            ..Default::default()
        }],
        strict: true,
        ..Default::default()
    });
    let mut batch: Vec<_> = (1..=5).map(|i| (1, quota(1000.0 * i as f64))).collect();
    batch.push((1, describe_quota));
    let answers = raw.pipeline(batch);
    let ResponseBody::DescribeClientQuotas(d) = &answers[5] else {
        panic!("{:?}", answers[5])
    };
    let entries = d.entries.as_ref().expect("entries");
    assert_eq!(entries[0].values[0].value, 5000.0, "{d:?}");

    // Offsets: forty commits of rising offsets then a fetch, on the group's coordinator.
    for round in 0..5 {
        let group = format!("order-group-{round}");
        let mut coordinator = coordinator_of(&mut raw, &group);
        let commit = |offset: i64| {
            RequestBody::OffsetCommit(OffsetCommitRequest {
                group_id: group.clone(),
                generation_id_or_member_epoch: -1,
                topics: vec![offset_commit_request::OffsetCommitRequestTopic {
                    name: topic.into(),
                    partitions: (0..4)
                        .map(|p| offset_commit_request::OffsetCommitRequestPartition {
                            partition_index: p,
                            committed_offset: offset + p as i64,
                            committed_leader_epoch: -1,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }],
                ..Default::default()
            })
        };
        let fetch = RequestBody::OffsetFetch(OffsetFetchRequest {
            groups: vec![offset_fetch_request::OffsetFetchRequestGroup {
                group_id: group.clone(),
                topics: None,
                member_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        });
        let mut batch: Vec<_> = (1..=40).map(|i| (8, commit(i * 10))).collect();
        batch.push((8, fetch.clone()));
        let answers = raw_until_loaded(&mut coordinator, batch);
        for a in &answers[..40] {
            no_errors("OffsetCommit", a);
        }
        let check = |r: &ResponseBody| {
            let ResponseBody::OffsetFetch(f) = r else {
                panic!("{r:?}")
            };
            let partitions = &f.groups[0].topics[0].partitions;
            assert_eq!(partitions.len(), 4, "{f:?}");
            for p in partitions {
                assert_eq!(
                    p.committed_offset,
                    400 + p.partition_index as i64,
                    "the group's offset is not the last one committed: {f:?}"
                );
            }
        };
        check(&answers[40]);
        check(&coordinator.call(8, fetch));
    }
}

/// A connection to `group`'s coordinator, once `__consumer_offsets` exists (its first
/// lookups answer COORDINATOR_NOT_AVAILABLE while it is created).
fn coordinator_of(raw: &mut Raw, group: &str) -> Raw {
    for _ in 0..60 {
        let request = RequestBody::FindCoordinator(FindCoordinatorRequest {
            key_type: 0,
            coordinator_keys: vec![group.into()],
            ..Default::default()
        });
        let ResponseBody::FindCoordinator(found) = raw.call(4, request) else {
            panic!("not a FindCoordinator answer")
        };
        let c = &found.coordinators[0];
        if c.error_code == 0 {
            return Raw::connect(&format!("{}:{}", c.host, c.port));
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    panic!("no coordinator for {group}");
}

/// `batch` on the coordinator, again while its first answer says the coordinator is still
/// loading (a new `__consumer_offsets` partition).
fn raw_until_loaded(raw: &mut Raw, batch: Vec<(i16, RequestBody)>) -> Vec<ResponseBody> {
    let retriable = [
        ErrorCode::CoordinatorLoadInProgress.code(),
        ErrorCode::CoordinatorNotAvailable.code(),
        ErrorCode::NotCoordinator.code(),
    ];
    for _ in 0..60 {
        let answers = raw.pipeline(batch.clone());
        let ResponseBody::OffsetCommit(first) = &answers[0] else {
            panic!("{:?}", answers[0])
        };
        let code = first.topics[0].partitions[0].error_code;
        if !retriable.contains(&code) {
            return answers;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    panic!("the group coordinator never loaded");
}
