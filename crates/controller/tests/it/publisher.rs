//! Metadata publishers driven as the loader drives them: real records replayed through a
//! `MetadataDelta`, then (delta, image) handed over, and the shared handles checked —
//! dynamic configs that change without a restart, SCRAM credentials coming and going, and
//! ACL checks with Kafka's StandardAuthorizer semantics (checked against a plain linear
//! reading of those rules by a property test).

use bytes::Bytes;
use kraftd_controller::control::acl::*;
use kraftd_controller::image::{ScramCredential, ScramMechanism};
use kraftd_controller::publisher::*;
use kraftd_controller::{MetadataDelta, MetadataImage};
use kraftd_protocol::metadata::{
    AccessControlEntryRecord, RemoveAccessControlEntryRecord, RemoveTopicRecord,
    RemoveUserScramCredentialRecord, UserScramCredentialRecord,
};
use kraftd_protocol::{MetadataRecord, Uuid};
use proptest::prelude::*;

use kraftd_controller::testing::records::{config, feature, topic, uuid};

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const LOGGER: i8 = 8;

/// Replays `records` onto `base` through one delta, hands both to `publisher` as the loader
/// does, and returns the next image.
fn publish(
    publisher: &mut dyn MetadataPublisher,
    base: &MetadataImage,
    records: &[MetadataRecord],
) -> MetadataImage {
    let mut delta = MetadataDelta::new(base);
    for record in records {
        delta.replay(record).unwrap();
    }
    let image = delta.apply();
    publisher.on_metadata_update(&delta, &image);
    image
}

/// The first publish starts from the empty image (a full load); later ones are
/// incremental. Tests start here so they exercise the incremental path.
fn started(publisher: &mut dyn MetadataPublisher) -> MetadataImage {
    publish(
        publisher,
        &MetadataImage::empty(),
        &[feature("metadata.version", 21)],
    )
}

// ---- dynamic configs ----

fn config_publisher(node_id: i32) -> (DynamicConfigPublisher, DynamicConfigs) {
    let configs = DynamicConfigs::new(node_id);
    (DynamicConfigPublisher::new(configs.clone()), configs)
}

#[test]
fn replayed_config_record_changes_what_a_running_reader_sees() {
    let (mut publisher, configs) = config_publisher(1);
    assert_eq!(publisher.name(), "DynamicConfigPublisher");
    // A reader holding its own clone of the handle since startup, as a request handler would.
    let reader = configs.clone();
    let image = started(&mut publisher);
    assert_eq!(reader.broker_config("log.cleaner.threads"), None);
    let before = reader.version();

    let image = publish(
        &mut publisher,
        &image,
        &[config(BROKER, "1", "log.cleaner.threads", Some("2"))],
    );
    assert_eq!(
        reader.broker_config("log.cleaner.threads").as_deref(),
        Some("2")
    );
    let after_set = reader.version();
    assert!(after_set > before);

    publish(
        &mut publisher,
        &image,
        &[config(BROKER, "1", "log.cleaner.threads", Some("4"))],
    );
    assert_eq!(
        reader.broker_config("log.cleaner.threads").as_deref(),
        Some("4")
    );
    assert!(reader.version() > after_set);
}

#[test]
fn broker_override_wins_over_cluster_default_and_falls_back_when_deleted() {
    let (mut publisher, configs) = config_publisher(1);
    let image = started(&mut publisher);
    let image = publish(
        &mut publisher,
        &image,
        &[
            config(BROKER, "", "max.connections", Some("100")),
            config(BROKER, "", "log.retention.ms", Some("1000")),
            config(BROKER, "1", "max.connections", Some("7")),
        ],
    );
    assert_eq!(
        configs.broker_config("max.connections").as_deref(),
        Some("7")
    );
    assert_eq!(
        configs.broker_config("log.retention.ms").as_deref(),
        Some("1000")
    );
    let snapshot = configs.snapshot();
    assert_eq!(
        snapshot.cluster_default_config("max.connections"),
        Some("100")
    );
    assert_eq!(
        snapshot.broker_configs().into_iter().collect::<Vec<_>>(),
        vec![
            ("log.retention.ms".to_string(), "1000".to_string()),
            ("max.connections".to_string(), "7".to_string()),
        ]
    );

    let image = publish(
        &mut publisher,
        &image,
        &[config(BROKER, "1", "max.connections", None)],
    );
    assert_eq!(
        configs.broker_config("max.connections").as_deref(),
        Some("100")
    );
    publish(
        &mut publisher,
        &image,
        &[config(BROKER, "", "max.connections", None)],
    );
    assert_eq!(configs.broker_config("max.connections"), None);
    // The snapshot taken earlier still reads as it did: readers get consistent views.
    assert_eq!(snapshot.broker_config("max.connections"), Some("7"));
}

