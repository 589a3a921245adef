//! CIDR host patterns in ACLs (KIP-1276, `metadata.version` 4.4-IV1), with real processes
//! and Kafka 4.4.0's own code:
//! - kraftd reads a CIDR block as Kafka's `CidrUtils` does (commons-net's `SubnetUtils` and
//!   `SubnetUtils6`, run by `tests/java/Cidr.jsh` from Kafka's jars): the same blocks valid,
//!   the same refusal messages, the same hosts in range, over probes at every edge (prefix
//!   lengths, octet ranges, IPv6 forms, IPv4-mapped addresses, brackets, scopes, signs);
//! - with `kafka-acls`: below 4.4-IV1 a CIDR host is refused (UNSUPPORTED_VERSION, Kafka's
//!   message); after `kafka-features upgrade --metadata 4.4-IV1` it is taken, a malformed one
//!   is refused with Kafka's message, and a DENY for a block holding the client's address
//!   refuses it while one for another block does not.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::kafka_jars::{self, output_text, run_tool};
use common::python::wait_until_brokers_listed;
use common::{addresses, all_logs, formatted_cluster_with_args, stop_gracefully};
use kraftd_controller::control::acl::cidr::{host_in_range, Cidr};

const ACLS: &str = "org.apache.kafka.tools.AclCommand";
const TOPICS: &str = "org.apache.kafka.tools.TopicCommand";
const FEATURES: &str = "org.apache.kafka.tools.FeatureCommand";

/// (pattern, host) probes: valid and invalid blocks of both families, and hosts inside,
/// outside and of the other family.
const PROBES: &[(&str, &str)] = &[
    ("10.0.0.0/8", "10.1.2.3"),
    ("10.0.0.0/8", "10.0.0.0"),
    ("10.0.0.0/8", "10.255.255.255"),
    ("10.0.0.0/8", "11.0.0.0"),
    ("10.1.2.3/24", "10.1.2.200"),
    ("0.0.0.0/0", "1.2.3.4"),
    ("0.0.0.0/0", "0.0.0.0"),
    ("0.0.0.0/0", "255.255.255.255"),
    ("0.0.0.0/1", "0.0.0.0"),
    ("0.0.0.0/32", "0.0.0.0"),
    ("128.0.0.0/1", "200.0.0.1"),
    ("1.2.3.4/32", "1.2.3.4"),
    ("1.2.3.4/31", "1.2.3.5"),
    ("255.255.255.255/32", "255.255.255.255"),
    ("127.0.0.0/8", "0:0:0:0:0:0:0:1"),
    ("010.0.0.0/8", "10.0.0.1"),
    ("10.0.0.0/8", "010.0.0.1"),
    ("10.0.0.256/8", "1.1.1.1"),
    ("10.0.0.0/33", "1.1.1.1"),
    ("10.0.0.0/033", "10.0.0.1"),
    ("10.0.0.0/+8", "10.0.0.1"),
    ("10.0.0/8", "10.0.0.1"),
    ("10.0.0.0.0/8", "10.0.0.1"),
    ("1.2.3.4/", "1.2.3.4"),
    ("/8", "1.1.1.1"),
    ("a.b.c.d/8", "1.1.1.1"),
    (" 10.0.0.0/8", "10.0.0.1"),
    ("2001:db8::/32", "2001:db8:0:0:0:0:0:1"),
    ("2001:db8::/32", "2001:db9:0:0:0:0:0:1"),
    ("2001:db8::1/64", "2001:db8:0:0:0:0:0:1%3"),
    ("::1/128", "0:0:0:0:0:0:0:1"),
    ("::/0", "10.0.0.1"),
    ("::/0", "0:0:0:0:0:0:0:0"),
    ("[2001:db8::]/32", "2001:db8:0:0:0:0:0:1"),
    ("fe80::1%7/64", "fe80:0:0:0:0:0:0:1"),
    ("fe80::1%/64", "fe80:0:0:0:0:0:0:1"),
    ("2001:db8::/+32", "2001:db8:0:0:0:0:0:1"),
    ("2001:db8::/-0", "0:0:0:0:0:0:0:1"),
    ("2001:db8::/-1", "0:0:0:0:0:0:0:1"),
    ("2001:db8::/129", "0:0:0:0:0:0:0:1"),
    ("2001:db8::/x", "0:0:0:0:0:0:0:1"),
    ("2001:db8::/ 32", "0:0:0:0:0:0:0:1"),
    (" 2001:db8::/32", "0:0:0:0:0:0:0:1"),
    ("2001:db8::/32/1", "0:0:0:0:0:0:0:1"),
    ("2001:zz8::/32", "0:0:0:0:0:0:0:1"),
    ("1::2::3/64", "0:0:0:0:0:0:0:1"),
    ("1:2:3:4:5:6:7:8/64", "1:2:3:4:0:0:0:0"),
    ("1:2:3:4:5:6:7:8:9/64", "1:2:3:4:0:0:0:0"),
    ("::ffff:10.0.0.0/104", "10.0.0.1"),
    ("::ffff:a00:0/104", "10.0.0.1"),
    ("::1.2.3.4/128", "0:0:0:0:0:0:102:304"),
];

/// kraftd's verdict on one probe, in Cidr.jsh's format: "OK" or the refusal, and in range.
fn ours(pattern: &str, host: &str) -> (String, bool) {
    let verdict = match Cidr::parse(pattern) {
        Ok(_) => "OK".to_string(),
        Err(message) => message,
    };
    (verdict, host_in_range(host, pattern))
}

