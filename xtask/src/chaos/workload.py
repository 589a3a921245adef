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
  workload.py consume --bootstrap B --topic T --partitions P --out F --stop-file S
    Reads every partition from the beginning while the faults run, until S exists: {"p",
    "o", "v", "ms"} per record (read_uncommitted: up to the high watermark).
  workload.py read-all --bootstrap B --topic T --partitions P --out F [--timeout SECS]
    After the faults: {"end": {p: end offset}} then every record of every partition to that
    end offset, {"p", "o", "v"}; then {"done": true}. Exits 1 if it cannot read to the end.
"""

import argparse
import json
import os
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition

p = argparse.ArgumentParser()
p.add_argument("mode", choices=["produce", "consume", "read-all"])
p.add_argument("--bootstrap", required=True)
p.add_argument("--topic", required=True)
p.add_argument("--partitions", type=int, required=True)
p.add_argument("--out", required=True)
p.add_argument("--stop-file")
p.add_argument("--name", default="p")
p.add_argument("--idempotent", action="store_true")
p.add_argument("--rate", type=float, default=200.0)
p.add_argument("--timeout", type=float, default=120.0)
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


def consume():
    c = consumer({})
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


def read_all():
    c = consumer({"enable.partition.eof": True})
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


{"produce": produce, "consume": consume, "read-all": read_all}[args.mode]()