#[test]
fn other_brokers_and_other_resource_types_leave_the_version_alone() {
    let (mut publisher, configs) = config_publisher(1);
    let image = started(&mut publisher);
    let version = configs.version();
    publish(
        &mut publisher,
        &image,
        &[
            config(BROKER, "2", "max.connections", Some("3")),
            config(BROKER, "11", "max.connections", Some("3")),
            config(LOGGER, "1", "kafka.server", Some("DEBUG")),
        ],
    );
    assert_eq!(configs.broker_config("max.connections"), None);
    assert_eq!(configs.version(), version);
}

#[test]
fn topic_configs_follow_sets_deletes_and_topic_removal() {
    let (mut publisher, configs) = config_publisher(1);
    let image = started(&mut publisher);
    let image = publish(
        &mut publisher,
        &image,
        &[
            topic("orders", uuid(1)),
            config(TOPIC, "orders", "retention.ms", Some("60000")),
            config(TOPIC, "orders", "cleanup.policy", Some("compact")),
        ],
    );
    assert_eq!(
        configs.topic_config("orders", "retention.ms").as_deref(),
        Some("60000")
    );
    assert_eq!(configs.topic_config("payments", "retention.ms"), None);

    let image = publish(
        &mut publisher,
        &image,
        &[config(TOPIC, "orders", "retention.ms", None)],
    );
    assert_eq!(configs.topic_config("orders", "retention.ms"), None);
    assert_eq!(
        configs.topic_config("orders", "cleanup.policy").as_deref(),
        Some("compact")
    );

    publish(
        &mut publisher,
        &image,
        &[MetadataRecord::RemoveTopic(RemoveTopicRecord {
            topic_id: uuid(1),
            ..Default::default()
        })],
    );
    assert_eq!(configs.topic_config("orders", "cleanup.policy"), None);
    assert!(configs.snapshot().topic_configs("orders").is_none());
}

#[test]
fn only_resources_the_delta_changed_are_read_from_the_image() {
    let (mut publisher, configs) = config_publisher(1);
    let image = started(&mut publisher);
    let image = publish(
        &mut publisher,
        &image,
        &[
            config(TOPIC, "a", "retention.ms", Some("1")),
            config(TOPIC, "b", "retention.ms", Some("1")),
            config(BROKER, "1", "max.connections", Some("1")),
        ],
    );
    let mut delta = MetadataDelta::new(&image);
    delta
        .replay(&config(TOPIC, "a", "retention.ms", Some("2")))
        .unwrap();
    // An image that also differs where the delta says nothing changed: the publisher must
    // not pick those differences up, since it applies only what the delta lists.
    let disagreeing = image
        .replay_all(&[
            config(TOPIC, "a", "retention.ms", Some("2")),
            config(TOPIC, "b", "retention.ms", Some("9")),
            config(BROKER, "1", "max.connections", Some("9")),
        ])
        .unwrap();
    publisher.on_metadata_update(&delta, &disagreeing);
    assert_eq!(
        configs.topic_config("a", "retention.ms").as_deref(),
        Some("2")
    );
    assert_eq!(
        configs.topic_config("b", "retention.ms").as_deref(),
        Some("1")
    );
    assert_eq!(
        configs.broker_config("max.connections").as_deref(),
        Some("1")
    );
}

#[test]
fn rewriting_the_same_value_is_not_an_update() {
    let (mut publisher, configs) = config_publisher(1);
    let image = started(&mut publisher);
    let image = publish(
        &mut publisher,
        &image,
        &[config(TOPIC, "a", "retention.ms", Some("1"))],
    );
    let version = configs.version();
    publish(
        &mut publisher,
        &image,
        &[config(TOPIC, "a", "retention.ms", Some("1"))],
    );
    assert_eq!(configs.version(), version);
}

#[test]
fn snapshot_load_replaces_configs_the_snapshot_no_longer_has() {
    let (mut publisher, configs) = config_publisher(1);
    let image = started(&mut publisher);
    publish(
        &mut publisher,
        &image,
        &[
            config(TOPIC, "gone", "retention.ms", Some("1")),
            config(BROKER, "1", "max.connections", Some("1")),
        ],
    );
    // The loader hands a snapshot over as a delta from the empty image.
    publish(
        &mut publisher,
        &MetadataImage::empty(),
        &[config(TOPIC, "kept", "retention.ms", Some("5"))],
    );
    assert_eq!(configs.topic_config("gone", "retention.ms"), None);
    assert_eq!(configs.broker_config("max.connections"), None);
    assert_eq!(
        configs.topic_config("kept", "retention.ms").as_deref(),
        Some("5")
    );
}

