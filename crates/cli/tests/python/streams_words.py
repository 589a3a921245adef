"""The input and the check of the Kafka Streams word count (crates/cli/tests/stock_streams_eos.rs,
java/StreamsWordCount.java).

feed <bootstrap> <stop-file>: creates `wc-in` and `wc-out` (4 partitions each) and writes
  lines to `wc-in` with an idempotent producer, ~200 a second, until the stop file exists
  (or its directory is gone, or 10 minutes passed);
  prints "created", then "acked <n>" (lines acknowledged) every 100, then the JSON summary
  (with "lines") and "all ok".
verify <bootstrap> <lines>: reads `wc-out` with read_committed until every word's latest
  count is its count in the first <lines> lines (the counts a word went through must rise
  one by one or by jumps, never repeat or fall: an update applied twice, or a count lost,
  shows as a final count off; a count past the input's fails at once), for up to 120 s; prints the JSON summary and "all ok".
"""

import json
import os
import struct
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import SUMMARY, create_topic, fail, say  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka import admin as cadmin  # noqa: E402

WORDS = [f"w{i:02}" for i in range(40)]


def line(i):
    return " ".join(WORDS[(i * k + k) % len(WORDS)] for k in (1, 7, 13))


def feed(bootstrap, stop_file):
    admin = cadmin.AdminClient({"bootstrap.servers": bootstrap})
    for t in ("wc-in", "wc-out"):
        create_topic(admin, t, 4, 1, {}, time.time() + 60)
    say("created")
    errors, acked = [], [0]

    def delivered(err, _msg):
        if err:
            errors.append(str(err))
            return
        acked[0] += 1
        if acked[0] % 100 == 0:
            say(f"acked {acked[0]}")

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    i = 0
    # The test's directory gone (a failed test removed it) or 10 minutes: stop too.
    until = time.time() + 600
    while (not os.path.exists(stop_file) and os.path.isdir(os.path.dirname(stop_file))
           and time.time() < until):
        p.produce("wc-in", key=str(i).encode(), value=line(i).encode(), on_delivery=delivered)
        p.poll(0)
        i += 1
        time.sleep(0.005)
    if p.flush(60) or errors:
        fail(f"input not delivered: {errors[:3]}")
    SUMMARY.update(ok=True, lines=i)


def verify(bootstrap, lines):
    want = Counter(w for i in range(lines) for w in line(i).split(" "))
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"wc-verify-{time.time()}",
                  "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.assign([TopicPartition("wc-out", p, 0) for p in range(4)])
    latest, backwards = {}, []
    deadline = time.time() + 120
    while latest != want:
        if time.time() > deadline:
            off = {w: (latest.get(w), n) for w, n in want.items() if latest.get(w) != n}
            fail(f"word counts (latest, expected) that differ after 120 s: {off}")
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        word, count = m.key().decode(), struct.unpack(">q", m.value())[0]
        if count <= latest.get(word, 0):
            backwards.append((word, latest.get(word), count))
        if count > want[word]:
            fail(f"{word} counted {count} times, {want[word]} in the input")
        latest[word] = count
    c.close()
    if backwards:
        fail(f"counts that repeated or fell (word, before, after): {backwards[:10]}")
    SUMMARY.update(ok=True, words=len(want), total=sum(want.values()))


mode, bootstrap = sys.argv[1], sys.argv[2]
if mode == "feed":
    feed(bootstrap, sys.argv[3])
else:
    verify(bootstrap, int(sys.argv[3]))
print(json.dumps(SUMMARY))
print("all ok")
