//! The web console (issue 34) on real processes: 1 controller + 3 brokers with
//! `console.enable`, a confluent-kafka producer and a consumer group that commits part of
//! what it read. The JSON endpoints agree with Kafka 4.4.0's tools: each partition's leader
//! and ISR with `kafka-topics --describe`, each partition's committed offset, log end and lag
//! with `kafka-consumer-groups --describe`. A broker killed -9 shows as fenced, with its
//! partitions under-replicated and the doctor's findings on the health page, within
//! seconds; after its restart the cluster is healthy again. Headless Chromium (Debian's,
//! `common/chromium.rs`) renders the pages: the DOM it dumps shows the same leaders, the
//! fenced broker and the lag, and a screenshot of each page is written under
//! `target/console-screenshots/`. A second test runs the embedded default (`kraftd combined`
//! with only ports overridden): the console is on there, off on a node that does not set
//! `console.enable`, refused (403) under an authorizer without a SASL listener, and its
//! first paint is measured. A third runs a broker with a SCRAM listener and the
//! StandardAuthorizer: the console asks for a login, the broker checks it, and a user sees
//! only the topics and groups its ACLs let it describe (an admin sees all, and the health
//! page); a wrong password, a logout and a missing cookie are refused.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::Duration;

use common::chromium;
use common::kafka_jars::{output_text as text, repo_root, run_tool as tool};
use common::python::{python, run_inline, script_path, wait_until_brokers_listed};
use common::{addresses, eventually, formatted_cluster, free_port, BIN};
use serde_json::Value;

const TOPIC: &str = "console-topic";
const GROUP: &str = "console-group";

/// A GET on `127.0.0.1:port`: (status code, body).
fn http_get(port: u16, path: &str) -> Result<(u16, String), String> {
    let mut stream =
        std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .map_err(|e| e.to_string())?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .map_err(|e| e.to_string())?;
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no header end in {response:?}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status in {head:?}"))?;
    Ok((status, body.to_string()))
}

/// A request on `127.0.0.1:port` with an optional cookie and form body: (status, the
/// `Set-Cookie` value, body).
fn http(
    port: u16,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    form: &str,
) -> (u16, Option<String>, String) {
    let (status, head, body) = http_from([127, 0, 0, 1].into(), port, method, path, cookie, form);
    (status, header(&head, "Set-Cookie"), body)
}

/// The value of header `name` in a response's `head`.
fn header(head: &str, name: &str) -> Option<String> {
    head.lines()
        .filter_map(|l| l.split_once(": "))
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.to_string())
}

/// [`http`] from the loopback address `source` (any of 127.0.0.0/8, so that a test has
/// several client addresses): (status, head, body).
fn http_from(
    source: std::net::IpAddr,
    port: u16,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    form: &str,
) -> (u16, String, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let mut stream = runtime
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind((source, 0).into())?;
            let stream = socket.connect(([127, 0, 0, 1], port).into()).await?;
            let stream = stream.into_std()?;
            stream.set_nonblocking(false)?;
            Ok::<_, std::io::Error>(stream)
        })
        .unwrap_or_else(|e| panic!("connecting from {source} to port {port}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let cookie = cookie.map_or(String::new(), |c| format!("Cookie: {c}\r\n"));
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{cookie}\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
        form.len()
    )
    .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head.to_string(), body.to_string())
}

/// A GET of a JSON endpoint that must answer 200.
fn api(port: u16, path: &str) -> Result<Value, String> {
    let (status, body) = http_get(port, path)?;
    if status != 200 {
        return Err(format!("{path}: {status} {body}"));
    }
    serde_json::from_str(&body).map_err(|e| format!("{path}: {e}: {body}"))
}

/// `kafka-topics --describe`'s partitions of TOPIC: partition → (leader, sorted ISR).
fn topics_describe(bootstrap: &str) -> BTreeMap<i64, (i64, Vec<i64>)> {
    let out = tool(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--topic",
            TOPIC,
        ],
    );
    assert!(
        out.status.success(),
        "kafka-topics --describe\n{}",
        text(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut rows = BTreeMap::new();
    for line in stdout.lines().filter(|l| l.contains("Partition:")) {
        let field = |name: &str| -> String {
            line.split('\t')
                .find_map(|f| f.trim().strip_prefix(name))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        let mut isr: Vec<i64> = field("Isr:")
            .split(',')
            .filter_map(|v| v.trim().parse().ok())
            .collect();
        isr.sort();
        rows.insert(
            field("Partition:").parse().unwrap(),
            (field("Leader:").parse().unwrap(), isr),
        );
    }
    rows
}

/// The console's partitions of TOPIC: partition → (leader, sorted ISR).
fn console_topic(port: u16) -> Result<BTreeMap<i64, (i64, Vec<i64>)>, String> {
    let t = api(port, &format!("/api/topics/{TOPIC}"))?;
    let mut rows = BTreeMap::new();
    for p in t["partitions"].as_array().ok_or("no partitions")? {
        let mut isr: Vec<i64> = p["isr"]
            .as_array()
            .ok_or("no isr")?
            .iter()
            .filter_map(Value::as_i64)
            .collect();
        isr.sort();
        rows.insert(
            p["partition"].as_i64().ok_or("no partition")?,
            (p["leader"].as_i64().ok_or("no leader")?, isr),
        );
    }
    Ok(rows)
}

/// `kafka-consumer-groups --describe`'s rows of GROUP: partition → (offset, log end, lag).
fn groups_describe(bootstrap: &str) -> BTreeMap<i64, (String, String, String)> {
    let out = tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        &[
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--group",
            GROUP,
        ],
    );
    assert!(
        out.status.success(),
        "kafka-consumer-groups --describe\n{}",
        text(&out)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols.len() >= 6 && cols[0] == GROUP && cols[1] == TOPIC).then(|| {
                (
                    cols[2].parse().unwrap(),
                    (
                        cols[3].to_string(),
                        cols[4].to_string(),
                        cols[5].to_string(),
                    ),
                )
            })
        })
        .collect()
}

