"""Consumer-group figures with a stock client (confluent-kafka), run by `cargo xtask bench
groups` (groups.rs) against one running cluster; see groups.rs for what is measured and why.

usage: groups.py <bootstrap> [--reps N] [--commit-secs S] [--committers K]
                 [--timeout S] [--log FILE] [--protocols range,cooperative-sticky,consumer]

Progress goes to stderr, librdkafka's own log to --log, and one JSON line to stdout:
  {"rebalance": {"range": {"form_ms": x, "join_ms": [..], "leave_ms": [..], "overlap_max": n,
                           "error": null}, ...},
   "commit": {"1": {"count": n, "secs": s, "per_sec": r, "p50_ms": x, "p99_ms": y,
                    "error": null}, "8": {...}},
   "client_errors": ["...", ...]}
A protocol or commit run that fails has "error" set (and the figures it got before).
"""

import argparse
import json
import logging
import os
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "groupbench"
PARTITIONS = 100
MEMBERS = 10
# A rebalance counts as settled once the assignment has held this long without a callback.
QUIET = 0.3

ap = argparse.ArgumentParser()
ap.add_argument("bootstrap")
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--commit-secs", type=float, default=10.0)
ap.add_argument("--committers", type=int, default=8)
ap.add_argument("--timeout", type=float, default=20.0)
ap.add_argument("--log", default="/dev/null")
ap.add_argument("--protocols", default="range,cooperative-sticky,consumer")
args = ap.parse_args()

log_handler = logging.FileHandler(args.log)
log_handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
rdlog = logging.getLogger("librdkafka")
rdlog.addHandler(log_handler)
rdlog.setLevel(logging.DEBUG)
rdlog.propagate = False

client_errors = []  # (protocol or phase, message)
phase = "setup"


def say(msg):
    print(f"    [{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def on_error(err):
    client_errors.append((phase, str(err)))
    rdlog.error("error_cb (%s): %s", phase, err)


def base_conf():
    conf = {
        "bootstrap.servers": args.bootstrap,
        "logger": rdlog,
        "error_cb": on_error,
    }
    if os.environ.get("GROUPS_BENCH_DEBUG"):  # librdkafka's debug contexts, as "cgrp,protocol"
        conf["debug"] = os.environ["GROUPS_BENCH_DEBUG"]
    return conf


class Timeout(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# The topic.


def create_topic():
    admin = AdminClient(base_conf())
    fs = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], operation_timeout=30)
    for f in fs.values():
        try:
            f.result(60)
        except KafkaException as e:
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise
    # Every partition with a leader, as every broker sees it.
    deadline = time.time() + 60
    while True:
        md = admin.list_topics(TOPIC, timeout=10)
        t = md.topics.get(TOPIC)
        if t is not None and t.error is None and len(t.partitions) == PARTITIONS and all(
            p.leader >= 0 and p.error is None for p in t.partitions.values()
        ):
            return
        if time.time() > deadline:
            raise RuntimeError(f"topic {TOPIC} not ready: {t}")
        time.sleep(0.2)


def offsets_topic():
    """__consumer_offsets as Metadata shows it: partitions, and replicas and ISR per partition
    (the fewest of any)."""
    md = AdminClient(base_conf()).list_topics("__consumer_offsets", timeout=10)
    t = md.topics.get("__consumer_offsets")
    if t is None or t.error is not None or not t.partitions:
        return None
    ps = t.partitions.values()
    return {"partitions": len(t.partitions), "replicas": min(len(p.replicas) for p in ps),
            "isr": min(len(p.isrs) for p in ps)}


