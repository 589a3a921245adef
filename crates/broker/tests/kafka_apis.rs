//! Tests of the KafkaApis answers (Metadata, DescribeCluster, DescribeConfigs): images are
//! built by replaying Kafka's metadata records through the one replay path, and every answer
//! is encoded at its version and decoded back unchanged, which proves it is encodable there
//! and that the fields the version lacks were left at their defaults.

use std::collections::BTreeMap;

use kraftd_broker::kafka_apis::describe_cluster::describe_cluster_response;
use kraftd_broker::kafka_apis::metadata::{metadata_response, MetadataAnswer};
use kraftd_broker::kafka_apis::{BrokerContext, AUTHORIZED_OPERATIONS_OMITTED};
use kraftd_controller::config_helper::{describe_configs_response, source, ConfigContext};
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::describe_cluster_request::DescribeClusterRequest;
use kraftd_protocol::messages::describe_configs_request::{
    DescribeConfigsRequest, DescribeConfigsResource,
};
use kraftd_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResponse, DescribeConfigsResult,
};
use kraftd_protocol::messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
use kraftd_protocol::messages::metadata_response::MetadataResponsePartition;
use kraftd_protocol::metadata::register_broker_record::BrokerEndpoint;
use kraftd_protocol::metadata::{ConfigRecord, PartitionRecord, RegisterBrokerRecord, TopicRecord};
use kraftd_protocol::{ApiKey, ErrorCode, Message, MetadataRecord, Uuid};

const TOPIC_T: Uuid = Uuid([7; 16]);
const TOPIC_U: Uuid = Uuid([8; 16]);
const DIR_A: Uuid = Uuid([0xa; 16]);
const DIR_B: Uuid = Uuid([0xb; 16]);
const DIR_LOST: Uuid = Uuid([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);

fn broker(id: i32, listeners: &[(&str, u16)], fenced: bool, log_dirs: Vec<Uuid>) -> MetadataRecord {
    MetadataRecord::RegisterBroker(RegisterBrokerRecord {
        broker_id: id,
        incarnation_id: Uuid([id as u8; 16]),
        broker_epoch: 100 + i64::from(id),
        end_points: listeners
            .iter()
            .map(|(name, port)| BrokerEndpoint {
                name: name.to_string(),
                host: format!("host{id}"),
                port: *port,
                security_protocol: 0,
                ..Default::default()
            })
            .collect(),
        rack: Some(format!("rack{id}")),
        fenced,
        log_dirs,
        ..Default::default()
    })
}

fn topic(name: &str, id: Uuid) -> MetadataRecord {
    MetadataRecord::Topic(TopicRecord {
        name: name.to_string(),
        topic_id: id,
        ..Default::default()
    })
}

fn partition(
    topic_id: Uuid,
    partition_id: i32,
    replicas: &[i32],
    isr: &[i32],
    leader: i32,
    directories: Vec<Uuid>,
) -> MetadataRecord {
    MetadataRecord::Partition(PartitionRecord {
        partition_id,
        topic_id,
        replicas: replicas.to_vec(),
        isr: isr.to_vec(),
        leader,
        leader_epoch: 5 + partition_id,
        partition_epoch: 1,
        directories,
        ..Default::default()
    })
}

fn config(resource_type: i8, resource: &str, key: &str, value: &str) -> MetadataRecord {
    MetadataRecord::Config(ConfigRecord {
        resource_type,
        resource_name: resource.to_string(),
        name: key.to_string(),
        value: Some(value.to_string()),
        ..Default::default()
    })
}

/// Brokers: 1 (PLAINTEXT + INTERNAL), 2 (PLAINTEXT, fenced), 3 (INTERNAL only),
/// 4 (PLAINTEXT, one online directory). Topic `t`:
/// p0 leader 1, replicas 1 2 3; p1 no leader; p2 led by 3 (no PLAINTEXT);
/// p3 led by fenced 2; p4 led by unregistered 9; p5 on 4 in an offline directory;
/// p6 on 4 in a lost directory. Topic `u`: one partition on broker 1.
fn image() -> MetadataImage {
    let records = vec![
        broker(1, &[("PLAINTEXT", 9092), ("INTERNAL", 9192)], false, vec![]),
        broker(2, &[("PLAINTEXT", 9093)], true, vec![]),
        broker(3, &[("INTERNAL", 9194)], false, vec![]),
        broker(4, &[("PLAINTEXT", 9095)], false, vec![DIR_A]),
        topic("t", TOPIC_T),
        partition(TOPIC_T, 0, &[1, 2, 3], &[1], 1, vec![]),
        partition(TOPIC_T, 1, &[2], &[2], -1, vec![]),
        partition(TOPIC_T, 2, &[3, 1], &[3, 1], 3, vec![]),
        partition(TOPIC_T, 3, &[2, 1], &[2, 1], 2, vec![]),
        partition(TOPIC_T, 4, &[9], &[9], 9, vec![]),
        partition(TOPIC_T, 5, &[4, 1], &[4, 1], 1, vec![DIR_B, DIR_A]),
        partition(TOPIC_T, 6, &[4, 1], &[4, 1], 1, vec![DIR_LOST, DIR_A]),
        topic("u", TOPIC_U),
        partition(TOPIC_U, 0, &[1], &[1], 1, vec![]),
    ];
    MetadataImage::empty()
        .replay_all(&records)
        .expect("records replay")
}

fn ctx(listener: &str) -> BrokerContext<'_> {
    BrokerContext {
        broker_id: 1,
        cluster_id: "cluster-x",
        listener_name: listener,
        controller_seed: 0,
    }
}

/// Encodes at `version` and decodes back: the value must survive unchanged.
fn round_trip<M: Message>(message: &M, version: i16) {
    let mut bytes = message
        .to_bytes(version)
        .unwrap_or_else(|e| panic!("{} v{version} does not encode: {e:?}", M::NAME));
    let decoded = M::decode(&mut bytes, version).expect("decodes");
    assert_eq!(&decoded, message, "{} v{version} round trip", M::NAME);
}

