"""An idempotent confluent-kafka producer (enable.idempotence=true, acks=all) that writes
sequence-numbered values until told to stop, while a test kills brokers under it
(crates/cli/tests/stock_data_plane.rs); then it reads everything back through assigned
partitions (no consumer group) and checks it. Validated against Apache Kafka 4.4.0.

usage:
  idempotent_failover.py --bootstrap B --topic T [--partitions P] [--replication-factor R]
      [--min-insync-replicas M] [--stop-file PATH] [--max-records N] [--acked-file PATH]
      [--progress-every K] [--value-bytes N] [--client-config KEY=VALUE ...]
    Creates the topic unless it exists, prints "leaders {partition: broker}" and "started",
    then produces values "<run>.<seq>" (key "k-<seq % 100>"; <run> is unique per run, so
    records of earlier runs in the topic are ignored) with at most --in-flight records
    unacknowledged (padded with "." to --value-bytes, to fill a disk sooner), printing
    "acked <n>" every K acknowledgements. Stops on SIGTERM/SIGINT,
    when the stop file exists, or after --max-records; flushes; prints "stopped <n>"; then
    consumes every partition to its end and checks: no value read twice, every acknowledged
    value read at its acknowledged partition/offset, values in each partition in produced
    order, no delivery failed. Writes the acknowledgements to --acked-file if given.

  idempotent_failover.py --expect-not-enough-replicas --bootstrap B --topic T [--count N]
      [--acked-file PATH]
    With most replicas down: produces single records with acks=all (not idempotent,
    retries=0, so each delivery report carries the broker's error code) until a delivery
    fails with NOT_ENOUGH_REPLICAS (or --timeout passes), then --count more; reports every
    error code seen without failing on them. Exits 1 only if NOT_ENOUGH_REPLICAS never came.

  idempotent_failover.py --verify FILE[,FILE...] --bootstrap B --topic T
    Reads the topic and checks every acknowledgement in the files (written by --acked-file)
    is there at its partition/offset with its value: nothing acknowledged was lost.

--client-config settings (security.protocol, sasl.*, ssl.ca.location, ...) go to every
client the script makes.

Every mode prints one JSON summary line last ("ok": true), or "FAILED: <reason>" and exits 1.
"""

import argparse
import json
import os
import signal
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka import OFFSET_BEGINNING
from confluent_kafka import admin as cadmin

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clients_common  # noqa: E402
from clients_common import SUMMARY, fail, say  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--bootstrap", required=True)
p.add_argument("--topic", required=True)
p.add_argument("--partitions", type=int, default=1)
p.add_argument("--replication-factor", type=int, default=3)
p.add_argument("--min-insync-replicas", type=int, default=2)
p.add_argument("--stop-file")
p.add_argument("--max-records", type=int, default=None)
p.add_argument("--in-flight", type=int, default=2000)
p.add_argument("--progress-every", type=int, default=1000)
p.add_argument("--value-bytes", type=int, default=0)
p.add_argument("--acked-file")
p.add_argument("--expect-not-enough-replicas", action="store_true")
p.add_argument("--count", type=int, default=20)
p.add_argument("--client-config", action="append", default=[],
               help="KEY=VALUE for every client (security settings)")
p.add_argument("--verify")
p.add_argument("--timeout", type=float, default=120.0)
args = p.parse_args()
CLIENT = {"bootstrap.servers": args.bootstrap}
CLIENT.update(kv.split("=", 1) for kv in args.client_config)

SUMMARY["topic"] = args.topic
# Values are "<run>.<seq>": a run reads back its own records from a topic that earlier runs
# (or the other modes) also wrote to.
RUN = f"{int(time.time() * 1000):x}{os.getpid():x}"


def value(seq):
    v = f"{RUN}.{seq}"
    return (f"{v}.".ljust(args.value_bytes, ".") if args.value_bytes > len(v) else v).encode()


def own_seq(v):
    """The sequence number of one of this run's values, else None."""
    run, _, rest = v.decode(errors="replace").partition(".")
    return int(rest.split(".", 1)[0]) if run == RUN else None


def leaders():
    a = cadmin.AdminClient(dict(CLIENT))
    md = a.list_topics(args.topic, timeout=10).topics.get(args.topic)
    if md is None or md.error is not None:
        return None
    return {pid: pm.leader for pid, pm in sorted(md.partitions.items())}


