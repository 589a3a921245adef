"""Client quotas with stock clients (driven by stock_quotas.rs): quotas set and removed with
Kafka's own kafka-configs (org.apache.kafka.tools.ConfigCommand, from the jars the tests
fetch: neither Python client speaks AlterClientQuotas), traffic from kafka-python.

    quotas.py <bootstrap> produce   producer_byte_rate on a client id: a producer sending as
                                    fast as it can is held to the rate (within 20%) and told
                                    the throttle time; without the quota it runs free again
    quotas.py <bootstrap> consume   the same for consumer_byte_rate and a consumer
    quotas.py <bootstrap> mutation  controller_mutation_rate: a strict (CreateTopics v6+)
                                    admin client gets THROTTLING_QUOTA_EXCEEDED for the topic
                                    that finds the quota spent, DeleteTopics too; another
                                    client id is not limited

The broker runs with quota.window.num=2 (Kafka's setting): a windowed rate first allows a
burst of (window.num - 1) windows of quota, which with Kafka's default 11 would take ten
seconds to show the steady rate. The rate is measured once the client is throttled and the
burst has left the window, over MEASURE_S seconds. Prints "all ok" at the end.

Environment: KRAFTD_KAFKA_CLASSPATH (the jars), KRAFTD_LOG4J (the java option quieting them).
"""

import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import create_topic, fail, say  # noqa: E402

QUOTA = 256 * 1024  # bytes per second
MEASURE_S = 6.0
# The broker's quota window: quota.window.num=2 samples of a second.
WINDOW_S = 2.0
VALUE = b"q" * 1024


def kafka_configs(bootstrap, *args):
    """Kafka's kafka-configs against `bootstrap`; its stdout."""
    cmd = [
        "java", "-Xmx256m", "-XX:TieredStopAtLevel=1", os.environ["KRAFTD_LOG4J"],
        "-cp", os.environ["KRAFTD_KAFKA_CLASSPATH"], "org.apache.kafka.tools.ConfigCommand",
        "--bootstrap-server", bootstrap, *args,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        fail(f"kafka-configs {' '.join(args)}: {out.stdout} {out.stderr}")
    return out.stdout


def set_quota(bootstrap, client_id, key, value):
    kafka_configs(bootstrap, "--alter", "--entity-type", "clients", "--entity-name", client_id,
                  "--add-config", f"{key}={value}")
    # Committed once the brokers describe it (DescribeClientQuotas reads their image).
    deadline = time.time() + 30
    while f"{key}={value}" not in kafka_configs(
            bootstrap, "--describe", "--entity-type", "clients", "--entity-name", client_id):
        if time.time() > deadline:
            fail(f"{key} for {client_id} never described")
        time.sleep(0.3)
    say(f"{key}={value} set for client id {client_id}")


def remove_quota(bootstrap, client_id, key):
    kafka_configs(bootstrap, "--alter", "--entity-type", "clients", "--entity-name", client_id,
                  "--delete-config", key)
    say(f"{key} removed for client id {client_id}")


def throttle_max(client, group):
    """kafka-python's throttle-time-max of `group` (its metrics over the last minute)."""
    metrics = client.metrics()
    return max((v for k, v in metrics.get(group, {}).items() if k == "throttle-time-max"),
               default=0) or 0


class Meter:
    """Bytes counted by one thread, read by another."""

    def __init__(self):
        self.lock = threading.Lock()
        self.total = 0

    def add(self, n):
        with self.lock:
            self.total += n

    def read(self):
        with self.lock:
            return self.total


def held_to_quota(name, meter, throttled, deadline_s=30):
    """Waits for the first throttled response (`throttled()`) and for the burst before it
    to leave the quota's window (WINDOW_S), then measures the rate over MEASURE_S seconds;
    fails unless it is within 20% of QUOTA."""
    deadline = time.time() + deadline_s
    while not throttled():
        if time.time() > deadline:
            fail(f"{name}: never throttled ({meter.read()} bytes)")
        time.sleep(0.05)
    time.sleep(WINDOW_S)
    start, start_bytes = time.monotonic(), meter.read()
    time.sleep(MEASURE_S)
    rate = (meter.read() - start_bytes) / (time.monotonic() - start)
    say(f"{name}: {rate / 1024:.0f} KiB/s under a quota of {QUOTA / 1024:.0f} KiB/s")
    if not 0.8 * QUOTA <= rate <= 1.2 * QUOTA:
        fail(f"{name}: {rate:.0f} B/s is not within 20% of the quota {QUOTA} B/s")


def runs_free(name, meter, deadline_s=30):
    """After the quota is removed: polls the rate over each second until it is well above
    the old quota (three times)."""
    deadline = time.time() + deadline_s
    best = 0.0
    while time.time() < deadline:
        start, start_bytes = time.monotonic(), meter.read()
        time.sleep(1.0)
        rate = (meter.read() - start_bytes) / (time.monotonic() - start)
        best = max(best, rate)
        if rate > 3 * QUOTA:
            say(f"{name}: {rate / 1024:.0f} KiB/s without the quota")
            return
    fail(f"{name}: at most {best:.0f} B/s after the quota was removed")


def produce(bootstrap):
    from confluent_kafka import admin as cadmin
    from kafka import KafkaProducer

    topic, client_id = "quota-produce", "quota-producer"
    create_topic(cadmin.AdminClient({"bootstrap.servers": bootstrap}), topic, 1, 1, {},
                 time.time() + 60)
    set_quota(bootstrap, client_id, "producer_byte_rate", QUOTA)
    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=client_id,
                             linger_ms=5, batch_size=16384, max_request_size=65536)
    meter, stop = Meter(), threading.Event()
    # As fast as the broker takes them: at most 512 records awaiting their ack (kafka-python
    # would otherwise buffer without bound while throttled).
    outstanding = threading.Semaphore(512)

    def acked(_metadata):
        meter.add(len(VALUE))
        outstanding.release()

    def failed(e):
        say(f"send failed: {e!r}")
        outstanding.release()

    def send():
        while not stop.is_set():
            if outstanding.acquire(timeout=0.1):
                producer.send(topic, VALUE).add_callback(acked).add_errback(failed)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    held_to_quota("producer", meter, lambda: throttle_max(producer, "producer-metrics") > 0)
    remove_quota(bootstrap, client_id, "producer_byte_rate")
    runs_free("producer", meter)
    stop.set()
    sender.join(30)
    producer.close(timeout=30)


