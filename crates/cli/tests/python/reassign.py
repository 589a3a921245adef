"""Partition reassignment with stock clients (driven by tests/stock_reassign.rs).

  reassign.py create BOOTSTRAP TOPIC ASSIGNMENT_JSON [MIN_ISR]
      creates TOPIC with a manual replica assignment ([[2,3],[3,2]] = partition 0 on 2 and
      3, ...) through confluent-kafka's admin client.
  reassign.py load BOOTSTRAP TOPIC STOP_FILE
      an idempotent acks=all producer and a consumer (assigned every partition from the
      start) run together until STOP_FILE exists; then the producer flushes and the consumer
      reads on until it has every acknowledged record. Prints the JSON summary and "all ok"
      when no acknowledged record is missing.
  reassign.py describe BOOTSTRAP TOPIC
      prints one line per partition: "<id> <replicas> <sorted isr> <leader>" (Metadata),
      lists comma-separated.
  reassign.py alter BOOTSTRAP TOPIC TARGET_JSON
      kafka-python's alter_partition_reassignments with {partition: replicas} (Kafka's
      tool refuses a target broker that is not alive; the API takes any registered one).
  reassign.py kafka-python BOOTSTRAP TOPIC
      kafka-python's KafkaAdminClient: alter_partition_reassignments moves partition 0 onto
      the replicas listed in Metadata's brokers not hosting it, list_partition_reassignments
      shows it until it completes; cancelling with none running and targeting an unknown
      broker give Kafka's errors. Prints "all ok".
"""

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import SUMMARY, fail, say  # noqa: E402


def create(bootstrap, topic, assignment, min_isr):
    from confluent_kafka import KafkaException
    from confluent_kafka import admin as cadmin

    admin = cadmin.AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.time() + 60
    while True:
        try:
            new = cadmin.NewTopic(
                topic,
                num_partitions=len(assignment),
                replica_assignment=assignment,
                config={"min.insync.replicas": str(min_isr)},
            )
            admin.create_topics([new], request_timeout=30)[topic].result()
            break
        except KafkaException as e:
            if time.time() > deadline:
                fail(f"creating {topic}: {e}")
            time.sleep(0.5)
    # Wait until every partition has a leader.
    while time.time() < deadline:
        md = admin.list_topics(topic, timeout=5).topics.get(topic)
        if md and not md.error and len(md.partitions) == len(assignment):
            if all(p.leader >= 0 for p in md.partitions.values()):
                say("all ok")
                return
        time.sleep(0.3)
    fail("partitions without a leader")


def load(bootstrap, topic, stop_file):
    from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

    admin_md = Producer({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    partitions = sorted(admin_md.topics[topic].partitions)
    acked = set()
    errors = []
    lock = threading.Lock()

    def delivered(err, msg):
        if err is not None:
            errors.append(str(err))
            return
        with lock:
            acked.add(msg.value())

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 120000,
        }
    )
    read = set()
    reading = threading.Event()
    reading.set()
    consumer_errors = []

    def consume():
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "reassign-reader",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        while reading.is_set():
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() != KafkaError._PARTITION_EOF and not msg.error().retriable():
                    consumer_errors.append(str(msg.error()))
                continue
            with lock:
                read.add(msg.value())
        consumer.close()

    reader = threading.Thread(target=consume)
    reader.start()
    n = 0
    announced = False
    started = time.time()
    while not os.path.exists(stop_file) and time.time() - started < 240:
        producer.produce(topic, value=b"r-%d" % n, partition=n % len(partitions),
                         on_delivery=delivered)
        n += 1
        producer.poll(0)
        if not announced and len(acked) >= 1000:
            announced = True
            say("acked 1000")
        if n % 50 == 0:
            time.sleep(0.01)
    remaining = producer.flush(120)
    SUMMARY.update({"sent": n, "acked": len(acked), "unflushed": remaining,
                    "delivery_errors": errors[:5]})
    deadline = time.time() + 60
    while time.time() < deadline:
        with lock:
            missing = acked - read
        if not missing:
            break
        time.sleep(0.2)
    reading.clear()
    reader.join()
    with lock:
        missing = sorted(acked - read)
    SUMMARY.update({"read": len(read), "missing": len(missing),
                    "missing_sample": [m.decode() for m in missing[:5]],
                    "consumer_errors": consumer_errors[:5]})
    if missing:
        fail(f"{len(missing)} acknowledged records never read")
    if len(acked) < 100:
        fail("too few records acknowledged to say anything")
    SUMMARY["ok"] = True
    print(json.dumps(SUMMARY), flush=True)
    say("all ok")


def describe(bootstrap, topic):
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    t = md.topics[topic]
    for p in sorted(t.partitions.values(), key=lambda p: p.id):
        print(p.id, ",".join(map(str, p.replicas)), ",".join(map(str, sorted(p.isrs))),
              p.leader, flush=True)


def kafka_python(bootstrap, topic):
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.errors import (InvalidReplicationAssignmentError,
                              NoReassignmentInProgressError)

    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","))
    tp = TopicPartition(topic, 0)
    cluster = admin.describe_cluster()
    brokers = sorted(b["broker_id"] for b in cluster["brokers"])

    def partition_zero():
        md = admin.describe_topics([topic])[0]
        return next(p for p in md["partitions"] if p["partition_index"] == 0)

    current = list(partition_zero()["replica_nodes"])
    spare = [b for b in brokers if b not in current]
    if not spare:
        fail(f"no broker outside {current} among {brokers}")
    target = [spare[0]] + current[1:]

    result = admin.alter_partition_reassignments({tp: None})
    if result.get(tp) is not NoReassignmentInProgressError:
        fail(f"cancel with none running: {result}")
    result = admin.alter_partition_reassignments({tp: [current[0], 999]})
    if result.get(tp) is not InvalidReplicationAssignmentError:
        fail(f"unknown broker 999: {result}")

    result = admin.alter_partition_reassignments({tp: target})
    if result.get(tp) is not None:
        fail(f"reassigning {tp} to {target}: {result}")
    say(f"moving {current} -> {target}")
    deadline = time.time() + 60
    while time.time() < deadline:
        ongoing = admin.list_partition_reassignments([tp])
        if tp not in ongoing:
            break
        time.sleep(0.2)
    else:
        fail(f"still reassigning: {ongoing}")
    while time.time() < deadline:
        p = partition_zero()
        if list(p["replica_nodes"]) == target and sorted(p["isr_nodes"]) == sorted(target):
            say("all ok")
            return
        time.sleep(0.2)
    fail(f"partition 0 is {p}, wanted replicas {target}")


def alter(bootstrap, topic, target):
    from kafka import KafkaAdminClient, TopicPartition

    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","))
    wanted = {TopicPartition(topic, int(p)): r for p, r in target.items()}
    result = admin.alter_partition_reassignments(wanted)
    failed = {str(tp): str(err) for tp, err in result.items() if err is not None}
    if failed or set(result) != set(wanted):
        fail(f"alter_partition_reassignments: {result}")
    say("all ok")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "create":
        create(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]),
               int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    elif mode == "load":
        load(sys.argv[2], sys.argv[3], sys.argv[4])
    elif mode == "describe":
        describe(sys.argv[2], sys.argv[3])
    elif mode == "alter":
        alter(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))
    elif mode == "kafka-python":
        kafka_python(sys.argv[2], sys.argv[3])
    else:
        fail(f"unknown mode {mode}")