fn all_topics_request(version: i16) -> MetadataRequest {
    MetadataRequest {
        topics: if version == 0 { Some(vec![]) } else { None },
        allow_auto_topic_creation: true,
        ..Default::default()
    }
}

fn named(names: &[&str]) -> MetadataRequest {
    MetadataRequest {
        topics: Some(
            names
                .iter()
                .map(|n| MetadataRequestTopic {
                    name: Some(n.to_string()),
                    ..Default::default()
                })
                .collect(),
        ),
        allow_auto_topic_creation: true,
        ..Default::default()
    }
}

fn by_id(ids: &[Uuid]) -> MetadataRequest {
    MetadataRequest {
        topics: Some(
            ids.iter()
                .map(|id| MetadataRequestTopic {
                    topic_id: *id,
                    name: None,
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    }
}

fn error(code: ErrorCode) -> i16 {
    code as i16
}

#[test]
fn metadata_all_topics_at_every_version() {
    let image = image();
    let versions = ApiKey::Metadata.valid_versions();
    assert_eq!((versions.min, versions.max), (0, 13));
    for version in versions.iter() {
        let MetadataAnswer {
            response,
            missing_topics,
        } = metadata_response(
            &image,
            &all_topics_request(version),
            version,
            &ctx("PLAINTEXT"),
            &|_| true,
        );
        round_trip(&response, version);
        assert!(missing_topics.is_empty());
        // Alive brokers with the PLAINTEXT listener: 2 is fenced, 3 lacks the listener.
        let brokers: Vec<(i32, i32)> = response
            .brokers
            .iter()
            .map(|b| (b.node_id, b.port))
            .collect();
        assert_eq!(brokers, vec![(1, 9092), (4, 9095)], "v{version}");
        if version >= 1 {
            assert_eq!(response.brokers[0].rack.as_deref(), Some("rack1"));
            // A random unfenced broker (seed 0 picks the first): Kafka's KRaft answer.
            assert_eq!(response.controller_id, 1);
        } else {
            assert_eq!(response.controller_id, -1);
        }
        assert_eq!(
            response.cluster_id.as_deref(),
            (version >= 2).then_some("cluster-x")
        );
        let names: Vec<_> = response
            .topics
            .iter()
            .map(|t| t.name.clone().unwrap())
            .collect();
        assert_eq!(names, vec!["t", "u"]);
        let t = &response.topics[0];
        assert_eq!(t.error_code, 0);
        assert_eq!(t.topic_id, if version >= 10 { TOPIC_T } else { Uuid::ZERO });
        assert!(!t.is_internal);
        assert_eq!(t.topic_authorized_operations, AUTHORIZED_OPERATIONS_OMITTED);
        let p = |i: usize| -> &MetadataResponsePartition { &t.partitions[i] };
        let epoch = |e: i32| if version >= 7 { e } else { -1 };
        let offline = |ids: Vec<i32>| if version >= 5 { ids } else { vec![] };

        // p0: leader 1 alive; replicas 2 (fenced) and 3 (no listener) are offline.
        assert_eq!(p(0).leader_id, 1);
        assert_eq!(p(0).leader_epoch, epoch(5));
        assert_eq!(p(0).offline_replicas, offline(vec![2, 3]));
        if version == 0 {
            // v0 lists only reachable replicas and says some are missing.
            assert_eq!(p(0).replica_nodes, vec![1]);
            assert_eq!(p(0).error_code, error(ErrorCode::ReplicaNotAvailable));
        } else {
            assert_eq!(p(0).replica_nodes, vec![1, 2, 3]);
            assert_eq!(p(0).isr_nodes, vec![1]);
            assert_eq!(p(0).error_code, 0);
        }
        // p1: no leader.
        assert_eq!(p(1).leader_id, -1);
        assert_eq!(p(1).error_code, error(ErrorCode::LeaderNotAvailable));
        assert_eq!(p(1).leader_epoch, epoch(6));
        // p2: the leader lacks the listener.
        assert_eq!(p(2).leader_id, -1);
        let expected = if version >= 6 {
            ErrorCode::ListenerNotFound
        } else {
            ErrorCode::LeaderNotAvailable
        };
        assert_eq!(p(2).error_code, error(expected));
        assert_eq!(p(2).offline_replicas, offline(vec![3]));
        // p3: a fenced leader that has the listener is still named (Kafka does the same).
        assert_eq!(p(3).leader_id, 2);
        assert_eq!(p(3).offline_replicas, offline(vec![2]));
        // p4: an unregistered leader.
        assert_eq!(p(4).leader_id, -1);
        assert_eq!(p(4).error_code, error(ErrorCode::LeaderNotAvailable));
        assert_eq!(p(4).offline_replicas, offline(vec![9]));
        // p5 / p6: broker 4's replica sits in a directory it does not report / a lost one.
        assert_eq!(p(5).offline_replicas, offline(vec![4]));
        assert_eq!(p(6).offline_replicas, offline(vec![4]));
        assert_eq!(p(5).leader_id, 1);
    }
}

#[test]
fn metadata_answers_on_the_listener_the_request_came_in_on() {
    let image = image();
    let response =
        metadata_response(&image, &named(&["t"]), 12, &ctx("INTERNAL"), &|_| true).response;
    round_trip(&response, 12);
    let brokers: Vec<(i32, &str, i32)> = response
        .brokers
        .iter()
        .map(|b| (b.node_id, b.host.as_str(), b.port))
        .collect();
    assert_eq!(brokers, vec![(1, "host1", 9192), (3, "host3", 9194)]);
    let p = &response.topics[0].partitions;
    // Broker 3 leads p2 and has INTERNAL: no error here.
    assert_eq!((p[2].leader_id, p[2].error_code), (3, 0));
    // p0: 2 (fenced) is offline; 3 is reachable on this listener.
    assert_eq!(p[0].offline_replicas, vec![2]);
    // p3: the fenced leader 2 has no INTERNAL listener.
    assert_eq!(p[3].leader_id, -1);
    assert_eq!(p[3].error_code, error(ErrorCode::ListenerNotFound));
}

#[test]
fn metadata_unknown_and_invalid_names_and_missing_topics() {
    let image = image();
    for version in [1, 4, 9, 12, 13] {
        let request = named(&["u", "missing", "bad name!", "__consumer_offsets", "u"]);
        let answer = metadata_response(&image, &request, version, &ctx("PLAINTEXT"), &|_| true);
        round_trip(&answer.response, version);
        assert_eq!(answer.missing_topics, vec!["missing", "__consumer_offsets"]);
        let topics: Vec<(Option<&str>, i16, bool, Uuid)> = answer
            .response
            .topics
            .iter()
            .map(|t| (t.name.as_deref(), t.error_code, t.is_internal, t.topic_id))
            .collect();
        let id = if version >= 10 { TOPIC_U } else { Uuid::ZERO };
        assert_eq!(
            topics,
            vec![
                (Some("u"), 0, false, id),
                (
                    Some("missing"),
                    error(ErrorCode::UnknownTopicOrPartition),
                    false,
                    Uuid::ZERO
                ),
                (
                    Some("bad name!"),
                    error(ErrorCode::InvalidTopicException),
                    false,
                    Uuid::ZERO
                ),
                (
                    Some("__consumer_offsets"),
                    error(ErrorCode::UnknownTopicOrPartition),
                    true,
                    Uuid::ZERO
                ),
            ],
            "v{version}"
        );
        assert!(answer.response.topics[1].partitions.is_empty());
    }
    // An empty list above v0 asks for no topics.
    let none = metadata_response(&image, &named(&[]), 4, &ctx("PLAINTEXT"), &|_| true).response;
    assert!(none.topics.is_empty());
    assert_eq!(none.brokers.len(), 2);
}

#[test]
fn metadata_by_topic_id() {
    let image = image();
    let unknown = Uuid([9; 16]);
    for version in [12, 13] {
        let response = metadata_response(
            &image,
            &by_id(&[TOPIC_U, unknown]),
            version,
            &ctx("PLAINTEXT"),
            &|_| true,
        )
        .response;
        round_trip(&response, version);
        // Unknown ids first, with a null name, as Kafka concatenates them.
        assert_eq!(response.topics.len(), 2);
        assert_eq!(response.topics[0].name, None);
        assert_eq!(response.topics[0].topic_id, unknown);
        assert_eq!(
            response.topics[0].error_code,
            error(ErrorCode::UnknownTopicId)
        );
        assert_eq!(response.topics[1].name.as_deref(), Some("u"));
        assert_eq!(response.topics[1].topic_id, TOPIC_U);
        assert_eq!(response.topics[1].partitions.len(), 1);
        assert_eq!(response.error_code, 0);
    }
    // Below v12 a topic id (or a null name) fails the request, as Kafka.
    for version in [10, 11] {
        let mut request = named(&["u"]);
        request.topics.as_mut().unwrap()[0].topic_id = TOPIC_U;
        let response =
            metadata_response(&image, &request, version, &ctx("PLAINTEXT"), &|_| true).response;
        round_trip(&response, version);
        assert_eq!(response.topics.len(), 1);
        assert_eq!(
            response.topics[0].error_code,
            error(ErrorCode::InvalidRequest)
        );
        assert!(response.brokers.is_empty());
    }
    let mut request = named(&["u"]);
    request.topics.as_mut().unwrap()[0].topic_id = TOPIC_U;
    let fine = metadata_response(&image, &request, 13, &ctx("PLAINTEXT"), &|_| true).response;
    assert_eq!(fine.topics[0].name.as_deref(), Some("u"));
}

#[test]
fn metadata_authorized_operations_stay_at_the_omitted_value() {
    let image = image();
    for version in 8..=13 {
        let mut request = named(&["u"]);
        request.include_topic_authorized_operations = true;
        request.include_cluster_authorized_operations = (8..=10).contains(&version);
        let response =
            metadata_response(&image, &request, version, &ctx("PLAINTEXT"), &|_| true).response;
        round_trip(&response, version);
        assert_eq!(response.cluster_authorized_operations, i32::MIN);
        assert_eq!(response.topics[0].topic_authorized_operations, i32::MIN);
    }
}

#[test]
fn describe_cluster_at_every_version() {
    let image = image();
    let versions = ApiKey::DescribeCluster.valid_versions();
    for version in versions.iter() {
        let request = DescribeClusterRequest::default();
        let response = describe_cluster_response(&image, &request, version, &ctx("PLAINTEXT"));
        round_trip(&response, version);
        assert_eq!(response.error_code, 0);
        assert_eq!(response.cluster_id, "cluster-x");
        assert_eq!(response.endpoint_type, 1);
        let ids: Vec<i32> = response.brokers.iter().map(|b| b.broker_id).collect();
        assert_eq!(ids, vec![1, 4]);
        assert_eq!(response.controller_id, 1);
        assert_eq!(response.cluster_authorized_operations, i32::MIN);
    }
    // v2: fenced brokers on request, flagged.
    let request = DescribeClusterRequest {
        include_fenced_brokers: true,
        include_cluster_authorized_operations: true,
        ..Default::default()
    };
    let response = describe_cluster_response(&image, &request, 2, &ctx("PLAINTEXT"));
    round_trip(&response, 2);
    let brokers: Vec<(i32, bool)> = response
        .brokers
        .iter()
        .map(|b| (b.broker_id, b.is_fenced))
        .collect();
    assert_eq!(brokers, vec![(1, false), (2, true), (4, false)]);
    // The random alive broker is 3 (seed 1 of [1, 3, 4]) which has no PLAINTEXT endpoint:
    // Kafka then answers -1.
    let seeded = BrokerContext {
        controller_seed: 1,
        ..ctx("PLAINTEXT")
    };
    let response =
        describe_cluster_response(&image, &DescribeClusterRequest::default(), 1, &seeded);
    assert_eq!(response.controller_id, -1);
    let response = describe_cluster_response(
        &image,
        &DescribeClusterRequest::default(),
        1,
        &BrokerContext {
            controller_seed: 2,
            ..seeded
        },
    );
    assert_eq!(response.controller_id, 4);
}

#[test]
fn describe_cluster_endpoint_type_errors() {
    let image = image();
    for (endpoint_type, code) in [
        (2, ErrorCode::MismatchedEndpointType),
        (7, ErrorCode::UnsupportedEndpointType),
    ] {
        for version in [1, 2] {
            let request = DescribeClusterRequest {
                endpoint_type,
                ..Default::default()
            };
            let response = describe_cluster_response(&image, &request, version, &ctx("PLAINTEXT"));
            round_trip(&response, version);
            assert_eq!(response.error_code, error(code));
            assert!(response.error_message.is_some());
            assert!(response.brokers.is_empty());
            assert_eq!(response.controller_id, -1);
        }
    }
}

// ---------------------------------------------------------------- DescribeConfigs

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const BROKER_LOGGER: i8 = 8;

fn resource(resource_type: i8, name: &str, keys: Option<&[&str]>) -> DescribeConfigsResource {
    DescribeConfigsResource {
        resource_type,
        resource_name: name.to_string(),
        configuration_keys: keys.map(|k| k.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    }
}

fn describe(
    image: &MetadataImage,
    resources: Vec<DescribeConfigsResource>,
    version: i16,
    static_configs: &BTreeMap<String, String>,
) -> DescribeConfigsResponse {
    let loggers = BTreeMap::from([("root".to_string(), "INFO".to_string())]);
    let request = DescribeConfigsRequest {
        resources,
        include_synonyms: true,
        include_documentation: true,
        ..Default::default()
    };
    let ctx = ConfigContext {
        broker_id: 1,
        static_configs,
        loggers: &loggers,
    };
    let response = describe_configs_response(image, &request, version, &ctx);
    round_trip(&response, version);
    response
}

fn entry<'r>(result: &'r DescribeConfigsResult, name: &str) -> &'r DescribeConfigsResourceResult {
    result
        .configs
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("{name} missing"))
}

fn synonyms(config: &DescribeConfigsResourceResult) -> Vec<(&str, Option<&str>, i8)> {
    config
        .synonyms
        .iter()
        .map(|s| (s.name.as_str(), s.value.as_deref(), s.source))
        .collect()
}

#[test]
fn describe_configs_topic_defaults() {
    let image = image();
    let statics = BTreeMap::new();
    for version in ApiKey::DescribeConfigs.valid_versions().iter() {
        let response = describe(&image, vec![resource(TOPIC, "u", None)], version, &statics);
        let result = &response.results[0];
        assert_eq!(
            (
                result.error_code,
                result.resource_type,
                result.resource_name.as_str()
            ),
            (0, TOPIC, "u")
        );
        let names: Vec<&str> = result.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names.len(),
            37,
            "every topic config Kafka 4.4 defines, its internal ones apart"
        );
        assert!(names.windows(2).all(|w| w[0] < w[1]), "name order");

        // retention.ms: the only broker candidate is log.retention.hours, dropped by Kafka's
        // "from the primary synonym on" rule: no synonyms, DEFAULT_CONFIG.
        let retention = entry(result, "retention.ms");
        assert_eq!(retention.value.as_deref(), Some("604800000"));
        assert_eq!(retention.config_source, source::DEFAULT_CONFIG);
        assert!(retention.synonyms.is_empty());
        assert!(!retention.read_only && !retention.is_sensitive);

        let bytes = entry(result, "retention.bytes");
        assert_eq!(bytes.value.as_deref(), Some("-1"));
        assert_eq!(
            synonyms(bytes),
            vec![("log.retention.bytes", Some("-1"), source::DEFAULT_CONFIG)]
        );
        assert_eq!(
            entry(result, "max.message.bytes").value.as_deref(),
            Some("1048588")
        );
        assert_eq!(
            entry(result, "cleanup.policy").value.as_deref(),
            Some("delete")
        );
        assert_eq!(
            entry(result, "min.cleanable.dirty.ratio").value.as_deref(),
            Some("0.5")
        );
        // No broker synonym at all.
        let remote = entry(result, "remote.storage.enable");
        assert_eq!(
            (remote.value.as_deref(), remote.config_source),
            (Some("false"), source::DEFAULT_CONFIG)
        );
        assert!(remote.synonyms.is_empty());

        if version >= 3 {
            assert_eq!(retention.config_type, 5, "LONG");
            assert_eq!(entry(result, "cleanup.policy").config_type, 7, "LIST");
            assert_eq!(
                entry(result, "min.cleanable.dirty.ratio").config_type,
                6,
                "DOUBLE"
            );
            assert_eq!(entry(result, "preallocate").config_type, 1, "BOOLEAN");
            assert_eq!(entry(result, "segment.bytes").config_type, 3, "INT");
            assert_eq!(entry(result, "compression.type").config_type, 2, "STRING");
            assert!(retention
                .documentation
                .as_deref()
                .is_some_and(|d| d.contains("retain")));
        } else {
            assert_eq!(retention.config_type, 0);
        }
    }
}

