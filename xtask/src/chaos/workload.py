"""The chaos harness's workload with a stock client (confluent-kafka, librdkafka), run by
xtask/src/chaos/workload.rs with the tests' venv. It only records what the client saw; the
harness's checker (checker.rs) judges it. Every mode writes one JSON object a line to --out,
flushed line by line, so a line is never lost when the harness stops it.

usage:
  workload.py produce --bootstrap B --topic T --partitions P --name N --out F --stop-file S
      [--idempotent] [--rate R]
    acks=all; with --idempotent enable.idempotence=true, else no idempotence and no retries
    (a record is sent once: acknowledged means written once). Values "<N>-<i>.<seq>", unique
    per run (<i> counts producer instances: a fatal error starts a new one), to partition
    seq % P, at most R a second. Lines: {"v", "p", "o", "ms"} per acknowledgement, {"fail",
    "err", "ms"} per failed delivery, {"fatal", "ms"} per fatal error; when S exists: flush,
    then {"done": true, "produced", "unflushed"}. CHAOS_RDKAFKA_DEBUG in the environment sets
    librdkafka's `debug` (as "eos"): its log goes to the producer's .stderr.
  workload.py txn --bootstrap B --topic T --partitions P --name N --out F --stop-file S
      --seed SEED
    A transactional producer (transactional.id "chaos-<N>"), one transaction after another
    until S exists, each writing one record to each of 2..P partitions (which, and whether it
    then commits or aborts, drawn from SEED). Values "<N>-<i>.<t>.<k>" (<i> the producer
    instance, <t> the transaction, <k> the record). Lines: {"v", "p", "o", "ms"} per record
    the leader acknowledged, {"txn": "<N>-<i>.<t>", "records": [[v, p], ...], "intent":
    "commit"|"abort", "outcome": "committed"|"aborted"|"unknown", "err", "ms"} per
    transaction. A transaction's outcome is unknown when the producer failed in a way that
    leaves it open (a fatal error, or commit/abort retried until its deadline): a new
    instance then takes the transactional id over, and its InitProducerId ends the old
    transaction one way or the other. At the end {"done": true, "txns"}.
  workload.py cycles --bootstrap B --topic T --partitions P --name N --out F --stop-file S
      --seed SEED [--rate R]
    One of several concurrent transactional writers (transactional.id "chaos-cycles-<N>") in
    Elle's list-append shape: the partitions are the keys, a partition's log order the list.
    Each transaction (about R / 50 a second) first, two times in three, READS 1..2 partitions
    with a read_committed consumer of its own (positions kept across transactions, so what it
    has seen of a partition is always a prefix from offset 0): the last stable offset asked
    with ListOffsets, then polled to it; then appends one unique value "<N>-<i>.<t>.<k>" to
    each of 2..3 partitions, in a drawn order, each flushed (acknowledged) before the next
    after a drawn 0-40 ms, so that concurrent writers' transactions interleave; then commits
    (85 %) or aborts, as `txn` does. Lines: {"txn", "writer", "begin", "reads": [{"p",
    "from", "values": [[o, v]...], "to", "end", "complete"} or {"p", "failed"}], "writes":
    [[p, v, o, sent, acked]...] (o -1 if not acknowledged), "intent", "outcome", "err",
    "commit_sent", "ms"} per transaction (from/to: the consumer's position before and after
    the read; end: the last stable offset it read to, reached when complete); at the end
    {"done": true, "txns"}.
  workload.py pipeline --bootstrap B --topic T --partitions P --out F --stop-file S
      --output O --name N [--current-file C]
    A consume-transform-produce pipeline, exactly once as Kafka's transactions make it
    (KIP-98, KIP-447): a consumer in group "chaos-pipe" (read_committed, no auto commit)
    subscribed to T, and a transactional producer (transactional.id "chaos-pipe") that
    writes, for each record read, "<p>:<o>:<v>|<N>/<i>/<n>" to partition p of O (<i> the
    producer instance, <n> the transaction: which transaction wrote it) and commits the
    consumer's positions with send_offsets_to_transaction in the same transaction. After an
    abort, or a transaction of unknown outcome (then a new producer instance takes the id
    over; also when send_offsets_to_transaction or the commit blocks past a bound, which
    librdkafka's can), the consumer goes back to the group's committed offsets, so the
    aborted batch is read again. Several processes may run it (the harness's zombie steps,
    `--zombie`): C names the one the harness started last; a process that is not it and
    whose transaction failed with a fencing error (a fatal one: PRODUCER_FENCED and the
    like) exits instead of taking the id back. Lines: {"init": i, "ms"} when producer
    instance i's InitProducerId succeeded; {"batch": n, "pi": i, "begun", "inputs",
    "outcome": "committed"|"aborted"|"unknown", "err", "ms"} per transaction (begun: when
    begin_transaction was called); {"fenced": err, "ms"} before such an exit; when S exists
    {"done": true, "committed": {p: offset}}, the group's committed offsets as the
    coordinator then answers (read_committed's require_stable: none pending).
  workload.py consume --bootstrap B --topic T --partitions P --out F --stop-file S
      [--read-committed]
    Reads every partition from the beginning while the faults run, until S exists: {"p",
    "o", "v", "ms"} per record (read_uncommitted: up to the high watermark; with
    --read-committed, committed transactions' records up to the last stable offset).
  workload.py member --bootstrap B --topic T --partitions P --name N --out F --stop-file S
      --group G --protocol classic|consumer [--resumed-file R]
    A consumer group member (group.id G; group.protocol=consumer, or classic with Kafka's
    default eager assignors and session.timeout.ms=10000) subscribed to T until S exists,
    committing what it consumed (synchronously, with explicit offsets: the next offset of each
    partition it holds) about once a second and before a partition is revoked. A member
    that finds R (the harness writes it as it resumes the member from a SIGSTOP, `--zombie`)
    deletes it and commits at once what it holds, before it polls and so before its callbacks
    can tell it the partitions were lost: a zombie's late commit, which the coordinator must
    refuse if the member's session expired. R holds when the pause began (Unix ms). Lines: {"held": [p...], "ms"} after every assignment change
    (assign, revoke, lost; [] when it closes), {"commit": [[p, o]...], "failed": [[p, o,
    err]...], "sent", "ms"} per commit (sent: when it was called, ms: when it returned; a
    request that failed as a whole has every offset in "failed"; "late": true for the
    commit after a pause), {"paused": from, "ms"} when it finds R, then {"done": true}.
  workload.py meta --bootstrap B --topic T --partitions P --out F --stop-file S
    Metadata operations while the faults run, one at a time, about two a second, until S
    exists, in turn: creates topic "T-meta-<i>" (1 partition, RF 3), deletes every other one
    it created, sets T's retention.ms to a value of its own (IncrementalAlterConfigs);
    creates an ACL (User:T-<j> allowed to READ the literal topic "T-acl-<j>", any host;
    CreateAcls), deletes every other one it created (DeleteAcls with that binding as the
    filter); sets client id "T-quota"'s producer_byte_rate to a value of its own
    (AlterClientQuotas, with kafka-python's protocol classes: confluent-kafka 2.16 has no
    quota calls); and sets the cluster-wide default of the brokers' log.retention.ms
    (IncrementalAlterConfigs of the BROKER resource ""). The AdminClient is confluent-kafka's
    except for the quotas. Lines: {"op": "create"|"delete"|"config"|"create_acl"|
    "delete_acl"|"quota"|"config_broker", "topic", "value" (the config's or quota's value,
    the ACL as "<principal>|<topic>"), "outcome": "ok" or the error's name, "sent", "ms"} per
    operation (sent: when it was called, ms: when its result came), then {"done": true}. An
    outcome other than "ok" is unknown to the checker: the operation may still have been
    applied.
  workload.py reassign --bootstrap B --topic T --partitions P --out F --stop-file S --seed SEED
      --broker-ids 4,5,6,7 [--also T2...]
    Partition reassignments with kafka-python's KafkaAdminClient (AlterPartitionReassignments,
    ListPartitionReassignments; confluent-kafka has no such call) while the faults run, one
    move at a time until S exists: a partition of T (or of an --also topic) drawn from SEED,
    its replicas as Metadata shows them, one of them replaced by a broker of --broker-ids
    outside them (the replication factor kept, the order drawn), then ListPartitionReassignments
    every 0.5 s until the partition is no longer reassigning; 30 % of the moves are cancelled
    after a drawn 0-3 s if still pending, and any move still pending after 30 s is cancelled
    (a target broker down). Lines: {"initial": {topic: {p: replicas}}} first (the cluster is
    whole then); {"op": "alter"|"cancel", "topic", "p", "target" (alter), "seen" (the
    replicas the move started from), "why" (cancel: "drawn"|"stalled"), "outcome": "ok" or
    the error's name, "code" (the partition's error code when the controller answered with
    one, else null), "sent", "ms"} per request; {"completed", "topic", "p", "replicas", "ms"}
    when a move is seen no longer reassigning (not a cancel), {"list_failed", "ms"} when a
    listing failed; then {"done": true}. A request left pending when S appears stays so: the
    cluster must complete it as it heals.
  workload.py groups --bootstrap B --topic T --partitions P --out F --group G:N... --timeout S
    After the faults: ListGroups and DescribeGroups (ConsumerGroupDescribe for
    group.protocol=consumer groups) until every group G is listed, Stable, with N members and
    every partition of T assigned to exactly one of them. Lines: {"groups": {...}, "ms"} per
    attempt that differs from the one before, then {"stable": true|false, "ms"}; exits 0.
  workload.py read-all --bootstrap B --topic T --partitions P --out F [--timeout SECS]
      [--read-committed]
    After the faults: {"end": {p: end offset}} then every record of every partition to that
    end offset, {"p", "o", "v"}; then {"done": true}. Exits 1 if it cannot read to the end;
    with --read-committed it writes {"stuck": {p: position}} instead (a last stable offset
    that does not reach the end: a transaction left open) and exits 0.
"""

