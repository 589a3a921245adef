//! Request authorization as handlers use it ([`kraftd_controller::auth`]): no authorizer
//! allows everything, the `authorized_operations` bit fields carry Kafka's operation codes,
//! `authorizeByResourceType` follows Kafka's default (any ALLOW not covered by a DENY of the
//! same name or a prefix), hosts are written as Java writes them, and an Envelope's
//! principal and address read back.

use std::net::IpAddr;

use bytes::Bytes;
use kraftd_controller::auth::*;
use kraftd_controller::control::acl::*;
use kraftd_controller::publisher::*;
use kraftd_controller::testing::acls::{authorizer_with, TestAcl};
use kraftd_net::KafkaPrincipal;
use kraftd_protocol::ErrorCode;

const ALICE: &str = "User:alice";

fn alice(authorizer: &StandardAuthorizer) -> RequestAuth {
    AuthHelper::new(authorizer).request(&KafkaPrincipal::user("alice"), ip("10.0.0.1"))
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn bits(ops: &[i8]) -> i32 {
    ops.iter().fold(0, |b, op| b | (1 << op))
}

#[test]
fn without_an_authorizer_everything_is_allowed() {
    let off = StandardAuthorizer::new(AuthorizerConfig::default());
    let helper = AuthHelper::new(&off);
    assert!(!helper.is_enabled());
    let auth = helper.request(&KafkaPrincipal::anonymous(), ip("127.0.0.1"));
    assert!(!auth.is_enabled());
    assert!(auth.authorize(OPERATION_WRITE, RESOURCE_TYPE_TOPIC, "orders"));
    assert!(auth.authorize_cluster(OPERATION_CLUSTER_ACTION));
    assert!(auth.authorize_by_resource_type(OPERATION_WRITE, RESOURCE_TYPE_TOPIC));
    // Kafka's AuthHelper answers every supported operation when no authorizer runs.
    assert_eq!(
        auth.authorized_operations(RESOURCE_TYPE_TOPIC, "orders"),
        bits(&[3, 4, 5, 6, 7, 8, 10, 11])
    );
}

#[test]
fn authorized_operations_are_kafkas_bit_fields() {
    let authorizer = authorizer_with(
        AuthorizerConfig::default(),
        &[
            TestAcl::allow(RESOURCE_TYPE_TOPIC, "orders", ALICE, OPERATION_READ),
            TestAcl::allow(
                RESOURCE_TYPE_TOPIC,
                "orders",
                ALICE,
                OPERATION_ALTER_CONFIGS,
            ),
            TestAcl::allow(RESOURCE_TYPE_GROUP, "g1", ALICE, OPERATION_ALL),
            TestAcl::allow(
                RESOURCE_TYPE_CLUSTER,
                CLUSTER_RESOURCE_NAME,
                ALICE,
                OPERATION_DESCRIBE,
            ),
        ],
    );
    let auth = alice(&authorizer);
    // READ implies DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS.
    assert_eq!(
        auth.authorized_operations(RESOURCE_TYPE_TOPIC, "orders"),
        (1 << 3) | (1 << 8) | (1 << 10) | (1 << 11)
    );
    assert_eq!(
        auth.authorized_operations(RESOURCE_TYPE_TOPIC, "payments"),
        0
    );
    assert_eq!(
        auth.authorized_operations(RESOURCE_TYPE_GROUP, "g1"),
        bits(&[3, 6, 8, 10, 11])
    );
    assert_eq!(
        auth.authorized_operations(RESOURCE_TYPE_CLUSTER, CLUSTER_RESOURCE_NAME),
        1 << 8
    );
    let supers = authorizer_with(
        AuthorizerConfig {
            super_users: AuthorizerConfig::parse_super_users(ALICE),
            ..Default::default()
        },
        &[],
    );
    assert_eq!(
        alice(&supers).authorized_operations(RESOURCE_TYPE_CLUSTER, CLUSTER_RESOURCE_NAME),
        bits(&[5, 7, 8, 9, 10, 11, 12])
    );
    assert_eq!(
        alice(&supers).authorized_operations(RESOURCE_TYPE_TRANSACTIONAL_ID, "tx"),
        bits(&[4, 8, 15])
    );
}

#[test]
fn a_filter_checks_each_name_once_and_keeps_the_allowed() {
    let authorizer = authorizer_with(
        AuthorizerConfig::default(),
        &[TestAcl::allow(RESOURCE_TYPE_TOPIC, "or", ALICE, OPERATION_WRITE).prefixed()],
    );
    let auth = alice(&authorizer);
    let allowed = auth.filter(
        OPERATION_WRITE,
        RESOURCE_TYPE_TOPIC,
        ["orders", "payments", "orders", "ore"],
    );
    assert_eq!(
        allowed.into_iter().collect::<Vec<_>>(),
        ["orders".to_string(), "ore".to_string()]
    );
    let mut memo = auth.memo(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC);
    assert!(memo.allowed("orders"), "WRITE implies DESCRIBE");
    assert!(!memo.allowed("payments"));
}

/// Kafka's default `authorizeByResourceType`, case by case.
#[test]
fn authorize_by_resource_type_follows_kafkas_default() {
    let check = |config: AuthorizerConfig, acls: &[TestAcl]| {
        alice(&authorizer_with(config, acls))
            .authorize_by_resource_type(OPERATION_WRITE, RESOURCE_TYPE_TOPIC)
    };
    let none = AuthorizerConfig::default;
    let t = RESOURCE_TYPE_TOPIC;
    let write = OPERATION_WRITE;
    assert!(!check(none(), &[]), "no ACL, no allow.everyone");
    assert!(check(
        AuthorizerConfig {
            allow_everyone_if_no_acl_found: true,
            ..none()
        },
        &[]
    ));
    assert!(check(none(), &[TestAcl::allow(t, "orders", ALICE, write)]));
    assert!(check(
        none(),
        &[TestAcl::allow(t, "orders", ALICE, OPERATION_ALL)]
    ));
    assert!(check(
        none(),
        &[TestAcl::allow(t, "orders", "User:*", write)]
    ));
    assert!(check(none(), &[TestAcl::allow(t, "*", ALICE, write)]));
    assert!(!check(
        none(),
        &[TestAcl::allow(t, "orders", "User:bob", write)]
    ));
    assert!(!check(
        none(),
        &[TestAcl::allow(t, "orders", ALICE, OPERATION_READ)]
    ));
    assert!(!check(
        none(),
        &[TestAcl::allow(t, "orders", ALICE, write).from_host("10.9.9.9")]
    ));
    assert!(check(
        none(),
        &[TestAcl::allow(t, "orders", ALICE, write).from_host("10.0.0.1")]
    ));
    // A DENY of the same literal name, or of a prefix of it, covers the ALLOW.
    assert!(!check(
        none(),
        &[
            TestAcl::allow(t, "orders", ALICE, write),
            TestAcl::deny(t, "orders", ALICE, write)
        ]
    ));
    assert!(!check(
        none(),
        &[
            TestAcl::allow(t, "orders", ALICE, write),
            TestAcl::deny(t, "ord", ALICE, write).prefixed()
        ]
    ));
    assert!(!check(
        none(),
        &[
            TestAcl::allow(t, "ord", ALICE, write).prefixed(),
            TestAcl::deny(t, "o", ALICE, write).prefixed()
        ]
    ));
    // A literal DENY does not cover a PREFIXED ALLOW, nor another name.
    assert!(check(
        none(),
        &[
            TestAcl::allow(t, "ord", ALICE, write).prefixed(),
            TestAcl::deny(t, "ord", ALICE, write)
        ]
    ));
    assert!(check(
        none(),
        &[
            TestAcl::allow(t, "orders", ALICE, write),
            TestAcl::deny(t, "payments", ALICE, write)
        ]
    ));
    // A wildcard DENY denies everything, even with an ALLOW elsewhere.
    assert!(!check(
        none(),
        &[
            TestAcl::allow(t, "orders", ALICE, write),
            TestAcl::deny(t, "*", ALICE, write)
        ]
    ));
    // allow.everyone.if.no.acl.found answers through the "hardcode" name unless an ACL
    // names every topic (as Kafka 4.4's StandardAuthorizer answers both).
    let everyone = || AuthorizerConfig {
        allow_everyone_if_no_acl_found: true,
        ..none()
    };
    assert!(check(
        everyone(),
        &[TestAcl::allow(t, "orders", "User:bob", write)]
    ));
    assert!(!check(
        everyone(),
        &[TestAcl::deny(t, "*", "User:bob", write)]
    ));
    // Super users pass whatever the ACLs say.
    assert!(check(
        AuthorizerConfig {
            super_users: AuthorizerConfig::parse_super_users(ALICE),
            ..none()
        },
        &[TestAcl::deny(t, "*", ALICE, write)]
    ));
}

#[test]
fn hosts_are_written_as_java_writes_them() {
    assert_eq!(host_address(ip("10.1.2.3")), "10.1.2.3");
    assert_eq!(host_address(ip("::1")), "0:0:0:0:0:0:0:1");
    assert_eq!(host_address(ip("fe80::1:abcd")), "fe80:0:0:0:0:0:1:abcd");
    assert_eq!(host_address(ip("::ffff:192.168.0.7")), "192.168.0.7");
    let acl_host = authorizer_with(
        AuthorizerConfig::default(),
        &[
            TestAcl::allow(RESOURCE_TYPE_TOPIC, "t", ALICE, OPERATION_READ)
                .from_host("0:0:0:0:0:0:0:1"),
        ],
    );
    let auth = AuthHelper::new(&acl_host).request(&KafkaPrincipal::user("alice"), ip("::1"));
    assert_eq!(auth.host(), "0:0:0:0:0:0:0:1");
    assert!(auth.authorize(OPERATION_READ, RESOURCE_TYPE_TOPIC, "t"));
}

#[test]
fn an_envelopes_principal_and_address_read_back() {
    let bob = KafkaPrincipal::user("bob:with:colons");
    assert_eq!(deserialize_principal(&serialize_principal(&bob)), Ok(bob));
    for garbage in [
        &b""[..],
        &b"\x00"[..],
        &b"\x00\x07abc"[..],
        &b"\x00\x00\xff\xff"[..],
    ] {
        assert_eq!(
            deserialize_principal(&Bytes::copy_from_slice(garbage)),
            Err(ErrorCode::PrincipalDeserializationFailure),
            "{garbage:?}"
        );
    }
    assert_eq!(forwarded_address(&[10, 0, 0, 1]), Ok(ip("10.0.0.1")));
    assert_eq!(forwarded_address(&[0; 16]), Ok(ip("::")));
    assert_eq!(
        forwarded_address(&[1, 2, 3]),
        Err(ErrorCode::InvalidRequest)
    );
}

#[test]
fn default_messages_are_kafkas() {
    assert_eq!(
        default_message(ErrorCode::TopicAuthorizationFailed),
        "Topic authorization failed."
    );
    assert_eq!(
        default_message(ErrorCode::TransactionalIdAuthorizationFailed),
        "Transactional Id authorization failed."
    );
    assert_eq!(operations_bit_field([3, 8]), 264);
}