/// The console's rows of GROUP, as the tool prints them (`-` for none).
fn console_group(port: u16) -> Result<BTreeMap<i64, (String, String, String)>, String> {
    let g = api(port, &format!("/api/groups/{GROUP}"))?;
    if let Some(e) = g.get("error") {
        return Err(format!("group error: {e}"));
    }
    let show = |v: &Value| v.as_i64().map_or("-".to_string(), |n| n.to_string());
    Ok(g["partitions"]
        .as_array()
        .ok_or("no partitions")?
        .iter()
        .filter(|p| p["topic"] == TOPIC)
        .map(|p| {
            (
                p["partition"].as_i64().unwrap(),
                (show(&p["committed"]), show(&p["log_end"]), show(&p["lag"])),
            )
        })
        .collect())
}

fn broker_state(overview: &Value, id: i32) -> Option<String> {
    overview["brokers"]
        .as_array()?
        .iter()
        .find(|b| b["id"] == id)
        .and_then(|b| b["state"].as_str())
        .map(str::to_string)
}

#[test]
fn the_console_shows_what_kafkas_tools_show_and_a_fenced_broker() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 3);
    let mut ports = Vec::new();
    for node in &brokers {
        let port = free_port();
        node.add_config(&[
            &format!("metrics.port={port}"),
            "console.enable=true",
            "group.initial.rebalance.delay.ms=0",
        ]);
        ports.push(port);
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = addresses(&brokers);
    let logs = || logs_under(root.path());
    wait_until_brokers_listed(&bootstrap, 3, logs);
    let setup = run_inline(
        r#"
import sys, time
sys.path.insert(0, sys.argv[2])
from clients_common import create_topic
from confluent_kafka import Consumer, Producer
from confluent_kafka import admin as cadmin
bootstrap = sys.argv[1]
create_topic(cadmin.AdminClient({"bootstrap.servers": bootstrap}), "console-topic", 3, 3, {}, time.time() + 60)
p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
for i in range(300):
    p.produce("console-topic", value=b"m%d" % i, partition=i % 3)
assert p.flush(30) == 0
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "console-group",
              "auto.offset.reset": "earliest", "enable.auto.commit": False})
c.subscribe(["console-topic"])
read, deadline = 0, time.time() + 60
while read < 120 and time.time() < deadline:
    m = c.poll(1.0)
    if m is not None and m.error() is None:
        read += 1
