"""Produce throughput and delivery latency with librdkafka (confluent-kafka), as a second
load generator beside `cargo xtask bench produce` (which uses Kafka's Java
ProducerPerformance): acks=all, idempotent, linger.ms 5, 1 KiB records, one batch size.

Usage (the venv the tests make): target/stock-clients-venv/bin/python \
    tools/bench/produce_throughput.py <bootstrap> <batch.size bytes> [records]
against e.g. `cargo xtask cluster-up --release`. Prints MB/s and delivery latency p50/p99
(librdkafka's per-message latency, including time queued in the client)."""
import sys
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, batch_size = sys.argv[1], int(sys.argv[2])
count = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
topic = "throughput-%d-%d" % (batch_size, int(time.time()))
admin = AdminClient({"bootstrap.servers": bootstrap})
for f in admin.create_topics([NewTopic(topic, 3, 3, config={"min.insync.replicas": "2"})]).values():
    f.result()
time.sleep(2)  # let every partition's leader take over before timing

latencies = []
errors = []


def delivered(err, msg):
    if err:
        errors.append(err)
    else:
        latencies.append(msg.latency())


producer = Producer({
    "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
    "linger.ms": 5, "batch.size": batch_size, "queue.buffering.max.kbytes": 65536,
})
value = b"x" * 1024
start = time.time()
for _ in range(count):
    while True:
        try:
            producer.produce(topic, value=value, callback=delivered)
            break
        except BufferError:
            producer.poll(0.01)
    producer.poll(0)
producer.flush(120)
elapsed = time.time() - start
if errors or len(latencies) != count:
    sys.exit("FAILED: %d delivered, %d errors (first: %s)" % (len(latencies), len(errors), errors[:1]))
latencies.sort()
print("batch.size %d: %.1f MB/s, latency p50 %.1f ms, p99 %.1f ms" % (
    batch_size, count * 1024 / elapsed / 1e6,
    latencies[len(latencies) // 2] * 1000, latencies[int(len(latencies) * 0.99)] * 1000))
