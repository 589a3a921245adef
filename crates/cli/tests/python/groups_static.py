"""Static membership (KIP-345) with a stock client: two confluent-kafka members with
`group.instance.id` consume a 4-partition topic; one is killed with SIGKILL and started
again (same instance id) within its session timeout. Its new incarnation must get the
partitions it had, and the other member must see no rebalance at all (no revocation, no
new assignment) — the restart costs the group nothing.

usage: groups_static.py <bootstrap>
prints the JSON summary and "all ok".
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import SUMMARY, create_topic, fail, say  # noqa: E402

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka import admin as cadmin  # noqa: E402

bootstrap = sys.argv[1]
topic, group = "static-topic", "static-group"
workdir = tempfile.mkdtemp(prefix="groups-static-")
member_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "group_member.py")
admin = cadmin.AdminClient({"bootstrap.servers": bootstrap})
create_topic(admin, topic, 4, 3, {}, time.time() + 60)
producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})


def produce(n):
    for i in range(n):
        producer.produce(topic, value=str(i).encode(), partition=i % 4)
    producer.flush(30)


members = {}


def start(name, instance):
    env = dict(os.environ, GROUP_INSTANCE_ID=instance, SESSION_TIMEOUT_MS="20000")
    members[name] = subprocess.Popen(
        [sys.executable, member_script, bootstrap, topic, group, name, "confluent", "range",
         os.path.join(workdir, name + ".jsonl")],
        env=env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(workdir, name + ".err"), "w"))


def events_of(name):
    path = os.path.join(workdir, name + ".jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def owned(name):
    parts = set()
    for e in events_of(name):
        if e["e"] == "assigned":
            parts |= {int(p) for p in e["p"]}
        elif e["e"] == "revoked":
            parts -= set(e["p"])
    return parts


def read_through(name, offset):
    """Whether `name` has read every partition it owns up to `offset` (included)."""
    parts = owned(name)
    last = {}
    for e in events_of(name):
        if e["e"] == "consumed":
            last[e["p"]] = max(last.get(e["p"], -1), e["o"])
    return bool(parts) and all(last.get(p, -1) >= offset for p in parts)


def consumed_through(names, offset):
    """Whether every partition's records up to `offset` were read by one of `names`: a
    member that joined late starts its partitions where the other one's commits left them,
    so it may own partitions whose first batch it never read itself."""
    last = {}
    for name in names:
        for e in events_of(name):
            if e["e"] == "consumed":
                last[e["p"]] = max(last.get(e["p"], -1), e["o"])
    return all(last.get(p, -1) >= offset for p in range(4))


def wait_for(what, pred, secs):
    deadline = time.time() + secs
    while not pred():
        if time.time() > deadline:
            fail(f"timed out waiting for {what}")
        time.sleep(0.2)


start("S1", "instance-1")
start("S2", "instance-2")
produce(400)
wait_for("both members sharing all partitions",
         lambda: owned("S1") and owned("S2") and owned("S1") | owned("S2") == {0, 1, 2, 3}, 90)
# Stable: both members own partitions, and the first batch (100 records a partition) has
# been read, whoever read it.
wait_for("both members through the first batch",
         lambda: owned("S1") and owned("S2") and consumed_through(("S1", "S2"), 99), 60)
before = owned("S1")
s2_events = len([e for e in events_of("S2") if e["e"] in ("assigned", "revoked")])
members["S1"].kill()
members["S1"].wait()
say("S1 killed")
start("S1b", "instance-1")
produce(400)
wait_for("the restarted member owning its partitions", lambda: owned("S1b") == before, 60)
# Both read the second batch: a rebalance the restart caused would have come before.
wait_for("both members through the second batch",
         lambda: read_through("S1b", 199) and read_through("S2", 199), 60)
after = [e for e in events_of("S2") if e["e"] in ("assigned", "revoked")]
if len(after) != s2_events:
    fail(f"the other member rebalanced during the restart: {after[s2_events:]}")
for name in ("S2", "S1b"):
    members[name].send_signal(signal.SIGTERM)
    if members[name].wait(60) != 0:
        fail(f"{name} exited {members[name].returncode}")
SUMMARY.update(ok=True, kept=sorted(before))
print(json.dumps(SUMMARY))
print("all ok")