// ---- SCRAM ----

fn scram(user: &str, mechanism: i8, iterations: i32) -> MetadataRecord {
    MetadataRecord::UserScramCredential(UserScramCredentialRecord {
        name: user.into(),
        mechanism,
        salt: Bytes::from(format!("salt-{user}-{mechanism}")),
        stored_key: Bytes::from(format!("stored-{user}-{mechanism}-{iterations}")),
        server_key: Bytes::from(format!("server-{user}-{mechanism}-{iterations}")),
        iterations,
        ..Default::default()
    })
}

fn remove_scram(user: &str, mechanism: i8) -> MetadataRecord {
    MetadataRecord::RemoveUserScramCredential(RemoveUserScramCredentialRecord {
        name: user.into(),
        mechanism,
        ..Default::default()
    })
}

fn expected_credential(user: &str, mechanism: i8, iterations: i32) -> ScramCredential {
    ScramCredential {
        salt: Bytes::from(format!("salt-{user}-{mechanism}")),
        stored_key: Bytes::from(format!("stored-{user}-{mechanism}-{iterations}")),
        server_key: Bytes::from(format!("server-{user}-{mechanism}-{iterations}")),
        iterations,
    }
}

const SHA256: ScramMechanism = ScramMechanism::ScramSha256;
const SHA512: ScramMechanism = ScramMechanism::ScramSha512;

#[test]
fn scram_credentials_are_added_updated_and_removed() {
    let provider = CredentialProvider::new();
    let mut publisher = ScramPublisher::new(provider.clone());
    assert_eq!(publisher.name(), "ScramPublisher");
    let image = started(&mut publisher);
    assert_eq!(provider.credential("alice", SHA256), None);

    let image = publish(
        &mut publisher,
        &image,
        &[
            scram("alice", 1, 4096),
            scram("alice", 2, 8192),
            scram("bob", 1, 4096),
        ],
    );
    assert_eq!(
        provider.credential("alice", SHA256),
        Some(expected_credential("alice", 1, 4096))
    );
    assert_eq!(
        provider.credential("alice", SHA512),
        Some(expected_credential("alice", 2, 8192))
    );
    assert_eq!(provider.credential("bob", SHA512), None);
    assert_eq!(provider.credential("carol", SHA256), None);

    let version = provider.version();
    let image = publish(&mut publisher, &image, &[scram("alice", 1, 10000)]);
    assert_eq!(
        provider.credential("alice", SHA256),
        Some(expected_credential("alice", 1, 10000))
    );
    assert!(provider.version() > version);

    let image = publish(&mut publisher, &image, &[remove_scram("alice", 1)]);
    assert_eq!(provider.credential("alice", SHA256), None);
    assert_eq!(
        provider.credential("alice", SHA512),
        Some(expected_credential("alice", 2, 8192))
    );

    publish(
        &mut publisher,
        &image,
        &[remove_scram("alice", 2), remove_scram("bob", 1)],
    );
    assert_eq!(provider.credential("alice", SHA512), None);
    assert_eq!(provider.credential("bob", SHA256), None);
}

#[test]
fn scram_publisher_reads_only_changed_credentials() {
    let provider = CredentialProvider::new();
    let mut publisher = ScramPublisher::new(provider.clone());
    let image = started(&mut publisher);
    let image = publish(
        &mut publisher,
        &image,
        &[scram("alice", 1, 4096), scram("bob", 1, 4096)],
    );
    let mut delta = MetadataDelta::new(&image);
    delta.replay(&scram("alice", 1, 5000)).unwrap();
    let disagreeing = image
        .replay_all(&[scram("alice", 1, 5000), remove_scram("bob", 1)])
        .unwrap();
    publisher.on_metadata_update(&delta, &disagreeing);
    assert_eq!(
        provider.credential("alice", SHA256),
        Some(expected_credential("alice", 1, 5000))
    );
    assert_eq!(
        provider.credential("bob", SHA256),
        Some(expected_credential("bob", 1, 4096))
    );

    // A delta that touches no credential is no update at all.
    let version = provider.version();
    publish(
        &mut publisher,
        &image,
        &[config(TOPIC, "t", "k", Some("v"))],
    );
    assert_eq!(provider.version(), version);
}

