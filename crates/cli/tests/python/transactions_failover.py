"""Consume-transform-produce while brokers die (crates/cli/tests/stock_transactions_failover.rs
kills, with SIGKILL, the leader of the input partition, then of the output partition, then
the transaction coordinator's broker, and restarts each): a read_committed consumer in a
group and a transactional producer move every record of a 3-partition input topic to a
3-partition output topic, sending the consumed offsets in each transaction. A transaction
that fails is aborted and the consumer rewinds to the group's committed offsets (the usual
exactly-once loop); a fenced or fatally failed producer is replaced.

At the end the output, read with read_committed, must hold every input record exactly once,
in order per partition, and the group's committed offsets must be the input's end.

usage: transactions_failover.py <bootstrap> <stop-file>
(RDKAFKA_DEBUG in the environment: librdkafka's debug contexts for the consumer and the
transactional producer, on stderr)
prints "coordinator partition <p>" (of __transaction_state), "started", "moved <n>" now and
then, then the JSON summary and "all ok".
"""

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import SUMMARY, create_topic, fail, say  # noqa: E402

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka import admin as cadmin  # noqa: E402

bootstrap, stop_file = sys.argv[1], sys.argv[2]
SRC, DST, GROUP, TXN_ID = "chaos-in", "chaos-out", "chaos-group", "chaos-txn"
admin = cadmin.AdminClient({"bootstrap.servers": bootstrap})
for t in (SRC, DST):
    create_topic(admin, t, 3, 3, {"min.insync.replicas": "2"}, time.time() + 60)


def java_hash(s):
    """Java's String.hashCode over UTF-16 code units, as 32 unsigned bits."""
    units = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (h * 31 + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return h


say(f"coordinator partition {(java_hash(TXN_ID) & 0x7FFFFFFF) % 10}")
# The input grows until the stop file exists (so the loop is busy through every kill).
produced = {"n": 0, "errors": []}


def feed():
    prod = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                     "acks": "all", "linger.ms": 5, "message.timeout.ms": 120000})
    i = 0
    while not os.path.exists(stop_file):
        prod.produce(SRC, value=f"{i}".encode(), partition=i % 3,
                     on_delivery=lambda err, m: produced["errors"].append(str(err)) if err else None)
        prod.poll(0)
        i += 1
        time.sleep(0.003)
    prod.flush(120)
    produced["n"] = i


feeder = threading.Thread(target=feed, daemon=True)
feeder.start()

DBG = {"debug": os.environ["RDKAFKA_DEBUG"]} if os.environ.get("RDKAFKA_DEBUG") else {}
consumer = Consumer({**DBG, "bootstrap.servers": bootstrap, "group.id": GROUP,
                     "isolation.level": "read_committed", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "session.timeout.ms": 30000})
consumer.subscribe([SRC])


def new_producer():
    # connections.max.idle.ms: librdkafka can stall send_offsets_to_transaction when the
    # group coordinator's broker died: its TxnOffsetCommit waits on the coordinator it
    # cached, which never comes back up (the broker left the metadata), and looks for a new
    # one only when some connection of the producer changes state (rd_kafka_coord_req_fsm
    # has no timer) -- never, while the blocked producer sends nothing. Closing idle
    # connections is that state change.
    p = Producer({**DBG, "bootstrap.servers": bootstrap, "transactional.id": TXN_ID,
                  "transaction.timeout.ms": 60000, "message.timeout.ms": 60000,
                  "connections.max.idle.ms": 10000})
    while True:
        try:
            p.init_transactions(60)
            return p
        except KafkaException as e:
            say(f"init_transactions: {e.args[0]}")
            time.sleep(0.5)


def rewind():
    """Back to the group's committed offsets (what the aborted transaction consumed is
    consumed again)."""
    while True:
        try:
            assignment = consumer.assignment()
            for tp in consumer.committed(assignment, timeout=30):
                consumer.seek(TopicPartition(SRC, tp.partition, tp.offset if tp.offset >= 0 else 0))
            return
        except KafkaException as e:
            say(f"rewind: {e.args[0]}")
            time.sleep(0.5)


p = new_producer()
say("started")
moved, aborted, replaced = 0, 0, 0
deadline = time.time() + 400
last_report = 0


def committed_total():
    c = consumer.committed([TopicPartition(SRC, q) for q in range(3)], timeout=30)
    return sum(max(tp.offset, 0) for tp in c)


while True:
    if time.time() > deadline:
        fail(f"the loop moved {moved} records in time (aborted {aborted})")
    msgs = [m for m in consumer.consume(100, 0.5) if not m.error()]
    if not msgs:
        try:
            if not feeder.is_alive() and committed_total() == produced["n"]:
                break
        except KafkaException:
            pass
        continue
    try:
        p.begin_transaction()
        for m in msgs:
            p.produce(DST, value=b"t-" + m.value(), partition=m.partition())
        p.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                      consumer.consumer_group_metadata(), 60)
        p.commit_transaction(60)
        moved += len(msgs)
    except KafkaException as e:
        err = e.args[0]
        say(f"transaction failed: {err}")
        if err.txn_requires_abort():
            try:
                p.abort_transaction(60)
                aborted += 1
            except KafkaException as e2:
                say(f"abort failed: {e2.args[0]}; replacing the producer")
                p = new_producer()
                replaced += 1
        elif err.retriable():
            try:
                p.abort_transaction(60)
                aborted += 1
            except KafkaException:
                p = new_producer()
                replaced += 1
        else:
            p = new_producer()
            replaced += 1
        rewind()
    if moved - last_report >= 500:
        last_report = moved
        say(f"moved {moved}")
consumer.close()
if produced["errors"]:
    fail(f"input not delivered: {produced['errors'][:3]}")
N = produced["n"]

c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"verify-{time.time()}",
              "isolation.level": "read_committed", "auto.offset.reset": "earliest",
              "enable.partition.eof": True})
c.assign([TopicPartition(DST, q, 0) for q in range(3)])
out = {q: [] for q in range(3)}
eof = set()
end = time.time() + 60
while len(eof) < 3 and time.time() < end:
    m = c.poll(0.5)
    if m is None:
        continue
    if m.error():
        if m.error().code() == -191:
            eof.add(m.partition())
        continue
    eof.discard(m.partition())
    out[m.partition()].append(m.value().decode())
c.close()
for q in range(3):
    want = [f"t-{i}" for i in range(q, N, 3)]
    if out[q] != want:
        dup = len(out[q]) - len(set(out[q]))
        fail(f"output partition {q}: {len(out[q])} records ({dup} duplicates), expected {len(want)} in order")
SUMMARY.update(ok=True, moved=N, aborted=aborted, producers_replaced=replaced)
print(json.dumps(SUMMARY))
print("all ok")