import argparse
import json
import os
import random
import sys
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation,
                                  AclPermissionType, AdminClient, AlterConfigOpType, ConfigEntry,
                                  ConfigResource, NewTopic, ResourcePatternType, ResourceType)

p = argparse.ArgumentParser()
p.add_argument("mode", choices=["produce", "txn", "cycles", "pipeline", "consume", "member",
                               "meta", "reassign", "groups", "read-all"])
p.add_argument("--bootstrap", required=True)
p.add_argument("--topic", required=True)
p.add_argument("--partitions", type=int, required=True)
p.add_argument("--out", required=True)
p.add_argument("--stop-file")
p.add_argument("--name", default="p")
p.add_argument("--idempotent", action="store_true")
p.add_argument("--rate", type=float, default=200.0)
p.add_argument("--timeout", type=float, default=120.0)
p.add_argument("--seed", type=int, default=1)
p.add_argument("--read-committed", action="store_true")
p.add_argument("--group", action="append", default=[])
p.add_argument("--protocol", choices=["classic", "consumer"], default="classic")
p.add_argument("--output")
p.add_argument("--broker-ids")
p.add_argument("--also", action="append", default=[])
p.add_argument("--current-file")
p.add_argument("--resumed-file")
args = p.parse_args()

out = open(args.out, "w", buffering=1)


