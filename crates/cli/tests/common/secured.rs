//! A cluster secured as the ACL tests run it (`stock_acls.rs`, and the console's login in
//! `console.rs`): SCRAM users from the format, Kafka's StandardAuthorizer on every node, and
//! every listener SASL_PLAINTEXT.

use std::path::Path;

use super::{formatted_cluster_with_scram, Node};

/// Kafka's StandardAuthorizer, on.
pub const AUTHORIZER: &str =
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer";
/// Kafka's PLAIN login module, for a listener's `sasl.jaas.config`.
pub const PLAIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required";
/// Few offsets partitions: the test controllers' metadata segments are small.
pub const FEW_OFFSETS_PARTITIONS: &str = "offsets.topic.num.partitions=2";

/// One controller and `brokers` brokers, formatted with the SCRAM users `admin`
/// (SCRAM-SHA-512, password `admin-secret`) and `alice` (SCRAM-SHA-256, `alice-secret`),
/// configured, not started. Every node runs the [`AUTHORIZER`] with super users `admin`,
/// `broker` (the brokers' inter-broker PLAIN login) and `kraft` (the controller listener's
/// PLAIN login), and [`FEW_OFFSETS_PARTITIONS`]; each broker has one listener, `SASL`
/// (SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN), its inter-broker listener too.
pub fn sasl_acl_cluster(root: &Path, brokers: i32) -> (Vec<Node>, Vec<Node>) {
    let (_id, controllers, brokers) = formatted_cluster_with_scram(
        root,
        1,
        brokers,
        &[
            "SCRAM-SHA-512=[name=admin,password=admin-secret]",
            "SCRAM-SHA-256=[name=alice,password=alice-secret]",
        ],
    );
    let controller_login = format!(
        "listener.name.controller.plain.sasl.jaas.config={PLAIN_MODULE} \
         username=\"kraft\" password=\"kraft-secret\" user_kraft=\"kraft-secret\";"
    );
    let every_node = [
        AUTHORIZER,
        FEW_OFFSETS_PARTITIONS,
        "super.users=User:admin;User:broker;User:kraft",
        "sasl.enabled.mechanisms=PLAIN",
        "sasl.mechanism.controller.protocol=PLAIN",
        &controller_login,
    ];
    controllers[0].add_config(&every_node);
    controllers[0].add_config(&["listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT"]);
    for b in &brokers {
        b.add_config(&every_node);
        b.add_config(&[
            &format!("listeners=SASL://127.0.0.1:{}", b.port),
            "listener.security.protocol.map=SASL:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
            "inter.broker.listener.name=SASL",
            "sasl.mechanism.inter.broker.protocol=PLAIN",
            "listener.name.sasl.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
            &format!(
                "listener.name.sasl.plain.sasl.jaas.config={PLAIN_MODULE} \
                 username=\"broker\" password=\"broker-secret\" user_broker=\"broker-secret\";"
            ),
        ]);
    }
    (controllers, brokers)
}