def create_topic():
    a = cadmin.AdminClient(dict(CLIENT))
    deadline = time.time() + args.timeout
    clients_common.create_topic(a, args.topic, args.partitions, args.replication_factor,
                                {"min.insync.replicas": str(args.min_insync_replicas)}, deadline)
    # Until every partition's leader answers ListOffsets (metadata may name a leader before
    # it serves the partition).
    c = Consumer({**CLIENT, "group.id": "idempotent-failover-probe"})
    while True:
        try:
            ls = leaders()
            if ls and len(ls) == args.partitions and all(b >= 0 for b in ls.values()):
                for part in ls:
                    c.get_watermark_offsets(TopicPartition(args.topic, part), timeout=5, cached=False)
                break
        except KafkaException:
            pass
        if time.time() > deadline:
            fail(f"{args.topic}: partitions not all led within {args.timeout} s")
        time.sleep(0.2)
    c.close()


def consume_all(partitions):
    """Every record of `partitions`, read from the beginning to the end offset as of now:
    partition -> [(offset, key, value)]."""
    c = Consumer({
        **CLIENT,
        "group.id": f"idempotent-failover-check-{args.topic}",  # required; never committed
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
    })
    deadline = time.time() + args.timeout
    high = {}
    for part in partitions:
        while True:
            try:
                high[part] = c.get_watermark_offsets(
                    TopicPartition(args.topic, part), timeout=10, cached=False)[1]
                break
            except KafkaException as e:
                if time.time() > deadline:
                    fail(f"ListOffsets {args.topic}/{part}: {e}")
                time.sleep(0.5)
    SUMMARY["end_offsets"] = {str(k): v for k, v in high.items()}
    c.assign([TopicPartition(args.topic, part, OFFSET_BEGINNING) for part in partitions])
    read = {part: [] for part in partitions}
    done = {part for part in partitions if high[part] == 0}
    while len(done) < len(partitions):
        if time.time() > deadline:
            fail(f"consume: partitions {sorted(set(partitions) - done)} not read to their end "
                 f"{ {p: high[p] for p in partitions} } within {args.timeout} s "
                 f"(read { {p: len(r) for p, r in read.items()} })")
        clients_common.poll_to_end(
            c, read, done, high,
            lambda msg: (msg.offset(), msg.key(), msg.value()),
            skip=lambda err: err.retriable() or err.code() in (KafkaError._TRANSPORT,))
    c.close()
    return read


def write_acked(acked):
    if args.acked_file:
        with open(args.acked_file + ".tmp", "w") as f:
            json.dump([[v, part, off] for v, (part, off) in sorted(acked.items())], f)
        os.replace(args.acked_file + ".tmp", args.acked_file)


def check_acked_present(acked, read):
    """Every acknowledged value at its offset; one acknowledged without an offset (librdkafka's
    implicit acknowledgement: an idempotent producer whose answer for a batch was lost, told
    by a later batch's answer that the broker has it) anywhere in its partition. Values read
    twice are found by the caller."""
    at = {(part, off): v for part, msgs in read.items() for off, k, v in msgs}
    values = {part: {v for off, k, v in msgs} for part, msgs in read.items()}
    implicit = 0
    for v, (part, off) in sorted(acked.items()):
        if off is None or off < 0:
            implicit += 1
            if v.encode() not in values.get(part, set()):
                fail(f"value {v} acknowledged (without an offset) in partition {part}, "
                     f"not read there")
            continue
        got = at.get((part, off))
        if got != v.encode():
            fail(f"value {v} acknowledged at {part}/{off}, read there: {got!r}")
    SUMMARY["acked_without_offset"] = implicit


# ------------------------------------------------------------------ verify mode
if args.verify:
    acked = {}
    for path in args.verify.split(","):
        with open(path) as f:
            for v, part, off in json.load(f):
                acked[v] = (part, off)
    parts = sorted({part for part, _ in acked.values()}) or [0]
    read = consume_all(parts)
    check_acked_present(acked, read)
    SUMMARY.update(mode="verify", acked=len(acked), read=sum(len(r) for r in read.values()), ok=True)
    say(json.dumps(SUMMARY))
    sys.exit(0)

