"""Creates topics one after another through the brokers while the test kills the active
controller (crates/cli/tests/stock_clients.rs). Retriable errors are retried (a topic whose
first attempt committed answers TOPIC_ALREADY_EXISTS on the retry, which counts as created);
any other error fails. Prints "started" once the first topic exists, then "created NAME" per
topic, then checks every created topic exists, with its partition, on every broker.

usage: create_during_failover.py BOOTSTRAP[,...] COUNT
"""

import sys
import time

from confluent_kafka import admin as cadmin
from confluent_kafka import KafkaException

SERVERS = sys.argv[1].split(",")
COUNT = int(sys.argv[2])
c = cadmin.AdminClient({"bootstrap.servers": sys.argv[1]})
created = []
retriable_seen = 0
for i in range(COUNT):
    name = f"failover-{i}"
    deadline = time.time() + 60
    while True:
        try:
            c.create_topics([cadmin.NewTopic(name, 1, 3)], request_timeout=15)[name].result()
            break
        except KafkaException as e:
            err = e.args[0]
            if err.code() == 36 and retriable_seen:  # TOPIC_ALREADY_EXISTS after a retry
                break
            if not err.retriable() and err.code() not in (7, 41):  # REQUEST_TIMED_OUT, NOT_CONTROLLER
                print(f"non-retriable error creating {name}: {err}", flush=True)
                sys.exit(1)
            retriable_seen += 1
            if time.time() > deadline:
                print(f"{name} not created within 60 s: {err}", flush=True)
                sys.exit(1)
            time.sleep(0.2)
    created.append(name)
    print("created", name, flush=True)
    if i == 0:
        print("started", flush=True)
    time.sleep(0.1)

for server in SERVERS:
    deadline = time.time() + 30
    while True:
        md = cadmin.AdminClient({"bootstrap.servers": server}).list_topics(timeout=10)
        missing = [t for t in created if t not in md.topics or len(md.topics[t].partitions) != 1]
        if not missing:
            break
        if time.time() > deadline:
            print(f"{server} lacks {missing}", flush=True)
            sys.exit(1)
        time.sleep(0.3)
print(f"all ok ({len(created)} topics, {retriable_seen} retriable errors)", flush=True)