#[test]
fn scram_snapshot_load_drops_users_the_snapshot_lacks() {
    let provider = CredentialProvider::new();
    let mut publisher = ScramPublisher::new(provider.clone());
    let image = started(&mut publisher);
    publish(&mut publisher, &image, &[scram("alice", 1, 4096)]);
    publish(
        &mut publisher,
        &MetadataImage::empty(),
        &[scram("bob", 2, 4096)],
    );
    assert_eq!(provider.credential("alice", SHA256), None);
    assert_eq!(
        provider.credential("bob", SHA512),
        Some(expected_credential("bob", 2, 4096))
    );
}

// ---- ACLs ----

/// An ACL record with the fields a check looks at.
#[derive(Debug, Clone)]
struct Acl {
    resource_type: i8,
    name: &'static str,
    pattern: i8,
    principal: &'static str,
    host: &'static str,
    operation: i8,
    permission: i8,
}

fn allow(name: &'static str, pattern: i8, principal: &'static str, operation: i8) -> Acl {
    Acl {
        resource_type: RESOURCE_TYPE_TOPIC,
        name,
        pattern,
        principal,
        host: "*",
        operation,
        permission: PERMISSION_ALLOW,
    }
}

fn deny(name: &'static str, pattern: i8, principal: &'static str, operation: i8) -> Acl {
    Acl {
        permission: PERMISSION_DENY,
        ..allow(name, pattern, principal, operation)
    }
}

impl Acl {
    fn record(&self, id: Uuid) -> MetadataRecord {
        MetadataRecord::AccessControlEntry(AccessControlEntryRecord {
            id,
            resource_type: self.resource_type,
            resource_name: self.name.into(),
            pattern_type: self.pattern,
            principal: self.principal.into(),
            host: self.host.into(),
            operation: self.operation,
            permission_type: self.permission,
            ..Default::default()
        })
    }
}

fn remove_acl(id: Uuid) -> MetadataRecord {
    MetadataRecord::RemoveAccessControlEntry(RemoveAccessControlEntryRecord {
        id,
        ..Default::default()
    })
}

/// A publisher and its authorizer with `acls` published (ids `uuid(1)`, `uuid(2)`, ... in
/// order), after a first empty publish so the ACLs arrive incrementally.
fn authorizer_with(config: AuthorizerConfig, acls: &[Acl]) -> (AclPublisher, MetadataImage) {
    let mut publisher = AclPublisher::new(StandardAuthorizer::new(config));
    let image = started(&mut publisher);
    let records: Vec<MetadataRecord> = acls
        .iter()
        .enumerate()
        .map(|(i, acl)| acl.record(uuid(i as u8 + 1)))
        .collect();
    let image = publish(&mut publisher, &image, &records);
    (publisher, image)
}

fn topic_check(authorizer: &StandardAuthorizer, principal: &str, op: i8, name: &str) -> bool {
    authorizer.authorize(principal, "10.0.0.1", op, RESOURCE_TYPE_TOPIC, name)
}

#[test]
fn literal_allow_applies_to_its_principal_only() {
    let (publisher, _) = authorizer_with(
        AuthorizerConfig {
            allow_everyone_if_no_acl_found: true,
            ..Default::default()
        },
        &[allow(
            "orders",
            PATTERN_TYPE_LITERAL,
            "User:alice",
            OPERATION_READ,
        )],
    );
    assert_eq!(publisher.name(), "AclPublisher");
    let authorizer = publisher.authorizer();
    assert!(topic_check(
        authorizer,
        "User:alice",
        OPERATION_READ,
        "orders"
    ));
    assert!(!topic_check(
        authorizer,
        "User:alice",
        OPERATION_WRITE,
        "orders"
    ));
    // ACLs name the resource, so allow.everyone.if.no.acl.found does not apply.
    assert!(!topic_check(
        authorizer,
        "User:bob",
        OPERATION_READ,
        "orders"
    ));
    assert_eq!(
        authorizer.authorize_rule(
            "User:bob",
            "10.0.0.1",
            OPERATION_READ,
            RESOURCE_TYPE_TOPIC,
            "orders"
        ),
        AuthorizationRule::NoMatchingAcl
    );
    // A literal name is not a prefix, and a topic ACL says nothing about a group.
    assert!(topic_check(
        authorizer,
        "User:bob",
        OPERATION_READ,
        "orders2"
    ));
    assert!(authorizer.authorize(
        "User:bob",
        "10.0.0.1",
        OPERATION_READ,
        RESOURCE_TYPE_GROUP,
        "orders"
    ));
}

