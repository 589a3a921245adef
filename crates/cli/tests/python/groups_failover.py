"""A group committing while its coordinator's broker is killed (crates/cli/tests/
stock_groups_failover.rs kills the broker leading the group's __consumer_offsets partition
with SIGKILL, then restarts it): three member processes (group_member.py, confluent-kafka,
range) process and commit while a producer writes to a 6-partition topic.

Checked: the group's committed offsets, read every 200 ms through the admin client, never
go backwards; once the stop file exists and the producer is done, every record produced is
processed at least once, each new owner of a partition starts at the group's commit, and
the group ends committed at every partition's end.

usage: groups_failover.py <bootstrap> <stop-file>
prints "coordinator <broker id>" once the group is stable, "committed <n>" as the group's
commits pass each 200 records, then the JSON summary and "all ok".
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import SUMMARY, create_topic, fail, say  # noqa: E402

from confluent_kafka import Producer  # noqa: E402
from kafka import KafkaConsumer, TopicPartition  # noqa: E402
from confluent_kafka import admin as cadmin  # noqa: E402

bootstrap, stop_file = sys.argv[1], sys.argv[2]
PARTITIONS = 6
topic, group = "failover-topic", "failover-group"
workdir = tempfile.mkdtemp(prefix="groups-failover-")
member_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "group_member.py")
admin = cadmin.AdminClient({"bootstrap.servers": bootstrap})
create_topic(admin, topic, PARTITIONS, 3, {"min.insync.replicas": "2"}, time.time() + 60)

delivered, errors = {}, []
producing = threading.Event()
producing.set()


def produce():
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5, "message.timeout.ms": 120000})

    def cb(err, msg):
        if err:
            errors.append(str(err))
        else:
            delivered[(msg.partition(), msg.offset())] = int(msg.value())

    seq = 0
    while producing.is_set():
        p.produce(topic, value=str(seq).encode(), partition=seq % PARTITIONS, on_delivery=cb)
        p.poll(0)
        seq += 1
        time.sleep(0.01)
    p.flush(120)


members = {}


def start(name):
    events = os.path.join(workdir, name + ".jsonl")
    members[name] = subprocess.Popen(
        [sys.executable, member_script, bootstrap, topic, group, name, "confluent", "range", events],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(workdir, name + ".err"), "w"))


def events_of(name):
    with open(os.path.join(workdir, name + ".jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


# The group's commits are read with kafka-python (an OffsetFetch from a consumer that never
# joins): librdkafka's admin client can abort the process on a request timed out while
# brokers die (rd_kafka_enq_once_del_source_return assertion, confluent-kafka 2.16.1).
reader = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                       request_timeout_ms=5000)
partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]


def committed():
    out = {}
    for tp in partitions:
        o = reader.committed(tp)
        out[tp.partition] = o if o is not None else -1
    return out


producer = threading.Thread(target=produce, daemon=True)
producer.start()
for name in ("A", "B", "C"):
    start(name)

# Stable: every partition committed at least once.
deadline = time.time() + 90
while True:
    try:
        c = committed()
        if len([o for o in c.values() if o >= 0]) == PARTITIONS:
            break
    except Exception:
        pass
    if time.time() > deadline:
        fail("the group never committed every partition")
    time.sleep(0.5)
d = admin.describe_consumer_groups([group])[group].result(30)
say(f"coordinator {d.coordinator.id}")

# Committed offsets never go backwards, through the kill and the restart.
highest, samples, read_errors = {}, 0, 0
while not os.path.exists(stop_file):
    try:
        c = committed()
        samples += 1
    except Exception:
        read_errors += 1  # the coordinator moving: asked again
        time.sleep(0.2)
        continue
    before = sum(max(o, 0) for o in highest.values())
    for p, o in c.items():
        if o < highest.get(p, -1):
            fail(f"partition {p}: committed offset went back from {highest[p]} to {o}")
        highest[p] = max(highest.get(p, -1), o)
    total = sum(max(o, 0) for o in highest.values())
    if total // 200 > before // 200:
        say(f"committed {total}")
    time.sleep(0.2)
producing.clear()
# Every record sent is acknowledged or failed before the check (flush waits up to 120 s).
producer.join(150)
if producer.is_alive():
    fail("the producer did not finish flushing in 150 s")
if errors:
    fail(f"delivery errors: {errors[:3]}")
ends = {}
for (p, o) in delivered:
    ends[p] = max(ends.get(p, 0), o + 1)
deadline = time.time() + 120
while True:
    try:
        c = committed()
        for p, o in c.items():
            if o < highest.get(p, -1):
                fail(f"partition {p}: committed offset went back from {highest[p]} to {o}")
        if all(c.get(p, -1) == e for p, e in ends.items()):
            break
    except Exception:
        pass
    if time.time() > deadline:
        fail(f"not every partition committed to its end: {ends}")
    time.sleep(0.5)
for proc in members.values():
    proc.send_signal(signal.SIGTERM)
for name, proc in members.items():
    if proc.wait(60) != 0:
        fail(f"member {name} exited {proc.returncode}: " + open(os.path.join(workdir, name + ".err")).read()[-2000:])
consumed = set()
for name in members:
    owned = {}
    for e in events_of(name):
        if e["e"] == "assigned":
            owned.update({int(p): c for p, c in e["p"].items()})
        elif e["e"] == "revoked":
            for p in e["p"]:
                owned.pop(p, None)
        elif e["e"] == "consumed":
            p, o = e["p"], e["o"]
            consumed.add((p, o))
            if p in owned and owned[p] is not None:
                expected = owned[p] if owned[p] >= 0 else 0
                if o != expected:
                    fail(f"{name} started partition {p} at {o}, the group's commit was {owned[p]}")
                owned[p] = None
missing = [k for k in delivered if k not in consumed]
if missing:
    fail(f"{len(missing)} records never processed, e.g. {sorted(missing)[:5]}")
SUMMARY.update(ok=True, records=len(delivered), commit_samples=samples, read_errors=read_errors)
print(json.dumps(SUMMARY))
print("all ok")