def warm_coordinators(groups):
    """__consumer_offsets created (the first FindCoordinator does it) and the coordinators of
    `groups` loaded, so that neither is timed: a standalone commit for a group of its own,
    retried until it succeeds, then the groups described until every answer is clean."""
    c = Consumer(dict(base_conf(), **{"group.id": "bench-warm-up", "enable.auto.commit": False}))
    deadline = time.time() + 60
    while True:
        try:
            c.commit(offsets=[TopicPartition(TOPIC, 0, 0)], asynchronous=False)
            break
        except KafkaException as e:
            if time.time() > deadline:
                raise RuntimeError(f"no offset commit succeeded in 60 s: {e}") from None
            time.sleep(0.2)
    c.close()
    admin = AdminClient(base_conf())
    while True:
        try:
            for f in admin.describe_consumer_groups(groups, request_timeout=10).values():
                f.result()
            return
        except KafkaException as e:
            if time.time() > deadline:
                raise RuntimeError(f"describing the groups failed for 60 s: {e}") from None
            time.sleep(0.2)


# ---------------------------------------------------------------------------------------------
# Rebalances: members as threads, each with its own Consumer polling in its own thread (the
# client releases the GIL while it waits), their assignments tracked from the callbacks.

cond = threading.Condition()
last_change = [0.0]  # monotonic time of the last assignment callback, under cond
# The members a rebalance is being timed over, and the most partitions two of them owned at
# once (by their callbacks) since the protocol's group formed; under cond.
watched = []
overlap_max = [0]


def note_change():
    """Under cond, after a callback changed an assignment."""
    last_change[0] = time.monotonic()
    if watched:
        owned = sum(len(m.assigned) for m in watched)
        union = len(set().union(*(m.assigned for m in watched)))
        overlap_max[0] = max(overlap_max[0], owned - union)
    cond.notify_all()


class Member(threading.Thread):
    def __init__(self, group, protocol, name):
        super().__init__(daemon=True, name=name)
        conf = base_conf()
        conf.update({
            "group.id": group,
            "client.id": name,
            "enable.auto.commit": False,
            "auto.offset.reset": "latest",
        })
        if protocol == "consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf["partition.assignment.strategy"] = protocol
            conf["session.timeout.ms"] = 6000
            conf["heartbeat.interval.ms"] = 500
        self.incremental = protocol != "range"
        self.consumer = Consumer(conf)
        self.assigned = set()
        self.leave = threading.Event()
        self.subscribed_at = None
        self.leaving_at = None
        self.closed = threading.Event()
        self.failure = None

    def _assign(self, consumer, partitions):
        with cond:
            if self.incremental:
                self.assigned |= {tp.partition for tp in partitions}
            else:
                self.assigned = {tp.partition for tp in partitions}
            note_change()
        if self.incremental:
            consumer.incremental_assign(partitions)
        else:
            consumer.assign(partitions)

    def _revoke(self, consumer, partitions):
        with cond:
            if self.incremental:
                self.assigned -= {tp.partition for tp in partitions}
            else:
                self.assigned = set()
            note_change()
        if self.incremental:
            consumer.incremental_unassign(partitions)
        else:
            consumer.unassign()

    def run(self):
        c = self.consumer
        try:
            self.subscribed_at = time.monotonic()
            c.subscribe([TOPIC], on_assign=self._assign, on_revoke=self._revoke,
                        on_lost=self._revoke)
            while not self.leave.is_set():
                msg = c.poll(0.05)
                if msg is not None and msg.error():
                    on_error(msg.error())
            self.leaving_at = time.monotonic()
            c.close()
        except Exception as e:  # reported by the waiting side
            self.failure = f"{type(e).__name__}: {e}"
            rdlog.error("member %s: %s", self.name, self.failure)
        finally:
            self.closed.set()
            with cond:
                cond.notify_all()


def describe(members):
    sizes = sorted(len(m.assigned) for m in members)
    union = set().union(*(m.assigned for m in members)) if members else set()
    total = sum(sizes)
    return f"{len(members)} members, assignment sizes {sizes}, {len(union)} partitions covered, {total - len(union)} twice"


