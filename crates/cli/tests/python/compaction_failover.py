"""A compacted topic cleaned while its leader changes (crates/cli/tests/
stock_compaction_failover.rs kills and restarts the leader under it): confluent-kafka
writes keyed records (idempotent, acks=all) to a compacted topic with replication factor 3
without pause, while kafka-python reads the partition from the beginning over and over.

Every read must show offsets increasing and, for each key, values in the order they were
produced (never a key's older value after its newer one). Once the stop file exists the
producer flushes; then reads go on until the latest value of every key is the last one
acknowledged for it (nothing acknowledged lost), and that map is printed in the summary
("latest": "k0=<seq>,k1=<seq>,...") for the test to compare with each replica's log.

usage: compaction_failover.py <bootstrap> <topic> <stop-file>
prints "started", "acked <n>" now and then, "stopped <n>", then the JSON summary.
"""

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import SUMMARY, create_topic, fail, say  # noqa: E402

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka import admin as cadmin  # noqa: E402
from kafka import KafkaConsumer, TopicPartition  # noqa: E402

KEYS = 50
PAD = "x" * 48


class Writer(threading.Thread):
    """Writes value "<seq><pad>" under key "k<seq % KEYS>" until told to stop."""

    def __init__(self, bootstrap, topic, stop_file):
        super().__init__(daemon=True)
        self.topic, self.stop_file = topic, stop_file
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                  "acks": "all", "linger.ms": 5, "batch.size": 8192})
        self.lock = threading.Lock()
        self.acked = {}  # key -> highest acknowledged seq
        self.acked_n = 0
        self.sent = 0
        self.errors = []
        self.done = threading.Event()

    def delivered(self, err, msg):
        if err:
            self.errors.append(str(err))
            return
        seq = int(msg.value().decode().rstrip("x"))
        key = msg.key().decode()
        with self.lock:
            self.acked[key] = max(self.acked.get(key, -1), seq)
            self.acked_n += 1
            n = self.acked_n
        if n % 2000 == 0:
            say(f"acked {n}")

    def run(self):
        while not os.path.exists(self.stop_file):
            if self.sent - self.acked_n > 2000:
                self.producer.poll(0.05)
                continue
            seq = self.sent
            self.producer.produce(self.topic, key=f"k{seq % KEYS}", value=f"{seq}{PAD}",
                                  partition=0, on_delivery=self.delivered)
            self.sent += 1
            self.producer.poll(0)
        left = self.producer.flush(120)
        say(f"stopped {self.acked_n}")
        if left:
            self.errors.append(f"{left} records never acknowledged")
        self.done.set()


def read_all(bootstrap, topic, secs):
    """(offset, key, seq) from the start to the end offset; a read cut short by a leader
    change (or an error) returns what it read and False."""
    tp = TopicPartition(topic, 0)
    out = []
    consumer = None
    try:
        consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","),
                                 enable_auto_commit=False, request_timeout_ms=10000,
                                 consumer_timeout_ms=3000)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        deadline = time.time() + secs
        while consumer.position(tp) < end:
            if time.time() > deadline:
                return out, False
            for records in consumer.poll(timeout_ms=500).values():
                for m in records:
                    out.append((m.offset, m.key.decode(), int(m.value.decode().rstrip("x"))))
        return out, True
    except Exception as e:  # a leader moving under a read: the read is retried
        SUMMARY["read_errors"] = SUMMARY.get("read_errors", 0) + 1
        SUMMARY["last_read_error"] = repr(e)[:200]
        return out, False
    finally:
        if consumer is not None:
            try:
                consumer.close()
            except Exception:
                pass


def check_order(records):
    previous = -1
    last = {}
    for offset, key, seq in records:
        if offset <= previous:
            fail(f"offset {offset} read after {previous}")
        previous = offset
        if seq <= last.get(key, -1):
            fail(f"{key}: value {seq} (offset {offset}) read after value {last[key]}")
        last[key] = seq


def main():
    bootstrap, topic, stop_file = sys.argv[1], sys.argv[2], sys.argv[3]
    admin = cadmin.AdminClient({"bootstrap.servers": bootstrap})
    create_topic(admin, topic, 1, 3, {
        "cleanup.policy": "compact",
        "internal.segment.bytes": "16384",
        "min.cleanable.dirty.ratio": "0.01",
        "min.insync.replicas": "2",
    }, time.time() + 30)
    writer = Writer(bootstrap, topic, stop_file)
    writer.start()
    say("started")
    reads = complete = 0
    while not writer.done.is_set():
        records, whole = read_all(bootstrap, topic, 20)
        check_order(records)
        reads += 1
        complete += whole
    if writer.errors:
        fail(f"produce failed: {writer.errors[:3]}")
    # Nothing acknowledged is lost: each key's last value is its last acknowledgement.
    deadline = time.time() + 60
    while True:
        records, whole = read_all(bootstrap, topic, 20)
        check_order(records)
        reads += 1
        latest = {}
        for _offset, key, seq in records:
            latest[key] = seq
        if whole and latest == writer.acked:
            break
        if time.time() > deadline:
            missing = {k: (v, latest.get(k)) for k, v in writer.acked.items()
                       if latest.get(k) != v}
            fail(f"acknowledged values not read (key: (acked, read)): {list(missing.items())[:5]}")
        time.sleep(0.5)
    if len(records) >= writer.sent:
        fail(f"nothing was cleaned: {len(records)} records read of {writer.sent} written")
    SUMMARY.update(written=writer.sent, acked=writer.acked_n, reads=reads,
                   complete_reads=complete, records_after=len(records),
                   latest=",".join(f"{k}={v}" for k, v in sorted(latest.items())))
    SUMMARY["ok"] = True
    say(json.dumps(SUMMARY))
    say("all ok")


main()