#[test]
fn describe_configs_topic_sources_and_synonym_order() {
    let records = vec![
        config(TOPIC, "t", "retention.ms", "1000"),
        config(TOPIC, "t", "cleanup.policy", "compact, delete"),
        config(BROKER, "1", "log.retention.ms", "9000"),
        config(BROKER, "", "log.retention.ms", "7000"),
        config(BROKER, "2", "log.retention.ms", "1"),
        config(BROKER, "", "log.retention.bytes", "500"),
    ];
    let image = image().replay_all(&records).unwrap();
    let statics = BTreeMap::from([
        ("log.retention.ms".to_string(), "5000".to_string()),
        ("log.roll.hours".to_string(), "2".to_string()),
    ]);
    let response = describe(
        &image,
        vec![resource(TOPIC, "t", None), resource(TOPIC, "u", None)],
        4,
        &statics,
    );
    let t = &response.results[0];
    let retention = entry(t, "retention.ms");
    assert_eq!(retention.value.as_deref(), Some("1000"));
    assert_eq!(retention.config_source, source::TOPIC_CONFIG);
    // Most specific first: topic, this broker, cluster default, static, default.
    assert_eq!(
        synonyms(retention),
        vec![
            ("retention.ms", Some("1000"), source::TOPIC_CONFIG),
            (
                "log.retention.ms",
                Some("9000"),
                source::DYNAMIC_BROKER_CONFIG
            ),
            (
                "log.retention.ms",
                Some("7000"),
                source::DYNAMIC_DEFAULT_BROKER_CONFIG
            ),
            (
                "log.retention.ms",
                Some("5000"),
                source::STATIC_BROKER_CONFIG
            ),
            ("log.retention.hours", Some("168"), source::DEFAULT_CONFIG),
        ]
    );
    assert_eq!(
        entry(t, "cleanup.policy").value.as_deref(),
        Some("compact,delete")
    );

    let u = &response.results[1];
    let retention = entry(u, "retention.ms");
    assert_eq!(retention.value.as_deref(), Some("9000"));
    assert_eq!(retention.config_source, source::DYNAMIC_BROKER_CONFIG);
    let bytes = entry(u, "retention.bytes");
    assert_eq!(bytes.value.as_deref(), Some("500"));
    assert_eq!(
        synonyms(bytes),
        vec![
            (
                "log.retention.bytes",
                Some("500"),
                source::DYNAMIC_DEFAULT_BROKER_CONFIG
            ),
            ("log.retention.bytes", Some("-1"), source::DEFAULT_CONFIG),
        ]
    );
    // segment.ms from static log.roll.hours (hours → ms); Kafka lists no synonyms because
    // none is named log.roll.ms, and calls the source DEFAULT_CONFIG.
    let segment = entry(u, "segment.ms");
    assert_eq!(segment.value.as_deref(), Some("7200000"));
    assert_eq!(segment.config_source, source::DEFAULT_CONFIG);
    assert!(segment.synonyms.is_empty());

    // Without include_synonyms the source stays and the list is empty.
    let request = DescribeConfigsRequest {
        resources: vec![resource(TOPIC, "u", Some(&["retention.ms", "no.such.key"]))],
        include_synonyms: false,
        include_documentation: false,
        ..Default::default()
    };
    let loggers = BTreeMap::new();
    let ctx = ConfigContext {
        broker_id: 1,
        static_configs: &statics,
        loggers: &loggers,
    };
    let response = describe_configs_response(&image, &request, 4, &ctx);
    round_trip(&response, 4);
    let configs = &response.results[0].configs;
    assert_eq!(configs.len(), 1, "configuration_keys filters");
    assert_eq!(configs[0].config_source, source::DYNAMIC_BROKER_CONFIG);
    assert!(configs[0].synonyms.is_empty());
    assert_eq!(configs[0].documentation, None);
}

