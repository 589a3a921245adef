"""Asynchronous offset commits of stock consumers land in the order they were sent (issue 35,
part 1; crates/cli/tests/stock_request_order.rs runs it against real kraftd brokers).

Per run, several groups read one 6-partition topic at once, each with three confluent-kafka
members (threads of this process): the classic protocol (range) and KIP-848
(group.protocol=consumer) alternate. Every member commits every record it reads
asynchronously (`commit(message=m, asynchronous=True)`: librdkafka pipelines the
OffsetCommits on one connection), and once its group has read every record, commits
synchronously and closes. Afterwards each partition's committed offset must equal its end
offset: the last offset any member committed for it. A commit landing after a later one
leaves it behind (what issue 35 saw on kraftd, never on Kafka).

usage: commit_order.py <bootstrap> <runs> <groups per run>
prints progress, the JSON summary, and "all ok".
"""

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import SUMMARY, create_topic, fail, say  # noqa: E402

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka import admin as cadmin  # noqa: E402

bootstrap, runs, groups_per_run = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
PARTITIONS = 6
RECORDS = 3000
MEMBERS = 3
topic = "commit-order"
SUMMARY.update(topic=topic, runs=runs, groups=groups_per_run)

admin = cadmin.AdminClient({"bootstrap.servers": bootstrap})
create_topic(admin, topic, PARTITIONS, 3, {}, time.time() + 60)

producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
errors = []
for seq in range(RECORDS):
    producer.produce(topic, value=str(seq).encode(), partition=seq % PARTITIONS,
                     on_delivery=lambda err, msg: err and errors.append(str(err)))
    producer.poll(0)
if producer.flush(60) != 0 or errors:
    fail(f"producing: {producer.flush(0)} undelivered, errors {errors[:3]}")
ends = {p: RECORDS // PARTITIONS for p in range(PARTITIONS)}
say(f"produced {RECORDS} records to {topic}")


def run_group(group, protocol, problems):
    """Three members read the topic to its end, committing each record; then each commits
    synchronously and closes. Appends what went wrong to `problems`."""
    seen = set()
    lock = threading.Lock()
    all_read = threading.Event()
    committed = threading.Barrier(MEMBERS, timeout=120)

    def member(index):
        config = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "client.id": f"{group}-{index}",
        }
        if protocol == "consumer":
            config["group.protocol"] = "consumer"
        else:
            config.update({"partition.assignment.strategy": "range", "session.timeout.ms": 6000,
                           "heartbeat.interval.ms": 500})
        c = Consumer(config)
        try:
            c.subscribe([topic])
            deadline = time.time() + 120
            while not all_read.is_set():
                if time.time() > deadline:
                    problems.append(f"{group}: member {index} timed out, {len(seen)} read")
                    return
                msg = c.poll(0.2)
                if msg is None:
                    continue
                if msg.error():
                    problems.append(f"{group}: member {index}: {msg.error()}")
                    continue
                c.commit(message=msg, asynchronous=True)
                with lock:
                    seen.add((msg.partition(), msg.offset()))
                    if len(seen) == RECORDS:
                        all_read.set()
            # Every member stops reading before any commits synchronously and closes, so the
            # group is stable (nobody leaving) while the last commits are made.
            committed.wait()
            try:
                c.commit(asynchronous=False)
            except KafkaException as e:
                # A member that owns nothing has nothing to commit.
                if e.args[0].code() != -168:  # _NO_OFFSET
                    problems.append(f"{group}: member {index}'s final commit: {e}")
            committed.wait()
        finally:
            c.close()

    threads = [threading.Thread(target=member, args=(i,)) for i in range(MEMBERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if problems:
        return
    result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    offsets = result[group].result().topic_partitions
    got = {tp.partition: tp.offset for tp in offsets if tp.topic == topic}
    for p, end in ends.items():
        if got.get(p) != end:
            problems.append(f"{group} ({protocol}): partition {p} committed at {got.get(p)}, "
                            f"the last commit was {end}")


for run in range(runs):
    problems = []
    groups = [(f"commit-order-{run}-{g}", "consumer" if g % 2 else "classic")
              for g in range(groups_per_run)]
    threads = [threading.Thread(target=run_group, args=(g, proto, problems)) for g, proto in groups]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if problems:
        SUMMARY["problems"] = problems
        fail(f"run {run}: {problems[0]}")
    say(f"run {run}: {groups_per_run} groups, every partition committed at its end")

SUMMARY["ok"] = True
print(json.dumps(SUMMARY), flush=True)
print("all ok", flush=True)
