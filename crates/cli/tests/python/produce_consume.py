"""Produce keyed records with a stock client, then read them back through assigned
partitions (no consumer group) and check them against the producer's acknowledgements, as
crates/cli/tests/stock_data_plane.rs runs it. Validated against Apache Kafka 4.4.0.

usage: produce_consume.py --bootstrap HOST:PORT[,...] --topic T --client confluent|kafka-python
           [--acks all|1|0] [--count N] [--partitions P] [--replication-factor R]
           [--min-insync-replicas M] [--idempotence auto|true|false] [--allow-duplicates]
           [--rate RECORDS_PER_SECOND]

Steps:
  1. creates the topic (P partitions, RF R, min.insync.replicas M) unless it exists;
  2. produces N records, key "k-<i>", value "v-<i>" (i = 0..N-1), recording every
     acknowledgement (partition, offset, timestamp); prints "acked <n>" every 1000 acks so a
     test can kill brokers at chosen points; a record whose delivery fails fails the run;
  3. ListOffsets: earliest/latest per partition (confluent get_watermark_offsets,
     kafka-python beginning_offsets/end_offsets) must bracket the acknowledged offsets;
     offsets_for_times for timestamp 0, a middle record's timestamp and the far future;
  4. consumes every partition from the beginning with assign() (nothing committed) until
     every partition's end offset is reached, and checks: every acknowledged record was read
     at exactly its acknowledged partition and offset with its key and value; per partition,
     acknowledged records appear in the order they were produced (idempotent producers) and
     no value is read twice (unless --allow-duplicates: a non-idempotent producer that
     retries after a broker failure may legitimately write a record twice).
     With acks=0 there are no offsets: every value must be read once, in order per partition.

Prints one JSON summary line on stdout at the end ("ok": true), or exits 1 with
"FAILED: <reason>" as the last stdout line.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clients_common  # noqa: E402
from clients_common import SUMMARY, fail  # noqa: E402
from clients_common import say as progress  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--bootstrap", required=True)
p.add_argument("--topic", required=True)
p.add_argument("--client", choices=["confluent", "kafka-python"], required=True)
p.add_argument("--acks", choices=["all", "1", "0"], default="all")
p.add_argument("--count", type=int, default=10000)
p.add_argument("--partitions", type=int, default=3)
p.add_argument("--replication-factor", type=int, default=1)
p.add_argument("--min-insync-replicas", type=int, default=None)
p.add_argument("--idempotence", choices=["auto", "true", "false"], default="auto")
p.add_argument("--allow-duplicates", action="store_true")
p.add_argument("--rate", type=float, default=None,
               help="records per second at most (so a test can kill brokers mid-run)")
p.add_argument("--timeout", type=float, default=300.0, help="seconds for each phase")
args = p.parse_args()

SUMMARY.update({"client": args.client, "acks": args.acks, "count": args.count,
                "topic": args.topic})


def key(i):
    return f"k-{i}".encode()


def value(i):
    return f"v-{i}".encode()


def throttle(i, started):
    if args.rate:
        ahead = i / args.rate - (time.time() - started)
        if ahead > 0:
            time.sleep(ahead)


def seq_of(v):
    return int(v.decode()[2:])


# ---------------------------------------------------------------- topic
def create_topic():
    from confluent_kafka import admin as cadmin

    c = cadmin.AdminClient({"bootstrap.servers": args.bootstrap})
    config = {}
    if args.min_insync_replicas is not None:
        config["min.insync.replicas"] = str(args.min_insync_replicas)
    deadline = time.time() + args.timeout
    clients_common.create_topic(c, args.topic, args.partitions, args.replication_factor, config,
                                deadline)
    # Wait until every partition has a leader in the metadata.
    while True:
        md = c.list_topics(args.topic, timeout=10).topics.get(args.topic)
        if md and md.error is None and len(md.partitions) == args.partitions and all(
            pm.leader >= 0 for pm in md.partitions.values()
        ):
            return
        if time.time() > deadline:
            fail(f"{args.topic} has no leader for every partition: {md}")
        time.sleep(0.2)


def wait_until_led():
    # Metadata can name a leader before that broker serves the partition: Apache Kafka 4.4
    # answers NOT_LEADER_OR_FOLLOWER to a Produce just after CreateTopics (and with acks=0
    # closes the connection, silently losing the records; without idempotence a retry
    # reorders them). ListOffsets needs the same leader state, so wait until it answers.
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": args.bootstrap, "group.id": "produce-consume-probe"})
    deadline = time.time() + args.timeout
    for part in range(args.partitions):
        while True:
            try:
                c.get_watermark_offsets(TopicPartition(args.topic, part), timeout=5, cached=False)
                break
            except Exception as e:
                if time.time() > deadline:
                    fail(f"ListOffsets of {args.topic}/{part} still fails: {e}")
                time.sleep(0.2)
    c.close()


# ---------------------------------------------------------------- produce
acked = {}  # seq -> (partition, offset, timestamp)
errors = []


def produce_confluent():
    from confluent_kafka import Producer

    idem = args.idempotence == "true" or (args.idempotence == "auto" and args.acks == "all")
    conf = {
        "bootstrap.servers": args.bootstrap,
        "acks": args.acks,
        "enable.idempotence": idem,
        "linger.ms": 5,
        "delivery.timeout.ms": int(args.timeout * 1000),
    }
    SUMMARY["producer_config"] = {k: v for k, v in conf.items() if k != "bootstrap.servers"}
    producer = Producer(conf)

    def on_delivery(err, msg):
        seq = seq_of(msg.value())
        if err is not None:
            errors.append((seq, str(err)))
            return
        acked[seq] = (msg.partition(), msg.offset(), msg.timestamp()[1])
        if len(acked) % 1000 == 0:
            progress(f"acked {len(acked)}")

    started = time.time()
    for i in range(args.count):
        if args.rate:
            throttle(i, started)
            producer.poll(0)
        while True:
            try:
                producer.produce(args.topic, key=key(i), value=value(i), on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(args.timeout)
    if remaining:
        fail(f"{remaining} records still unacknowledged after {args.timeout} s")


def produce_kafka_python():
    from kafka import KafkaProducer

    conf = {"bootstrap_servers": args.bootstrap.split(","), "linger_ms": 5,
            "request_timeout_ms": 30000}
    if args.acks != "all":
        conf["acks"] = int(args.acks)  # turns kafka-python's default idempotence off
    if args.idempotence != "auto":
        conf["enable_idempotence"] = args.idempotence == "true"
    producer = KafkaProducer(**conf)
    SUMMARY["producer_config"] = {
        "acks": producer.config["acks"],
        "enable_idempotence": producer.config["enable_idempotence"],
    }
    futures = []
    started = time.time()
    for i in range(args.count):
        throttle(i, started)
        futures.append((i, producer.send(args.topic, key=key(i), value=value(i))))
    producer.flush(timeout=args.timeout)
    for i, f in futures:
        try:
            md = f.get(timeout=args.timeout)
        except Exception as e:
            errors.append((i, repr(e)))
            continue
        acked[i] = (md.partition, md.offset, md.timestamp)
        if len(acked) % 1000 == 0:
            progress(f"acked {len(acked)}")
    producer.close()


create_topic()
wait_until_led()
progress("topic ready")
started = time.time()
if args.client == "confluent":
    produce_confluent()
else:
    produce_kafka_python()
SUMMARY["produce_seconds"] = round(time.time() - started, 2)
if errors:
    fail(f"{len(errors)} deliveries failed, first {errors[:3]}")
if len(acked) != args.count:
    fail(f"{len(acked)} of {args.count} records acknowledged")
progress(f"produced {len(acked)}")

by_partition = {}
for seq, (part, off, ts) in acked.items():
    by_partition.setdefault(part, []).append((seq, off, ts))
for lst in by_partition.values():
    lst.sort()
if any(not 0 <= part < args.partitions for part in by_partition):
    fail(f"acknowledged partitions {sorted(by_partition)} outside 0..{args.partitions}")
with_offsets = args.acks != "0"
if with_offsets:
    for part, lst in by_partition.items():
        offs = [off for _, off, _ in lst]
        if len(set(offs)) != len(offs):
            fail(f"partition {part}: two records acknowledged at one offset")
        if any(o < 0 for o in offs):
            fail(f"partition {part}: an acknowledged offset is negative")


# ---------------------------------------------------------------- list offsets + consume
def check_list_offsets(low, high, times):
    """low/high: partition -> offset; times: partition -> list of (query ts, answered offset)."""
    SUMMARY["list_offsets"] = {str(part): [low[part], high[part]] for part in sorted(low)}
    for part in range(args.partitions):
        lst = by_partition.get(part, [])
        if low[part] != 0:
            fail(f"partition {part}: earliest offset {low[part]}, expected 0 on a new topic")
        if with_offsets and lst:
            top = max(off for _, off, _ in lst)
            if high[part] < top + 1:
                fail(f"partition {part}: latest offset {high[part]} but offset {top} was acknowledged")
            if not args.allow_duplicates and high[part] != len(lst):
                fail(f"partition {part}: latest offset {high[part]}, {len(lst)} records acknowledged")
        elif not lst and high[part] != 0:
            fail(f"partition {part}: nothing produced there but latest offset {high[part]}")


def wait_visible(watermarks):
    """(low, high) from `watermarks()`. With acks=all the high watermark covers every
    acknowledged offset at once (the leader answers only then). With acks=1 the leader
    answers before its followers copy the records and the high watermark, which ListOffsets
    "latest" and consumers see, moves only then; with acks=0 nothing says when the records are
    written. So for those, until the end offsets cover what was acknowledged (acks=1) or add
    up to the count produced (acks=0), or --timeout passes and the checks fail."""
    deadline = time.time() + args.timeout
    tops = {part: max(off for _, off, _ in lst) for part, lst in by_partition.items()} \
        if with_offsets else {}
    while True:
        low, high = watermarks()
        if args.acks == "all" or time.time() > deadline:
            return low, high
        if args.acks == "1" and all(high[part] > top for part, top in tops.items()):
            return low, high
        if args.acks == "0" and sum(high.values()) >= args.count:
            return low, high
        time.sleep(0.2)


def check_times(part, lst, zero, middle_ts, middle_answer, future):
    """offsets_for_times answers: ts 0 -> the first offset; a record's own timestamp -> at or
    before that record; the far future -> none."""
    if zero != 0:
        fail(f"partition {part}: offsets_for_times(0) = {zero}, expected 0")
    if with_offsets:
        middle_off = lst[len(lst) // 2][1]
        if middle_answer is None or middle_answer > middle_off:
            fail(f"partition {part}: offsets_for_times({middle_ts}) = {middle_answer}, "
                 f"the record acknowledged at {middle_off} has that timestamp")
    if future is not None:
        fail(f"partition {part}: offsets_for_times(far future) = {future}, expected none")


def check_offsets(watermarks, offsets_for_times):
    """The ListOffsets checks through one client: `watermarks()` -> (low, high) per
    partition; `offsets_for_times(part, timestamps)` -> the offsets answered for each
    timestamp (None: none). The high watermarks."""
    low, high = wait_visible(watermarks)
    check_list_offsets(low, high, None)
    far = int(time.time() * 1000) + 3600 * 1000
    for part, lst in sorted(by_partition.items()):
        mid_ts = lst[len(lst) // 2][2] if with_offsets else 0
        answers = offsets_for_times(part, (0, mid_ts, far))
        check_times(part, lst, answers[0], mid_ts, answers[1], answers[2])
    return high


def read_to_end(high, poll):
    """Calls `poll(read, done)` (which appends what it reads to read[partition] and adds the
    partitions read to their end offset in `high` to done) until every partition is done or
    --timeout passes; read."""
    read = {part: [] for part in range(args.partitions)}
    done = {part for part in range(args.partitions) if high[part] == 0}
    deadline = time.time() + args.timeout
    while len(done) < args.partitions:
        if time.time() > deadline:
            fail(f"consume: partitions {sorted(set(range(args.partitions)) - done)} not read "
                 f"to their end within {args.timeout} s")
        poll(read, done)
    return read


def consume_confluent():
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING

    conf = {
        "bootstrap.servers": args.bootstrap,
        # confluent-kafka insists on a group.id even for assign(); nothing is ever committed.
        "group.id": f"produce-consume-check-{args.topic}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": True,
    }
    c = Consumer(conf)

    def watermarks():
        low, high = {}, {}
        for part in range(args.partitions):
            low[part], high[part] = c.get_watermark_offsets(
                TopicPartition(args.topic, part), timeout=30, cached=False)
        return low, high

    def offsets_for_times(part, timestamps):
        q = [TopicPartition(args.topic, part, ts) for ts in timestamps]
        r = [c.offsets_for_times([tp], timeout=30)[0] for tp in q]
        for tp in r:
            if tp.error is not None:
                fail(f"offsets_for_times partition {part}: {tp.error}")
        return [r[0].offset] + [tp.offset if tp.offset >= 0 else None for tp in r[1:]]

    high = check_offsets(watermarks, offsets_for_times)
    c.assign([TopicPartition(args.topic, part, OFFSET_BEGINNING) for part in range(args.partitions)])

    def entry(msg):
        return (msg.offset(), msg.key(), msg.value(), msg.timestamp()[1])

    read = read_to_end(high, lambda read, done: clients_common.poll_to_end(
        c, read, done, high, entry))
    c.close()
    return read


def consume_kafka_python():
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=args.bootstrap.split(","), enable_auto_commit=False,
                      auto_offset_reset="earliest", group_id=None)
    tps = [TopicPartition(args.topic, part) for part in range(args.partitions)]

    def watermarks():
        low = {tp.partition: o for tp, o in c.beginning_offsets(tps).items()}
        high = {tp.partition: o for tp, o in c.end_offsets(tps).items()}
        return low, high

    def offsets_for_times(part, timestamps):
        tp = TopicPartition(args.topic, part)
        answers = []
        for ts in timestamps:
            r = c.offsets_for_times({tp: ts})[tp]
            answers.append(None if r is None else r.offset)
        return answers

    high = check_offsets(watermarks, offsets_for_times)
    c.assign(tps)
    c.seek_to_beginning(*tps)

    def poll(read, done):
        for tp, msgs in c.poll(timeout_ms=1000).items():
            for m in msgs:
                read[tp.partition].append((m.offset, m.key, m.value, m.timestamp))
            if c.position(tp) >= high[tp.partition]:
                done.add(tp.partition)

    read = read_to_end(high, poll)
    c.close()
    return read


started = time.time()
read = consume_confluent() if args.client == "confluent" else consume_kafka_python()
SUMMARY["consume_seconds"] = round(time.time() - started, 2)

# ---------------------------------------------------------------- check
seen = {}  # seq -> list of (partition, offset)
for part, msgs in read.items():
    offs = [m[0] for m in msgs]
    if offs != sorted(offs) or len(set(offs)) != len(offs):
        fail(f"partition {part}: offsets read out of order or twice")
    for off, k, v, ts in msgs:
        try:
            seq = seq_of(v)
        except Exception:
            fail(f"partition {part} offset {off}: unexpected value {v!r}")
        if k != key(seq):
            fail(f"partition {part} offset {off}: key {k!r} with value {v!r}")
        seen.setdefault(seq, []).append((part, off))

duplicates = {seq: where for seq, where in seen.items() if len(where) > 1}
SUMMARY["read"] = sum(len(m) for m in read.values())
SUMMARY["duplicates"] = len(duplicates)
if duplicates and not args.allow_duplicates:
    fail(f"{len(duplicates)} values read twice, e.g. {sorted(duplicates.items())[:3]}")
missing = [seq for seq in range(args.count) if seq not in seen]
if missing:
    fail(f"{len(missing)} acknowledged records never read, e.g. {missing[:5]} "
         f"(acked at {[acked[s][:2] for s in missing[:5]]})")
if with_offsets:
    for seq, (part, off, _) in acked.items():
        if (part, off) not in seen[seq]:
            fail(f"record {seq} acknowledged at {part}/{off} but read at {seen[seq]}")
ordered = True
for part, msgs in read.items():
    # First occurrence of each value, in offset order: sequence numbers must increase.
    firsts, got = [], set()
    for off, k, v, ts in msgs:
        s = seq_of(v)
        if s not in got:
            got.add(s)
            firsts.append(s)
    if firsts != sorted(firsts):
        ordered = False
        # Only an idempotent producer keeps order across retries (a non-idempotent one
        # with several requests in flight may reorder on a retriable error).
        idem = SUMMARY["producer_config"].get("enable.idempotence",
                                              SUMMARY["producer_config"].get("enable_idempotence"))
        if idem or args.acks == "0":
            bad = next(i for i in range(1, len(firsts)) if firsts[i] < firsts[i - 1])
            fail(f"partition {part}: produced order broken at {firsts[bad - 1]} then {firsts[bad]}")
SUMMARY["ordered"] = ordered
SUMMARY["acked_per_partition"] = {str(p): len(l) for p, l in sorted(by_partition.items())}
SUMMARY["ok"] = True
print(json.dumps(SUMMARY), flush=True)
