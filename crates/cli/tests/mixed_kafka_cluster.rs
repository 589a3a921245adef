//! kraftd and Apache Kafka 4.4.0 (the jars) in one cluster at metadata.version 33 (issue 31).
//!
//! - A kraftd broker beside two Kafka brokers on three Kafka controllers formatted by
//!   `kafka-storage format` with Kafka's defaults (4.4-IV2, share.version 2, streams.version
//!   1): it registers, is unfenced, joins the ISR of an RF 3
//!   topic, and leadership moves from a Kafka broker to it and on to the other Kafka broker;
//!   every acks=all record is read back through each broker after each move.
//! - A Kafka broker beside two kraftd brokers on three kraftd controllers formatted by
//!   `kraftd format` with its defaults (Kafka's: 4.4-IV2, so the Kafka broker heartbeats at
//!   BrokerHeartbeat v2 with its cordoned log dirs, KIP-1066): the same, leadership moving
//!   kraftd → Kafka → kraftd.
//! - One kraftd and two Kafka controllers, then two kraftd and one Kafka, voting in one
//!   quorum (at 4.4-IV2, each side's format default), with a kraftd and a Kafka broker: each kind of controller leads in turn, and topics created
//!   under each replicate across both brokers; each side reads the other's snapshots
//!   (`kafka-dump-log` a kraftd one, kraftd's reader a Kafka one).
//! - `kraftd format --release-version/--feature` writes the FeatureLevelRecords Kafka's
//!   `kafka-storage format` writes for the same arguments, byte for byte.
//! - What a kraftd controller writes to the metadata log at metadata.version 33 and 25 is
//!   read by Kafka's `kafka-dump-log --cluster-metadata-decoder`, each record at the version
//!   a Kafka controller at that level writes.

mod common;

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use common::kafka_jars::{
    self, kafka_broker, kafka_quorum_cluster, output_text, quorum_leader, run_tool, KafkaNode,
};
use common::kcat::{consume, consumed_from, produce};
use common::python::wait_until_brokers_listed;
use common::script::partition_state;
use common::{
    eventually, format, format_with_args, run, voters, write_broker_config, write_config, Node, BIN,
};
use kraftd_protocol::metadata_record::decode_metadata_record;
use kraftd_protocol::MetadataRecord;
use kraftd_raft::snapshot::read_snapshot;

/// A feature pinned below Kafka's default at format time, one of the cases `kraftd format`
/// must finalize as `kafka-storage format` does.
const PINNED: [&str; 2] = ["--feature", "streams.version=0"];

const TOPIC: &str = "mixed";

#[test]
fn a_kraftd_broker_joins_a_kafka_quorum_and_leads_a_partition() {
    let root = tempfile::tempdir().unwrap();
    let (cluster_id, kafka_controllers, kafka_brokers) =
        kafka_quorum_cluster(root.path(), 3, &[1, 2], 3, "", &[]);
    let quorum = kafka_controllers
        .iter()
        .map(|c| format!("{}@127.0.0.1:{}", c.id, c.port))
        .collect::<Vec<_>>()
        .join(",");
    let mut kraftd = Node::broker(root.path(), 3);
    std::fs::create_dir_all(&kraftd.dir).unwrap();
    write_broker_config(&kraftd, &quorum);
    format(&kraftd, &cluster_id);
    kraftd.start();

    let logs = || {
        let mut text = kraftd.logs();
        for n in kafka_controllers.iter().chain(&kafka_brokers) {
            text.push_str(&format!("\n--- Kafka node {} ---\n{}", n.id, n.logs()));
        }
        text
    };
    let brokers = vec![
        (1, kafka_brokers[0].address()),
        (2, kafka_brokers[1].address()),
        (3, kraftd.address()),
    ];
    replicate_through_each_leader(&brokers, &[1, 3, 2], &logs);
}

