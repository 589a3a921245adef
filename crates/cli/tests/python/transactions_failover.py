"""Consume-transform-produce while brokers die (crates/cli/tests/stock_transactions_failover.rs
kills, with SIGKILL, the leader of the input partition, then of the output partition, then
the transaction coordinator's broker, and restarts each): two loops run at once, one whose
consumer uses `group.protocol=classic` and one `group.protocol=consumer` (their
transactional ids share a coordinator, so the coordinator's death hits both). Each is a
read_committed consumer in its own group and a transactional producer moving every record
of a 3-partition input topic to a 3-partition output topic (values prefixed with the
protocol), sending the consumed offsets in each transaction (TxnOffsetCommit with the
member's group metadata). A transaction that fails is aborted and the consumer rewinds to
the group's committed offsets (the usual exactly-once loop); a fenced or fatally failed
producer is replaced.

At the end the output, read with read_committed, must hold every input record exactly once
per loop, in order per partition, and each group's committed offsets must be the input's
end.

usage: transactions_failover.py <bootstrap> <stop-file> [<seconds>]
(<seconds>: how long each loop may take to move everything, 400 unless given; a rolling
migration runs for longer)
(KRAFTD_TEST_CLIENT_CONFIG in the environment: settings every client adds, see clients_common.py)
(RDKAFKA_DEBUG in the environment: librdkafka's debug contexts for the consumers and the
transactional producers, on stderr)
prints "coordinator partition <p>" (of __transaction_state), "started", "moved <n>" (the
fewest either loop moved) now and then, then the JSON summary and "all ok".
"""

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import CLIENT_CONFIG, SUMMARY, create_topic, fail, say  # noqa: E402

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka import admin as cadmin  # noqa: E402

bootstrap, stop_file = sys.argv[1], sys.argv[2]
LOOP_SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 400
# Every client's settings: the cluster, and how to log in to it (CLIENT_CONFIG).
BASE = {"bootstrap.servers": bootstrap, **CLIENT_CONFIG}
SRC, DST = "chaos-in", "chaos-out"
PROTOCOLS = ("classic", "consumer")
admin = cadmin.AdminClient(dict(BASE))
for t in (SRC, DST):
    create_topic(admin, t, 3, 3, {"min.insync.replicas": "2"}, time.time() + 60)


