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

/// Kafka's SCRAM login module, for a listener's or a client's `sasl.jaas.config`.
pub const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule required";

/// The properties, as Kafka and kraftd both read them, of a broker whose inter-broker
/// listener is PLAINTEXT on `plaintext_port` (as the mixed-cluster helpers configure it) and
/// whose one client listener `name` is SASL_PLAINTEXT on `sasl_port`, serving SCRAM-SHA-256
/// and SCRAM-SHA-512. Kafka needs a JAAS entry per mechanism on a SASL listener even when
/// the broker never logs in through it, so each gets a bare `ScramLoginModule`.
pub fn scram_listener_config(plaintext_port: u16, name: &str, sasl_port: u16) -> Vec<String> {
    let lower = name.to_ascii_lowercase();
    let mut lines = vec![
        format!("listeners=PLAINTEXT://127.0.0.1:{plaintext_port},{name}://127.0.0.1:{sasl_port}"),
        format!(
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,{name}:SASL_PLAINTEXT,\
             CONTROLLER:PLAINTEXT"
        ),
        "inter.broker.listener.name=PLAINTEXT".to_string(),
        "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512".to_string(),
    ];
    for mechanism in ["scram-sha-256", "scram-sha-512"] {
        lines.push(format!(
            "listener.name.{lower}.{mechanism}.sasl.jaas.config={SCRAM_MODULE};"
        ));
    }
    lines
}

/// A Kafka client properties file (a tool's `--command-config`) `<name>.properties` under
/// `dir` logging in over SASL_PLAINTEXT with SCRAM-SHA-`bits` as `user`, or with a
/// delegation token (KIP-48: the token id and its HMAC as user and password) when `token`
/// is set; its path.
pub fn scram_client_config(
    dir: &Path,
    name: &str,
    bits: u16,
    user: &str,
    password: &str,
    token: bool,
) -> String {
    let path = dir.join(format!("{name}.properties"));
    let tokenauth = if token { " tokenauth=\"true\"" } else { "" };
    std::fs::write(
        &path,
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-{bits}\n\
             sasl.jaas.config={SCRAM_MODULE} username=\"{user}\" password=\"{password}\"{tokenauth};\n"
        ),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}
