"""Transactional produce figures with a stock client (confluent-kafka), run by
`cargo xtask bench txn` (txn.rs) against one running cluster; see txn.rs for what is measured
and why.

usage: txn.py <bootstrap> [--secs S] [--warm-secs S] [--per-txn N] [--size B] [--log FILE]

Progress goes to stderr, librdkafka's own log to --log, and one JSON line to stdout:
  {"txn": {"records": n, "txns": t, "aborts": a, "secs": s, "records_per_sec": r,
           "txns_per_sec": x, "commit_p50_ms": .., "commit_p99_ms": .., "error": null},
   "plain": {"records": n, "secs": s, "records_per_sec": r, "error": null},
   "e2e": {"txn": {"count": n, "expected": m, "p50_ms": .., "p99_ms": .., "max_ms": ..},
           "plain": {...}},
   "txn_state_topic": {"partitions": 10, "replicas": 3, "isr": 3} | null,
   "client_errors": ["...", ...]}
A phase that fails has "error" set (and the figures it got before); a setup failure sets the
top-level "error".
"""

import argparse
import json
import logging
import os
import struct
import sys
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "txnbench"
PARTITIONS = 3
TXN_ID = "txnbench-producer"

ap = argparse.ArgumentParser()
ap.add_argument("bootstrap")
ap.add_argument("--secs", type=float, default=20.0)
ap.add_argument("--warm-secs", type=float, default=3.0)
ap.add_argument("--per-txn", type=int, default=100)
ap.add_argument("--size", type=int, default=1024)
ap.add_argument("--log", default="/dev/null")
args = ap.parse_args()

log_handler = logging.FileHandler(args.log)
log_handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
rdlog = logging.getLogger("librdkafka")
rdlog.addHandler(log_handler)
rdlog.setLevel(logging.DEBUG)
rdlog.propagate = False

client_errors = []  # (phase, message)
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
    if os.environ.get("TXN_BENCH_DEBUG"):  # librdkafka's debug contexts, as "eos,protocol"
        conf["debug"] = os.environ["TXN_BENCH_DEBUG"]
    return conf


# ---------------------------------------------------------------------------------------------
# Records: a phase tag, the produce time (perf_counter, one process) and a sequence number,
# padded to --size bytes.

HEADER = struct.Struct(">cdQ")
PAD = b"x" * max(0, args.size - HEADER.size)
# Tags: warm-up, the transactional run, the non-transactional run.
WARM, TXN, PLAIN = b"W", b"T", b"P"


def record(tag, seq):
    return HEADER.pack(tag, time.perf_counter(), seq) + PAD


def produce(p, tag, seq):
    """One record, waiting for room in the client's queue when it is full."""
    while True:
        try:
            p.produce(TOPIC, value=record(tag, seq))
            return
        except BufferError:
            p.poll(0.005)


# ---------------------------------------------------------------------------------------------
# The topic and the transaction state topic.


def create_topic():
    admin = AdminClient(base_conf())
    topic = NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})
    for f in admin.create_topics([topic], operation_timeout=30).values():
        try:
            f.result(60)
        except KafkaException as e:
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise
    deadline = time.time() + 60
    while True:
        md = admin.list_topics(TOPIC, timeout=10)
        t = md.topics.get(TOPIC)
        if t is not None and t.error is None and len(t.partitions) == PARTITIONS and all(
            p.leader >= 0 and p.error is None and len(p.isrs) == 3
            for p in t.partitions.values()
        ):
            return
        if time.time() > deadline:
            raise RuntimeError(f"topic {TOPIC} not ready: {t}")
        time.sleep(0.2)


def txn_state_topic():
    """__transaction_state as Metadata shows it: partitions, and the fewest replicas and ISR of
    any partition."""
    md = AdminClient(base_conf()).list_topics("__transaction_state", timeout=10)
    t = md.topics.get("__transaction_state")
    if t is None or t.error is not None or not t.partitions:
        return None
    ps = t.partitions.values()
    return {"partitions": len(t.partitions), "replicas": min(len(p.replicas) for p in ps),
            "isr": min(len(p.isrs) for p in ps)}


# ---------------------------------------------------------------------------------------------
# The read_committed consumer: every partition of the new topic from its start, in a thread
# of its own; it keeps the latency of every record by the tag it carries.