assert read >= 120, read
c.commit(asynchronous=False)
c.close()
print("read", read)
"#,
        &[&bootstrap, script_path("").to_str().unwrap()],
    );
    assert!(
        setup.status.success(),
        "producer and group\n{}\n{}",
        String::from_utf8_lossy(&setup.stderr),
        logs()
    );

    // The console of broker 2 (the first broker), compared with Kafka's tools.
    let port = ports[0];
    let expected = topics_describe(&bootstrap);
    assert_eq!(expected.len(), 3, "kafka-topics --describe: {expected:?}");
    eventually(
        "the console's leaders and ISR equal kafka-topics'",
        Duration::from_secs(20),
        logs,
        || {
            let seen = console_topic(port)?;
            (seen == expected)
                .then_some(())
                .ok_or_else(|| format!("console {seen:?} vs tool {expected:?}"))
        },
    );
    // Each replica's size equals what kafka-log-dirs --describe reports for it.
    let brokers_list = "2,3,4";
    eventually(
        "the console's replica sizes equal kafka-log-dirs'",
        Duration::from_secs(30),
        logs,
        || {
            let tool: Value = serde_json::from_str(&common::kafka_jars::log_dirs_json(
                &bootstrap,
                brokers_list,
            )?)
            .map_err(|e| e.to_string())?;
            let mut from_tool = BTreeMap::new();
            for b in tool["brokers"].as_array().ok_or("no brokers")? {
                let broker = b["broker"].as_i64().ok_or("no broker id")?;
                for dir in b["logDirs"].as_array().ok_or("no logDirs")? {
                    for p in dir["partitions"].as_array().ok_or("no partitions")? {
                        let name = p["partition"].as_str().ok_or("no partition")?;
                        if let Some(index) = name.strip_prefix(&format!("{TOPIC}-")) {
                            let index: i64 = index.parse().map_err(|_| name.to_string())?;
                            from_tool.insert((index, broker), p["size"].as_i64().unwrap_or(-1));
                        }
                    }
                }
            }
            let t = api(port, &format!("/api/topics/{TOPIC}"))?;
            let mut from_console = BTreeMap::new();
            for p in t["partitions"].as_array().ok_or("no partitions")? {
                let index = p["partition"].as_i64().ok_or("no index")?;
                for (broker, size) in p["sizes"].as_object().ok_or("no sizes")? {
                    let broker: i64 = broker.parse().map_err(|_| broker.clone())?;
                    from_console.insert((index, broker), size.as_i64().unwrap_or(-2));
                }
            }
            if from_console != from_tool || from_tool.len() != 9 {
                return Err(format!("console {from_console:?} vs tool {from_tool:?}"));
            }
            // The topic list's size is the topic's bytes over every replica.
            let list = api(port, "/api/topics")?;
            let row = list["topics"]
                .as_array()
                .and_then(|ts| ts.iter().find(|t| t["name"] == TOPIC))
                .ok_or("the topic is not listed")?;
            let total: i64 = from_tool.values().sum();
            (row["size_bytes"].as_i64() == Some(total) && row["end_offsets"].as_i64() == Some(300))
                .then_some(())
                .ok_or_else(|| format!("list row {row} vs {total} bytes and 300 records"))
        },
    );
    let t = api(port, &format!("/api/topics/{TOPIC}")).unwrap();
    let hw: i64 = t["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["high_watermark"].as_i64().unwrap())
        .sum();
    assert_eq!(
        hw, 300,
        "the partitions' high watermarks add up to what was produced: {t}"
    );
    // The broker table's bytes in counter: this node leads a partition that took records.
    eventually(
        "the overview counts this broker's bytes in",
        Duration::from_secs(20),
        logs,
        || {
            let o = api(port, "/api/overview")?;
            let bytes_in = o["bytes"]["brokers"]["2"]["in"].as_f64().unwrap_or(0.0);
            (bytes_in > 0.0)
                .then_some(())
                .ok_or_else(|| format!("bytes: {}", o["bytes"]))
        },
    );
    let tool_rows = groups_describe(&bootstrap);
    // The group committed 120 of the 300 records; a partition it committed nothing on is
    // not a row of the tool's (nor of the console's) for a group without members.
    let committed: i64 = tool_rows
        .values()
        .map(|r| r.0.parse::<i64>().unwrap())
        .sum();
    assert_eq!(
        committed, 120,
        "kafka-consumer-groups --describe: {tool_rows:?}"
    );
    let lag: i64 = tool_rows
        .values()
        .map(|r| r.2.parse::<i64>().unwrap())
        .sum();
    assert!(lag > 0, "the tool's lag: {tool_rows:?}");
    assert_eq!(console_group(port).unwrap(), tool_rows);
    // A member joins (and commits nothing): the group page shows it with its assignment,
    // and every partition's row as the tool prints it, `-` where nothing is committed.
    let member = std::process::Command::new(python())
        .arg("-c")
        .arg(
            r#"
import sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "console-group",
              "client.id": "console-member", "enable.auto.commit": False,
              "auto.offset.reset": "latest"})
c.subscribe(["console-topic"])
deadline = time.time() + 120
while time.time() < deadline:
    c.poll(0.5)