/// At kraftd's format default, Kafka's own (4.4-IV2, metadata.version 33): the Kafka broker
/// heartbeats with its cordoned log dirs (BrokerHeartbeat v2, KIP-1066, from 4.3-IV0), which
/// the kraftd controllers serve and record.
#[test]
fn a_kafka_broker_joins_a_kraftd_quorum_at_the_default_metadata_version() {
    let root = tempfile::tempdir().unwrap();
    let cluster_id = run(&["random-uuid"]).trim().to_string();
    let mut controllers: Vec<Node> = (1..=3).map(|id| Node::new(root.path(), id)).collect();
    let quorum = voters(&controllers);
    for c in &controllers {
        std::fs::create_dir_all(&c.dir).unwrap();
        write_config(c, &quorum);
        format(c, &cluster_id);
    }
    let mut brokers: Vec<Node> = [4, 5]
        .iter()
        .map(|id| Node::broker(root.path(), *id))
        .collect();
    for b in &brokers {
        std::fs::create_dir_all(&b.dir).unwrap();
        write_broker_config(b, &quorum);
        format(b, &cluster_id);
    }
    let mut kafka: KafkaNode = kafka_broker(root.path(), 6, &quorum, &cluster_id, 3, "");
    for n in controllers.iter_mut().chain(brokers.iter_mut()) {
        n.start();
    }
    kafka.start();
    kafka.wait_started(Duration::from_secs(120));

    let logs = || {
        let mut text = common::all_logs(&controllers);
        text.push_str(&common::all_logs(&brokers));
        text.push_str(&format!("\n--- Kafka broker 6 ---\n{}", kafka.logs()));
        text
    };
    let all = vec![
        (4, brokers[0].address()),
        (5, brokers[1].address()),
        (6, kafka.address()),
    ];
    replicate_through_each_leader(&all, &[4, 6, 5], &logs);
}

/// Creates `TOPIC` with one partition on the three `brokers` (id, address) led by
/// `order[0]`; then for each broker of `order` moves leadership onto it (a reassignment that
/// puts it first, then a preferred election, both with Kafka's tools), produces 20 records
/// with acks=all and reads every record written so far back through each broker.
fn replicate_through_each_leader(
    brokers: &[(i32, String)],
    order: &[i32],
    logs: &impl Fn() -> String,
) {
    let bootstrap = brokers
        .iter()
        .map(|(_, a)| a.as_str())
        .collect::<Vec<_>>()
        .join(",");
    wait_until_brokers_listed(&bootstrap, brokers.len(), logs);
    let replicas_led_by = |leader: i32| {
        std::iter::once(leader)
            .chain(order.iter().copied().filter(|b| *b != leader))
            .collect::<Vec<i32>>()
    };
    let first = replicas_led_by(order[0]);
    let assignment = first
        .iter()
        .map(i32::to_string)
        .collect::<Vec<_>>()
        .join(":");
    let out = run_tool(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--create",
            "--topic",
            TOPIC,
            "--replica-assignment",
            &assignment,
        ],
    );
    assert!(
        out.status.success(),
        "kafka-topics --create: {}",
        output_text(&out)
    );

    let plan_file = tempfile::NamedTempFile::new().unwrap();
    let mut written: Vec<(String, String)> = Vec::new();
    for (step, leader) in order.iter().enumerate() {
        let replicas = replicas_led_by(*leader);
        if step > 0 {
            let list = replicas
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(",");
            std::fs::write(
                plan_file.path(),
                format!(
                    r#"{{"version":1,"partitions":[{{"topic":"{TOPIC}","partition":0,"replicas":[{list}]}}]}}"#
                ),
            )
            .unwrap();
            let out = run_tool(
                "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
                &[
                    "--bootstrap-server",
                    &bootstrap,
                    "--reassignment-json-file",
                    plan_file.path().to_str().unwrap(),
                    "--execute",
                ],
            );
            assert!(
                out.status.success(),
                "kafka-reassign-partitions: {}",
                output_text(&out)
            );
        }
        eventually(
            &format!("broker {leader} leads {TOPIC}-0 with all three in the ISR"),
            Duration::from_secs(90),
            logs,
            || {
                let (current, isr) = partition_state(&bootstrap, TOPIC, 0);
                if current == *leader && isr.len() == 3 {
                    return Ok(());
                }
                if current != *leader && isr.len() == 3 {
                    let out = run_tool(
                        "org.apache.kafka.tools.LeaderElectionCommand",
                        &[
                            "--bootstrap-server",
                            &bootstrap,
                            "--election-type",
                            "PREFERRED",
                            "--topic",
                            TOPIC,
                            "--partition",
                            "0",
                        ],
                    );
                    return Err(format!(
                        "leader {current}, isr {isr:?}; kafka-leader-election: {}",
                        output_text(&out)
                    ));
                }
                Err(format!("leader {current}, isr {isr:?}"))
            },
        );
        let batch: Vec<(String, String)> = (0..20)
            .map(|i| (format!("k{step}-{i}"), format!("led-by-{leader}-{i}")))
            .collect();
        let out = produce(&bootstrap, TOPIC, 0, &batch, &["-X", "acks=all"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && !stderr.contains("ERROR") && !stderr.contains("failed"),
            "kcat acks=all to leader {leader}: {stderr}\n{}",
            logs()
        );
        written.extend(batch);
        let expected = consumed_from(0, &written);
        for (id, address) in brokers {
            let read = consume(address, TOPIC, 0, &[]);
            assert_eq!(
                read, expected,
                "records read through broker {id} with broker {leader} leading"
            );
        }
    }
}