#[test]
fn no_acl_found_follows_the_config() {
    let (strict, _) = authorizer_with(AuthorizerConfig::default(), &[]);
    assert!(!topic_check(
        strict.authorizer(),
        "User:alice",
        OPERATION_READ,
        "orders"
    ));
    assert_eq!(
        strict.authorizer().authorize_rule(
            "User:alice",
            "h",
            OPERATION_READ,
            RESOURCE_TYPE_TOPIC,
            "orders"
        ),
        AuthorizationRule::NoAclFound { allowed: false }
    );
    let (open, _) = authorizer_with(
        AuthorizerConfig {
            allow_everyone_if_no_acl_found: true,
            ..Default::default()
        },
        &[],
    );
    assert!(topic_check(
        open.authorizer(),
        "User:alice",
        OPERATION_READ,
        "orders"
    ));
}

#[test]
fn wildcard_resource_principal_and_host() {
    let (publisher, _) = authorizer_with(
        AuthorizerConfig::default(),
        &[
            allow("*", PATTERN_TYPE_LITERAL, "User:alice", OPERATION_READ),
            allow("events", PATTERN_TYPE_LITERAL, "User:*", OPERATION_WRITE),
            Acl {
                host: "10.0.0.9",
                ..allow("audit", PATTERN_TYPE_LITERAL, "User:bob", OPERATION_READ)
            },
        ],
    );
    let authorizer = publisher.authorizer();
    assert!(topic_check(
        authorizer,
        "User:alice",
        OPERATION_READ,
        "anything"
    ));
    assert!(!topic_check(
        authorizer,
        "User:bob",
        OPERATION_READ,
        "anything"
    ));
    assert!(topic_check(
        authorizer,
        "User:bob",
        OPERATION_WRITE,
        "events"
    ));
    assert!(topic_check(
        authorizer,
        "User:carol",
        OPERATION_WRITE,
        "events"
    ));
    assert!(!topic_check(
        authorizer,
        "User:carol",
        OPERATION_WRITE,
        "other"
    ));
    assert!(!topic_check(
        authorizer,
        "User:bob",
        OPERATION_READ,
        "audit"
    ));
    assert!(authorizer.authorize(
        "User:bob",
        "10.0.0.9",
        OPERATION_READ,
        RESOURCE_TYPE_TOPIC,
        "audit"
    ));
}

#[test]
fn prefixed_patterns_match_names_they_begin() {
    let (publisher, _) = authorizer_with(
        AuthorizerConfig::default(),
        &[
            allow("ord", PATTERN_TYPE_PREFIXED, "User:alice", OPERATION_READ),
            allow("pay", PATTERN_TYPE_LITERAL, "User:alice", OPERATION_READ),
            allow("o", PATTERN_TYPE_PREFIXED, "User:bob", OPERATION_READ),
            allow("orx", PATTERN_TYPE_PREFIXED, "User:carol", OPERATION_READ),
            allow(
                "ordersz",
                PATTERN_TYPE_PREFIXED,
                "User:dave",
                OPERATION_READ,
            ),
        ],
    );
    let authorizer = publisher.authorizer();
    assert!(topic_check(
        authorizer,
        "User:alice",
        OPERATION_READ,
        "orders"
    ));
    assert!(topic_check(authorizer, "User:alice", OPERATION_READ, "ord"));
    assert!(!topic_check(authorizer, "User:alice", OPERATION_READ, "or"));
    assert!(!topic_check(
        authorizer,
        "User:alice",
        OPERATION_READ,
        "payments"
    ));
    // Shorter prefixes are found past longer names that sort between them.
    assert!(topic_check(
        authorizer,
        "User:bob",
        OPERATION_READ,
        "orders"
    ));
    assert!(!topic_check(
        authorizer,
        "User:carol",
        OPERATION_READ,
        "orders"
    ));
    assert!(!topic_check(
        authorizer,
        "User:dave",
        OPERATION_READ,
        "orders"
    ));
    assert!(topic_check(
        authorizer,
        "User:dave",
        OPERATION_READ,
        "orderszz"
    ));
}

