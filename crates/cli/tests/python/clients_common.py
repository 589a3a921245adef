"""What the client scripts share: the JSON summary and how a run fails, progress lines, a
secured cluster's client settings (CLIENT_CONFIG), topic creation with confluent-kafka's
admin client, and one poll of a confluent-kafka consumer reading assigned partitions to
their end offsets.

The scripts import it from their own directory (they put it on sys.path first, so it is
found whatever the working directory).
"""

import json
import os
import sys
import time

# What every client of a script adds to its settings on a secured cluster (security.protocol,
# sasl.*, ssl.ca.location: confluent-kafka's names), a JSON object in the environment's
# KRAFTD_TEST_CLIENT_CONFIG; nothing on a PLAINTEXT cluster.
CLIENT_CONFIG = json.loads(os.environ.get("KRAFTD_TEST_CLIENT_CONFIG") or "{}")

# The summary printed as one JSON line at the end of a run; each script fills it in.
SUMMARY = {}


def fail(reason):
    """Prints the summary with "ok": false and "FAILED: <reason>", and exits 1."""
    SUMMARY["ok"] = False
    SUMMARY["reason"] = reason
    print(json.dumps(SUMMARY), flush=True)
    print("FAILED:", reason, flush=True)
    sys.exit(1)


def say(msg):
    print(msg, flush=True)


def create_topic(admin, topic, partitions, replication_factor, config, deadline):
    """Creates `topic` through `admin` (a confluent-kafka AdminClient), retrying until
    `deadline`; a topic that already exists is fine."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka import admin as cadmin

    while True:
        try:
            admin.create_topics(
                [cadmin.NewTopic(topic, partitions, replication_factor, config=config)],
                request_timeout=30,
            )[topic].result()
            return
        except KafkaException as e:
            err = e.args[0]
            if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                return
            if time.time() > deadline:
                fail(f"creating {topic}: {err}")
            time.sleep(0.5)


def poll_to_end(consumer, read, done, high, entry, skip=lambda err: False):
    """One poll (up to 1 s) of a confluent-kafka consumer with `enable.partition.eof`:
    appends `entry(msg)` to read[partition] and adds to `done` each partition read to its
    end offset in `high`. An error `skip(err)` holds is passed over; any other fails."""
    from confluent_kafka import KafkaError

    msg = consumer.poll(1.0)
    if msg is None:
        return
    if msg.error():
        if msg.error().code() == KafkaError._PARTITION_EOF:
            if msg.offset() >= high[msg.partition()]:
                done.add(msg.partition())
            return
        if skip(msg.error()):
            return
        fail(f"consume: {msg.error()}")
    read[msg.partition()].append(entry(msg))
    if msg.offset() + 1 >= high[msg.partition()]:
        done.add(msg.partition())