#[test]
fn describe_configs_retention_from_hours_and_minutes() {
    let image = image()
        .replay_all(&[config(BROKER, "", "log.retention.minutes", "3")])
        .unwrap();
    let statics = BTreeMap::from([("log.retention.hours".to_string(), "24".to_string())]);
    let response = describe(
        &image,
        vec![resource(TOPIC, "u", Some(&["retention.ms"]))],
        4,
        &statics,
    );
    let retention = &response.results[0].configs[0];
    // Names outrank layers: minutes (dynamic default) beats hours (static).
    assert_eq!(retention.value.as_deref(), Some("180000"));
    assert_eq!(retention.config_source, source::DEFAULT_CONFIG);
    assert!(retention.synonyms.is_empty());
}

#[test]
fn describe_configs_topic_errors() {
    let image = image();
    let statics = BTreeMap::new();
    let response = describe(
        &image,
        vec![
            resource(TOPIC, "missing", None),
            resource(TOPIC, "bad name!", None),
            resource(0, "x", None),
        ],
        4,
        &statics,
    );
    let codes: Vec<i16> = response.results.iter().map(|r| r.error_code).collect();
    assert_eq!(
        codes,
        vec![
            error(ErrorCode::UnknownTopicOrPartition),
            error(ErrorCode::InvalidTopicException),
            error(ErrorCode::InvalidRequest),
        ]
    );
    assert!(response.results.iter().all(|r| r.configs.is_empty()));
    assert_eq!(response.results[1].resource_name, "bad name!");
}

