"""Transactions with stock clients (crates/cli/tests/stock_transactions.rs runs it against
real kraftd brokers):

1. confluent-kafka commits and aborts transactions; a read_committed consumer sees every
   committed record once and no aborted one, a read_uncommitted consumer sees both; while a
   transaction is open a read_committed consumer sees none of it (the LSO holds it back)
   and sees it once it commits.
2. kafka-python's transactional producer commits and aborts the same way.
3. Zombie fencing: a second producer with the same transactional id fences the first; the
   first's late writes fail with a fencing error and never become visible.
4. Consume-transform-produce, once per group protocol (`classic` and `consumer`): a
   read_committed consumer in a group and a transactional producer that sends the consumed
   offsets in each transaction (send_offsets_to_transaction, TxnOffsetCommit naming the
   member and its generation or member epoch); the output holds every input record exactly
   once, in order per partition, and the group's committed offsets end at the input's end.
   While the consumer is still in the group, kafka-python's transactional producer commits
   offsets naming no member (send_offsets_to_transaction with the group id only), which a
   group with members accepts too (Kafka's validateOffsetCommit for transactional commits).

usage: transactions.py <bootstrap> <replication-factor>
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import SUMMARY, create_topic, fail, say  # noqa: E402

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka import admin as cadmin  # noqa: E402

bootstrap, rf = sys.argv[1], int(sys.argv[2])
admin = cadmin.AdminClient({"bootstrap.servers": bootstrap})


def read_all(topic, partitions, isolation, secs=30):
    """Every value in `topic` up to its end as `isolation` sees it, per partition."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.time()}",
                  "isolation.level": isolation, "auto.offset.reset": "earliest",
                  "enable.partition.eof": True, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out = {p: [] for p in range(partitions)}
    eof = set()
    deadline = time.time() + secs
    while len(eof) < partitions:
        if time.time() > deadline:
            fail(f"{isolation} read of {topic} did not reach the end: {eof}")
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                eof.add(m.partition())
                continue
            fail(f"{isolation} read of {topic}: {m.error()}")
        eof.discard(m.partition())
        out[m.partition()].append(m.value().decode())
    c.close()
    return out


def flat(d):
    return sorted(v for vs in d.values() for v in vs)


def confluent_commits_and_aborts():
    topic = "txn-basic"
    create_topic(admin, topic, 2, rf, {}, time.time() + 60)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "basic"})
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, value=f"c{i}".encode(), partition=i % 2)
    p.commit_transaction(60)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, value=f"a{i}".encode(), partition=i % 2)
    p.flush(60)  # in the log, then aborted
    p.abort_transaction(60)
    # An open transaction: the LSO holds read_committed readers back.
    p.begin_transaction()
    for i in range(4):
        p.produce(topic, value=f"o{i}".encode(), partition=i % 2)
    p.flush(60)
    committed = read_all(topic, 2, "read_committed")
    if flat(committed) != sorted(f"c{i}" for i in range(10)):
        fail(f"read_committed during an open transaction: {flat(committed)}")
    uncommitted = read_all(topic, 2, "read_uncommitted")
    expect = sorted([f"c{i}" for i in range(10)] + [f"a{i}" for i in range(10)] + [f"o{i}" for i in range(4)])
    if flat(uncommitted) != expect:
        fail(f"read_uncommitted: {flat(uncommitted)}")
    p.commit_transaction(60)
    committed = read_all(topic, 2, "read_committed")
    if flat(committed) != sorted([f"c{i}" for i in range(10)] + [f"o{i}" for i in range(4)]):
        fail(f"read_committed after the commit: {flat(committed)}")
    say("confluent commits and aborts: ok")


def kafka_python_commits_and_aborts():
    from kafka import KafkaProducer
    topic = "txn-kafka-python"
    create_topic(admin, topic, 2, rf, {}, time.time() + 60)
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp")
    p.init_transactions()
    p.begin_transaction()
    for i in range(6):
        p.send(topic, value=f"k{i}".encode(), partition=i % 2)
    p.commit_transaction()
    p.begin_transaction()
    for i in range(6):
        p.send(topic, value=f"x{i}".encode(), partition=i % 2)
    p.flush()
    p.abort_transaction()
    p.close()
    committed = read_all(topic, 2, "read_committed")
    if flat(committed) != sorted(f"k{i}" for i in range(6)):
        fail(f"kafka-python read_committed: {flat(committed)}")
    if len(flat(read_all(topic, 2, "read_uncommitted"))) != 12:
        fail("kafka-python: the aborted records are not in the log")
    say("kafka-python commits and aborts: ok")