def java_hash(s):
    """Java's String.hashCode over UTF-16 code units, as 32 unsigned bits."""
    units = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (h * 31 + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return h


def txn_partition(txn_id):
    # Kafka's Utils.abs(hashCode) % 10: Math.abs of the signed hash, 0 for Integer.MIN_VALUE.
    h = java_hash(txn_id)
    h = h - (1 << 32) if h >= (1 << 31) else h
    return 0 if h == -(1 << 31) else abs(h) % 10


# One transactional id per loop, both on the same __transaction_state partition.
TXN_IDS = {"classic": "chaos-txn"}
TXN_IDS["consumer"] = next(
    t for t in (f"chaos-txn-{k}" for k in range(1000))
    if txn_partition(t) == txn_partition(TXN_IDS["classic"]))
say(f"coordinator partition {txn_partition(TXN_IDS['classic'])}")
# The input grows until the stop file exists (so the loop is busy through every kill).
produced = {"n": 0, "errors": []}


def feed():
    prod = Producer({**BASE, "enable.idempotence": True,
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


class Loop:
    """One consume-transform-produce loop whose consumer uses `protocol`."""

    def __init__(self, protocol):
        self.protocol = protocol
        self.group = f"chaos-group-{protocol}"
        self.txn_id = TXN_IDS[protocol]
        # session.timeout.ms is the classic protocol's; the consumer protocol's is the
        # broker's group.consumer.session.timeout.ms.
        timeout = {"session.timeout.ms": 30000} if protocol == "classic" else {}
        self.consumer = Consumer({**DBG, **timeout, **BASE,
                                  "group.id": self.group, "group.protocol": protocol,
                                  "isolation.level": "read_committed",
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        self.consumer.subscribe([SRC])
        self.moved, self.aborted, self.replaced = 0, 0, 0
        self.error = None
        self.p = self.new_producer()

    def say(self, msg):
        say(f"[{self.protocol}] {msg}")

    def new_producer(self):
        # connections.max.idle.ms: librdkafka can stall send_offsets_to_transaction when the
        # group coordinator's broker died: its TxnOffsetCommit waits on the coordinator it
        # cached, which never comes back up (the broker left the metadata), and looks for a
        # new one only when some connection of the producer changes state
        # (rd_kafka_coord_req_fsm has no timer) -- never, while the blocked producer sends
        # nothing. Closing idle connections is that state change.
        p = Producer({**DBG, **BASE, "transactional.id": self.txn_id,
                      "transaction.timeout.ms": 60000, "message.timeout.ms": 60000,
                      "connections.max.idle.ms": 10000})
        deadline = time.time() + 180
        while True:
            try:
                p.init_transactions(60)
                return p
            except KafkaException as e:
                self.say(f"init_transactions: {e.args[0]}")
                if time.time() > deadline:
                    fail(f"init_transactions kept failing for 180 s: {e.args[0]}")
                time.sleep(0.5)

    def rewind(self):
        """Back to the group's committed offsets (what the aborted transaction consumed is
        consumed again)."""
        deadline = time.time() + 180
        while True:
            try:
                assignment = self.consumer.assignment()
                for tp in self.consumer.committed(assignment, timeout=30):
                    self.consumer.seek(TopicPartition(SRC, tp.partition,
                                                      tp.offset if tp.offset >= 0 else 0))
                return
            except KafkaException as e:
                self.say(f"rewind: {e.args[0]}")
                if time.time() > deadline:
                    fail(f"reading the group's committed offsets kept failing for 180 s: {e.args[0]}")
                time.sleep(0.5)

    def committed_total(self):
        c = self.consumer.committed([TopicPartition(SRC, q) for q in range(3)], timeout=30)
        return sum(max(tp.offset, 0) for tp in c)

    def run(self):
        try:
            self.loop()
        except BaseException as e:  # reported by the main thread
            self.error = repr(e)

    def loop(self):
        p = self.p
        deadline = time.time() + LOOP_SECONDS
        prefix = f"{self.protocol}-t-".encode()
        while True:
            if time.time() > deadline:
                self.error = f"moved {self.moved} records in time (aborted {self.aborted})"
                return
            msgs = [m for m in self.consumer.consume(100, 0.5) if not m.error()]
            if not msgs:
                try:
                    if not feeder.is_alive() and self.committed_total() == produced["n"]:
                        break
                except KafkaException:
                    pass
                continue
            try:
                p.begin_transaction()
                for m in msgs:
                    p.produce(DST, value=prefix + m.value(), partition=m.partition())
                p.send_offsets_to_transaction(self.consumer.position(self.consumer.assignment()),
                                              self.consumer.consumer_group_metadata(), 60)
                p.commit_transaction(60)
                self.moved += len(msgs)
            except KafkaException as e:
                err = e.args[0]
                self.say(f"transaction failed: {err}")
                if err.txn_requires_abort() or err.retriable():
                    try:
                        p.abort_transaction(60)
                        self.aborted += 1
                    except KafkaException as e2:
                        self.say(f"abort failed: {e2.args[0]}; replacing the producer")
                        p = self.new_producer()
                        self.replaced += 1
                else:
                    p = self.new_producer()
                    self.replaced += 1
                self.rewind()
        self.consumer.close()


loops = [Loop(protocol) for protocol in PROTOCOLS]
threads = [threading.Thread(target=loop.run, daemon=True) for loop in loops]
for t in threads:
    t.start()
say("started")
last_report = 0
while any(t.is_alive() for t in threads):
    time.sleep(0.2)
    for loop in loops:
        if loop.error:
            fail(f"the {loop.protocol} loop: {loop.error}")
    least = min(loop.moved for loop in loops)
    if least - last_report >= 500:
        last_report = least
        say(f"moved {least}")
for loop in loops:
    if loop.error:
        fail(f"the {loop.protocol} loop: {loop.error}")
if produced["errors"]:
    fail(f"input not delivered: {produced['errors'][:3]}")
N = produced["n"]

c = Consumer({**BASE, "group.id": f"verify-{time.time()}",
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
for protocol in PROTOCOLS:
    prefix = f"{protocol}-t-"
    for q in range(3):
        got = [v for v in out[q] if v.startswith(prefix)]
        want = [f"{prefix}{i}" for i in range(q, N, 3)]
        if got != want:
            dup = len(got) - len(set(got))
            fail(f"output partition {q} of the {protocol} loop: {len(got)} records ({dup} duplicates), "
                 f"expected {len(want)} in order")
SUMMARY.update(ok=True, moved=N, **{
    f"{loop.protocol}_{k}": v for loop in loops
    for k, v in (("aborted", loop.aborted), ("producers_replaced", loop.replaced))})
print(json.dumps(SUMMARY))
print("all ok")