def balanced(members):
    """Every partition owned exactly once, every member some, sizes within one of each other."""
    sizes = [len(m.assigned) for m in members]
    if min(sizes) == 0 or max(sizes) - min(sizes) > 1 or sum(sizes) != PARTITIONS:
        return False
    union = set().union(*(m.assigned for m in members))
    return len(union) == PARTITIONS


def wait_settled(members, t0, timeout):
    """ms from t0 to the callback after which `members` were balanced and stayed so QUIET s."""
    deadline = time.monotonic() + timeout
    with cond:
        watched[:] = members
        while True:
            for m in members:
                if m.failure or (m.closed.is_set() and not m.leave.is_set()):
                    raise RuntimeError(f"member {m.name} stopped: {m.failure}")
            now = time.monotonic()
            # Balanced by the deadline is in time: its QUIET may run past it (not for ever).
            if balanced(members) and now < deadline + 2 * QUIET:
                settled = max(last_change[0], t0)
                if now - settled >= QUIET:
                    return (settled - t0) * 1000.0
                wait = settled + QUIET - now
            elif now >= deadline:
                raise Timeout(f"not settled after {timeout:g} s: {describe(members)}")
            else:
                wait = deadline - now
            cond.wait(max(wait, 0.001))


def close_all(members):
    for m in members:
        m.leave.set()
    for m in members:
        m.join(15)


def fatal_error(since):
    """A client error that means this protocol does not work here (fatal or unsupported)."""
    for ph, e in client_errors[since:]:
        low = e.lower()
        if "fatal" in low or "unsupported" in low or "not supported" in low:
            return e
    return None


def rebalances(protocol):
    global phase
    phase = protocol
    group = f"bench-{protocol}"
    result = {"form_ms": None, "join_ms": [], "leave_ms": [], "overlap_max": 0, "error": None}
    members = []
    errors_from = len(client_errors)
    n = 0

    def new_member():
        nonlocal n
        n += 1
        return Member(group, protocol, f"{protocol}-{n}")

    with cond:
        overlap_max[0] = 0
    try:
        say(f"{protocol}: {MEMBERS - 1} members forming the group")
        members = [new_member() for _ in range(MEMBERS - 1)]
        with cond:
            watched[:] = members
        for m in members:
            m.start()
        while any(m.subscribed_at is None for m in members):
            time.sleep(0.005)
        t0 = min(m.subscribed_at for m in members)
        try:
            result["form_ms"] = wait_settled(members, t0, 2 * args.timeout)
        except Timeout as e:
            fatal = fatal_error(errors_from)
            raise Timeout(f"{e}; client error: {fatal}" if fatal else str(e)) from None
        say(f"{protocol}: formed in {result['form_ms']:.0f} ms")
        for rep in range(args.reps):
            joiner = new_member()
            with cond:
                watched[:] = members + [joiner]
            joiner.start()
            while joiner.subscribed_at is None:
                time.sleep(0.001)
            members.append(joiner)
            join_ms = wait_settled(members, joiner.subscribed_at, args.timeout)
            result["join_ms"].append(join_ms)
            with cond:
                watched[:] = [m for m in members if m is not joiner]
            joiner.leave.set()
            while joiner.leaving_at is None and not joiner.closed.is_set():
                time.sleep(0.001)
            members.remove(joiner)
            leave_ms = wait_settled(members, joiner.leaving_at or time.monotonic(), args.timeout)
            result["leave_ms"].append(leave_ms)
            joiner.join(15)
            say(f"{protocol}: rep {rep + 1}: join {join_ms:.0f} ms, leave {leave_ms:.0f} ms")
    except Exception as e:
        result["error"] = f"{type(e).__name__}: {e}"
        say(f"{protocol}: failed: {result['error']}")
    finally:
        with cond:
            watched[:] = []
            result["overlap_max"] = overlap_max[0]
        close_all(members)
    if result["overlap_max"]:
        say(f"{protocol}: up to {result['overlap_max']} partitions owned by two members at once")
    return result


# ---------------------------------------------------------------------------------------------
# OffsetCommit: synchronous commits of explicit offsets by consumers that never subscribe
# (generation -1, as a standalone consumer commits), one group each.