def zombie_fencing():
    topic = "txn-zombie"
    create_topic(admin, topic, 1, rf, {}, time.time() + 60)
    old = Producer({"bootstrap.servers": bootstrap, "transactional.id": "zombie"})
    old.init_transactions(60)
    old.begin_transaction()
    old.produce(topic, value=b"zombie-1", partition=0)
    old.flush(60)
    new = Producer({"bootstrap.servers": bootstrap, "transactional.id": "zombie"})
    new.init_transactions(60)  # fences `old` (its open transaction is aborted)
    new.begin_transaction()
    new.produce(topic, value=b"new-1", partition=0)
    new.commit_transaction(60)
    fenced = False
    try:
        old.produce(topic, value=b"zombie-2", partition=0)
        old.commit_transaction(30)
    except KafkaException as e:
        fenced = True
        say(f"the zombie's commit failed: {e.args[0]}")
    if not fenced:
        fail("the fenced producer committed")
    values = flat(read_all(topic, 1, "read_committed"))
    if values != ["new-1"]:
        fail(f"read_committed after fencing: {values}")
    say("zombie fencing: ok")


def consume_transform_produce(protocol):
    src, dst, group = f"ctp-in-{protocol}", f"ctp-out-{protocol}", f"ctp-group-{protocol}"
    create_topic(admin, src, 3, rf, {}, time.time() + 60)
    create_topic(admin, dst, 3, rf, {}, time.time() + 60)
    prod = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    n = 300
    for i in range(n):
        prod.produce(src, value=f"{i}".encode(), partition=i % 3)
    prod.flush(60)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "group.protocol": protocol,
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([src])
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"ctp-{protocol}"})
    p.init_transactions(60)
    done = 0
    deadline = time.time() + 90
    while done < n:
        if time.time() > deadline:
            fail(f"consume-transform-produce ({protocol}) moved {done} of {n}")
        msgs = consumer.consume(50, 1.0)
        msgs = [m for m in msgs if not m.error()]
        if not msgs:
            continue
        p.begin_transaction()
        for m in msgs:
            p.produce(dst, value=b"t-" + m.value(), partition=m.partition())
        try:
            p.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                          consumer.consumer_group_metadata(), 60)
        except KafkaException as e:
            fail(f"send_offsets_to_transaction ({protocol}): {e.args[0]}")
        p.commit_transaction(60)
        done += len(msgs)
    ends = {q: len(range(q, n, 3)) for q in range(3)}
    member_less_commit(group, src, ends, protocol)
    consumer.close()
    out = read_all(dst, 3, "read_committed")
    for part in range(3):
        want = [f"t-{i}" for i in range(part, n, 3)]
        if out[part] != want:
            fail(f"output partition {part} ({protocol}): {out[part][:10]}... expected {want[:10]}...")
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    committed = c.committed([TopicPartition(src, q) for q in range(3)], timeout=30)
    c.close()
    got = {tp.partition: tp.offset for tp in committed}
    if got != ends:
        fail(f"the group's committed offsets ({protocol}) {got}, expected {ends}")
    say(f"consume-transform-produce with group.protocol={protocol}: ok")


def member_less_commit(group, topic, offsets, protocol):
    """kafka-python's transactional producer commits `offsets` for `group`, which has a
    member, naming no member and no generation (TxnOffsetCommit without group metadata)."""
    from kafka import KafkaProducer
    from kafka.structs import OffsetAndMetadata
    from kafka.structs import TopicPartition as KTopicPartition
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"ctp-kp-{protocol}")
    p.init_transactions()
    p.begin_transaction()
    try:
        p.send_offsets_to_transaction(
            {KTopicPartition(topic, q): OffsetAndMetadata(o, "", -1) for q, o in offsets.items()},
            group)
        p.commit_transaction()
    except Exception as e:  # kafka-python raises its own error types
        fail(f"a TxnOffsetCommit naming no member ({protocol}): {e!r}")
    finally:
        p.close()


confluent_commits_and_aborts()
kafka_python_commits_and_aborts()
zombie_fencing()
for group_protocol in ("classic", "consumer"):
    consume_transform_produce(group_protocol)
SUMMARY.update(ok=True)
print(json.dumps(SUMMARY))
print("all ok")