#[test]
fn deny_wins_over_allow_wherever_it_comes_from() {
    let (publisher, _) = authorizer_with(
        AuthorizerConfig::default(),
        &[
            allow("orders", PATTERN_TYPE_LITERAL, "User:alice", OPERATION_ALL),
            allow("*", PATTERN_TYPE_LITERAL, "User:*", OPERATION_READ),
            deny("ord", PATTERN_TYPE_PREFIXED, "User:alice", OPERATION_WRITE),
            deny("*", PATTERN_TYPE_LITERAL, "User:mallory", OPERATION_ALL),
            Acl {
                host: "10.0.0.66",
                ..deny("orders", PATTERN_TYPE_LITERAL, "User:*", OPERATION_READ)
            },
        ],
    );
    let authorizer = publisher.authorizer();
    assert!(topic_check(
        authorizer,
        "User:alice",
        OPERATION_READ,
        "orders"
    ));
    assert!(!topic_check(
        authorizer,
        "User:alice",
        OPERATION_WRITE,
        "orders"
    ));
    assert!(matches!(
        authorizer.authorize_rule(
            "User:alice",
            "10.0.0.1",
            OPERATION_WRITE,
            RESOURCE_TYPE_TOPIC,
            "orders"
        ),
        AuthorizationRule::Deny(acl) if acl.resource_name == "ord"
    ));
    assert!(!topic_check(
        authorizer,
        "User:mallory",
        OPERATION_READ,
        "orders"
    ));
    assert!(!topic_check(
        authorizer,
        "User:mallory",
        OPERATION_DESCRIBE,
        "x"
    ));
    assert!(!authorizer.authorize(
        "User:alice",
        "10.0.0.66",
        OPERATION_READ,
        RESOURCE_TYPE_TOPIC,
        "orders"
    ));
    assert!(topic_check(
        authorizer,
        "User:bob",
        OPERATION_READ,
        "orders"
    ));
}

#[test]
fn allowed_operations_imply_describe_but_denied_ones_do_not() {
    let (publisher, _) = authorizer_with(
        AuthorizerConfig::default(),
        &[
            allow("r", PATTERN_TYPE_LITERAL, "User:alice", OPERATION_READ),
            allow("w", PATTERN_TYPE_LITERAL, "User:alice", OPERATION_WRITE),
            allow("d", PATTERN_TYPE_LITERAL, "User:alice", OPERATION_DELETE),
            allow("a", PATTERN_TYPE_LITERAL, "User:alice", OPERATION_ALTER),
            allow("c", PATTERN_TYPE_LITERAL, "User:alice", OPERATION_CREATE),
            allow(
                "ac",
                PATTERN_TYPE_LITERAL,
                "User:alice",
                OPERATION_ALTER_CONFIGS,
            ),
            allow("all", PATTERN_TYPE_LITERAL, "User:alice", OPERATION_ALL),
            // A denied READ leaves DESCRIBE to the allow of ALL.
            deny("all", PATTERN_TYPE_LITERAL, "User:alice", OPERATION_READ),
        ],
    );
    let authorizer = publisher.authorizer();
    for name in ["r", "w", "d", "a", "all"] {
        assert!(
            topic_check(authorizer, "User:alice", OPERATION_DESCRIBE, name),
            "{name}"
        );
    }
    assert!(!topic_check(
        authorizer,
        "User:alice",
        OPERATION_DESCRIBE,
        "c"
    ));
    assert!(!topic_check(
        authorizer,
        "User:alice",
        OPERATION_DESCRIBE,
        "ac"
    ));
    assert!(topic_check(
        authorizer,
        "User:alice",
        OPERATION_DESCRIBE_CONFIGS,
        "ac"
    ));
    assert!(!topic_check(
        authorizer,
        "User:alice",
        OPERATION_DESCRIBE_CONFIGS,
        "w"
    ));
    // Implication runs one way: DESCRIBE does not allow READ.
    assert!(!topic_check(authorizer, "User:alice", OPERATION_WRITE, "r"));
    assert!(!topic_check(
        authorizer,
        "User:alice",
        OPERATION_READ,
        "all"
    ));
    assert!(topic_check(
        authorizer,
        "User:alice",
        OPERATION_WRITE,
        "all"
    ));
}

#[test]
fn super_users_pass_every_check() {
    let config = AuthorizerConfig {
        super_users: AuthorizerConfig::parse_super_users(" User:admin ;User:ops;;"),
        allow_everyone_if_no_acl_found: false,
        ..Default::default()
    };
    assert_eq!(config.super_users.len(), 2);
    let (publisher, _) = authorizer_with(
        config,
        &[deny("*", PATTERN_TYPE_LITERAL, "User:*", OPERATION_ALL)],
    );
    let authorizer = publisher.authorizer();
    assert!(topic_check(
        authorizer,
        "User:admin",
        OPERATION_WRITE,
        "orders"
    ));
    assert!(authorizer.authorize(
        "User:ops",
        "1.2.3.4",
        OPERATION_ALTER,
        RESOURCE_TYPE_CLUSTER,
        CLUSTER_RESOURCE_NAME
    ));
    assert!(!topic_check(
        authorizer,
        "User:alice",
        OPERATION_READ,
        "orders"
    ));
}