def commits(k, secs):
    global phase
    phase = f"commit x{k}"
    say(f"{k} committer(s), {secs:.0f} s")
    consumers = []
    for i in range(k):
        conf = base_conf()
        conf.update({"group.id": f"bench-commit-{k}-{i}", "enable.auto.commit": False})
        consumers.append(Consumer(conf))
    latencies = [[] for _ in range(k)]
    failures = [None] * k
    start = threading.Barrier(k + 1)

    def run(i):
        c = consumers[i]
        partition = i % PARTITIONS
        offset = 0

        def commit_one():
            nonlocal offset
            offset += 1
            out = c.commit(offsets=[TopicPartition(TOPIC, partition, offset)], asynchronous=False)
            for tp in out or []:
                if tp.error is not None:
                    raise KafkaException(tp.error)

        try:
            # Warm-up: the coordinator found, the connection made, the JIT (Kafka's) going.
            warm_until = time.monotonic() + 1.0
            while time.monotonic() < warm_until:
                commit_one()
        except Exception as e:
            failures[i] = f"{type(e).__name__}: {e}"
        start.wait()
        if failures[i]:
            return
        lat = latencies[i]
        try:
            end = time.perf_counter() + secs
            while True:
                t = time.perf_counter()
                if t >= end:
                    break
                commit_one()
                lat.append(time.perf_counter() - t)
        except Exception as e:
            failures[i] = f"{type(e).__name__}: {e}"

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(k)]
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    for t in threads:
        t.join(secs + 60)
    elapsed = time.perf_counter() - began
    for c in consumers:
        c.close()
    all_lat = sorted(x for lat in latencies for x in lat)
    errs = [f for f in failures if f]
    out = {"count": len(all_lat), "secs": elapsed, "per_sec": len(all_lat) / elapsed,
           "p50_ms": None, "p99_ms": None, "error": errs[0] if errs else None}
    if all_lat:
        out["p50_ms"] = 1000.0 * all_lat[len(all_lat) // 2]
        out["p99_ms"] = 1000.0 * all_lat[min(len(all_lat) - 1, int(len(all_lat) * 0.99))]
        say(f"{k} committer(s): {out['per_sec']:.0f} commits/s, p50 {out['p50_ms']:.2f} ms, "
            f"p99 {out['p99_ms']:.2f} ms" + (f" ({len(errs)} failed: {errs[0]})" if errs else ""))
    else:
        say(f"{k} committer(s) failed: {out['error']}")
    return out


def main():
    out = {"rebalance": {}, "commit": {}, "client_errors": []}
    try:
        create_topic()
        say(f"topic {TOPIC} with {PARTITIONS} partitions ready")
        groups = [f"bench-{p}" for p in args.protocols.split(",")]
        groups += [f"bench-commit-{k}-{i}" for k in (1, args.committers) for i in range(k)]
        warm_coordinators(groups)
        say("__consumer_offsets ready")
    except Exception as e:
        out["error"] = f"setting up: {type(e).__name__}: {e}"
        print(json.dumps(out), flush=True)
        return
    for protocol in args.protocols.split(","):
        out["rebalance"][protocol] = rebalances(protocol)
    for k in (1, args.committers):
        try:
            out["commit"][str(k)] = commits(k, args.commit_secs)
        except Exception as e:
            out["commit"][str(k)] = {"error": f"{type(e).__name__}: {e}"}
    try:
        out["offsets_topic"] = offsets_topic()
    except Exception as e:
        out["offsets_topic"] = None
        say(f"describing __consumer_offsets: {e}")
    seen = []
    for ph, e in client_errors:
        line = f"{ph}: {e}"
        if line not in seen:
            seen.append(line)
    out["client_errors"] = seen[:20]
    print(json.dumps(out), flush=True)


main()
# Members' threads are daemons: a consumer stuck in close does not hold the exit.
sys.stdout.flush()