#[test]
fn describe_configs_broker() {
    let records = vec![
        config(BROKER, "", "min.insync.replicas", "2"),
        config(BROKER, "1", "min.insync.replicas", "3"),
        config(BROKER, "2", "num.io.threads", "4"),
    ];
    let image = image().replay_all(&records).unwrap();
    let statics = BTreeMap::from([
        ("log.retention.hours".to_string(), "24".to_string()),
        ("node.id".to_string(), "1".to_string()),
        ("ssl.keystore.password".to_string(), "secret".to_string()),
        ("custom.thing".to_string(), "x".to_string()),
        (
            "listener.name.external.ssl.keystore.location".to_string(),
            "/k.pem".to_string(),
        ),
        ("ssl.keystore.location".to_string(), "/base.pem".to_string()),
        (
            "listener.name.external.scram-sha-256.sasl.jaas.config".to_string(),
            "secret".to_string(),
        ),
    ]);
    for version in ApiKey::DescribeConfigs.valid_versions().iter() {
        let response = describe(&image, vec![resource(BROKER, "1", None)], version, &statics);
        let result = &response.results[0];
        assert_eq!(result.error_code, 0);

        let isr = entry(result, "min.insync.replicas");
        assert_eq!(isr.value.as_deref(), Some("3"));
        assert_eq!(isr.config_source, source::DYNAMIC_BROKER_CONFIG);
        assert!(!isr.read_only);
        assert_eq!(
            synonyms(isr),
            vec![
                (
                    "min.insync.replicas",
                    Some("3"),
                    source::DYNAMIC_BROKER_CONFIG
                ),
                (
                    "min.insync.replicas",
                    Some("2"),
                    source::DYNAMIC_DEFAULT_BROKER_CONFIG
                ),
                ("min.insync.replicas", Some("1"), source::DEFAULT_CONFIG),
            ]
        );
        // Another broker's override is not ours.
        assert_eq!(entry(result, "num.io.threads").value.as_deref(), Some("8"));
        assert_eq!(
            entry(result, "num.io.threads").config_source,
            source::DEFAULT_CONFIG
        );

        let hours = entry(result, "log.retention.hours");
        assert_eq!(hours.value.as_deref(), Some("24"));
        assert_eq!(hours.config_source, source::STATIC_BROKER_CONFIG);
        assert!(hours.read_only);
        assert_eq!(
            synonyms(hours),
            vec![
                (
                    "log.retention.hours",
                    Some("24"),
                    source::STATIC_BROKER_CONFIG
                ),
                ("log.retention.hours", Some("168"), source::DEFAULT_CONFIG),
            ]
        );
        let ms = entry(result, "log.retention.ms");
        assert_eq!(ms.value, None, "null default");
        assert_eq!(ms.config_source, source::DEFAULT_CONFIG);

        let password = entry(result, "ssl.keystore.password");
        assert!(password.is_sensitive);
        assert_eq!(password.value, None);
        assert_eq!(
            synonyms(password),
            vec![("ssl.keystore.password", None, source::STATIC_BROKER_CONFIG)]
        );
        let custom = entry(result, "custom.thing");
        assert!(
            custom.is_sensitive,
            "unknown type: maybe a secret, as Kafka"
        );
        assert_eq!(custom.value, None);
        if version >= 3 {
            assert_eq!(password.config_type, 9, "PASSWORD");
            assert_eq!(custom.config_type, 0, "UNKNOWN");
            assert_eq!(entry(result, "node.id").config_type, 3);
        }
        assert_eq!(entry(result, "node.id").value.as_deref(), Some("1"));

        // A listener override: typed by its base config, which is its synonym.
        let own = entry(result, "listener.name.external.ssl.keystore.location");
        assert_eq!(own.value.as_deref(), Some("/k.pem"));
        assert!(!own.is_sensitive && !own.read_only);
        assert_eq!(
            synonyms(own),
            vec![
                (
                    "listener.name.external.ssl.keystore.location",
                    Some("/k.pem"),
                    source::STATIC_BROKER_CONFIG
                ),
                (
                    "ssl.keystore.location",
                    Some("/base.pem"),
                    source::STATIC_BROKER_CONFIG
                ),
            ]
        );
        let jaas = entry(
            result,
            "listener.name.external.scram-sha-256.sasl.jaas.config",
        );
        assert!(jaas.is_sensitive);
        assert_eq!(jaas.value, None);
        if version >= 3 {
            assert_eq!(own.config_type, 2, "STRING, as ssl.keystore.location");
            assert_eq!(jaas.config_type, 9, "PASSWORD, as sasl.jaas.config");
            assert_eq!(
                entry(result, "principal.builder.class").config_type,
                8,
                "CLASS"
            );
        }
        // Every security config Kafka knows is listed, as Kafka lists its configs.
        assert_eq!(
            entry(result, "sasl.kerberos.min.time.before.relogin")
                .value
                .as_deref(),
            Some("60000")
        );
    }

    // The cluster-wide default resource: only the dynamic defaults.
    let response = describe(&image, vec![resource(BROKER, "", None)], 4, &statics);
    let configs = &response.results[0].configs;
    assert_eq!(configs.len(), 1);
    assert_eq!(configs[0].name, "min.insync.replicas");
    assert_eq!(configs[0].value.as_deref(), Some("2"));
    assert_eq!(
        configs[0].config_source,
        source::DYNAMIC_DEFAULT_BROKER_CONFIG
    );
    assert_eq!(
        synonyms(&configs[0]),
        vec![(
            "min.insync.replicas",
            Some("2"),
            source::DYNAMIC_DEFAULT_BROKER_CONFIG
        )]
    );

    // Another broker, a non-integer, loggers.
    let response = describe(
        &image,
        vec![
            resource(BROKER, "2", None),
            resource(BROKER, "abc", None),
            resource(BROKER_LOGGER, "1", None),
            resource(BROKER_LOGGER, "", None),
            resource(BROKER_LOGGER, "2", None),
        ],
        4,
        &statics,
    );
    let r = &response.results;
    assert_eq!(r[0].error_code, error(ErrorCode::InvalidRequest));
    assert_eq!(
        r[0].error_message.as_deref(),
        Some("Unexpected broker id, expected 1 or empty string, but received 2")
    );
    assert_eq!(r[1].error_code, error(ErrorCode::InvalidRequest));
    assert_eq!(r[2].error_code, 0);
    assert_eq!(r[2].configs[0].name, "root");
    assert_eq!(
        r[2].configs[0].config_source,
        source::DYNAMIC_BROKER_LOGGER_CONFIG
    );
    assert_eq!(r[3].error_code, error(ErrorCode::InvalidRequest));
    assert_eq!(r[4].error_code, error(ErrorCode::InvalidRequest));
}