class Reader(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True, name="reader")
        conf = base_conf()
        conf.update({
            "group.id": "txnbench-reader",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        })
        self.consumer = Consumer(conf)
        self.consumer.assign(
            [TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        self.latencies = {WARM: [], TXN: [], PLAIN: []}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.failure = None

    def count(self, tag):
        with self.lock:
            return len(self.latencies[tag])

    def run(self):
        c = self.consumer
        try:
            while not self.stop.is_set():
                msgs = c.consume(1000, 0.05)
                now = time.perf_counter()
                got = {WARM: [], TXN: [], PLAIN: []}
                for m in msgs:
                    if m.error():
                        on_error(m.error())
                        continue
                    tag, sent, _ = HEADER.unpack_from(m.value())
                    got[tag].append(now - sent)
                with self.lock:
                    for tag, lat in got.items():
                        self.latencies[tag].extend(lat)
        except Exception as e:
            self.failure = f"{type(e).__name__}: {e}"
            rdlog.error("reader: %s", self.failure)
        finally:
            c.close()

    def wait_for(self, tag, expected, timeout=15.0):
        """Until the reader has seen `expected` records of `tag` (or `timeout` s more)."""
        deadline = time.monotonic() + timeout
        while self.count(tag) < expected and time.monotonic() < deadline and self.is_alive():
            time.sleep(0.05)


def percentiles(xs, expected):
    xs = sorted(xs)
    out = {"count": len(xs), "expected": expected, "p50_ms": None, "p99_ms": None,
           "max_ms": None}
    if xs:
        out["p50_ms"] = 1000.0 * xs[len(xs) // 2]
        out["p99_ms"] = 1000.0 * xs[min(len(xs) - 1, int(len(xs) * 0.99))]
        out["max_ms"] = 1000.0 * xs[-1]
    return out


# ---------------------------------------------------------------------------------------------
# The producers.


def init_transactional():
    """The transactional producer, InitProducerId retried while it fails retriably: the first
    one creates __transaction_state and loads its partitions (not timed)."""
    conf = base_conf()
    conf.update({"transactional.id": TXN_ID, "acks": "all"})
    p = Producer(conf)
    deadline = time.monotonic() + 90
    while True:
        try:
            p.init_transactions(30)
            return p
        except KafkaException as e:
            err = e.args[0]
            if time.monotonic() > deadline or not err.retriable():
                raise RuntimeError(f"init_transactions: {err}") from None
            say(f"init_transactions: {err}; retrying")
            time.sleep(0.5)


def transactions(p, tag, secs):
    """Transactions of --per-txn records, one after another for `secs`: the records committed,
    the transactions, the aborted ones, the commit_transaction() times, and the elapsed time."""
    out = {"records": 0, "txns": 0, "aborts": 0, "commit_s": [], "secs": 0.0, "error": None}
    seq = 0
    began = time.perf_counter()
    end = began + secs
    try:
        while time.perf_counter() < end:
            p.begin_transaction()
            for _ in range(args.per_txn):
                produce(p, tag, seq)
                seq += 1
            t = time.perf_counter()
            try:
                p.commit_transaction(60)
            except KafkaException as e:
                err = e.args[0]
                say(f"commit_transaction: {err}")
                client_errors.append((phase, f"commit_transaction: {err}"))
                if err.txn_requires_abort():
                    p.abort_transaction(60)
                    out["aborts"] += 1
                    continue
                if err.retriable():
                    p.commit_transaction(60)
                else:
                    raise
            out["commit_s"].append(time.perf_counter() - t)
            out["records"] += args.per_txn
            out["txns"] += 1
    except Exception as e:
        out["error"] = f"{type(e).__name__}: {e}"
        say(f"transactions failed: {out['error']}")
    out["secs"] = time.perf_counter() - began
    return out


def plain(p, tag, secs):
    """Records produced as fast as the client takes them for `secs`, then flushed: the records
    and the time until the last was acknowledged."""
    out = {"records": 0, "secs": 0.0, "error": None}
    failed = [0]

    def delivered(err, _msg):
        if err is not None:
            failed[0] += 1
            if failed[0] <= 5:
                on_error(err)

    seq = 0
    began = time.perf_counter()
    end = began + secs
    try:
        while time.perf_counter() < end:
            # The clock read once per 100 records, as a transaction's worth.
            for _ in range(args.per_txn):
                while True:
                    try:
                        p.produce(TOPIC, value=record(tag, seq), on_delivery=delivered)
                        break
                    except BufferError:
                        p.poll(0.005)
                seq += 1
            p.poll(0)
        left = p.flush(60)
        if left:
            out["error"] = f"{left} records not delivered 60 s after the run"
    except Exception as e:
        out["error"] = f"{type(e).__name__}: {e}"
    out["secs"] = time.perf_counter() - began
    out["records"] = seq - failed[0]
    if failed[0] and not out["error"]:
        out["error"] = f"{failed[0]} records failed"
    return out


def summary(run):
    s = run["secs"] or 1.0
    out = {k: v for k, v in run.items() if k != "commit_s"}
    out["records_per_sec"] = run["records"] / s
    if "txns" in run:
        out["txns_per_sec"] = run["txns"] / s
        lat = sorted(run["commit_s"])
        out["commit_p50_ms"] = 1000.0 * lat[len(lat) // 2] if lat else None
        out["commit_p99_ms"] = (1000.0 * lat[min(len(lat) - 1, int(len(lat) * 0.99))]
                                if lat else None)
    return out


def main():
    global phase
    out = {"txn": None, "plain": None, "e2e": {}, "client_errors": []}
    reader = None
    try:
        create_topic()
        say(f"topic {TOPIC}: {PARTITIONS} partitions, RF 3, min.insync.replicas=2")
        t0 = time.monotonic()
        txn_producer = init_transactional()
        say(f"InitProducerId done in {time.monotonic() - t0:.1f} s (__transaction_state ready)")
        reader = Reader()
        reader.start()
        conf = base_conf()
        conf.update({"enable.idempotence": True, "acks": "all"})
        plain_producer = Producer(conf)
        # Warm-up, neither timed: transactions (AddPartitionsToTxn to each partition, the
        # coordinator's log, Kafka's JIT), then the idempotent producer's InitProducerId and a
        # burst of records, until the reader has seen some of both.
        phase = "warm-up"
        warm = transactions(txn_producer, WARM, args.warm_secs)
        if warm["error"]:
            raise RuntimeError(f"warm-up transactions: {warm['error']}")
        warm_plain = plain(plain_producer, WARM, min(args.warm_secs, 1.0))
        if warm_plain["error"]:
            raise RuntimeError(f"warm-up produce: {warm_plain['error']}")
        reader.wait_for(WARM, warm["records"] + warm_plain["records"], 30)
        seen = reader.count(WARM)
        if seen == 0:
            raise RuntimeError("the read_committed reader saw none of the warm-up records")
        say(f"warm-up: {warm['txns']} transactions, {warm_plain['records']} plain records; "
            f"reader saw {seen} of {warm['records'] + warm_plain['records']}")
    except Exception as e:
        out["error"] = f"setting up: {type(e).__name__}: {e}"
        if reader is not None:
            reader.stop.set()
        print(json.dumps(out), flush=True)
        return

    phase = "transactional"
    say(f"transactional: {args.per_txn} records of {args.size} B per transaction, {args.secs:g} s")
    txn = summary(transactions(txn_producer, TXN, args.secs))
    say(f"transactional: {txn['records_per_sec']:.0f} records/s, {txn['txns_per_sec']:.1f} "
        f"txns/s, commit p50 {txn['commit_p50_ms'] or 0:.1f} ms p99 "
        f"{txn['commit_p99_ms'] or 0:.1f} ms, {txn['aborts']} aborted")
    out["txn"] = txn
    reader.wait_for(TXN, txn["records"])
    out["e2e"]["txn"] = percentiles(reader.latencies[TXN], txn["records"])

    phase = "non-transactional"
    say(f"non-transactional (idempotent, acks=all): {args.secs:g} s")
    pl = summary(plain(plain_producer, PLAIN, args.secs))
    say(f"non-transactional: {pl['records_per_sec']:.0f} records/s"
        + (f" ({pl['error']})" if pl["error"] else ""))
    out["plain"] = pl
    reader.wait_for(PLAIN, pl["records"])
    out["e2e"]["plain"] = percentiles(reader.latencies[PLAIN], pl["records"])
    for name in ("txn", "plain"):
        e = out["e2e"][name]
        say(f"read_committed end-to-end, {name}: {e['count']} of {e['expected']} records seen, "
            f"p50 {e['p50_ms'] or 0:.1f} ms p99 {e['p99_ms'] or 0:.1f} ms")
    reader.stop.set()
    reader.join(15)
    if reader.failure:
        client_errors.append(("reader", reader.failure))
    phase = "closing"
    try:
        txn_producer.flush(10)
        plain_producer.flush(10)
    except Exception:
        pass
    try:
        out["txn_state_topic"] = txn_state_topic()
    except Exception as e:
        out["txn_state_topic"] = None
        say(f"describing __transaction_state: {e}")
    seen = []
    for ph, e in client_errors:
        line = f"{ph}: {e}"
        if line not in seen:
            seen.append(line)
    out["client_errors"] = seen[:20]
    print(json.dumps(out), flush=True)


main()
sys.stdout.flush()
