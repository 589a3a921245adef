"""A compacted topic as its users write and read it (and, first, a topic config kraftd does
not implement refused by name): confluent-kafka creates a topic with
`cleanup.policy=compact` (small segments, a low dirty ratio, short tombstone retention),
writes 40 keys 25 times each and then tombstones for 10 of them; the broker's log cleaner
compacts it while kafka-python reads it from the beginning, again and again, until what it
reads is compacted: each live key's latest value, the tombstoned keys gone, offsets
increasing, and never a key's older value after its newer one.

usage: compaction.py <bootstrap> <topic>
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import SUMMARY, create_topic, fail, say  # noqa: E402

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka import admin as cadmin  # noqa: E402
from kafka import KafkaConsumer, TopicPartition  # noqa: E402

KEYS = 40
ROUNDS = 25
DELETED = 10  # keys 0..9 get a tombstone


def produce(bootstrap, topic):
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "batch.size": 4096})
    errors = []

    def delivered(err, _msg):
        if err:
            errors.append(str(err))

    for r in range(ROUNDS):
        for k in range(KEYS):
            producer.produce(topic, key=f"k{k}", value=f"k{k}-v{r}" + "x" * 64,
                             partition=0, on_delivery=delivered)
        producer.flush(30)
    for k in range(DELETED):
        producer.produce(topic, key=f"k{k}", value=None, partition=0, on_delivery=delivered)
    producer.flush(30)
    more_filler(producer, topic)
    if errors:
        fail(f"produce failed: {errors[:3]}")
    # A keyless record is refused, as Kafka refuses it on a compacted topic.
    refused = []
    producer.produce(topic, value=b"no key", partition=0,
                     on_delivery=lambda err, _m: refused.append(err))
    producer.flush(30)
    if not refused or refused[0] is None or "INVALID_RECORD" not in str(refused[0]):
        fail(f"a keyless record on a compacted topic was not refused: {refused}")


def more_filler(producer, topic):
    """Writes more than a segment under one key: it rolls what came before out of the active
    segment (which is never cleaned) and gives the cleaner new dirty bytes, as a live topic
    does (a tombstone past its delete horizon goes at the next clean, and a clean needs
    dirty data)."""
    errors = []
    for i in range(250):
        producer.produce(topic, key="filler", value=f"f{i}" + "y" * 64, partition=0,
                         on_delivery=lambda err, _m: err and errors.append(str(err)))
    if producer.flush(30) != 0 or errors:
        fail(f"filler produce failed: {errors[:3]}")


def read_all(bootstrap, topic):
    """Everything from offset 0 to the end, as (offset, key, value)."""
    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=3000)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    out = []
    while consumer.position(tp) < end:
        batch = consumer.poll(timeout_ms=1000)
        for records in batch.values():
            for m in records:
                out.append((m.offset, m.key.decode() if m.key else None,
                            m.value.decode() if m.value is not None else None))
    consumer.close()
    return out


def check_order(records):
    """Offsets increase and no key's older value follows its newer one."""
    last_round = {}
    previous = -1
    for offset, key, value in records:
        if offset <= previous:
            fail(f"offset {offset} after {previous}")
        previous = offset
        if key is None or key == "filler" or value is None:
            continue
        r = int(value.split("-v")[1].rstrip("x"))
        if r < last_round.get(key, -1):
            fail(f"{key}: round {r} read after round {last_round[key]}")
        last_round[key] = r


def compacted(records):
    """Whether the data keys are down to one record each and the tombstoned keys gone."""
    seen = {}
    for _offset, key, value in records:
        if key is None or key == "filler":
            continue
        seen.setdefault(key, []).append(value)
    for k in range(KEYS):
        values = seen.get(f"k{k}", [])
        if k < DELETED:
            if values:
                return False
        elif values != [f"k{k}-v{ROUNDS - 1}" + "x" * 64]:
            return False
    return True


def unsupported_config_is_refused(admin, topic):
    """A topic config kraftd does not implement is refused, naming the key, never ignored."""
    name = f"{topic}-tiered"
    futures = admin.create_topics(
        [cadmin.NewTopic(name, 1, 1, config={"remote.storage.enable": "true"})],
        request_timeout=30)
    try:
        futures[name].result()
    except Exception as e:  # noqa: BLE001 - the refusal is the point
        text = str(e)
        if "INVALID_CONFIG" not in text and "InvalidConfig" not in text:
            fail(f"remote.storage.enable=true refused with the wrong error: {text}")
        if "remote.storage.enable" not in text:
            fail(f"the refusal does not name the key: {text}")
        return
    fail("a topic with remote.storage.enable=true was created")


def main():
    bootstrap, topic = sys.argv[1], sys.argv[2]
    admin = cadmin.AdminClient({"bootstrap.servers": bootstrap})
    unsupported_config_is_refused(admin, topic)
    create_topic(admin, topic, 1, 1, {
        "cleanup.policy": "compact",
        "internal.segment.bytes": "16384",
        "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "1000",
    }, time.time() + 30)
    produce(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "batch.size": 4096})
    deadline = time.time() + 90
    reads = 0
    while True:
        records = read_all(bootstrap, topic)
        reads += 1
        check_order(records)
        if compacted(records):
            break
        if time.time() > deadline:
            fail(f"not compacted after 90 s ({len(records)} records read)")
        time.sleep(0.5)
        more_filler(producer, topic)
    SUMMARY.update(reads=reads, records_after_cleaning=len(records),
                   written=KEYS * ROUNDS + DELETED + 250 * reads)
    SUMMARY["ok"] = True
    say(str(SUMMARY))
    say("all ok")


main()