/// Kafka's Metadata hiding: topics the principal may not DESCRIBE leave an all-topics
/// answer; named, they get TOPIC_AUTHORIZATION_FAILED after the others, with no partitions,
/// no topic id and no internal flag, whether they exist or not, and are never candidates for
/// auto-creation; named by id, they keep the id and lose the name.
#[test]
fn metadata_hides_topics_the_principal_may_not_describe() {
    let image = image();
    let only_t = |name: &str| name == "t";
    for version in [1, 9, 12, 13] {
        let all = metadata_response(
            &image,
            &all_topics_request(version),
            version,
            &ctx("PLAINTEXT"),
            &only_t,
        )
        .response;
        round_trip(&all, version);
        let names: Vec<_> = all.topics.iter().map(|t| t.name.as_deref()).collect();
        assert_eq!(names, vec![Some("t")], "v{version}");
        let answer = metadata_response(
            &image,
            &named(&["u", "t", "missing", "__consumer_offsets"]),
            version,
            &ctx("PLAINTEXT"),
            &only_t,
        );
        round_trip(&answer.response, version);
        assert!(answer.missing_topics.is_empty(), "v{version}");
        let topics: Vec<(Option<&str>, i16, bool, Uuid, usize)> = answer
            .response
            .topics
            .iter()
            .map(|t| {
                (
                    t.name.as_deref(),
                    t.error_code,
                    t.is_internal,
                    t.topic_id,
                    t.partitions.len(),
                )
            })
            .collect();
        let refused = error(ErrorCode::TopicAuthorizationFailed);
        let t_id = if version >= 10 { TOPIC_T } else { Uuid::ZERO };
        assert_eq!(
            topics,
            vec![
                (Some("t"), topics[0].1, false, t_id, 7),
                (Some("u"), refused, false, Uuid::ZERO, 0),
                (Some("missing"), refused, false, Uuid::ZERO, 0),
                (Some("__consumer_offsets"), refused, false, Uuid::ZERO, 0),
            ],
            "v{version}"
        );
    }
    let by_id = MetadataRequest {
        topics: Some(vec![
            MetadataRequestTopic {
                topic_id: TOPIC_U,
                name: None,
                ..Default::default()
            },
            MetadataRequestTopic {
                topic_id: TOPIC_T,
                name: None,
                ..Default::default()
            },
        ]),
        ..Default::default()
    };
    let response = metadata_response(&image, &by_id, 12, &ctx("PLAINTEXT"), &only_t).response;
    round_trip(&response, 12);
    let topics: Vec<(Option<&str>, i16, Uuid)> = response
        .topics
        .iter()
        .map(|t| (t.name.as_deref(), t.error_code, t.topic_id))
        .collect();
    assert_eq!(
        topics,
        vec![
            (Some("t"), 0, TOPIC_T),
            (None, error(ErrorCode::TopicAuthorizationFailed), TOPIC_U),
        ]
    );
}

