//! A wall clock that jumps on the group coordinator's broker (issue 32, found by `cargo xtask
//! chaos --clock`): a classic consumer group member of confluent-kafka keeps its membership
//! when the broker's clock jumps an hour ahead. Kafka's coordinators count their timeouts on
//! a monotonic clock (`SystemTimer`, `Time.hiResClockMs()`), so a jump expires no session;
//! kraftd's coordinator runtime compared its timers' deadlines with the wall clock, and the
//! first event after the jump expired every member (the member lost its partitions within
//! a heartbeat, its next commit refused). The broker's clock is moved by the chaos harness's
//! LD_PRELOAD interposer (`xtask/src/chaos/clockjump.c`, built here with `cc`), whose offset
//! file the client script writes in place; the script checks through `/metrics`
//! (`kraftd_wall_clock_ms`) that the broker's clock did jump, so the test cannot pass
//! vacuously.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::python::{python, run_inline};
use common::{free_port, BIN};

/// Subscribes a classic member (10 s session, heartbeats every 3 s), waits
/// for its assignment, commits, jumps the broker's clock an hour ahead, checks `/metrics`
/// shows it, describes the group twice with the AdminClient (the first event after the jump
/// made the old runtime fire every timer due by the wall clock: the second description found
/// the group without its member), then commits twice more synchronously and polls through
/// two heartbeats' worth of events; prints what happened as JSON.
const MEMBER: &str = r#"
import json, struct, sys, time, urllib.request
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap, metrics, offset_file = sys.argv[1:4]
admin = AdminClient({"bootstrap.servers": bootstrap})
admin.create_topics([NewTopic("jump", 1, 1)])["jump"].result(60)
events = []
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "jumpers", "group.protocol": "classic",
              "session.timeout.ms": 10000, "enable.auto.commit": False})
c.subscribe(["jump"], on_assign=lambda _c, p: events.append(("assigned", [x.partition for x in p])),
            on_revoke=lambda _c, p: events.append(("revoked", [x.partition for x in p])),
            on_lost=lambda _c, p: events.append(("lost", [x.partition for x in p])))
deadline = time.time() + 90
while not events and time.time() < deadline:
    c.poll(0.2)
assert events == [("assigned", [0])], events
c.commit(offsets=[TopicPartition("jump", 0, 0)], asynchronous=False)
def broker_clock():
    text = urllib.request.urlopen("http://" + metrics + "/metrics", timeout=10).read().decode()
    line = next(l for l in text.splitlines() if l.startswith("kraftd_wall_clock_ms"))
    return float(line.split()[-1])
with open(offset_file, "r+b") as f:
    f.write(struct.pack("=q", 3600 * 10**9))
skew = broker_clock() - time.time() * 1000
# Another request to the coordinator before the member's own next one (whose heartbeat or
# commit would re-arm its session on the jumped clock first): the old runtime handled it,
# then fired every timer due by the wall clock, the member's session among them.
described = []
for _ in range(2):
    g = admin.describe_consumer_groups(["jumpers"])["jumpers"].result(30)
    described.append([str(g.state).split(".")[-1], len(g.members)])
commits = []
for i in range(2):
    try:
        c.commit(offsets=[TopicPartition("jump", 0, i + 1)], asynchronous=False)
        commits.append("ok")
    except Exception as e:
        commits.append(str(e))
    c.poll(1.0)
for _ in range(35):
    c.poll(0.2)
print(json.dumps({"events": events, "commits": commits, "skew_ms": skew,
                  "described": described}))
c.close()
"#;

#[test]
fn a_group_member_survives_a_jump_of_its_coordinator_s_clock() {
    python();
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    let library = build_interposer(dir);
    let offset_file = dir.join("clock.offset");
    std::fs::write(&offset_file, 0i64.to_ne_bytes()).unwrap();
    let (port, controller_port, metrics_port) = (free_port(), free_port(), free_port());
    let config = dir.join("server.properties");
    std::fs::write(
        &config,
        format!(
            "process.roles=broker,controller\nnode.id=1\n\
             controller.quorum.voters=1@127.0.0.1:{controller_port}\n\
             listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}\n\
             controller.listener.names=CONTROLLER\nlog.dirs={}\nmetrics.port={metrics_port}\n\
             offsets.topic.replication.factor=1\noffsets.topic.num.partitions=1\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    let cluster_id = String::from_utf8(
        Command::new(BIN)
            .arg("random-uuid")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let formatted = Command::new(BIN)
        .args(["format", "--config"])
        .arg(&config)
        .args(["--cluster-id", cluster_id.trim()])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(formatted.success(), "kraftd format failed");
    let log = dir.join("kraftd.log");
    let mut node = Command::new(BIN)
        .args(["combined", "--config"])
        .arg(&config)
        .env("LD_PRELOAD", &library)
        .env("CHAOS_CLOCK_OFFSET_FILE", &offset_file)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("kraftd starts");
    let out = run_inline(
        MEMBER,
        &[
            &format!("127.0.0.1:{port}"),
            &format!("127.0.0.1:{metrics_port}"),
            &offset_file.display().to_string(),
        ],
    );
    let _ = node.kill();
    let _ = node.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let context = || {
        format!(
            "{stdout}\n{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        )
    };
    assert!(
        out.status.success(),
        "the member script failed:\n{}",
        context()
    );
    let result: serde_json::Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the script's output is not JSON ({e}):\n{}", context()));
    let skew = result["skew_ms"].as_f64().unwrap();
    assert!(
        skew > 3_000_000.0,
        "the broker's clock did not jump (skew {skew} ms): the interposer was not used:\n{}",
        context()
    );
    assert_eq!(
        result["described"],
        serde_json::json!([["STABLE", 1], ["STABLE", 1]]),
        "the group lost its member when the coordinator's clock jumped:\n{}",
        context()
    );
    assert_eq!(
        result["commits"],
        serde_json::json!(["ok", "ok"]),
        "the member's commits after the jump were refused (its session expired):\n{}",
        context()
    );
    assert_eq!(
        result["events"],
        serde_json::json!([["assigned", [0]]]),
        "the member lost or gave up its partition after the jump:\n{}",
        context()
    );
}

/// `cc -shared -fPIC` of the chaos harness's interposer into `dir`.
fn build_interposer(dir: &Path) -> std::path::PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../xtask/src/chaos/clockjump.c");
    let library = dir.join("libclockjump.so");
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&library)
        .arg(&source)
        .arg("-ldl")
        .output()
        .expect("this test needs a C compiler (cc) to build the clock interposer");
    assert!(
        out.status.success(),
        "cc {}: {}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    library
}