/// The FeatureLevelRecords of a bootstrap checkpoint, as their stored bytes.
fn feature_level_values(checkpoint: &Path) -> Vec<Bytes> {
    let bytes =
        std::fs::read(checkpoint).unwrap_or_else(|e| panic!("{}: {e}", checkpoint.display()));
    let snapshot = read_snapshot(Bytes::from(bytes))
        .unwrap_or_else(|e| panic!("{}: {e}", checkpoint.display()));
    snapshot
        .values()
        .filter(|v| {
            matches!(
                decode_metadata_record((*v).clone()),
                Ok((MetadataRecord::FeatureLevel(_), _))
            )
        })
        .cloned()
        .collect()
}

#[test]
fn kraftd_format_finalizes_what_kafka_storage_format_does() {
    let root = tempfile::tempdir().unwrap();
    let cluster_id = run(&["random-uuid"]).trim().to_string();
    let cases: [&[&str]; 3] = [
        &PINNED,
        &["--release-version", "4.0"],
        &["--release-version", "3.9", "--feature", "group.version=1"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let kafka_dir = root.path().join(format!("kafka-{i}"));
        std::fs::create_dir_all(&kafka_dir).unwrap();
        let properties = kafka_dir.join("server.properties");
        let port = common::free_port();
        std::fs::write(
            &properties,
            format!(
                "process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:{port}\n\
                 listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n\
                 log.dirs={}\n",
                kafka_dir.join("data").display()
            ),
        )
        .unwrap();
        let mut tool_args = vec![
            "format",
            "-t",
            &cluster_id,
            "-c",
            properties.to_str().unwrap(),
        ];
        tool_args.extend_from_slice(args);
        let out = run_tool("kafka.tools.StorageTool", &tool_args);
        assert!(
            out.status.success(),
            "kafka-storage format {args:?}: {}",
            output_text(&out)
        );

        let node = Node::new(&root.path().join(format!("kraftd-{i}")), 1);
        std::fs::create_dir_all(&node.dir).unwrap();
        write_config(&node, &voters(std::slice::from_ref(&node)));
        format_with_args(&node, &cluster_id, args);

        let kafka = feature_level_values(
            &kafka_dir.join("data/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"),
        );
        let ours = feature_level_values(&node.dir.join("data/bootstrap.checkpoint"));
        assert!(!kafka.is_empty(), "{args:?}: Kafka wrote no feature levels");
        assert_eq!(
            ours, kafka,
            "{args:?}: kraftd's feature levels differ from Kafka's"
        );
    }

    // A level no release has is refused in one line naming it, and nothing is formatted.
    let node = Node::new(&root.path().join("refused"), 1);
    std::fs::create_dir_all(&node.dir).unwrap();
    write_config(&node, &voters(std::slice::from_ref(&node)));
    for (args, message) in [
        (
            ["--feature", "streams.version=2"],
            "No feature:streams.version with feature level 2",
        ),
        (
            ["--release-version", "2.8"],
            "Unknown metadata.version '2.8'.",
        ),
    ] {
        let out = std::process::Command::new(BIN)
            .env("RUST_BACKTRACE", "0")
            .env("RUST_LIB_BACKTRACE", "0")
            .args(["format", "--config", node.config_path().to_str().unwrap()])
            .args(["--cluster-id", &cluster_id])
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert_eq!(lines.len(), 1, "{stderr}");
        assert!(lines[0].contains(message), "{stderr}");
        assert!(!node.dir.join("data/meta.properties").exists());
    }
}

#[test]
fn kafka_dump_log_decodes_what_kraftd_writes_at_metadata_versions_33_and_25() {
    for (release, register_broker, partition) in [("4.4-IV2", 4, 2), ("4.0", 3, 2)] {
        let root = tempfile::tempdir().unwrap();
        let cluster_id = run(&["random-uuid"]).trim().to_string();
        let mut controller = Node::new(root.path(), 1);
        std::fs::create_dir_all(&controller.dir).unwrap();
        write_config(&controller, &voters(std::slice::from_ref(&controller)));
        format_with_args(&controller, &cluster_id, &["--release-version", release]);
        let mut broker = Node::broker(root.path(), 2);
        std::fs::create_dir_all(&broker.dir).unwrap();
        write_broker_config(&broker, &voters(std::slice::from_ref(&controller)));
        format(&broker, &cluster_id);
        controller.start();
        broker.start();
        let logs = || format!("{}\n{}", controller.logs(), broker.logs());
        wait_until_brokers_listed(&broker.address(), 1, logs);
        let out = run_tool(
            "org.apache.kafka.tools.TopicCommand",
            &[
                "--bootstrap-server",
                &broker.address(),
                "--create",
                "--topic",
                TOPIC,
                "--partitions",
                "2",
            ],
        );
        assert!(
            out.status.success(),
            "kafka-topics --create: {}",
            output_text(&out)
        );
        let segment = controller
            .dir
            .join("data/__cluster_metadata-0/00000000000000000000.log");
        let level =
            kraftd_protocol::metadata_version::MetadataVersion::from_version_string(release)
                .unwrap()
                .level();
        let wanted = [
            format!(r#""name":"metadata.version","featureLevel":{level}"#),
            format!(r#""type":"REGISTER_BROKER_RECORD","version":{register_broker}"#),
            format!(r#""type":"PARTITION_RECORD","version":{partition}"#),
            r#""type":"TOPIC_RECORD","version":0"#.to_string(),
            r#""type":"REGISTER_CONTROLLER_RECORD","version":0"#.to_string(),
        ];
        eventually(
            &format!("kafka-dump-log decodes every record kraftd wrote at {release}"),
            Duration::from_secs(60),
            logs,
            || {
                let (ok, stdout, stderr) =
                    kafka_jars::dump_log_segment_with(&segment, &["--cluster-metadata-decoder"]);
                if !ok || stderr.contains("Exception") || stdout.contains("Error") {
                    return Err(format!("kafka-dump-log failed: {stderr}\n{stdout}"));
                }
                match wanted.iter().find(|w| !stdout.contains(w.as_str())) {
                    None => Ok(()),
                    Some(missing) => Err(format!("no {missing} in:\n{stdout}")),
                }
            },
        );
        common::stop_gracefully(&mut [broker, controller]);
    }
}

/// Kafka 4.4.0 and kraftd controllers voting in one static quorum: one kraftd and two Kafka
/// controllers.
#[test]
fn one_kraftd_and_two_kafka_controllers_vote_in_one_quorum_and_each_leads() {
    mixed_voters(&[1], &[100, 101]);
}

/// Two kraftd controllers and one Kafka controller in one quorum.
#[test]
fn two_kraftd_and_one_kafka_controller_vote_in_one_quorum_and_each_leads() {
    mixed_voters(&[1, 2], &[100]);
}

/// Kafka 4.4.0 controllers `theirs` and kraftd controllers `ours` voting in one static
/// quorum, formatted with the defaults of each side's own tool (the same levels: 4.4-IV2,
/// Kafka's `LATEST_PRODUCTION`, so the Kafka broker heartbeats at BrokerHeartbeat v2 whichever
/// kind leads), with a kraftd broker
/// (4) and a Kafka broker (5). The leader is killed -9 and restarted until each kind of
/// controller has led; under each, a topic created with Kafka's tool gets both brokers in its
/// ISR, and every acks=all record is read back through both brokers. The kind with more
/// voters waits longer before standing for election, and every voter of the leading kind is
/// killed at once and restarted, so the other kind usually wins the next election.
fn mixed_voters(ours: &[i32], theirs: &[i32]) {
    use common::kafka_jars::{kafka_controller_node, write_kafka_controller};
    let root = tempfile::tempdir().unwrap();
    let cluster_id = run(&["random-uuid"]).trim().to_string();
    let mut ours: Vec<Node> = ours.iter().map(|id| Node::new(root.path(), *id)).collect();
    let mut theirs: Vec<KafkaNode> = theirs
        .iter()
        .map(|id| kafka_controller_node(root.path(), *id))
        .collect();
    let quorum = ours
        .iter()
        .map(|c| format!("{}@127.0.0.1:{}", c.id, c.port))
        .chain(
            theirs
                .iter()
                .map(|c| format!("{}@127.0.0.1:{}", c.id, c.port)),
        )
        .collect::<Vec<_>>()
        .join(",");
    let slower = [
        "controller.quorum.election.timeout.ms=3000",
        "controller.quorum.fetch.timeout.ms=4000",
    ];
    let kafka_slower = theirs.len() > ours.len();
    for c in &ours {
        std::fs::create_dir_all(&c.dir).unwrap();
        common::write_config(c, &quorum);
        if !kafka_slower {
            c.add_config(&slower);
        }
        // kraftd's format default, Kafka 4.4.0's: 4.4-IV2 with share.version 2 and
        // streams.version 1 (checked below through both brokers).
        format(c, &cluster_id);
    }
    // Kafka's controllers snapshot as often as kraftd's test controllers do, so each side's
    // snapshots can be read by the other at the end.
    let mut kafka_extra = "metadata.log.max.record.bytes.between.snapshots=2048\n".to_string();
    if kafka_slower {
        kafka_extra.push_str(&slower.join("\n"));
    }
    for c in &theirs {
        write_kafka_controller(c, &quorum, &cluster_id, 2, &kafka_extra, &[]);
    }
    let mut broker = Node::broker(root.path(), 4);
    std::fs::create_dir_all(&broker.dir).unwrap();
    write_broker_config(&broker, &quorum);
    format(&broker, &cluster_id);
    let mut kafka = kafka_broker(root.path(), 5, &quorum, &cluster_id, 2, "");
    for c in ours.iter_mut() {
        c.start();
    }
    for c in theirs.iter_mut() {
        c.start();
    }
    broker.start();
    kafka.start();
    kafka.wait_started(Duration::from_secs(120));

    let logs = |ours: &[Node], theirs: &[KafkaNode], broker: &Node, kafka: &KafkaNode| {
        let mut text = common::all_logs(ours);
        for c in theirs {
            text.push_str(&format!(
                "\n--- Kafka controller {} ---\n{}",
                c.id,
                c.logs()
            ));
        }
        text.push_str(&broker.logs());
        text.push_str(&format!("\n--- Kafka broker 5 ---\n{}", kafka.logs()));
        text
    };
    let bootstrap = format!("{},{}", broker.address(), kafka.address());
    let controllers = ours
        .iter()
        .map(Node::address)
        .chain(theirs.iter().map(KafkaNode::address))
        .collect::<Vec<_>>()
        .join(",");
    let our_ids: Vec<i32> = ours.iter().map(|c| c.id).collect();
    let (mut kraftd_led, mut kafka_led) = (false, false);
    let mut topics: Vec<String> = Vec::new();
    for round in 0..8 {
        let leader = eventually(
            "the mixed quorum has a leader",
            Duration::from_secs(60),
            || logs(&ours, &theirs, &broker, &kafka),
            || quorum_leader(&controllers),
        );
        let kraftd_leads = our_ids.contains(&leader);
        eprintln!("round {round}: controller {leader} leads (kraftd: {kraftd_leads})");
        if (kraftd_leads && !kraftd_led) || (!kraftd_leads && !kafka_led) {
            wait_until_brokers_listed(&bootstrap, 2, || logs(&ours, &theirs, &broker, &kafka));
            for address in [broker.address(), kafka.address()] {
                assert_finalized_defaults(&address);
            }
            let topic = format!("led-by-controller-{leader}-{round}");
            topics.push(topic.clone());
            let out = run_tool(
                "org.apache.kafka.tools.TopicCommand",
                &[
                    "--bootstrap-server",
                    &bootstrap,
                    "--create",
                    "--topic",
                    &topic,
                    "--replica-assignment",
                    "4:5",
                ],
            );
            assert!(
                out.status.success(),
                "kafka-topics --create: {}",
                output_text(&out)
            );
            eventually(
                &format!("{topic}-0 led by broker 4 with both brokers in the ISR"),
                Duration::from_secs(60),
                || logs(&ours, &theirs, &broker, &kafka),
                || match partition_state(&bootstrap, &topic, 0) {
                    (4, isr) if isr.len() == 2 => Ok(()),
                    other => Err(format!("{other:?}")),
                },
            );
            let batch: Vec<(String, String)> = (0..20)
                .map(|i| (format!("k{i}"), format!("controller-{leader}-{i}")))
                .collect();
            let out = produce(&bootstrap, &topic, 0, &batch, &["-X", "acks=all"]);
            assert!(
                out.status.success(),
                "kcat: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let expected = consumed_from(0, &batch);
            for address in [broker.address(), kafka.address()] {
                assert_eq!(
                    consume(&address, &topic, 0, &[]),
                    expected,
                    "read through {address}"
                );
            }
            if kraftd_leads {
                kraftd_led = true;
            } else {
                kafka_led = true;
            }
        }
        if kraftd_led && kafka_led {
            break;
        }
        // Every voter of the leader's kind dies and comes straight back: a voter that just
        // started knows no leader and grants the other kind's (pre-)vote at once, where a
        // surviving voter of the same kind would still follow the dead leader and win the
        // election itself once its own fetch timeout passed.
        if kraftd_leads {
            for c in ours.iter_mut() {
                c.kill9();
            }
            for c in ours.iter_mut() {
                c.start();
            }
        } else {
            for c in theirs.iter_mut() {
                c.kill9();
            }
            for c in theirs.iter_mut() {
                c.start();
            }
        }
        eventually(
            "another voter leads",
            Duration::from_secs(90),
            || logs(&ours, &theirs, &broker, &kafka),
            || match quorum_leader(&controllers) {
                Ok(id) if id != leader => Ok(()),
                other => Err(format!("{other:?}")),
            },
        );
    }
    assert!(
        kraftd_led && kafka_led,
        "in 8 rounds a kraftd controller led: {kraftd_led}, a Kafka controller led: {kafka_led}"
    );

    // Each side reads the other's snapshots: Kafka's `kafka-dump-log --cluster-metadata-decoder`
    // a kraftd controller's newest one, kraftd's snapshot reader a Kafka controller's; both
    // hold every topic created above.
    let kraftd_dir = ours[0].metadata_dir();
    let kafka_dir = theirs[0].dir.join("data").join("__cluster_metadata-0");
    eventually(
        "Kafka's tool decodes a kraftd snapshot holding every topic",
        Duration::from_secs(60),
        || logs(&ours, &theirs, &broker, &kafka),
        || {
            let snapshot = common::newest_snapshot(&kraftd_dir).ok_or("no snapshot yet")?;
            let (ok, stdout, stderr) =
                kafka_jars::dump_log_segment_with(&snapshot, &["--cluster-metadata-decoder"]);
            if !ok || stderr.contains("Exception") {
                return Err(format!("kafka-dump-log {}: {stderr}", snapshot.display()));
            }
            match topics
                .iter()
                .find(|t| !stdout.contains(&format!("\"name\":\"{t}\"")))
            {
                None => Ok(()),
                Some(t) => Err(format!("{t} not in {}", snapshot.display())),
            }
        },
    );
    eventually(
        "kraftd reads a Kafka snapshot holding every topic",
        Duration::from_secs(60),
        || logs(&ours, &theirs, &broker, &kafka),
        || {
            let snapshot = common::newest_snapshot(&kafka_dir).ok_or("no snapshot yet")?;
            let bytes = std::fs::read(&snapshot).map_err(|e| e.to_string())?;
            let read = read_snapshot(Bytes::from(bytes))
                .map_err(|e| format!("{}: {e}", snapshot.display()))?;
            let mut names = Vec::new();
            for value in read.values() {
                match decode_metadata_record(value.clone()) {
                    Ok((MetadataRecord::Topic(t), _)) => names.push(t.name),
                    Ok(_) => {}
                    Err(e) => return Err(format!("{}: a record: {e}", snapshot.display())),
                }
            }
            match topics.iter().find(|t| !names.contains(t)) {
                None => Ok(()),
                Some(t) => Err(format!("{t} not in {}: {names:?}", snapshot.display())),
            }
        },
    );
}

/// `kafka-features describe` through the broker at `address` finalizes Kafka 4.4.0's format
/// defaults: metadata.version 4.4-IV2 (33), share.version 2, streams.version 1.
fn assert_finalized_defaults(address: &str) {
    let out = run_tool(
        "org.apache.kafka.tools.FeatureCommand",
        &["--bootstrap-server", address, "describe"],
    );
    let text = output_text(&out);
    for (feature, level) in [
        ("metadata.version", "4.4-IV2"),
        ("share.version", "2"),
        ("streams.version", "1"),
    ] {
        // `Feature: <name>  SupportedMinVersion: ..  SupportedMaxVersion: ..
        // FinalizedVersionLevel: <level>  Epoch: ..`, padded with spaces.
        let finalized = text.lines().find_map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (cells.get(1) == Some(&feature)).then(|| {
                cells
                    .iter()
                    .position(|c| *c == "FinalizedVersionLevel:")
                    .and_then(|i| cells.get(i + 1).copied())
            })
        });
        assert_eq!(
            finalized,
            Some(Some(level)),
            "{feature} through {address}: {text}"
        );
    }
}