/// GROUP resources as Kafka 4.4's `ConfigHelper.createGroupConfigEntry`: any group name, every
/// non-internal group config; the group's own value is GROUP_CONFIG, else the broker synonym's
/// value and source, else the key's default; an empty name is INVALID_REQUEST.
#[test]
fn describe_configs_group() {
    const GROUP: i8 = 32;
    let image = image()
        .replay_all(&[
            config(GROUP, "g", "share.auto.offset.reset", "earliest"),
            config(GROUP, "g", "share.record.lock.duration.ms", "20000"),
        ])
        .unwrap();
    let statics = BTreeMap::from([(
        "group.share.delivery.count.limit".to_string(),
        "7".to_string(),
    )]);
    let response = describe(
        &image,
        vec![
            resource(GROUP, "g", None),
            resource(GROUP, "never-created", Some(&["share.auto.offset.reset"])),
            resource(GROUP, "", None),
        ],
        4,
        &statics,
    );
    let g = &response.results[0];
    assert_eq!(g.error_code, 0);
    let names: Vec<&str> = g.configs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names.len(),
        21,
        "Kafka 4.4's group configs, the internal ones apart"
    );
    assert!(!names.contains(&"share.assignor.offload.enable"));
    let reset = entry(g, "share.auto.offset.reset");
    assert_eq!(
        (reset.value.as_deref(), reset.config_source, reset.read_only),
        (Some("earliest"), source::GROUP_CONFIG, false)
    );
    assert_eq!(
        synonyms(reset),
        vec![
            (
                "share.auto.offset.reset",
                Some("earliest"),
                source::GROUP_CONFIG
            ),
            (
                "share.auto.offset.reset",
                Some("latest"),
                source::DEFAULT_CONFIG
            ),
        ]
    );
    let lock = entry(g, "share.record.lock.duration.ms");
    assert_eq!(lock.value.as_deref(), Some("20000"));
    assert_eq!(lock.config_source, source::GROUP_CONFIG);
    assert_eq!(
        synonyms(lock)[1],
        (
            "group.share.record.lock.duration.ms",
            Some("30000"),
            source::DEFAULT_CONFIG
        )
    );
    let limit = entry(g, "share.delivery.count.limit");
    assert_eq!(
        (limit.value.as_deref(), limit.config_source),
        (Some("7"), source::STATIC_BROKER_CONFIG)
    );
    let isolation = entry(g, "share.isolation.level");
    assert_eq!(
        (isolation.value.as_deref(), isolation.config_source),
        (Some("read_uncommitted"), source::DEFAULT_CONFIG)
    );
    assert_eq!(
        entry(g, "streams.assignor.name").value.as_deref(),
        Some("sticky")
    );

    let other = &response.results[1];
    assert_eq!(other.error_code, 0);
    assert_eq!(other.configs.len(), 1);
    assert_eq!(other.configs[0].value.as_deref(), Some("latest"));
    assert_eq!(other.configs[0].config_source, source::DEFAULT_CONFIG);

    let empty = &response.results[2];
    assert_eq!(empty.error_code, error(ErrorCode::InvalidRequest));
    assert_eq!(
        empty.error_message.as_deref(),
        Some("Group name must not be empty")
    );
}

