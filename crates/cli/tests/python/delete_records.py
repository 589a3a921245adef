"""DeleteRecords with stock clients, as crates/cli/tests/stock_delete_records.rs runs it:
produce N records to each of two partitions, delete records before offset D with
confluent-kafka's AdminClient.delete_records (partition 0) and kafka-python's
KafkaAdminClient.delete_records (partition 1), then check that the low watermark answered
is D, that ListOffsets earliest (-2) is D on the partition's leader, and that a consumer
assigned at offset 0 is reset (auto.offset.reset=earliest) to D, as Kafka does.

usage: delete_records.py BOOTSTRAP TOPIC
Prints "all ok" on success; exits 1 with "FAILED: <reason>" otherwise.
"""

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka.structs import TopicPartition as KTopicPartition

bootstrap, topic = sys.argv[1], sys.argv[2]
N, D = 100, 40


def fail(reason):
    print(f"FAILED: {reason}", flush=True)
    sys.exit(1)


admin = AdminClient({"bootstrap.servers": bootstrap})
admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)

producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
deadline = time.time() + 30
while True:
    try:
        for p in (0, 1):
            for i in range(N):
                producer.produce(topic, value=f"v-{i}".encode(), partition=p)
        if producer.flush(30) == 0:
            break
    except Exception as e:  # the topic may not be known to the producer yet
        if time.time() > deadline:
            fail(f"produce: {e}")
        time.sleep(0.5)

# confluent-kafka (librdkafka) on partition 0.
futures = admin.delete_records([TopicPartition(topic, 0, D)], request_timeout=30)
for tp, f in futures.items():
    deleted = f.result(30)
    if deleted.low_watermark != D:
        fail(f"confluent low watermark {deleted.low_watermark}, expected {D}")

# kafka-python on partition 1.
kadmin = KafkaAdminClient(bootstrap_servers=bootstrap)
result = kadmin.delete_records({KTopicPartition(topic, 1): D}, timeout_ms=30000)
for tp, info in result.items():
    low = info["low_watermark"] if isinstance(info, dict) else getattr(info, "low_watermark", info)
    if low != D:
        fail(f"kafka-python low watermark {info}, expected {D}")
kadmin.close()

# Deleting past the high watermark is OFFSET_OUT_OF_RANGE.
try:
    admin.delete_records([TopicPartition(topic, 0, N + 5)], request_timeout=30)[
        TopicPartition(topic, 0, N + 5)
    ].result(30)
    fail("delete past the high watermark succeeded")
except Exception as e:
    if "OFFSET_OUT_OF_RANGE" not in str(e) and "out of range" not in str(e).lower():
        fail(f"delete past the high watermark: unexpected error {e}")

consumer = Consumer(
    {
        "bootstrap.servers": bootstrap,
        "group.id": f"dr-{topic}",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
)
for p in (0, 1):
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
    if (low, high) != (D, N):
        fail(f"partition {p}: watermarks {(low, high)}, expected {(D, N)}")

# A consumer seeking to 0 is out of range and reset to the log start.
consumer.assign([TopicPartition(topic, 0, 0)])
deadline = time.time() + 30
first = None
while first is None and time.time() < deadline:
    m = consumer.poll(1.0)
    if m is None:
        continue
    if m.error():
        continue
    first = m.offset()
consumer.close()
if first != D:
    fail(f"consumer from 0 started at {first}, expected {D}")
print("all ok", flush=True)