#[test]
fn cidr_blocks_read_as_kafkas_cidr_utils() {
    let dir = tempfile::tempdir().unwrap();
    let probes = dir.path().join("probes.tsv");
    let lines: Vec<String> = PROBES.iter().map(|(p, h)| format!("{p}\t{h}")).collect();
    std::fs::write(&probes, lines.join("\n")).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/Cidr.jsh");
    let out = Command::new("jshell")
        .arg(format!("--class-path={}", kafka_jars::classpath()))
        .arg(format!("-R{}", kafka_jars::log4j_option()))
        .arg(&script)
        .env("KRAFTD_CIDR_PROBES", &probes)
        .stdin(Stdio::null())
        .output()
        .expect("jshell runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let theirs: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("PROBE\t"))
        .collect();
    assert_eq!(theirs.len(), PROBES.len(), "{}", output_text(&out));
    let mut differences = Vec::new();
    for ((pattern, host), line) in PROBES.iter().zip(theirs) {
        let fields: Vec<&str> = line.split('\t').collect();
        let kafka = (fields[3].to_string(), fields[4] == "true");
        let kraftd = ours(pattern, host);
        if kraftd != kafka {
            differences.push(format!(
                "{pattern:?} / {host:?}: kraftd {kraftd:?}, Kafka {kafka:?}"
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// Runs `kafka-acls` against `bootstrap` with `args`.
fn acls(bootstrap: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["--bootstrap-server", bootstrap];
    all.extend_from_slice(args);
    run_tool(ACLS, &all)
}

/// `kafka-acls --add` of a DENY of DESCRIBE on topic `topic` for everyone from `host`.
fn deny_describe(bootstrap: &str, topic: &str, host: &str) -> std::process::Output {
    acls(
        bootstrap,
        &[
            "--add",
            "--deny-principal",
            "User:*",
            "--deny-host",
            host,
            "--operation",
            "Describe",
            "--topic",
            topic,
        ],
    )
}

/// `kafka-topics --describe --topic topic`: whether the tool may see it.
fn describable(bootstrap: &str, topic: &str) -> (bool, String) {
    let out = run_tool(
        TOPICS,
        &[
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--topic",
            topic,
        ],
    );
    let text = output_text(&out);
    (
        out.status.success() && text.contains(&format!("Topic: {topic}")),
        text,
    )
}

#[test]
fn kafka_acls_takes_cidr_hosts_from_4_4_iv1_and_they_apply() {
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) =
        formatted_cluster_with_args(root.path(), 1, 1, &["--release-version", "4.3"]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.add_config(&[
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found=true",
        ]);
        node.start();
    }
    let logs = || format!("{}\n{}", all_logs(&brokers), all_logs(&controllers));
    wait_until_brokers_listed(&addresses(&brokers), 1, logs);
    let bootstrap = brokers[0].address();
    for topic in ["near", "far"] {
        let created = run_tool(
            TOPICS,
            &[
                "--bootstrap-server",
                &bootstrap,
                "--create",
                "--topic",
                topic,
            ],
        );
        assert!(created.status.success(), "{}", output_text(&created));
    }

    // 4.3-IV0: no CIDR blocks yet.
    let early = deny_describe(&bootstrap, "near", "127.0.0.0/8");
    assert!(
        output_text(&early).contains(
            "UnsupportedVersionException: CIDR-based ACL host patterns require metadata \
             version 4.4-IV1 or higher."
        ),
        "{}",
        output_text(&early)
    );
    let upgraded = run_tool(
        FEATURES,
        &[
            "--bootstrap-server",
            &bootstrap,
            "upgrade",
            "--metadata",
            "4.4-IV1",
        ],
    );
    assert!(
        upgraded.status.success(),
        "{}\n{}",
        output_text(&upgraded),
        logs()
    );

    let malformed = deny_describe(&bootstrap, "near", "127.0.0.0/33");
    assert!(
        output_text(&malformed).contains(
            "InvalidRequestException: Invalid CIDR notation '127.0.0.0/33': Value [33] not in \
             range [0,32]"
        ),
        "{}",
        output_text(&malformed)
    );
    // The tools connect from 127.0.0.1: a DENY for 127.0.0.0/8 applies to them, one for
    // 10.0.0.0/8 does not, and the ALLOW of everything for everyone stands (a topic with ACLs is closed
    // to what none allows, whatever allow.everyone.if.no.acl.found says).
    for (topic, host) in [("near", "127.0.0.0/8"), ("far", "10.0.0.0/8")] {
        let allowed = acls(
            &bootstrap,
            &[
                "--add",
                "--allow-principal",
                "User:*",
                "--operation",
                "All",
                "--topic",
                topic,
            ],
        );
        assert!(allowed.status.success(), "{}", output_text(&allowed));
        let added = deny_describe(&bootstrap, topic, host);
        assert!(added.status.success(), "{}", output_text(&added));
    }
    let listed = acls(&bootstrap, &["--list", "--topic", "near"]);
    assert!(
        output_text(&listed).contains("host=127.0.0.0/8"),
        "{}",
        output_text(&listed)
    );
    let mut near = describable(&bootstrap, "near");
    // The broker's authorizer sees the ACL once it has applied the record.
    for _ in 0..50 {
        if !near.0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        near = describable(&bootstrap, "near");
    }
    assert!(
        !near.0,
        "a DENY for 127.0.0.0/8 hides the topic:\n{}",
        near.1
    );
    let far = describable(&bootstrap, "far");
    assert!(far.0, "a DENY for 10.0.0.0/8 does not apply:\n{}", far.1);
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