def now_ms():
    return int(time.time() * 1000)


def emit(obj):
    out.write(json.dumps(obj, separators=(",", ":")) + "\n")


def stopped():
    return args.stop_file is not None and os.path.exists(args.stop_file)


def produce():
    instance = 0
    fatal = []

    def on_error(err):
        if err.fatal():
            fatal.append(str(err))

    def on_delivery(err, msg):
        v = msg.value().decode()
        if err is not None:
            emit({"fail": v, "err": err.name(), "ms": now_ms()})
        else:
            emit({"v": v, "p": msg.partition(), "o": msg.offset(), "ms": now_ms()})

    def new_producer():
        conf = {
            "bootstrap.servers": args.bootstrap,
            "acks": "all",
            "enable.idempotence": args.idempotent,
            "linger.ms": 5,
            "message.timeout.ms": 30000,
            "request.timeout.ms": 10000,
            "error_cb": on_error,
        }
        if not args.idempotent:
            conf["message.send.max.retries"] = 0
        # librdkafka's own debug contexts (as "eos,msg") into the producer's .stderr.
        if os.environ.get("CHAOS_RDKAFKA_DEBUG"):
            conf["debug"] = os.environ["CHAOS_RDKAFKA_DEBUG"]
        return Producer(conf)

    producer = new_producer()
    seq = 0
    started = time.time()
    while not stopped():
        if fatal:
            emit({"fatal": fatal[0], "ms": now_ms()})
            fatal.clear()
            producer.purge()
            producer.flush(10)
            instance += 1
            producer = new_producer()
        # At most --rate records a second, so the workload leaves the nodes CPU.
        if seq > (time.time() - started) * args.rate:
            producer.poll(0.01)
            continue
        v = f"{args.name}-{instance}.{seq}"
        try:
            producer.produce(args.topic, value=v.encode(), partition=seq % args.partitions,
                             on_delivery=on_delivery)
            seq += 1
        except BufferError:
            producer.poll(0.05)
            continue
        producer.poll(0)
    unflushed = producer.flush(60)
    if fatal:
        emit({"fatal": fatal[0], "ms": now_ms()})
    emit({"done": True, "produced": seq, "unflushed": unflushed})


def transactional_producer(transactional_id):
    """A transactional producer whose InitProducerId succeeded: it ends the previous
    instance's open transaction (committing one whose commit was already decided, aborting
    any other) before this one begins. Retried until it succeeds (a fatal error needs a new
    producer object), or the run stops."""
    def on_error(err):
        # Without an error callback confluent-kafka raises a fatal error from poll(); the
        # transactional calls report it where it decides an outcome.
        if err.fatal():
            emit({"fatal": str(err), "ms": now_ms()})

    conf = {
        "bootstrap.servers": args.bootstrap,
        "transactional.id": transactional_id,
        "error_cb": on_error,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 5,
        "message.timeout.ms": 30000,
        "request.timeout.ms": 10000,
        "transaction.timeout.ms": 30000,
    }
    if os.environ.get("CHAOS_RDKAFKA_DEBUG"):
        conf["debug"] = os.environ["CHAOS_RDKAFKA_DEBUG"]
    while True:
        producer = Producer(conf)
        while True:
            try:
                producer.init_transactions(30)
                return producer
            except KafkaException as e:
                emit({"init_failed": str(e), "ms": now_ms()})
                if stopped():
                    return producer
                if e.args[0].fatal():
                    break
                time.sleep(0.5)


def end_transaction(call):
    """Runs commit_transaction or abort_transaction until it is done or no retry helps:
    "done", "abortable", or "unknown" (with the error)."""
    deadline = time.time() + 60
    while True:
        try:
            call(10)
            return "done", None
        except KafkaException as e:
            err = e.args[0]
            if err.txn_requires_abort():
                return "abortable", err.name()
            if err.retriable() and not err.fatal() and time.time() < deadline:
                continue
            return "unknown", err.name()


def settle(producer, commit, error):
    """Commits (or aborts) the open transaction, aborting it if the commit turns abortable:
    its outcome as the client knows it, "committed", "aborted" or "unknown", and the first
    error met."""
    state, err = end_transaction(producer.commit_transaction if commit
                                 else producer.abort_transaction)
    error = error or err
    if state == "done":
        return ("committed" if commit else "aborted"), error
    if state == "abortable":
        state, err = end_transaction(producer.abort_transaction)
        return ("aborted" if state == "done" else "unknown"), error or err
    return "unknown", error


def conclude(producer, commit, outcome, error):
    """settle()s the open transaction unless its outcome is already known (unknown after a
    fatal error), then polls for a fatal error raised again: the outcome as the client knows
    it and the first error met."""
    if outcome is None:
        outcome, error = settle(producer, commit, error)
    try:
        producer.poll(0)
    except KafkaException:
        # A fatal error, raised again from poll(): the outcome above already says so.
        outcome = "unknown" if outcome != "committed" else outcome
    return outcome, error