"#,
        )
        .arg(&bootstrap)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let member = KillOnDrop(member);
    let assigned = eventually(
        "the member's assignment on the group page",
        Duration::from_secs(60),
        logs,
        || {
            let g = api(port, &format!("/api/groups/{GROUP}"))?;
            let members = g["members"].as_array().cloned().unwrap_or_default();
            let partitions: Vec<i64> = members
                .iter()
                .flat_map(|m| m["assignment"].as_array().cloned().unwrap_or_default())
                .filter(|a| a["topic"] == TOPIC)
                .flat_map(|a| a["partitions"].as_array().cloned().unwrap_or_default())
                .filter_map(|p| p.as_i64())
                .collect();
            (g["state"] == "Stable" && members.len() == 1 && partitions.len() == 3)
                .then(|| members[0]["client_id"].clone())
                .ok_or_else(|| g.to_string())
        },
    );
    assert_eq!(assigned, "console-member");
    let with_member = groups_describe(&bootstrap);
    assert_eq!(
        with_member.len(),
        3,
        "kafka-consumer-groups --describe: {with_member:?}"
    );
    assert_eq!(console_group(port).unwrap(), with_member);
    drop(member);

    let listed = api(port, "/api/groups").unwrap();
    assert!(
        listed["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["group_id"] == GROUP),
        "{listed}"
    );
    let topics = api(port, "/api/topics?page=0").unwrap();
    assert!(
        topics["topics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == TOPIC),
        "{topics}"
    );
    eventually(
        "the health page is healthy",
        Duration::from_secs(20),
        logs,
        || {
            let h = api(port, "/api/health")?;
            (h["status"] == 0)
                .then_some(())
                .ok_or_else(|| h.to_string())
        },
    );

    // The browser: the topic and group pages render the same leaders and lag.
    let screenshots = repo_root().join("target").join("console-screenshots");
    let url = |fragment: &str| format!("http://127.0.0.1:{port}/#{fragment}");
    let dom = chromium::dump_dom(&url(&format!("/topics/{TOPIC}")));
    for (partition, (leader, _)) in &expected {
        let row = format!("data-partition=\"{partition}\" data-leader=\"{leader}\"");
        assert!(
            dom.contains(&row),
            "no {row} in the rendered topic page:\n{dom}"
        );
    }
    let dom = chromium::dump_dom(&url("/transactions"));
    assert!(
        dom.contains("id=\"no-hanging\""),
        "the rendered transactions page:\n{dom}"
    );
    let dom = chromium::dump_dom(&url(&format!("/groups/{GROUP}")));
    assert!(
        dom.contains(&format!("id=\"total-lag\">{lag}<")),
        "the rendered group page does not show a lag of {lag}:\n{dom}"
    );
    for (partition, (_, _, lag)) in &tool_rows {
        let row = format!("data-partition=\"{partition}\" data-lag=\"{lag}\"");
        assert!(
            dom.contains(&row),
            "no {row} in the rendered group page:\n{dom}"
        );
    }
    for (name, fragment) in [
        ("topics", "/topics".to_string()),
        ("topic", format!("/topics/{TOPIC}")),
        ("groups", "/groups".to_string()),
        ("group", format!("/groups/{GROUP}")),
        ("health", "/health".to_string()),
    ] {
        chromium::screenshot(&url(&fragment), &screenshots.join(format!("{name}.png")));
    }

    // Broker 4 killed -9: fenced, its partitions under-replicated, the doctor says so.
    brokers[2].kill9();
    let dead = brokers[2].id;
    eventually(
        "the killed broker is fenced and its partitions under-replicated",
        Duration::from_secs(30),
        logs,
        || {
            let o = api(port, "/api/overview")?;
            let state = broker_state(&o, dead);
            let under = o["under_replicated_partitions"].as_i64().unwrap_or(0);
            (state.as_deref() == Some("fenced") && under > 0)
                .then_some(())
                .ok_or_else(|| format!("broker {dead} {state:?}, {under} under-replicated"))
        },
    );
    eventually(
        "the health page names the fault",
        Duration::from_secs(20),
        logs,
        || {
            let h = api(port, "/api/health")?;
            (h["status"] != 0 && !h["findings"].as_array().unwrap().is_empty())
                .then_some(())
                .ok_or_else(|| h.to_string())
        },
    );
    let dom = chromium::dump_dom(&url("/"));
    assert!(
        dom.contains(&format!("data-broker=\"{dead}\" data-state=\"fenced\"")),
        "the rendered overview does not show broker {dead} fenced:\n{dom}"
    );
    chromium::screenshot(&url("/"), &screenshots.join("overview-fenced.png"));

    // Restarted: running again and nothing under-replicated.
    brokers[2].start();
    eventually(
        "the restarted broker is healthy again",
        Duration::from_secs(60),
        logs,
        || {
            let o = api(port, "/api/overview")?;
            let state = broker_state(&o, dead);
            let under = o["under_replicated_partitions"].as_i64().unwrap_or(-1);
            (state.as_deref() == Some("running") && under == 0)
                .then_some(())
                .ok_or_else(|| format!("broker {dead} {state:?}, {under} under-replicated"))
        },
    );
    chromium::screenshot(&url("/"), &screenshots.join("overview.png"));
}

/// The finding texts of a health answer.
fn finding_texts(health: &Value) -> Vec<String> {
    health["findings"]
        .as_array()
        .map(|f| {
            f.iter()
                .filter_map(|f| f["text"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The health page over the whole cluster (3 controllers + 3 brokers): broker 4's console
/// is given every node's `/metrics` (`console.metrics.endpoints`, as `kraftd doctor
/// --metrics`), broker 5's is not. Broker 4's healthy line counts six nodes' metrics, broker
/// 5's one; a controller killed -9 shows on broker 4's page (rendered in Chromium) as the
/// doctor names an unreadable node, which broker 5's page cannot know; restarted, both are
/// healthy again.
#[test]
fn the_health_page_reads_every_nodes_metrics_when_told_where_they_are() {
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 3, 3);
    let ports: Vec<u16> = (0..6).map(|_| free_port()).collect();
    for (node, port) in controllers.iter().chain(brokers.iter()).zip(&ports) {
        node.add_config(&[&format!("metrics.port={port}")]);
    }
    let endpoints: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    brokers[0].add_config(&[
        "console.enable=true",
        &format!("console.metrics.endpoints={}", endpoints.join(",")),
    ]);
    brokers[1].add_config(&["console.enable=true"]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let logs = || logs_under(root.path());
    let (told, alone) = (ports[3], ports[4]);
    let healthy = |port: u16, nodes: usize| {
        eventually(
            &format!("the console on port {port} healthy with {nodes} nodes' metrics"),
            Duration::from_secs(90),
            logs,
            || {
                let h = api(port, "/api/health")?;
                let line = h["healthy"].as_str().unwrap_or_default();
                (line.contains(&format!("{nodes} nodes' metrics read"))
                    && line.contains("3 voters and 3 observers")
                    && line.contains("3 brokers unfenced"))
                .then_some(())
                .ok_or_else(|| h.to_string())
            },
        );
    };
    healthy(told, 6);
    healthy(alone, 1);

    // A controller other than the Raft leader killed -9.
    let leader = api(told, "/api/overview").unwrap()["quorum"]["leader_id"]
        .as_i64()
        .unwrap();
    let victim = controllers
        .iter()
        .position(|c| i64::from(c.id) != leader)
        .unwrap();
    controllers[victim].kill9();
    let unreadable = format!("cannot read /metrics at {}", endpoints[victim]);
    let findings = eventually(
        "broker 4's health page names the killed controller's metrics",
        Duration::from_secs(30),
        logs,
        || {
            let h = api(told, "/api/health")?;
            let texts = finding_texts(&h);
            (h["status"] != 0 && texts.iter().any(|t| t.starts_with(&unreadable)))
                .then_some(texts)
                .ok_or_else(|| h.to_string())
        },
    );
    let alone_findings = finding_texts(&api(alone, "/api/health").unwrap());
    assert!(
        !alone_findings
            .iter()
            .any(|t| t.contains("cannot read /metrics")),
        "broker 5 reads no other node's metrics: {alone_findings:?}"
    );
    let dom = chromium::dump_dom(&format!("http://127.0.0.1:{told}/#/health"));
    assert!(
        dom.contains(&unreadable),
        "the rendered health page does not show {unreadable:?} (findings {findings:?}):\n{dom}"
    );
    chromium::screenshot(
        &format!("http://127.0.0.1:{told}/#/health"),
        &repo_root()
            .join("target")
            .join("console-screenshots")
            .join("health-cluster-controller-down.png"),
    );

    // Restarted: healthy again on both, six nodes' metrics on broker 4's.
    controllers[victim].start();
    healthy(told, 6);
    healthy(alone, 1);
}

#[test]
fn the_embedded_default_serves_the_console_and_an_authorizer_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let start = |extra: &[String]| {
        let (client, controller, metrics) = (free_port(), free_port(), free_port());
        let mut args = vec![
            "combined".to_string(),
            "--override".into(),
            format!("listeners=PLAINTEXT://127.0.0.1:{client},CONTROLLER://127.0.0.1:{controller}"),
            "--override".into(),
            format!("controller.quorum.voters=1@127.0.0.1:{controller}"),
            "--override".into(),
            format!("metrics.port={metrics}"),
        ];
        for e in extra {
            args.push("--override".into());
            args.push(e.clone());
        }
        let log =
            std::fs::File::create(dir.path().join(format!("embedded-{metrics}.log"))).unwrap();
        let data = dir.path().join(format!("embedded-{metrics}"));
        std::fs::create_dir_all(&data).unwrap();
        let child = std::process::Command::new(BIN)
            .args(&args)
            .current_dir(&data)
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        (KillOnDrop(child), metrics)
    };
    let logs = || logs_under(dir.path());
    let (_embedded, port) = start(&[]);
    eventually(
        "the embedded default's console",
        Duration::from_secs(30),
        logs,
        || {
            let o = api(port, "/api/overview")?;
            (broker_state(&o, 1).as_deref() == Some("running"))
                .then_some(())
                .ok_or_else(|| o.to_string())
        },
    );
    let (status, html) = http_get(port, "/").unwrap();
    assert_eq!(status, 200);
    assert!(
        html.contains("function refresh()"),
        "the script is inlined: {html}"
    );
    let dom = chromium::dump_dom(&format!("http://127.0.0.1:{port}/#/"));
    assert!(
        dom.contains("data-broker=\"1\" data-state=\"running\""),
        "{dom}"
    );
    let paint = chromium::first_paint_ms(&format!("http://127.0.0.1:{port}/#/"));
    eprintln!("console first paint on the embedded default: {paint:?} ms");
    let screenshots = repo_root().join("target").join("console-screenshots");
    chromium::screenshot(
        &format!("http://127.0.0.1:{port}/#/"),
        &screenshots.join("embedded-overview.png"),
    );

    // Every metric the Grafana dashboard queries is on a running node's /metrics.
    let (_, exported) = http_get(port, "/metrics").unwrap();
    let exported: std::collections::BTreeSet<&str> = exported
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .collect();
    let dashboard = repo_root().join("docs").join("grafana").join("kraftd.json");
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(&dashboard).unwrap()).unwrap();
    let mut queried = std::collections::BTreeSet::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            queried.extend(metric_names(expr));
        }
    }
    assert!(queried.len() >= 20, "the dashboard queries {queried:?}");
    let missing: Vec<&String> = queried
        .iter()
        .filter(|m| !exported.contains(m.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "the dashboard queries metrics no node exports: {missing:?}"
    );

    // A node that does not set console.enable serves /metrics only.
    let metrics = free_port();
    let (_id, mut quorum) = common::formatted_quorum(&dir.path().join("q"), 1);
    quorum[0].add_config(&[&format!("metrics.port={metrics}")]);
    quorum[0].start();
    eventually(
        "a node without console.enable",
        Duration::from_secs(30),
        logs,
        || {
            let (status, _) = http_get(metrics, "/")?;
            let (metrics_status, _) = http_get(metrics, "/metrics")?;
            (status == 404 && metrics_status == 200)
                .then_some(())
                .ok_or_else(|| format!("/ {status}, /metrics {metrics_status}"))
        },
    );
    quorum[0].kill9();

    // Under an authorizer, the console refuses with one line.
    let (_secured, port) = start(&[
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer".into(),
        "super.users=User:ANONYMOUS".into(),
    ]);
    eventually(
        "the console refuses under an authorizer",
        Duration::from_secs(30),
        logs,
        || {
            let (status, body) = http_get(port, "/api/overview")?;
            (status == 403 && body.lines().count() == 1)
                .then_some(())
                .ok_or_else(|| format!("{status} {body}"))
        },
    );
}

/// Fills the console's login form in `browser` as a user does: clicks into each field and
/// types, tabs to the mechanism and picks it with the arrow key, clicks "Sign in".
fn sign_in(browser: &mut chromium::Browser, user: &str, password: &str, mechanism: &str) {
    browser.wait_for(
        "the login form",
        "document.getElementById('login-submit') !== null",
    );
    browser.fill("#username", user);
    browser.fill("#password", password);
    browser.press("Tab", 9);
    assert_eq!(browser.eval("document.activeElement.id"), "mechanism");
    for _ in 0..3 {
        if browser.eval("document.getElementById('mechanism').value") == mechanism {
            break;
        }
        browser.press("ArrowDown", 40);
    }
    assert_eq!(
        browser.eval("document.getElementById('mechanism').value"),
        mechanism
    );
    browser.click("#login-submit");
}

/// The `data-NAME` values of the rows the current view shows, once the view whose `<h2>`
/// starts with `heading` is rendered for `hash` and has a row `must` (signed in as `who`).
fn rendered_rows(
    browser: &mut chromium::Browser,
    who: &str,
    hash: &str,
    heading: &str,
    name: &str,
    must: &str,
) -> Vec<String> {
    let js = format!(
        "(() => {{ const h = document.querySelector('#view h2'); \
         if (location.hash !== {hash} || !h || !h.textContent.startsWith({heading}) \
             || !document.getElementById('who').textContent.includes({who})) return null; \
         const rows = [...document.querySelectorAll('#view tr[data-{name}]')] \
             .map(r => r.dataset.{name}); \
         return rows.includes({must}) ? rows : null; }})()",
        hash = serde_json::json!(hash),
        heading = serde_json::json!(heading),
        who = serde_json::json!(who),
        must = serde_json::json!(must),
    );
    let rows = browser.wait_for(&format!("{who}'s {hash} showing {must}"), &js);
    rows.as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// The SASL login in a real browser: the form the console shows without a session, a wrong
/// password refused with the broker's reason, then alice and the admin signed in through
/// the form and the pages rendering only what each may describe. Screenshots of each under
/// `target/console-screenshots/login-*.png`.
fn signed_in_browser(metrics: u16) {
    let screenshots = repo_root().join("target").join("console-screenshots");
    let shot = |browser: &mut chromium::Browser, name: &str| {
        browser.screenshot(&screenshots.join(format!("login-{name}.png")));
    };
    let mut browser = chromium::Browser::launch();
    browser.navigate(&format!("http://127.0.0.1:{metrics}/#/topics"));
    browser.wait_for(
        "the login form",
        "document.querySelector('#mechanism option') !== null",
    );
    assert_eq!(
        browser.eval("[...document.querySelectorAll('#mechanism option')].map(o => o.textContent)"),
        serde_json::json!(["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
    );
    shot(&mut browser, "form");

    // A wrong password: the form again with the broker's reason, and no session.
    sign_in(&mut browser, "alice", "wrong", "SCRAM-SHA-256");
    let error = browser.wait_for(
        "the login error",
        "document.getElementById('login-error')?.textContent",
    );
    let error = error.as_str().unwrap();
    assert!(
        error.starts_with("login failed: ") && error.contains("SCRAM-SHA-256"),
        "{error}"
    );
    assert_eq!(
        browser.eval("fetch('/api/whoami').then(r => r.status)"),
        401,
        "a refused login left a session"
    );
    shot(&mut browser, "refused");

    // alice: her topic and her group, nothing else; no health page.
    sign_in(&mut browser, "alice", "alice-secret", "SCRAM-SHA-256");
    let topics = rendered_rows(
        &mut browser,
        "User:alice",
        "#/topics",
        "Topics",
        "topic",
        "visible-t",
    );
    assert_eq!(topics, ["visible-t"]);
    shot(&mut browser, "alice-topics");
    browser.click("a[data-nav=groups]");
    let groups = rendered_rows(
        &mut browser,
        "User:alice",
        "#/groups",
        "Groups",
        "group",
        "g-alice",
    );
    assert_eq!(groups, ["g-alice"]);
    shot(&mut browser, "alice-groups");
    browser.click("a[data-nav=overview]");
    browser.wait_for(
        "alice's overview with its restriction",
        "document.getElementById('restricted')?.textContent",
    );
    shot(&mut browser, "alice-overview");
    browser.click("a[data-nav=health]");
    let refused = browser.wait_for(
        "alice's health page refused",
        "location.hash === '#/health' && document.getElementById('error')?.textContent",
    );
    assert!(
        refused
            .as_str()
            .unwrap()
            .contains("DESCRIBE on the cluster"),
        "{refused}"
    );

    // Signed out, then the admin: every topic and group, and the health page.
    browser.click("#logout");
    sign_in(&mut browser, "admin", "admin-secret", "SCRAM-SHA-512");
    browser.click("a[data-nav=topics]");
    let topics = rendered_rows(
        &mut browser,
        "User:admin",
        "#/topics",
        "Topics",
        "topic",
        "hidden-t",
    );
    assert!(topics.contains(&"visible-t".to_string()), "{topics:?}");
    shot(&mut browser, "admin-topics");
    browser.click("a[data-nav=groups]");
    let mut groups = rendered_rows(
        &mut browser,
        "User:admin",
        "#/groups",
        "Groups",
        "group",
        "g-secret",
    );
    groups.sort();
    assert_eq!(groups, ["g-alice", "g-secret"]);
    shot(&mut browser, "admin-groups");
    browser.click("a[data-nav=health]");
    browser.wait_for(
        "the admin's health page",
        "location.hash === '#/health' && document.querySelector('#view h2')?.textContent === 'Health' \
         && !!document.getElementById('who').textContent.includes('User:admin')",
    );
    shot(&mut browser, "admin-health");
}

#[test]
fn the_console_asks_for_a_sasl_login_and_shows_only_what_the_principal_may_describe() {
    let root = tempfile::tempdir().unwrap();
    let (mut controllers, mut brokers) = common::secured::sasl_acl_cluster(root.path(), 1);
    let metrics = free_port();
    brokers[0].add_config(&["console.enable=true", &format!("metrics.port={metrics}")]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let logs = || common::all_logs(&brokers) + &common::all_logs(&controllers);
    let bootstrap = addresses(&brokers);

    // The admin makes two topics and two groups; alice may describe one of each.
    let setup = r#"
import os, sys, json
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, NewTopic, AclBinding, ResourceType,
    ResourcePatternType, AclOperation, AclPermissionType)
bootstrap = sys.argv[1]
conf = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin", "sasl.password": "admin-secret"}
admin = AdminClient(conf)
for f in admin.create_topics([NewTopic("visible-t", 1, 1), NewTopic("hidden-t", 1, 1)]).values():
    f.result(30)
acls = [AclBinding(ResourceType.TOPIC, "visible-t", ResourcePatternType.LITERAL, "User:alice", "*",
                   AclOperation.DESCRIBE, AclPermissionType.ALLOW),
        AclBinding(ResourceType.GROUP, "g-alice", ResourcePatternType.LITERAL, "User:alice", "*",
                   AclOperation.DESCRIBE, AclPermissionType.ALLOW)]
for f in admin.create_acls(acls).values():
    f.result(30)
for group in ("g-alice", "g-secret"):
    c = Consumer(dict(conf, **{"group.id": group, "enable.auto.commit": False}))
    c.commit(offsets=[TopicPartition("visible-t", 0, 0)], asynchronous=False)
    c.close()
# A transaction left open: its producer exits without committing.
p = Producer(dict(conf, **{"transactional.id": "console-txn", "transaction.timeout.ms": 300000}))
p.init_transactions(30)
p.begin_transaction()
p.produce("visible-t", b"x")
p.flush(30)
print("all ok", flush=True)
os._exit(0)
"#;
    eventually(
        "the admin's topics, ACLs and groups",
        Duration::from_secs(90),
        logs,
        || {
            let out = common::python::run_inline(setup, &[&bootstrap]);
            let stdout = String::from_utf8_lossy(&out.stdout);
            stdout
                .contains("all ok")
                .then_some(())
                .ok_or_else(|| format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)))
        },
    );

    // Not signed in: 401 with the mechanisms the listener offers; the page itself loads.
    let (status, _, body) = http(metrics, "GET", "/api/overview", None, "");
    assert_eq!(status, 401, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["login_required"], true);
    assert_eq!(
        body["mechanisms"],
        serde_json::json!(["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
    );
    assert_eq!(http(metrics, "GET", "/", None, "").0, 200);
    signed_in_browser(metrics);

    // A wrong password is refused by the broker, with its reason.
    let (status, cookie, body) = http(
        metrics,
        "POST",
        "/api/login",
        None,
        "username=alice&password=wrong&mechanism=SCRAM-SHA-256",
    );
    assert_eq!((status, cookie), (401, None), "{body}");
    assert!(body.contains("login failed"), "{body}");

    let login = |user: &str, password: &str, mechanism: &str| -> String {
        let (status, cookie, body) = http(
            metrics,
            "POST",
            "/api/login",
            None,
            &format!("username={user}&password={password}&mechanism={mechanism}"),
        );
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(&format!("User:{user}")), "{body}");
        let cookie = cookie.expect("a session cookie");
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
        cookie.split(';').next().unwrap().to_string()
    };
    let get = |cookie: &str, path: &str| -> (u16, String) {
        let (status, _, body) = http(metrics, "GET", path, Some(cookie), "");
        (status, body)
    };
    let json = |cookie: &str, path: &str| -> Value {
        let (status, body) = get(cookie, path);
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap()
    };

    // alice sees her topic and her group only; the rest is refused or absent.
    let alice = login("alice", "alice-secret", "SCRAM-SHA-256");
    assert_eq!(json(&alice, "/api/whoami")["principal"], "User:alice");
    let topics = json(&alice, "/api/topics");
    assert_eq!(topics["total"], 1, "{topics}");
    assert_eq!(topics["topics"][0]["name"], "visible-t");
    assert_eq!(get(&alice, "/api/topics/hidden-t").0, 403);
    assert_eq!(get(&alice, "/api/topics/no-such-topic").0, 403);
    let topic = json(&alice, "/api/topics/visible-t");
    // One record in a transaction still open: the HW is past it, the LSO before it.
    assert_eq!(topic["partitions"][0]["high_watermark"], 1, "{topic}");
    assert_eq!(topic["partitions"][0]["last_stable"], 0, "{topic}");
    let overview = json(&alice, "/api/overview");
    assert_eq!(overview["topics"], 1, "{overview}");
    assert!(overview["quorum"].is_null() && overview["restricted"].is_string());
    assert_eq!(get(&alice, "/api/health").0, 403);
    eventually("alice's groups", Duration::from_secs(30), logs, || {
        let groups = json(&alice, "/api/groups");
        let ids: Vec<&str> = groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|g| g["group_id"].as_str())
            .collect();
        (ids == ["g-alice"])
            .then_some(())
            .ok_or_else(|| groups.to_string())
    });

    // The admin (a super user) sees everything, health included.
    let admin = login("admin", "admin-secret", "SCRAM-SHA-512");
    let topics = json(&admin, "/api/topics");
    let names: Vec<&str> = topics["topics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"hidden-t") && names.contains(&"visible-t"),
        "{topics}"
    );
    assert_eq!(get(&admin, "/api/health").0, 200);
    eventually("the admin's groups", Duration::from_secs(30), logs, || {
        let groups = json(&admin, "/api/groups");
        let n = groups["groups"].as_array().map_or(0, Vec::len);
        (n == 2).then_some(()).ok_or_else(|| groups.to_string())
    });

    // The open transaction: the admin sees it, alice (no DESCRIBE on its transactional id)
    // does not; nothing hangs.
    eventually(
        "the admin's transactions",
        Duration::from_secs(30),
        logs,
        || {
            let t = json(&admin, "/api/transactions");
            let row = &t["transactions"][0];
            (row["transactional_id"] == "console-txn"
                && row["state"] == "Ongoing"
                && row["partitions"] == serde_json::json!(["visible-t-0"])
                && t["hanging"] == serde_json::json!([]))
            .then_some(())
            .ok_or_else(|| t.to_string())
        },
    );
    let t = json(&alice, "/api/transactions");
    assert_eq!(t["transactions"], serde_json::json!([]), "{t}");

    // After logout the session is gone.
    let (status, cleared, _) = http(metrics, "POST", "/api/logout", Some(&alice), "");
    assert_eq!(status, 200);
    assert!(cleared.is_some_and(|c| c.contains("Max-Age=0")));
    assert_eq!(get(&alice, "/api/topics").0, 401);
    assert_eq!(get(&admin, "/api/topics").0, 200);

    // The brute-force guard (login.rs): MAX_FAILURES failed logins a minute from one
    // address, or for one username from any, then 429 with Retry-After, the broker not asked
    // (the right password is refused too). Other loopback addresses are other clients.
    let from = |last: u8| std::net::IpAddr::from([127, 0, 0, last]);
    let try_login = |source, user: &str, password: &str, mechanism: &str| {
        http_from(
            source,
            metrics,
            "POST",
            "/api/login",
            None,
            &format!("username={user}&password={password}&mechanism={mechanism}"),
        )
    };
    let refused = |(status, head, body): (u16, String, String)| {
        assert_eq!(status, 429, "{head}\n{body}");
        let retry: u64 = header(&head, "Retry-After")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no Retry-After seconds in {head}"));
        assert!((1..=60).contains(&retry), "Retry-After: {retry}");
        assert!(body.contains("too many failed logins"), "{body}");
    };
    for _ in 0..5 {
        let (status, _, body) = try_login(from(2), "mallory", "guess", "SCRAM-SHA-256");
        assert_eq!(status, 401, "{body}");
    }
    refused(try_login(from(2), "mallory", "guess", "SCRAM-SHA-256"));
    refused(try_login(from(2), "alice", "alice-secret", "SCRAM-SHA-256"));
    // One username guessed from five addresses: refused from a sixth, even rightly.
    for last in 3..8 {
        let (status, _, body) = try_login(from(last), "alice", "guess", "SCRAM-SHA-256");
        assert_eq!(status, 401, "{body}");
    }
    refused(try_login(from(8), "alice", "alice-secret", "SCRAM-SHA-256"));
    // Others are not held back: the admin from a fresh address, and from 127.0.0.1 (two
    // failures, the wrong passwords above, and its successes are none).
    for source in [from(9), from(1)] {
        let (status, _, body) = try_login(source, "admin", "admin-secret", "SCRAM-SHA-512");
        assert_eq!(status, 200, "{body}");
    }
}

/// The metric names of a PromQL expression: its identifiers that are neither functions
/// (followed by `(`), aggregation operators (`sum by ...`), grouping keywords with their label lists (`by (node)`), label
/// matchers (`{...}`) nor ranges (`[1m]`).
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    let mut in_by = false;
    // Inside `{...}` (label matchers) or `[...]` (ranges): no metric names.
    let mut nested = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '{' || c == '[' {
            nested += 1;
        } else if c == '}' || c == ']' {
            nested -= 1;
        } else if c == ')' {
            in_by = false;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let next = chars[i..].iter().find(|c| !c.is_whitespace());
            let grouping = matches!(word.as_str(), "by" | "without" | "on" | "ignoring");
            let aggregation = matches!(
                word.as_str(),
                "sum"
                    | "min"
                    | "max"
                    | "avg"
                    | "count"
                    | "group"
                    | "stddev"
                    | "stdvar"
                    | "topk"
                    | "bottomk"
                    | "quantile"
                    | "count_values"
            );
            if grouping {
                in_by = true;
            } else if !aggregation && next != Some(&'(') && !in_by && nested == 0 {
                names.push(word);
            }
            continue;
        }
        i += 1;
    }
    names
}

#[test]
fn promql_metric_names_are_found() {
    assert_eq!(
        metric_names("sum by (request) (rate(a_total[1m])) / sum by (node) (b_count{x=\"y\"})"),
        vec!["a_total", "b_count"]
    );
}

/// Every `*.log` under `root`, two levels deep (the nodes' and the embedded runs' logs).
fn logs_under(root: &std::path::Path) -> String {
    let mut all = String::new();
    let mut dirs = vec![root.to_path_buf()];
    for depth in 0..3 {
        let mut next = Vec::new();
        for dir in &dirs {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = e.path();
                if path.is_dir() && depth < 2 {
                    next.push(path);
                } else if path.extension().is_some_and(|x| x == "log") {
                    all += &format!("--- {}\n", path.display());
                    all += &std::fs::read_to_string(&path).unwrap_or_default();
                }
            }
        }
        dirs = next;
    }
    all
}

/// The embedded process, killed when the test ends however it ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
