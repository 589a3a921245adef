"""Many partitions on one broker, for partitions_restart.rs.

usage: many_partitions.py BOOTSTRAP create TOPICS PARTITIONS
         creates TOPICS topics of PARTITIONS partitions (20 per CreateTopics request) and
         produces one record to each partition, its value naming the partition
       many_partitions.py BOOTSTRAP check TOPICS PARTITIONS
         waits (bounded) until every partition answers ListOffsets, then checks each holds
         exactly its one record, read back by a consumer assigned to all of them
Prints 'all ok' on success.
"""
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

bootstrap, command, topics, partitions = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
names = [f"many-{t}" for t in range(topics)]
every = [TopicPartition(n, p) for n in names for p in range(partitions)]
admin = AdminClient({"bootstrap.servers": bootstrap})


def value(tp):
    return f"{tp.topic}/{tp.partition}".encode()


def serving(deadline):
    """Every partition's latest offset once all answer, or fail at the deadline."""
    missing = {tp: None for tp in every}
    latest = {}
    while missing:
        if time.time() > deadline:
            sys.exit(f"{len(missing)} partitions never answered ListOffsets, e.g. {list(missing)[:3]}")
        chunk = dict(list(missing.items())[:1000])
        futures = admin.list_offsets({tp: OffsetSpec.latest() for tp in chunk}, request_timeout=30)
        for tp, f in futures.items():
            try:
                latest[(tp.topic, tp.partition)] = f.result().offset
                missing.pop(TopicPartition(tp.topic, tp.partition), None)
            except Exception:
                pass
        if missing:
            time.sleep(0.2)
    return latest


if command == "create":
    for start in range(0, topics, 20):
        batch = [NewTopic(n, partitions, 1) for n in names[start:start + 20]]
        for name, f in admin.create_topics(batch, request_timeout=60, operation_timeout=60).items():
            f.result()
    serving(time.time() + 60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    failures = []
    for tp in every:
        producer.produce(tp.topic, value(tp), partition=tp.partition,
                         on_delivery=lambda err, msg: err and failures.append(err))
        producer.poll(0)
    left = producer.flush(60)
    assert left == 0 and not failures, (left, failures[:3])
    print("all ok")
elif command == "check":
    latest = serving(time.time() + 60)
    wrong = {k: v for k, v in latest.items() if v != 1}
    assert not wrong, f"{len(wrong)} partitions not at offset 1, e.g. {list(wrong.items())[:3]}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "many-check",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 50})
    consumer.assign([TopicPartition(tp.topic, tp.partition, 0) for tp in every])
    seen = {}
    deadline = time.time() + 60
    while len(seen) < len(every) and time.time() < deadline:
        for msg in consumer.consume(1000, timeout=1):
            assert msg.error() is None, msg.error()
            seen[(msg.topic(), msg.partition())] = (msg.offset(), msg.value())
    consumer.close()
    assert len(seen) == len(every), f"read {len(seen)} of {len(every)} partitions"
    for tp in every:
        assert seen[(tp.topic, tp.partition)] == (0, value(tp)), (tp, seen[(tp.topic, tp.partition)])
    print("all ok")
else:
    sys.exit(f"unknown command {command}")