def retire(producer):
    """Lets go of a producer whose transaction's outcome is unknown: a new instance takes
    the transactional id over (its InitProducerId fences this one and ends the open
    transaction), so the run goes on."""
    try:
        producer.flush(1)
    except KafkaException:
        pass


def paced(interval):
    """Yields at most once every interval seconds, until the stop file exists."""
    next_start = time.time()
    while not stopped():
        time.sleep(max(0.0, next_start - time.time()))
        next_start = max(next_start + interval, time.time())
        yield


def send(producer, topic, value, part, on_delivery):
    """producer.produce, waiting for room in its queue."""
    while True:
        try:
            producer.produce(topic, value=value.encode(), partition=part,
                             on_delivery=on_delivery)
            return
        except BufferError:
            producer.poll(0.05)


def txn():
    rng = random.Random(args.seed)
    instance = 0
    t = 0

    def on_delivery(err, msg):
        if err is None:
            emit({"v": msg.value().decode(), "p": msg.partition(), "o": msg.offset(),
                  "ms": now_ms()})

    def new_producer():
        return transactional_producer(f"chaos-{args.name}")

    producer = new_producer()
    # At most --rate / 20 transactions a second (10 by default): each costs the coordinator
    # a few writes and markers on every partition it touched.
    for _ in paced(20.0 / args.rate):
        tid = f"{args.name}-{instance}.{t}"
        count = rng.randint(2, args.partitions)
        partitions = sorted(rng.sample(range(args.partitions), count))
        intent = "commit" if rng.random() < 0.7 else "abort"
        records = [[f"{tid}.{k}", part] for k, part in enumerate(partitions)]
        t += 1
        outcome, error = None, None
        try:
            producer.begin_transaction()
            for v, part in records:
                send(producer, args.topic, v, part, on_delivery)
            producer.poll(0)
        except KafkaException as e:
            error = e.args[0].name()
            if e.args[0].fatal():
                outcome = "unknown"
        outcome, error = conclude(producer, intent == "commit" and error is None, outcome,
                                  error)
        emit({"txn": tid, "records": records, "intent": intent, "outcome": outcome,
              "err": error, "ms": now_ms()})
        if outcome == "unknown":
            retire(producer)
            instance += 1
            t = 0
            producer = new_producer()
    emit({"done": True, "txns": t, "instance": instance})


def cycles():
    """A transactional writer whose transactions read some partitions (read_committed) and
    then append to others: the history Elle's list-append checker needs (cycles_checker.rs)."""
    rng = random.Random(f"{args.seed}-{args.name}")
    instance = 0
    t = 0
    reader = consumer({"isolation.level": "read_committed", "enable.partition.eof": True})
    # The next offset to read of each partition: the reader has seen every committed record
    # below it.
    position = {part: 0 for part in range(args.partitions)}

    def read(parts):
        """Reads each of parts from its position to its last stable offset as of now."""
        reads, ends = [], {}
        for part in parts:
            try:
                ends[part] = reader.get_watermark_offsets(
                    TopicPartition(args.topic, part), timeout=5, cached=False)[1]
            except KafkaException as e:
                reads.append({"p": part, "failed": e.args[0].name()})
        if not ends:
            return reads
        got = {part: {"p": part, "from": position[part], "values": [], "end": end}
               for part, end in ends.items()}
        reader.assign([TopicPartition(args.topic, part, position[part]) for part in ends])
        pending = {part for part, end in ends.items() if position[part] < end}
        deadline = time.time() + 10
        while pending and time.time() < deadline:
            msg = reader.poll(0.2)
            if msg is None or msg.partition() not in got:
                continue
            part = msg.partition()
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    # The fetch position at the end: past the markers too.
                    position[part] = max(position[part], msg.offset())
            else:
                got[part]["values"].append([msg.offset(), msg.value().decode(errors="replace")])
                position[part] = msg.offset() + 1
            if position[part] >= ends[part]:
                pending.discard(part)
        reader.unassign()
        for part, r in got.items():
            r["to"] = position[part]
            r["complete"] = part not in pending
            reads.append(r)
        return reads

    def new_producer():
        return transactional_producer(f"chaos-cycles-{args.name}")

    producer = new_producer()
    for _ in paced(50.0 / args.rate):
        tid = f"{args.name}-{instance}.{t}"
        t += 1
        parts = list(range(args.partitions))
        writes_to = rng.sample(parts, rng.randint(2, min(3, args.partitions)))
        reads_of = rng.sample(parts, rng.randint(1, 2)) if rng.random() < 2 / 3 else []
        intent = "commit" if rng.random() < 0.85 else "abort"
        pauses = [rng.uniform(0.0, 0.04) for _ in writes_to]
        begin = now_ms()
        reads = read(sorted(reads_of))
        writes = []
        outcome, error = None, None
        try:
            producer.begin_transaction()
            for k, part in enumerate(writes_to):
                v = f"{tid}.{k}"
                acked = {}

                def on_delivery(err, msg, acked=acked):
                    acked["o"] = msg.offset() if err is None else -1
                    acked["err"] = err.name() if err is not None else None
                    acked["ms"] = now_ms()

                sent = now_ms()
                send(producer, args.topic, v, part, on_delivery)
                # Acknowledged before the next append (or the commit): the log order of
                # concurrent writers' appends follows their send and acknowledgement times.
                producer.flush(30)
                writes.append([part, v, acked.get("o", -1), sent, acked.get("ms", now_ms())])
                if acked.get("err"):
                    error = acked["err"]
                    break
                time.sleep(pauses[k])
        except KafkaException as e:
            error = e.args[0].name()
            if e.args[0].fatal():
                outcome = "unknown"
        commit_sent = now_ms()
        outcome, error = conclude(producer, intent == "commit" and error is None, outcome,
                                  error)
        emit({"txn": tid, "writer": args.name, "begin": begin, "reads": reads,
              "writes": writes, "intent": intent, "outcome": outcome, "err": error,
              "commit_sent": commit_sent, "ms": now_ms()})
        if outcome == "unknown":
            retire(producer)
            instance += 1
            t = 0
            producer = new_producer()
    reader.close()
    emit({"done": True, "txns": t, "instance": instance})


