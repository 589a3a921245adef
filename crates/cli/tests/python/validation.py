"""Produce validation as a stock client meets it: confluent-kafka writes uncompressed batches
to a topic with `compression.type=gzip` (the leader re-compresses them) and kafka-python
reads every record back unchanged (key, value, headers, timestamp, offsets); a record
stamped two hours ahead is refused with INVALID_TIMESTAMP (Kafka 4's default
`message.timestamp.after.max.ms` is one hour) and nothing of it is stored.

usage: validation.py <bootstrap> <topic>
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import SUMMARY, create_topic, fail, say  # noqa: E402

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka import admin as cadmin  # noqa: E402
from kafka import KafkaConsumer, TopicPartition  # noqa: E402

RECORDS = 50


def read_all(bootstrap, topic):
    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=3000)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    out = []
    deadline = time.time() + 30
    while consumer.position(tp) < end:
        if time.time() > deadline:
            fail(f"read stuck at {consumer.position(tp)} of {end}")
        for records in consumer.poll(timeout_ms=1000).values():
            for m in records:
                out.append((m.offset, m.timestamp, m.key, m.value,
                            [(k, bytes(v)) for k, v in m.headers]))
    consumer.close()
    return out, end


def main():
    bootstrap, topic = sys.argv[1], sys.argv[2]
    admin = cadmin.AdminClient({"bootstrap.servers": bootstrap})
    create_topic(admin, topic, 1, 1, {"compression.type": "gzip"}, time.time() + 30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                         "compression.type": "none"})
    errors = []
    now = int(time.time() * 1000)
    sent = []
    for i in range(RECORDS):
        key, value = f"k{i}".encode(), f"value-{i}".encode() * 3
        headers = [("n", str(i).encode())]
        ts = now - 1000 + i
        producer.produce(topic, key=key, value=value, headers=headers, timestamp=ts,
                         partition=0, on_delivery=lambda err, _m: err and errors.append(err))
        sent.append((i, ts, key, value, headers))
    if producer.flush(30) != 0 or errors:
        fail(f"produce failed: {errors[:3]}")

    refused = []
    producer.produce(topic, value=b"from the future", timestamp=now + 2 * 3600 * 1000,
                     partition=0, on_delivery=lambda err, _m: refused.append(err))
    producer.flush(30)
    if not refused or refused[0] is None or "INVALID_TIMESTAMP" not in str(refused[0]):
        fail(f"a record two hours ahead was not refused with INVALID_TIMESTAMP: {refused}")

    read, end = read_all(bootstrap, topic)
    if end != RECORDS:
        fail(f"log end {end}, expected {RECORDS} (the refused record must not be stored)")
    if read != sent:
        fail(f"read back differs: first read {read[:2]}, first sent {sent[:2]}")
    SUMMARY.update(records=len(read), refused=str(refused[0]))
    SUMMARY["ok"] = True
    say(str(SUMMARY))
    say("all ok")


main()