/// What the share partitions read a group's settings from is what DescribeConfigs answers.
#[test]
fn effective_group_configs_are_the_described_values() {
    use kraftd_controller::config_helper::effective_group_configs;
    let image = image()
        .replay_all(&[config(32, "g", "share.auto.offset.reset", "earliest")])
        .unwrap();
    let statics = BTreeMap::from([(
        "group.share.record.lock.duration.ms".to_string(),
        "20000".to_string(),
    )]);
    let g = effective_group_configs(&image, 1, &statics, "g");
    assert_eq!(g["share.auto.offset.reset"], "earliest");
    assert_eq!(g["share.record.lock.duration.ms"], "20000");
    assert_eq!(g["share.delivery.count.limit"], "5");
    assert_eq!(g["share.isolation.level"], "read_uncommitted");
    assert_eq!(g["share.partition.max.record.locks"], "2000");
    let other = effective_group_configs(&image, 1, &BTreeMap::new(), "other");
    assert_eq!(other["share.auto.offset.reset"], "latest");
    assert_eq!(other["share.record.lock.duration.ms"], "30000");
}

/// KIP-951: an answer that says a partition's leadership moved names the new leader and its
/// endpoint on the request's listener; a fenced leader or one without the listener is named
/// without an endpoint, and versions without `NodeEndpoints` are left alone.
#[test]
fn moved_partitions_name_their_leader_and_its_endpoint() {
    use kraftd_broker::server::node_endpoints;
    use kraftd_protocol::messages::{fetch_response, produce_response, share_fetch_response};
    let image = image();
    let not_leader = ErrorCode::NotLeaderOrFollower.code();
    let produce_partition =
        |index: i32, error_code: i16| produce_response::PartitionProduceResponse {
            index,
            error_code,
            current_leader: produce_response::LeaderIdAndEpoch {
                leader_id: -1,
                leader_epoch: -1,
                ..Default::default()
            },
            ..Default::default()
        };
    let produce = || produce_response::ProduceResponse {
        responses: vec![produce_response::TopicProduceResponse {
            name: "t".into(),
            // t-0 led by 1 (PLAINTEXT); t-3 led by fenced 2; t-2 led by 3 (no PLAINTEXT);
            // u-0 answered without error.
            partition_responses: vec![
                produce_partition(0, not_leader),
                produce_partition(3, not_leader),
                produce_partition(2, not_leader),
                produce_partition(4, 0),
            ],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut answer = produce();
    node_endpoints::produce(&image, "PLAINTEXT", 11, &mut answer);
    let leaders: Vec<_> = answer.responses[0]
        .partition_responses
        .iter()
        .map(|p| (p.current_leader.leader_id, p.current_leader.leader_epoch))
        .collect();
    assert_eq!(leaders, vec![(1, 5), (2, 8), (3, 7), (-1, -1)]);
    let endpoints: Vec<_> = answer
        .node_endpoints
        .iter()
        .map(|e| (e.node_id, e.host.as_str(), e.port, e.rack.as_deref()))
        .collect();
    assert_eq!(endpoints, vec![(1, "host1", 9092, Some("rack1"))]);
    round_trip(&answer, 11);
    // v9 has neither field: untouched.
    let mut old = produce();
    node_endpoints::produce(&image, "PLAINTEXT", 9, &mut old);
    assert_eq!(old, produce());

    // Fetch v16+: FENCED_LEADER_EPOCH names the leader too, on the INTERNAL listener here.
    let mut fetch = fetch_response::FetchResponse {
        responses: vec![fetch_response::FetchableTopicResponse {
            topic_id: TOPIC_T,
            partitions: vec![fetch_response::PartitionData {
                partition_index: 2,
                error_code: ErrorCode::FencedLeaderEpoch.code(),
                current_leader: fetch_response::LeaderIdAndEpoch {
                    leader_id: -1,
                    leader_epoch: -1,
                    ..Default::default()
                },
                records: Some(Default::default()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    node_endpoints::fetch(&image, "INTERNAL", 17, &mut fetch);
    let p = &fetch.responses[0].partitions[0];
    assert_eq!(
        (p.current_leader.leader_id, p.current_leader.leader_epoch),
        (3, 7)
    );
    let ids: Vec<_> = fetch
        .node_endpoints
        .iter()
        .map(|e| (e.node_id, e.port))
        .collect();
    assert_eq!(ids, vec![(3, 9194)]);
    round_trip(&fetch, 17);

    // ShareFetch: every version carries them.
    let mut share = share_fetch_response::ShareFetchResponse {
        responses: vec![share_fetch_response::ShareFetchableTopicResponse {
            topic_id: TOPIC_U,
            partitions: vec![share_fetch_response::PartitionData {
                partition_index: 0,
                error_code: not_leader,
                current_leader: share_fetch_response::LeaderIdAndEpoch {
                    leader_id: -1,
                    leader_epoch: -1,
                    ..Default::default()
                },
                records: Some(Default::default()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    node_endpoints::share_fetch(&image, "PLAINTEXT", &mut share);
    let ids: Vec<_> = share.node_endpoints.iter().map(|e| e.node_id).collect();
    assert_eq!(ids, vec![1]);
    round_trip(&share, 1);
}