#[test]
fn removed_acls_stop_applying() {
    let (mut publisher, image) = authorizer_with(
        AuthorizerConfig::default(),
        &[
            allow("orders", PATTERN_TYPE_LITERAL, "User:alice", OPERATION_READ),
            deny("ord", PATTERN_TYPE_PREFIXED, "User:alice", OPERATION_READ),
        ],
    );
    let authorizer = publisher.authorizer().clone();
    assert_eq!(authorizer.acls().len(), 2);
    assert!(!topic_check(
        &authorizer,
        "User:alice",
        OPERATION_READ,
        "orders"
    ));
    let version = authorizer.version();

    let image = publish(&mut publisher, &image, &[remove_acl(uuid(2))]);
    assert!(authorizer.version() > version);
    assert!(topic_check(
        &authorizer,
        "User:alice",
        OPERATION_READ,
        "orders"
    ));

    publish(&mut publisher, &image, &[remove_acl(uuid(1))]);
    assert!(authorizer.acls().is_empty());
    assert_eq!(
        authorizer.authorize_rule(
            "User:alice",
            "h",
            OPERATION_READ,
            RESOURCE_TYPE_TOPIC,
            "orders"
        ),
        AuthorizationRule::NoAclFound { allowed: false }
    );
}

#[test]
fn acl_publisher_reads_only_changed_acls() {
    let (mut publisher, image) = authorizer_with(
        AuthorizerConfig::default(),
        &[allow(
            "a",
            PATTERN_TYPE_LITERAL,
            "User:alice",
            OPERATION_READ,
        )],
    );
    let authorizer = publisher.authorizer().clone();
    let mut delta = MetadataDelta::new(&image);
    let b = allow("b", PATTERN_TYPE_LITERAL, "User:alice", OPERATION_READ);
    delta.replay(&b.record(uuid(2))).unwrap();
    let disagreeing = image
        .replay_all(&[
            b.record(uuid(2)),
            allow("c", PATTERN_TYPE_LITERAL, "User:alice", OPERATION_READ).record(uuid(3)),
            remove_acl(uuid(1)),
        ])
        .unwrap();
    publisher.on_metadata_update(&delta, &disagreeing);
    assert!(topic_check(&authorizer, "User:alice", OPERATION_READ, "a"));
    assert!(topic_check(&authorizer, "User:alice", OPERATION_READ, "b"));
    assert!(!topic_check(&authorizer, "User:alice", OPERATION_READ, "c"));

    let version = authorizer.version();
    publish(
        &mut publisher,
        &image,
        &[config(TOPIC, "a", "k", Some("v"))],
    );
    assert_eq!(authorizer.version(), version);
}

#[test]
fn acl_snapshot_load_drops_acls_the_snapshot_lacks() {
    let (mut publisher, _) = authorizer_with(
        AuthorizerConfig::default(),
        &[allow(
            "a",
            PATTERN_TYPE_LITERAL,
            "User:alice",
            OPERATION_READ,
        )],
    );
    let b = allow("b", PATTERN_TYPE_LITERAL, "User:alice", OPERATION_READ);
    publish(
        &mut publisher,
        &MetadataImage::empty(),
        &[b.record(uuid(9))],
    );
    let authorizer = publisher.authorizer();
    assert_eq!(authorizer.acls().len(), 1);
    assert!(!topic_check(authorizer, "User:alice", OPERATION_READ, "a"));
    assert!(topic_check(authorizer, "User:alice", OPERATION_READ, "b"));
}

// ---- the ACL index against a linear reading of Kafka's rules ----