# ------------------------------------------------------------------ not-enough-replicas mode
if args.expect_not_enough_replicas:
    SUMMARY["mode"] = "expect-not-enough-replicas"
    producer = Producer({
        **CLIENT,
        "acks": "all",
        "enable.idempotence": False,
        "retries": 0,
        "request.timeout.ms": 5000,
        "message.timeout.ms": 10000,
        "linger.ms": 0,
    })
    codes = {}
    acked = {}

    def on_delivery(err, msg):
        if err is None:
            acked[msg.value().decode()] = (msg.partition(), msg.offset())
            codes["NO_ERROR"] = codes.get("NO_ERROR", 0) + 1
        else:
            codes[err.name()] = codes.get(err.name(), 0) + 1

    deadline = time.time() + args.timeout
    seq = 0
    extra = None  # records still to send once NOT_ENOUGH_REPLICAS was seen
    while extra is None or extra > 0:
        producer.produce(args.topic, key=b"ner", value=value(seq), on_delivery=on_delivery)
        seq += 1
        producer.flush(15)
        if extra is not None:
            extra -= 1
        elif "NOT_ENOUGH_REPLICAS" in codes:
            extra = args.count
            say("not enough replicas")
        elif time.time() > deadline:
            break
        else:
            time.sleep(0.2)
    SUMMARY["error_codes"] = codes
    SUMMARY["acked"] = len(acked)
    write_acked(acked)
    if "NOT_ENOUGH_REPLICAS" not in codes:
        fail(f"no NOT_ENOUGH_REPLICAS within {args.timeout} s; error codes {codes}")
    SUMMARY["ok"] = True
    say(json.dumps(SUMMARY))
    sys.exit(0)

# ------------------------------------------------------------------ idempotent failover mode
SUMMARY["mode"] = "idempotent"
create_topic()
say(f"leaders {json.dumps(leaders())}")
stop = False


def on_signal(signum, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)

acked = {}
failed = []
fatal = []


def on_delivery(err, msg):
    if err is not None:
        failed.append((msg.value().decode(), err.name()))
        if err.fatal():
            fatal.append(str(err))
        return
    acked[msg.value().decode()] = (msg.partition(), msg.offset())
    if len(acked) % args.progress_every == 0:
        say(f"acked {len(acked)}")


def on_error(err):
    if err.fatal():
        fatal.append(str(err))


producer = Producer({
    **CLIENT,
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 5,
    "delivery.timeout.ms": int(max(args.timeout, 60) * 1000),
    "error_cb": on_error,
})
say("started")
seq = 0
started = time.time()
while not stop:
    if args.max_records is not None and seq >= args.max_records:
        break
    if args.stop_file and seq % 100 == 0 and os.path.exists(args.stop_file):
        break
    if fatal:
        fail(f"fatal producer error: {fatal[0]}")
    if seq - len(acked) - len(failed) >= args.in_flight:
        producer.poll(0.05)
        continue
    try:
        producer.produce(args.topic, key=f"k-{seq % 100}".encode(), value=value(seq),
                         on_delivery=on_delivery)
        seq += 1
    except BufferError:
        producer.poll(0.05)
        continue
    producer.poll(0)
remaining = producer.flush(args.timeout)
SUMMARY.update(produced=seq, acked=len(acked), produce_seconds=round(time.time() - started, 2))
say(f"stopped {seq}")
write_acked(acked)
if fatal:
    fail(f"fatal producer error: {fatal[0]}")
if remaining:
    fail(f"{remaining} records unacknowledged {args.timeout} s after stopping")
if failed:
    fail(f"{len(failed)} deliveries failed, e.g. {failed[:3]}")

read = consume_all(list(range(args.partitions)))
SUMMARY["read"] = sum(len(r) for r in read.values())
seen = {}
foreign = 0
for part, msgs in read.items():
    last = -1
    for off, k, v in msgs:
        s = own_seq(v)
        if s is None:
            foreign += 1
            continue
        if s in seen:
            fail(f"value {s} read twice: at {seen[s]} and {part}/{off}")
        seen[s] = (part, off)
        if s <= last:
            fail(f"partition {part}: value {s} at offset {off} after value {last}")
        last = s
        if k != f"k-{s % 100}".encode():
            fail(f"partition {part} offset {off}: key {k!r} with value {s}")
check_acked_present(acked, read)
SUMMARY["other_runs_records"] = foreign
if any(s >= seq for s in seen):
    fail(f"read values never produced: {sorted(s for s in seen if s >= seq)[:5]}")
SUMMARY["ok"] = True
say(json.dumps(SUMMARY))
