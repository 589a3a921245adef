"""What crates/cli/tests/node_swap.rs asks the cluster between swaps, through confluent-kafka.

usage:
  swap_probe.py state BOOTSTRAP TOPIC...
    One JSON line: {"<topic>-<partition>": [leader, [isr...], [replicas...]], ...} for every
    partition of the topics, as the Metadata of BOOTSTRAP says. Exits 1 on an error.
  swap_probe.py commit BOOTSTRAP TOPIC PARTITIONS GROUPS BASE
    Commits, for each group swap-group-0..GROUPS-1, offset BASE + partition on every
    partition of TOPIC (no member: a simple consumer's commit), then prints what
    OffsetFetch returns, as `committed` does.
  swap_probe.py committed BOOTSTRAP TOPIC PARTITIONS GROUPS
    One JSON line: {"swap-group-<i>": [committed offset of each partition...], ...}.
    Exits 1 on an error (a coordinator moving: the test retries).

KRAFTD_TEST_CLIENT_CONFIG (clients_common.py's CLIENT_CONFIG: security.protocol, sasl.*,
ssl.ca.location) goes to every client the probe makes.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import CLIENT_CONFIG as CLIENT  # noqa: E402

from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402


def state(bootstrap, topics):
    md = AdminClient({"bootstrap.servers": bootstrap, **CLIENT}).list_topics(timeout=10)
    out = {}
    for t in topics:
        tm = md.topics.get(t)
        if tm is None or tm.error is not None:
            print(f"{t}: {tm.error if tm else 'unknown'}", file=sys.stderr)
            sys.exit(1)
        for p, pm in sorted(tm.partitions.items()):
            out[f"{t}-{p}"] = [pm.leader, sorted(pm.isrs), list(pm.replicas)]
    print(json.dumps(out, sort_keys=True))


def committed(bootstrap, topic, partitions, groups, base=None):
    out = {}
    for i in range(groups):
        group = f"swap-group-{i}"
        c = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            **CLIENT,
        })
        try:
            if base is not None:
                c.commit(offsets=[TopicPartition(topic, p, base + p) for p in range(partitions)],
                         asynchronous=False)
            got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
            for tp in got:
                if tp.error is not None:
                    raise RuntimeError(f"{group} {tp.topic}-{tp.partition}: {tp.error}")
            out[group] = [tp.offset for tp in got]
        finally:
            c.close()
    print(json.dumps(out, sort_keys=True))


mode, bootstrap = sys.argv[1], sys.argv[2]
try:
    if mode == "state":
        state(bootstrap, sys.argv[3:])
    elif mode == "commit":
        committed(bootstrap, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
    elif mode == "committed":
        committed(bootstrap, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(f"unknown mode {mode}")
except Exception as e:  # a retriable moment (coordinator or leader moving): the test retries
    print(f"{type(e).__name__}: {e}", file=sys.stderr)
    sys.exit(1)
