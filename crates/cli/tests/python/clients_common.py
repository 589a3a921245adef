"""What produce_consume.py and idempotent_failover.py share: the JSON summary and how a run
fails, progress lines, topic creation with confluent-kafka's admin client, and one poll of a
confluent-kafka consumer reading assigned partitions to their end offsets.

The scripts import it from their own directory (they put it on sys.path first, so it is
found whatever the working directory).
"""

import json
import sys
import time

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