def within(secs, call):
    """call()'s result, run in a thread; TimeoutError if it has not returned within secs.
    librdkafka's send_offsets_to_transaction can block past its own timeout when the group
    coordinator's broker went away (librdkafka issues 5456 and 5511: seen here after a kill
    -9 of the coordinator's broker, the pipeline stuck for minutes); the thread is then left
    behind with the producer it blocks in."""
    box = {}

    def run():
        try:
            box["ok"] = call()
        except BaseException as e:  # handed to the caller
            box["err"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(secs)
    if t.is_alive():
        raise TimeoutError
    if "err" in box:
        raise box["err"]
    return box.get("ok")


# The errors that say a newer producer or group member took over: the producer's epoch
# fenced (librdkafka's _FENCED for PRODUCER_FENCED, and what a fatal error leaves behind), or
# the consumer's generation (KIP-447's TxnOffsetCommit check).
FENCING = {"_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "_FATAL",
           "FENCED_INSTANCE_ID", "UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"}


def pipeline():
    c = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": "chaos-pipe",
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 10000,
    })
    c.subscribe([args.topic])

    def rewind():
        # Back to the group's committed offsets (the last committed transaction's), so that
        # what an aborted or unknown transaction read is read again.
        while not stopped():
            try:
                parts = c.assignment()
                if not parts:
                    return
                for tp in c.committed(parts, timeout=10):
                    tp.offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
                    c.seek(tp)
                return
            except KafkaException as e:
                emit({"rewind_failed": str(e), "ms": now_ms()})
                time.sleep(0.5)

    def superseded():
        """Whether the harness has started another pipeline process since this one."""
        try:
            with open(args.current_file) as f:
                return f.read().strip() != args.name
        except (OSError, TypeError):
            return False

    pi = 0

    def new_producer():
        producer = transactional_producer("chaos-pipe")
        if not stopped():
            emit({"init": pi, "ms": now_ms()})
        return producer

    producer = new_producer()
    n = 0
    while not stopped():
        try:
            msgs = [m for m in c.consume(num_messages=500, timeout=0.5) if not m.error()]
        except KafkaException as e:
            emit({"consume_failed": str(e), "ms": now_ms()})
            continue
        if not msgs:
            continue
        n += 1
        outcome, error = None, None
        begun = now_ms()
        tag = f"{args.name}/{pi}/{n}"
        try:
            producer.begin_transaction()
            for m in msgs:
                value = (f"{m.partition()}:{m.offset()}:{m.value().decode(errors='replace')}"
                         f"|{tag}")
                while True:
                    try:
                        producer.produce(args.output, value=value.encode(),
                                         partition=m.partition())
                        break
                    except BufferError:
                        producer.poll(0.05)
            # The next offset of every partition it holds and has read from (a partition
            # not read yet has no position).
            positions = [tp for tp in c.position(c.assignment()) if tp.offset >= 0]
            meta = c.consumer_group_metadata()
            within(45, lambda: producer.send_offsets_to_transaction(positions, meta, 30))
        except KafkaException as e:
            error = e.args[0].name()
            if e.args[0].fatal():
                outcome = "unknown"
        except TimeoutError:
            error, outcome = "send_offsets_to_transaction blocked for 45 s", "unknown"
        if outcome is None:
            try:
                outcome, error = within(150, lambda: settle(producer, error is None, error))
            except TimeoutError:
                error, outcome = "ending the transaction blocked for 150 s", "unknown"
        emit({"batch": n, "pi": pi, "begun": begun, "inputs": len(msgs), "outcome": outcome,
              "err": error, "ms": now_ms()})
        if outcome != "committed" and (outcome == "unknown" or error in FENCING) \
                and superseded():
            # A zombie: a newer process holds the transactional id and the group. Taking the
            # id back would fence that one in turn; an application stops here.
            emit({"fenced": error, "ms": now_ms()})
            out.flush()
            os._exit(0)
        if outcome == "unknown":
            # A new instance takes the transactional id over: its InitProducerId fences the
            # old one (maybe still blocked in a call) and ends its open transaction.
            pi += 1
            producer = new_producer()
        if outcome != "committed":
            rewind()
    committed = {}
    deadline = time.time() + 30
    while time.time() < deadline and len(committed) < args.partitions:
        try:
            for tp in c.committed([TopicPartition(args.topic, part)
                                   for part in range(args.partitions)], timeout=10):
                committed[str(tp.partition)] = tp.offset
        except KafkaException as e:
            emit({"committed_failed": str(e), "ms": now_ms()})
            time.sleep(0.5)
    emit({"done": True, "committed": committed})
    c.close()
    # Not the interpreter's exit: a producer left blocked in a call (`within`) could hold it.
    os._exit(0)


