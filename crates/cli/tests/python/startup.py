"""A script that starts kraftd and sets it up at once (a CI job, a docker-compose service),
as a new user would: round after round, a fresh embedded default (`kraftd combined` with
only ports overridden) is started, and at the first moment its client port accepts a TCP
connection confluent-kafka's admin client creates an 11-partition topic and a producer
without retries sends one record to every partition.

Every creation must be answered (it once was not: a client that connected before the broker
had caught up got a Metadata answer naming no controller and waited forever), the "running"
line must come only once the listener serves, and the produce must succeed on its first try
in nearly every round (a partition named leader before its broker served it was refused with
NOT_LEADER_OR_FOLLOWER). Round 0 also checks DescribeConfigs' advertised.listeners.

usage: startup.py <kraftd binary> <work dir> <rounds>
"""

import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import SUMMARY, fail, say  # noqa: E402

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka import admin as cadmin  # noqa: E402

PARTITIONS = 11


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect_at_first_moment(port, proc, deadline):
    """Returns once 127.0.0.1:port accepts a TCP connection, polling every millisecond."""
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.05).close()
            return
        except OSError:
            if proc.poll() is not None:
                fail(f"kraftd exited with {proc.returncode} before its port opened")
            if time.time() > deadline:
                fail(f"port {port} never accepted")
            time.sleep(0.001)


def check_advertised_listeners(admin, expected):
    resource = cadmin.ConfigResource(cadmin.ResourceType.BROKER, "1")
    entries = admin.describe_configs([resource])[resource].result(timeout=20)
    entry = entries.get("advertised.listeners")
    if entry is None or entry.value != expected:
        fail(f"advertised.listeners is {entry and entry.value!r}, expected {expected!r}")
    if entry.source != cadmin.ConfigSource.STATIC_BROKER_CONFIG.value:
        fail(f"advertised.listeners has source {entry.source}, expected STATIC_BROKER_CONFIG")


def one_round(binary, work, n):
    broker, controller = free_port(), free_port()
    cwd = os.path.join(work, f"round-{n}")
    os.makedirs(cwd)
    out = open(os.path.join(cwd, "kraftd.log"), "w")
    args = [
        binary, "combined",
        "--override", f"listeners=PLAINTEXT://127.0.0.1:{broker},CONTROLLER://127.0.0.1:{controller}",
        "--override", f"controller.quorum.voters=1@127.0.0.1:{controller}",
        # An ephemeral port: a port picked here and bound later by kraftd can be taken by
        # another process meanwhile (it happened under a loaded CI), and /metrics is not
        # what this test is about.
        "--override", "metrics.port=0",
    ]
    proc = subprocess.Popen(args, cwd=cwd, stdout=subprocess.PIPE, stderr=out, text=True)
    try:
        connect_at_first_moment(broker, proc, time.time() + 30)
        bootstrap = f"127.0.0.1:{broker}"
        started = time.time()
        admin = cadmin.AdminClient({"bootstrap.servers": bootstrap})
        # The producer is connected before the topic exists, so its first Metadata for the
        # topic follows the creation's answer as closely as a client can.
        producer = Producer({
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "retries": 0,
            "linger.ms": 0,
        })
        producer.list_topics(timeout=10)
        topic = f"startup-{n}"
        try:
            admin.create_topics(
                [cadmin.NewTopic(topic, PARTITIONS, 1)], request_timeout=20
            )[topic].result(timeout=25)
        except Exception as e:  # noqa: BLE001 - any failure is the finding
            fail(f"round {n}: creating {topic} at the first moment failed: {e}")
        created = time.time() - started
        errors = []
        for p in range(PARTITIONS):
            producer.produce(
                topic, value=b"v", partition=p,
                on_delivery=lambda err, msg: err and errors.append((msg.partition(), str(err))),
            )
        if producer.flush(20) != 0:
            fail(f"round {n}: records still unsent after 20 s")
        if n == 0:
            check_advertised_listeners(admin, f"PLAINTEXT://127.0.0.1:{broker}")
    finally:
        # Killed, not stopped gracefully: the rounds test start-up, and a controlled
        # shutdown waits for the next heartbeat.
        proc.kill()
        stdout, _ = proc.communicate(timeout=60)
        out.close()
    if "kraftd is running" not in stdout:
        fail(f"round {n}: no 'running' line on stdout: {stdout!r}")
    say(f"round {n}: created in {created:.2f} s, first-try produce errors {errors}")
    return errors


def main():
    binary, work, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    failed_rounds = [n for n in range(rounds) if one_round(binary, work, n)]
    SUMMARY.update(rounds=rounds, rounds_with_first_try_produce_errors=len(failed_rounds))
    # "Nearly every round": one round in ten may lose a race the broker cannot close (the
    # producer's own metadata refresh), never more.
    if len(failed_rounds) > rounds // 10:
        fail(f"first-try produce failed in rounds {failed_rounds}")
    SUMMARY["ok"] = True
    say(str(SUMMARY))
    say("all ok")


main()
