"""Creates (when asked) a topic of many partitions with RF 2 and produces to it with
confluent-kafka (acks=all: no acknowledged record can be lost to a leader change).

usage: wide_topic_produce.py BOOTSTRAP TOPIC PARTITIONS ROUND [create]
Round r writes one record to every partition, plus 20 more to partitions 0..4, each
value naming (round, partition, i). Prints "all ok" once every record is acknowledged.
"""
import sys
import time

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, topic, partitions, rnd = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if len(sys.argv) > 5 and sys.argv[5] == "create":
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.time() + 60
    while True:
        fs = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=2)],
                                 operation_timeout=120, request_timeout=180)
        try:
            for f in fs.values():
                f.result()
            break
        except KafkaException as e:
            code = e.args[0].code()
            if code == KafkaError.TOPIC_ALREADY_EXISTS:
                break
            if time.time() > deadline or not e.args[0].retriable() and code != KafkaError.NOT_CONTROLLER:
                raise
            time.sleep(0.5)
    # Every partition led somewhere before producing.
    deadline = time.time() + 180
    while True:
        md = admin.list_topics(topic, timeout=30).topics.get(topic)
        if md is not None and md.error is None and len(md.partitions) == partitions and all(
                p.leader >= 0 for p in md.partitions.values()):
            break
        if time.time() > deadline:
            sys.exit("partitions without a leader")
        time.sleep(0.5)

errors = []
acked = [0]


def done(err, msg):
    if err is not None:
        errors.append(str(err))
    else:
        acked[0] += 1


p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
              "enable.idempotence": False, "message.send.max.retries": 10,
              "retry.backoff.ms": 200})
sent = 0
for part in range(partitions):
    extra = 21 if part < 5 else 1
    for i in range(extra):
        while True:
            try:
                p.produce(topic, value=f"r{rnd}-p{part}-{i}".encode(), partition=part,
                          on_delivery=done)
                break
            except BufferError:
                p.poll(0.1)
        sent += 1
    p.poll(0)
p.flush(120)
if errors or acked[0] != sent:
    sys.exit(f"acked {acked[0]} of {sent}: {errors[:5]}")
print("all ok")