def consumer(extra):
    conf = {
        "bootstrap.servers": args.bootstrap,
        "group.id": f"chaos-{os.getpid()}",  # required by the client; never committed
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
    }
    conf.update(extra)
    return Consumer(conf)


def isolation():
    return {"isolation.level": "read_committed" if args.read_committed else "read_uncommitted"}


def consume():
    c = consumer(isolation())
    c.assign([TopicPartition(args.topic, part, OFFSET_BEGINNING)
              for part in range(args.partitions)])
    while not stopped():
        msg = c.poll(0.5)
        if msg is None or msg.error():
            continue
        emit({"p": msg.partition(), "o": msg.offset(), "v": msg.value().decode(errors="replace"),
              "ms": now_ms()})
    c.close()
    emit({"done": True})


def member():
    held = set()
    # The next offset to commit per held partition: what this member consumed. Forgotten
    # when the partition goes, so that a partition assigned again starts from the group's
    # committed offset, never from this member's stale position.
    positions = {}

    def note_held():
        emit({"held": sorted(held), "ms": now_ms()})

    def commit(parts, late=False):
        offsets = [TopicPartition(args.topic, part, positions[part]) for part in sorted(parts)
                   if part in positions]
        if not offsets:
            return
        sent = now_ms()
        extra = {"late": True} if late else {}
        try:
            result = c.commit(offsets=offsets, asynchronous=False)
        except KafkaException as e:
            emit({"commit": [], "failed": [[tp.partition, tp.offset, e.args[0].name()]
                                           for tp in offsets], "sent": sent, "ms": now_ms(),
                  **extra})
            return
        emit({"commit": [[tp.partition, tp.offset] for tp in result if tp.error is None],
              "failed": [[tp.partition, tp.offset, tp.error.name()] for tp in result
                         if tp.error is not None],
              "sent": sent, "ms": now_ms(), **extra})

    # group.protocol=consumer assigns incrementally; the classic protocol with Kafka's
    # default assignors (range, roundrobin) eagerly: the whole assignment each time.
    incremental = args.protocol == "consumer"

    def on_assign(consumer, partitions):
        if incremental:
            held.update(tp.partition for tp in partitions)
            consumer.incremental_assign(partitions)
        else:
            held.clear()
            held.update(tp.partition for tp in partitions)
            consumer.assign(partitions)
        note_held()

    def on_revoke(consumer, partitions):
        gone = {tp.partition for tp in partitions}
        commit(gone & held)
        release(consumer, partitions, gone)

    def on_lost(consumer, partitions):
        # Lost, not revoked: another member may hold them already; no commit.
        release(consumer, partitions, {tp.partition for tp in partitions})

    def release(consumer, partitions, gone):
        held.difference_update(gone)
        for part in gone:
            positions.pop(part, None)
        if incremental:
            consumer.incremental_unassign(partitions)
        else:
            consumer.unassign()
        note_held()

    conf = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group[0],
        "client.id": args.name,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    if args.protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf["session.timeout.ms"] = 10000
        conf["heartbeat.interval.ms"] = 1000
    c = Consumer(conf)
    c.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    last_commit = time.time()
    while not stopped():
        if args.resumed_file and os.path.exists(args.resumed_file):
            # Paused and resumed: commit what it holds before anything tells it otherwise.
            with open(args.resumed_file) as f:
                paused = int(f.read().strip() or 0)
            os.remove(args.resumed_file)
            emit({"paused": paused, "ms": now_ms()})
            commit(set(held), late=True)
            last_commit = time.time()
        try:
            msg = c.poll(0.2)
        except KafkaException as e:
            emit({"error": str(e), "ms": now_ms()})
            continue
        if msg is not None and not msg.error() and msg.partition() in held:
            positions[msg.partition()] = msg.offset() + 1
        if time.time() - last_commit >= 1.0:
            commit(set(held))
            last_commit = time.time()
    commit(set(held))
    c.close()
    held.clear()
    note_held()
    emit({"done": True})