/// Kafka's rules read literally, one pass over every ACL.
fn reference_authorize(
    acls: &[Acl],
    allow_everyone: bool,
    principal: &str,
    host: &str,
    operation: i8,
    resource_type: i8,
    name: &str,
) -> bool {
    let mut named = false;
    let mut allowed = false;
    for acl in acls {
        let pattern_matches = acl.resource_type == resource_type
            && match acl.pattern {
                PATTERN_TYPE_LITERAL => acl.name == name || acl.name == "*",
                _ => name.starts_with(acl.name),
            };
        if !pattern_matches {
            continue;
        }
        named = true;
        if acl.principal != principal && acl.principal != "User:*" {
            continue;
        }
        if acl.host != "*" && acl.host != host {
            continue;
        }
        let is_allow = acl.permission == PERMISSION_ALLOW;
        let implied: &[i8] = match operation {
            OPERATION_DESCRIBE if is_allow => &[
                OPERATION_DESCRIBE,
                OPERATION_READ,
                OPERATION_WRITE,
                OPERATION_DELETE,
                OPERATION_ALTER,
            ],
            OPERATION_DESCRIBE_CONFIGS if is_allow => {
                &[OPERATION_DESCRIBE_CONFIGS, OPERATION_ALTER_CONFIGS]
            }
            _ => &[operation],
        };
        if acl.operation != OPERATION_ALL && !implied.contains(&acl.operation) {
            continue;
        }
        if !is_allow {
            return false;
        }
        allowed = true;
    }
    allowed || (!named && allow_everyone)
}

const NAMES: [&str; 11] = [
    "", "a", "ab", "abc", "abd", "abcd", "b", "ba", "*", "é", "éa",
];
const PRINCIPALS: [&str; 3] = ["User:alice", "User:bob", "User:*"];
const HOSTS: [&str; 2] = ["*", "10.0.0.1"];
const OPERATIONS: [i8; 8] = [
    OPERATION_ALL,
    OPERATION_READ,
    OPERATION_WRITE,
    OPERATION_DELETE,
    OPERATION_DESCRIBE,
    OPERATION_ALTER_CONFIGS,
    OPERATION_DESCRIBE_CONFIGS,
    OPERATION_CREATE,
];

fn arb_acl() -> impl Strategy<Value = Acl> {
    (
        prop::sample::select(vec![RESOURCE_TYPE_TOPIC, RESOURCE_TYPE_GROUP]),
        prop::sample::select(NAMES.to_vec()),
        prop::sample::select(vec![PATTERN_TYPE_LITERAL, PATTERN_TYPE_PREFIXED]),
        prop::sample::select(PRINCIPALS.to_vec()),
        prop::sample::select(HOSTS.to_vec()),
        prop::sample::select(OPERATIONS.to_vec()),
        prop::sample::select(vec![PERMISSION_ALLOW, PERMISSION_DENY]),
    )
        .prop_map(
            |(resource_type, name, pattern, principal, host, operation, permission)| Acl {
                resource_type,
                name,
                pattern,
                principal,
                host,
                operation,
                permission,
            },
        )
}

proptest! {
    #[test]
    fn acl_index_agrees_with_a_linear_scan(
        acls in prop::collection::vec(arb_acl(), 0..24),
        removed in prop::collection::vec(any::<bool>(), 24),
        allow_everyone in any::<bool>(),
        queries in prop::collection::vec(
            (
                prop::sample::select(vec!["User:alice", "User:bob"]),
                prop::sample::select(vec!["10.0.0.1", "10.0.0.2"]),
                prop::sample::select(OPERATIONS[1..].to_vec()),
                prop::sample::select(vec![RESOURCE_TYPE_TOPIC, RESOURCE_TYPE_GROUP]),
                prop::sample::select(
                    NAMES.iter().copied().chain(["abcde", "x", "éab"]).collect::<Vec<_>>(),
                ),
            ),
            1..16,
        ),
    ) {
        let (mut publisher, image) = authorizer_with(
            AuthorizerConfig { allow_everyone_if_no_acl_found: allow_everyone, ..Default::default() },
            &acls,
        );
        // Remove some again, so removal keeps the index in step as well.
        let removals: Vec<MetadataRecord> = (0..acls.len())
            .filter(|i| removed[*i])
            .map(|i| remove_acl(uuid(i as u8 + 1)))
            .collect();
        publish(&mut publisher, &image, &removals);
        let kept: Vec<Acl> = acls
            .iter()
            .enumerate()
            .filter(|(i, _)| !removed[*i])
            .map(|(_, acl)| acl.clone())
            .collect();
        let authorizer = publisher.authorizer();
        prop_assert_eq!(authorizer.acls().len(), kept.len());
        for (principal, host, operation, resource_type, name) in queries {
            prop_assert_eq!(
                authorizer.authorize(principal, host, operation, resource_type, name),
                reference_authorize(&kept, allow_everyone, principal, host, operation, resource_type, name),
                "{} {} op {} type {} {:?}", principal, host, operation, resource_type, name
            );
        }
    }
}