def consume(bootstrap):
    from confluent_kafka import Producer
    from confluent_kafka import admin as cadmin
    from kafka import KafkaConsumer, TopicPartition

    topic, client_id = "quota-consume", "quota-consumer"
    create_topic(cadmin.AdminClient({"bootstrap.servers": bootstrap}), topic, 1, 1, {},
                 time.time() + 60)
    # Enough for the measured seconds under the quota and a second at full speed after, in
    # batches far smaller than the quota: a consumer is sent at least one whole batch, and
    # one bigger than the quota window allows would be throttled every time.
    loader = Producer({"bootstrap.servers": bootstrap, "client.id": "quota-loader",
                       "linger.ms": 20, "batch.size": 16384})
    records = 24 * 1024
    for i in range(records):
        while True:
            try:
                loader.produce(topic, VALUE)
                break
            except BufferError:
                loader.poll(0.1)
    if loader.flush(60) != 0:
        fail("loading the topic did not finish")
    set_quota(bootstrap, client_id, "consumer_byte_rate", QUOTA)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id=client_id,
                             group_id=None, auto_offset_reset="earliest",
                             max_partition_fetch_bytes=65536, fetch_max_wait_ms=50)
    consumer.assign([TopicPartition(topic, 0)])
    meter, stop = Meter(), threading.Event()

    def poll():
        while not stop.is_set():
            for records_ in consumer.poll(timeout_ms=10).values():
                meter.add(sum(len(r.value) for r in records_))

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    held_to_quota("consumer", meter, lambda: throttle_max(consumer, "consumer-metrics") > 0)
    remove_quota(bootstrap, client_id, "consumer_byte_rate")
    runs_free("consumer", meter)
    stop.set()
    poller.join(30)
    if meter.read() > records * len(VALUE):
        fail(f"read {meter.read()} bytes of {records * len(VALUE)}")
    consumer.close()


def mutation(bootstrap):
    from kafka import KafkaAdminClient

    client_id = "quota-admin"
    # 1 partition per second: a burst of 11 (controller.quota.window.num × size × rate).
    set_quota(bootstrap, client_id, "controller_mutation_rate", 1)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=client_id)

    def create(name, partitions, client=admin):
        result = client.create_topics({name: {"num_partitions": partitions,
                                              "replication_factor": 1}}, raise_errors=False)
        (topic,) = result["topics"]
        return topic["error_code"], topic.get("error_message")

    # 10 of 11 credits, then 10 more (the bucket was not empty yet), then none left.
    for name in ("mutation-a", "mutation-b"):
        code, message = create(name, 10)
        if code != 0:
            fail(f"creating {name}: error {code} {message}")
    code, message = create("mutation-c", 1)
    if code != 89:
        fail(f"mutation-c: expected THROTTLING_QUOTA_EXCEEDED (89), got {code} {message}")
    say(f"mutation-c refused: {message}")
    # kafka-python now holds this connection back for the throttle time it was told (and
    # fails requests meanwhile); the same client id on a new connection is refused too.
    again = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=client_id)
    result = again.delete_topics(["mutation-a"], raise_errors=False)
    codes = [t["error_code"] for t in result["topics"]]
    if codes != [89]:
        fail(f"deleting mutation-a with the quota spent: {result}")
    again.close()
    other = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="other-admin")
    code, message = create("mutation-d", 5, other)
    if code != 0:
        fail(f"another client id: error {code} {message}")
    other.close()
    admin.close()


def main():
    bootstrap, what = sys.argv[1], sys.argv[2]
    {"produce": produce, "consume": consume, "mutation": mutation}[what](bootstrap)
    print("all ok", flush=True)


if __name__ == "__main__":
    main()
