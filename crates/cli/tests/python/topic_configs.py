"""Topic settings validated as Kafka 4.4.0 validates them, as a stock client meets it:
confluent-kafka's CreateTopics with `segment.bytes=65536` is refused INVALID_CONFIG with
Kafka's message (`segment.bytes` is at least 1 MiB, so a producer's 1 MiB batch fits a
segment), and with `internal.segment.bytes=65536` (Kafka's testing-only override, without
the floor) is accepted; DescribeConfigs shows the internal config only on the topic that
sets it; then records are written to the small-segment topic, whose log the test
checks rolled.

usage: topic_configs.py <bootstrap> <refused topic> <small-segment topic>
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import SUMMARY, create_topic, fail, say  # noqa: E402

from confluent_kafka import KafkaError, KafkaException, Producer  # noqa: E402
from confluent_kafka import admin as cadmin  # noqa: E402

RECORDS = 64
VALUE_BYTES = 4096
KAFKA_MESSAGE = "Invalid value 65536 for configuration segment.bytes: Value must be at least 1048576"


def refused_create(admin, topic, config):
    """CreateTopics `topic` with `config`: the error it is refused with, or None."""
    try:
        admin.create_topics([cadmin.NewTopic(topic, 1, 1, config=config)],
                            request_timeout=30)[topic].result()
        return None
    except KafkaException as e:
        return e.args[0]


def described(admin, topic):
    resource = cadmin.ConfigResource(cadmin.ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    return {name: entry.value for name, entry in entries.items()}


def main():
    bootstrap, refused_topic, small_topic = sys.argv[1], sys.argv[2], sys.argv[3]
    admin = cadmin.AdminClient({"bootstrap.servers": bootstrap})
    err = refused_create(admin, refused_topic, {"segment.bytes": "65536"})
    if err is None or err.code() != KafkaError.INVALID_CONFIG or KAFKA_MESSAGE not in err.str():
        fail(f"segment.bytes=65536 was not refused INVALID_CONFIG with Kafka's message: {err}")
    if refused_topic in admin.list_topics(timeout=30).topics:
        fail(f"the refused topic {refused_topic} exists")
    err = refused_create(admin, refused_topic, {"internal.segment.bytes": "10"})
    if err is None or err.code() != KafkaError.INVALID_CONFIG:
        fail(f"internal.segment.bytes=10 (below the log store's floor) was not refused: {err}")

    create_topic(admin, small_topic, 1, 1, {"internal.segment.bytes": "65536"}, time.time() + 30)
    configs = described(admin, small_topic)
    if configs.get("internal.segment.bytes") != "65536" or configs.get("segment.bytes") != "1073741824":
        fail(f"{small_topic} described as internal.segment.bytes="
             f"{configs.get('internal.segment.bytes')}, segment.bytes={configs.get('segment.bytes')}")
    create_topic(admin, refused_topic, 1, 1, {}, time.time() + 30)
    if "internal.segment.bytes" in described(admin, refused_topic):
        fail("internal.segment.bytes described on a topic that does not set it")

    # Batches well under the 64 KiB segment (a batch larger than a segment is refused).
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "batch.size": 16384})
    errors = []
    for i in range(RECORDS):
        producer.produce(small_topic, value=os.urandom(VALUE_BYTES), partition=0,
                         on_delivery=lambda e, _m: e and errors.append(e))
    if producer.flush(30) != 0 or errors:
        fail(f"produce failed: {errors[:3]}")
    SUMMARY.update(refused=KAFKA_MESSAGE, records=RECORDS)
    SUMMARY["ok"] = True
    say(str(SUMMARY))
    say("all ok")


if __name__ == "__main__":
    main()