def meta():
    """Topic creations, deletions and config changes, ACLs created and deleted, a client
    quota and a broker default changed, each result recorded."""
    admin = AdminClient({"bootstrap.servers": args.bootstrap})

    def outcome(future):
        try:
            future.result(timeout=40)
            return "ok"
        except KafkaException as e:
            return e.args[0].name() if e.args and hasattr(e.args[0], "name") else str(e)
        except Exception as e:  # the future's own timeout
            return type(e).__name__

    def acl(j):
        return AclBinding(ResourceType.TOPIC, f"{args.topic}-acl-{j}", ResourcePatternType.LITERAL,
                          f"User:{args.topic}-{j}", "*", AclOperation.READ,
                          AclPermissionType.ALLOW)

    def set_config(resource_type, name, key, value):
        resource = ConfigResource(resource_type, name, incremental_configs=[
            ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
        fs = admin.incremental_alter_configs([resource], request_timeout=30)
        return outcome(list(fs.values())[0])

    def kafka_python(request, error_code):
        """Sends `request` to any broker with kafka-python's protocol classes and its admin
        client's connection manager (a client per call: one left pointing at a broker the
        faults took away is not reused): "ok", or the error."""
        from kafka import KafkaAdminClient
        client = None
        try:
            client = KafkaAdminClient(bootstrap_servers=args.bootstrap.split(","),
                                      client_id="chaos-meta", request_timeout_ms=30000)
            code = error_code(client._manager.run(client._manager.send, request))
            return "ok" if code == 0 else f"error code {code}"
        except Exception as e:  # no broker, a timeout, a connection lost
            return type(e).__name__
        finally:
            if client is not None:
                try:
                    client.close()
                except Exception:
                    pass

    def set_quota(value):
        """AlterClientQuotas of client id "<T>-quota" (confluent-kafka has no quota calls)."""
        from kafka.protocol.admin import AlterClientQuotasRequest as Alter
        request = Alter(entries=[Alter.EntryData(
            entity=[Alter.EntryData.EntityData(entity_type="client-id",
                                               entity_name=f"{args.topic}-quota")],
            ops=[Alter.EntryData.OpData(key="producer_byte_rate", value=float(value),
                                        remove=False)])], validate_only=False)
        return kafka_python(request, lambda r: r.entries[0].error_code)

    def set_broker_default(key, value):
        """IncrementalAlterConfigs of the BROKER resource "" (the cluster-wide default):
        librdkafka refuses a resource without a name, so kafka-python's request."""
        from kafka.protocol.admin import IncrementalAlterConfigsRequest as Alter
        resource = Alter.AlterConfigsResource(
            resource_type=4, resource_name="",
            configs=[Alter.AlterConfigsResource.AlterableConfig(
                name=key, config_operation=0, value=value)])  # 0: SET
        request = Alter(resources=[resource], validate_only=False)
        return kafka_python(request, lambda r: r.responses[0].error_code)

    i = 0
    created = []
    acls = 0
    while not stopped():
        sent = now_ms()
        step = i % 7
        line = None
        if step == 0:
            topic = f"{args.topic}-meta-{len(created)}"
            fs = admin.create_topics([NewTopic(topic, 1, 3)], request_timeout=30,
                                     operation_timeout=30)
            line = {"op": "create", "topic": topic, "outcome": outcome(fs[topic])}
            created.append(topic)
        elif step == 1 and len(created) % 2 == 1:
            topic = created[-1]
            fs = admin.delete_topics([topic], request_timeout=30, operation_timeout=30)
            line = {"op": "delete", "topic": topic, "outcome": outcome(fs[topic])}
        elif step == 2:
            value = str(7 * 24 * 3600 * 1000 + i)
            line = {"op": "config", "topic": args.topic, "value": value,
                    "outcome": set_config(ResourceType.TOPIC, args.topic, "retention.ms", value)}
        elif step == 3:
            binding = acl(acls)
            fs = admin.create_acls([binding], request_timeout=30)
            line = {"op": "create_acl", "value": f"{binding.principal}|{binding.name}",
                    "outcome": outcome(fs[binding])}
            acls += 1
        elif step == 4 and acls % 2 == 1:
            b = acl(acls - 1)
            binding = AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal,
                                       b.host, b.operation, b.permission_type)
            fs = admin.delete_acls([binding], request_timeout=30)
            line = {"op": "delete_acl", "value": f"{b.principal}|{b.name}",
                    "outcome": outcome(fs[binding])}
        elif step == 5:
            value = str(1_000_000_000 + i)
            line = {"op": "quota", "value": value, "outcome": set_quota(value)}
        elif step == 6:
            value = str(7 * 24 * 3600 * 1000 + i)
            line = {"op": "config_broker", "value": value,
                    "outcome": set_broker_default("log.retention.ms", value)}
        if line is not None:
            line.setdefault("topic", "")
            emit({**line, "sent": sent, "ms": now_ms()})
        i += 1
        time.sleep(0.3)
    emit({"done": True})


def reassign():
    """Partition reassignments, one move at a time, each request and its answer recorded."""
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KafkaTopicPartition

    rng = random.Random(args.seed)
    brokers = [int(b) for b in args.broker_ids.split(",")]
    topics = [args.topic] + args.also
    admin = None

    def client():
        # Built again after any failure: kafka-python's client may be left pointing at a
        # broker the faults took away.
        nonlocal admin
        while admin is None and not stopped():
            try:
                admin = KafkaAdminClient(bootstrap_servers=args.bootstrap.split(","),
                                         client_id="chaos-reassign", request_timeout_ms=15000)
            except Exception as e:  # NoBrokersAvailable and the like, during a fault
                emit({"client_failed": f"{type(e).__name__}: {e}", "ms": now_ms()})
                time.sleep(1)
        return admin

    def drop_client():
        nonlocal admin
        if admin is not None:
            try:
                admin.close()
            except Exception:
                pass
        admin = None

    def replicas_now():
        """{topic: {p: replicas}} from Metadata, or None."""
        try:
            described = client().describe_topics(topics)
        except Exception as e:
            emit({"describe_failed": f"{type(e).__name__}: {e}", "ms": now_ms()})
            drop_client()
            return None
        found = {}
        for t in described:
            if t["error_code"] != 0:
                return None
            found[t["name"]] = {str(part["partition_index"]): list(part["replica_nodes"])
                                for part in t["partitions"]}
        return found if len(found) == len(topics) else None

    def request(op, topic, part, target, extra):
        """One AlterPartitionReassignments of one partition (target None: cancel)."""
        c = client()
        if c is None:  # stopped while no broker answered: nothing sent
            return None
        sent = now_ms()
        tp = KafkaTopicPartition(topic, part)
        outcome, code = "ok", None
        try:
            result = c.alter_partition_reassignments({tp: target}, timeout_ms=15000)
            if tp not in result:
                outcome = "NotAnswered"
            elif result[tp] is not None:
                outcome, code = result[tp].__name__, result[tp].errno
        except Exception as e:  # a top-level error or the client's own timeout
            outcome = type(e).__name__
            drop_client()
        line = {"op": op, "topic": topic, "p": part, "outcome": outcome, "code": code,
                "sent": sent, "ms": now_ms()}
        line.update(extra)
        emit(line)
        return outcome

    while not stopped() and client() is not None:
        initial = replicas_now()
        if initial is not None:
            emit({"initial": initial, "ms": now_ms()})
            break
        time.sleep(1)
    while not stopped():
        time.sleep(rng.uniform(1.0, 4.0))
        topic = rng.choice(topics)
        part = rng.randrange(args.partitions)
        cancel_after = rng.uniform(0.0, 3.0) if rng.random() < 0.3 else None
        draws = (rng.random(), rng.random(), rng.random())
        if stopped():
            break
        seen = replicas_now()
        if seen is None:
            continue
        current = seen[topic][str(part)]
        outside = [b for b in brokers if b not in current]
        if not current or not outside:
            continue
        leaving = current[int(draws[0] * len(current))]
        target = [b for b in current if b != leaving] + [outside[int(draws[1] * len(outside))]]
        random.Random(draws[2]).shuffle(target)
        if request("alter", topic, part, target, {"target": target, "seen": current}) != "ok":
            continue
        started = time.time()
        tp = KafkaTopicPartition(topic, part)
        while not stopped():
            try:
                pending = tp in client().list_partition_reassignments([tp], timeout_ms=15000)
            except Exception as e:
                emit({"list_failed": f"{type(e).__name__}: {e}", "ms": now_ms()})
                drop_client()
                pending = True
            if not pending:
                now = replicas_now()
                emit({"completed": True, "topic": topic, "p": part, "target": target,
                      "replicas": now and now[topic][str(part)], "ms": now_ms()})
                break
            elapsed = time.time() - started
            why = ("drawn" if cancel_after is not None and elapsed >= cancel_after
                   else "stalled" if elapsed >= 30 else None)
            if why is not None:
                request("cancel", topic, part, None, {"why": why})
                break
            time.sleep(0.5)
    drop_client()
    emit({"done": True})


def groups():
    """Every --group G:N listed, Stable, N members, every partition assigned once."""
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    want = {g.rsplit(":", 1)[0]: int(g.rsplit(":", 1)[1]) for g in args.group}
    deadline = time.time() + args.timeout
    last = None
    while True:
        seen, ok = {}, True
        try:
            listed = {g.group_id for g in admin.list_consumer_groups(request_timeout=10)
                      .result(timeout=15).valid}
            described = admin.describe_consumer_groups(list(want), request_timeout=10)
            for group, future in described.items():
                d = future.result(timeout=15)
                owned = [tp.partition for m in d.members for tp in m.assignment.topic_partitions
                         if tp.topic == args.topic]
                seen[group] = {"listed": group in listed, "state": d.state.name,
                               "type": d.type.name, "members": len(d.members),
                               "assigned": sorted(owned)}
                ok = ok and group in listed and d.state.name == "STABLE" \
                    and len(d.members) == want[group] \
                    and sorted(owned) == list(range(args.partitions))
        except Exception as e:  # KafkaException, or a future's timeout
            seen, ok = {"error": str(e)}, False
        if seen != last:
            emit({"groups": seen, "ms": now_ms()})
            last = seen
        if ok or time.time() > deadline:
            emit({"stable": ok, "ms": now_ms()})
            return
        time.sleep(0.5)


def read_all():
    c = consumer({"enable.partition.eof": True, **isolation()})
    deadline = time.time() + args.timeout
    high = {}
    for part in range(args.partitions):
        while part not in high:
            try:
                high[part] = c.get_watermark_offsets(
                    TopicPartition(args.topic, part), timeout=10, cached=False)[1]
            except KafkaException as e:
                if time.time() > deadline:
                    print(f"ListOffsets {args.topic}/{part}: {e}", file=sys.stderr)
                    sys.exit(1)
                time.sleep(0.5)
    emit({"end": {str(k): v for k, v in high.items()}})
    c.assign([TopicPartition(args.topic, part, OFFSET_BEGINNING) for part in high])
    done = {part for part, end in high.items() if end == 0}
    while len(done) < len(high):
        if time.time() > deadline:
            if args.read_committed:
                stuck = {str(tp.partition): tp.offset for tp in c.position(
                    [TopicPartition(args.topic, part) for part in sorted(set(high) - done)])}
                emit({"stuck": stuck, "end": {str(k): v for k, v in high.items()}})
                c.close()
                return
            print(f"partitions {sorted(set(high) - done)} not read to their end {high}",
                  file=sys.stderr)
            sys.exit(1)
        msg = c.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                if msg.offset() >= high[msg.partition()]:
                    done.add(msg.partition())
            continue
        if msg.offset() < high[msg.partition()]:
            emit({"p": msg.partition(), "o": msg.offset(),
                  "v": msg.value().decode(errors="replace")})
        if msg.offset() + 1 >= high[msg.partition()]:
            done.add(msg.partition())
    c.close()
    emit({"done": True})


{"produce": produce, "txn": txn, "cycles": cycles, "pipeline": pipeline, "consume": consume,
 "member": member, "meta": meta, "reassign": reassign, "groups": groups,
 "read-all": read_all}[args.mode]()
