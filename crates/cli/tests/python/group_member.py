"""One consumer-group member, run as its own process by groups.py (which may kill it with
SIGKILL): subscribes to a topic with a stock client, processes each record (writes it to
its event file) and commits after processing.

usage: group_member.py <bootstrap> <topic> <group> <name> <client> <strategy> <events-file>
  client: confluent | kafka-python
  strategy: range | cooperative-sticky | consumer (KIP-848, confluent only)
  env GROUP_INSTANCE_ID: static membership (group.instance.id)
  env SESSION_TIMEOUT_MS: session.timeout.ms of a classic member (default 6000)
  env KRAFTD_TEST_CLIENT_CONFIG: settings a confluent member adds (a secured cluster's login,
    see clients_common.py); kafka-python members refuse it

Each line of the events file is JSON, flushed at once:
  {"e": "started", "t": <time>}  (SIGTERM is handled from then on)
  {"e": "assigned", "t": <time>, "p": {partition: committed offset or -1}}
  {"e": "revoked", "t": <time>, "p": [partitions]}
  {"e": "consumed", "t": <time>, "p": partition, "o": offset, "v": value}
  {"e": "committed", "t": <time>, "p": {partition: offset}}
SIGTERM closes the consumer cleanly (a graceful leave).
"""

import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import CLIENT_CONFIG  # noqa: E402

bootstrap, topic, group, name, client, strategy, events_path = sys.argv[1:8]
if CLIENT_CONFIG and client != "confluent":
    sys.exit(f"KRAFTD_TEST_CLIENT_CONFIG is for confluent members, not {client}")
instance_id = os.environ.get("GROUP_INSTANCE_ID")
events = open(events_path, "a", buffering=1)
stopping = False


def emit(kind, t=None, **fields):
    fields.update(e=kind, t=t if t is not None else time.time(), name=name)
    events.write(json.dumps(fields) + "\n")
    events.flush()
    os.fsync(events.fileno())


def on_term(*_):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, on_term)
# From here a SIGTERM is a graceful leave: groups.py waits for this before going on (sent
# earlier, under load, while the interpreter still started, it killed the process).
emit("started")


def run_confluent():
    from confluent_kafka import Consumer, TopicPartition

    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "client.id": name,
        **CLIENT_CONFIG,
    }
    if strategy == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf["partition.assignment.strategy"] = strategy
        conf["session.timeout.ms"] = int(os.environ.get("SESSION_TIMEOUT_MS", "6000"))
        conf["heartbeat.interval.ms"] = 500
    if instance_id:
        conf["group.instance.id"] = instance_id
    c = Consumer(conf)

    def on_assign(consumer, partitions):
        committed = consumer.committed(partitions, timeout=30)
        emit("assigned", p={str(tp.partition): tp.offset if tp.offset >= 0 else -1 for tp in committed})
        if strategy in ("cooperative-sticky", "consumer"):
            consumer.incremental_assign(partitions)
        else:
            consumer.assign(partitions)

    def on_revoke(consumer, partitions):
        emit("revoked", p=[tp.partition for tp in partitions])
        if strategy in ("cooperative-sticky", "consumer"):
            consumer.incremental_unassign(partitions)
        else:
            consumer.unassign()

    def on_lost(consumer, partitions):
        emit("revoked", p=[tp.partition for tp in partitions], lost=True)
        if strategy in ("cooperative-sticky", "consumer"):
            consumer.incremental_unassign(partitions)
        else:
            consumer.unassign()

    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    while not stopping:
        msgs = c.consume(100, 0.5)
        done = {}
        for m in msgs:
            if m.error():
                emit("error", err=str(m.error()))
                continue
            emit("consumed", p=m.partition(), o=m.offset(), v=m.value().decode())
            done[m.partition()] = m.offset() + 1
        if done:
            offsets = [TopicPartition(topic, p, o) for p, o in done.items()]
            try:
                c.commit(offsets=offsets, asynchronous=False)
                emit("committed", p={str(p): o for p, o in done.items()})
            except Exception as e:  # a rebalance took the partitions: they are re-read
                emit("commit_failed", err=str(e))
    c.close()
    emit("closed")


def run_kafka_python():
    from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.structs import OffsetAndMetadata

    c = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=name,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        partition_assignment_strategy=[RangePartitionAssignor],
        group_instance_id=instance_id,
    )

    # kafka-python runs listeners on its IO thread, where blocking calls (committed()) are
    # refused: the assignment is noted there (with its time) and reported, with the
    # group's commits, from the main loop before any record of it is processed.
    pending = []

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            emit("revoked", p=[tp.partition for tp in revoked])

        def on_partitions_assigned(self, assigned):
            pending.append((time.time(), list(assigned)))

    c.subscribe([topic], listener=Listener())
    while not stopping:
        batch = c.poll(timeout_ms=500)
        while pending:
            at, assigned = pending.pop(0)
            committed = {}
            for tp in assigned:
                o = c.committed(tp)
                committed[str(tp.partition)] = o if o is not None else -1
            emit("assigned", t=at, p=committed)
        done = {}
        for tp, msgs in batch.items():
            for m in msgs:
                emit("consumed", p=tp.partition, o=m.offset, v=m.value.decode())
                done[tp.partition] = m.offset + 1
        if done:
            try:
                c.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in done.items()})
                emit("committed", p={str(p): o for p, o in done.items()})
            except Exception as e:
                emit("commit_failed", err=str(e))
    c.close()
    emit("closed")


emit("started")
if client == "confluent":
    run_confluent()
else:
    run_kafka_python()
