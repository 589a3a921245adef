"""Stock clients over SSL, as crates/cli/tests/stock_tls.rs runs them: the topic created
with confluent-kafka's admin client, keyed records produced with acks=all by the chosen
client and read back from the beginning by the same client, every one at its acknowledged
partition and offset. With --replication-factor R > 1, every partition's ISR must reach R
replicas (the followers fetch over the inter-broker listener). With --expect-refused, the
client must not get any metadata (a listener requiring a certificate it does not have). With --sasl MECHANISM:USER:PASSWORD the listener is
SASL_SSL: both clients log in with it over the TLS connection.

usage: ssl_clients.py --bootstrap HOST:PORT[,...] --ca CA.pem [--cert C.pem --key K.pem]
           [--sasl MECHANISM:USER:PASSWORD]
           --topic T --client confluent|kafka-python [--count N] [--partitions P]
           [--replication-factor R] [--expect-refused]

Prints "all ok" at the end, or exits 1 with "FAILED: <reason>" as the last stdout line.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clients_common  # noqa: E402
from clients_common import SUMMARY, fail, say  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--bootstrap", required=True)
p.add_argument("--ca", required=True)
p.add_argument("--cert")
p.add_argument("--key")
p.add_argument("--sasl")
p.add_argument("--topic", required=True)
p.add_argument("--client", choices=["confluent", "kafka-python"], required=True)
p.add_argument("--count", type=int, default=500)
p.add_argument("--partitions", type=int, default=2)
p.add_argument("--replication-factor", type=int, default=1)
p.add_argument("--expect-refused", action="store_true")
p.add_argument("--timeout", type=float, default=60.0)
args = p.parse_args()
SUMMARY.update({"client": args.client, "topic": args.topic})


def confluent_conf(**extra):
    conf = {
        "bootstrap.servers": args.bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": args.ca,
        # librdkafka's default since 2.0, spelled out: the certificate must name the host.
        "ssl.endpoint.identification.algorithm": "https",
    }
    if args.cert:
        conf["ssl.certificate.location"] = args.cert
        conf["ssl.key.location"] = args.key
    if args.sasl:
        mechanism, user, password = args.sasl.split(":", 2)
        conf.update({"security.protocol": "SASL_SSL", "sasl.mechanism": mechanism,
                     "sasl.username": user, "sasl.password": password})
    conf.update(extra)
    return conf


def kafka_python_conf(**extra):
    conf = {
        "bootstrap_servers": args.bootstrap.split(","),
        "security_protocol": "SSL",
        "ssl_cafile": args.ca,
        "ssl_check_hostname": True,
    }
    if args.cert:
        conf["ssl_certfile"] = args.cert
        conf["ssl_keyfile"] = args.key
    if args.sasl:
        mechanism, user, password = args.sasl.split(":", 2)
        conf.update(security_protocol="SASL_SSL", sasl_mechanism=mechanism,
                    sasl_plain_username=user, sasl_plain_password=password)
    conf.update(extra)
    return conf


def expect_refused():
    """No metadata, and a transport or SSL error reported (not merely a slow answer)."""
    deadline = time.time() + args.timeout
    if args.client == "confluent":
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        errors = []
        admin = AdminClient(confluent_conf(error_cb=lambda e: errors.append(e)))
        while not errors:
            try:
                md = admin.list_topics(timeout=1)
                fail(f"got metadata without an accepted client certificate: {md.brokers}")
            except KafkaException:
                pass
            admin.poll(0.2)  # serves error_cb
            if time.time() > deadline:
                fail("neither metadata nor an error")
        say(f"refused as expected: {errors[0]}")
    else:
        import logging
        import ssl

        from kafka import KafkaConsumer

        class Collect(logging.Handler):
            def emit(self, record):
                errors.append(record.getMessage())

        errors = []
        logging.getLogger("kafka").addHandler(Collect(logging.WARNING))
        from kafka.errors import KafkaConnectionError, KafkaTimeoutError

        try:
            c = KafkaConsumer(**kafka_python_conf(request_timeout_ms=10000,
                                                  bootstrap_timeout_ms=3000))
            topics = c.topics()
            fail(f"got metadata without an accepted client certificate: {topics}")
        except (KafkaConnectionError, KafkaTimeoutError, ssl.SSLError,
                ConnectionError) as e:
            # A refusal shows as connection errors (an alert, a closed socket), not silence.
            if not errors:
                fail(f"no connection error logged before {type(e).__name__}: {e}")
            say(f"refused as expected: {errors[:2]}")
    print("all ok", flush=True)
    sys.exit(0)


def create_topic(deadline):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(confluent_conf())
    clients_common.create_topic(admin, args.topic, args.partitions, args.replication_factor,
                                {}, deadline)
    while True:
        md = admin.list_topics(args.topic, timeout=10).topics.get(args.topic)
        if md and md.error is None and len(md.partitions) == args.partitions and all(
            pm.leader >= 0 for pm in md.partitions.values()
        ):
            return admin
        if time.time() > deadline:
            fail(f"{args.topic} has no leader for every partition: {md}")
        time.sleep(0.2)


def wait_for_isr(admin, deadline):
    while True:
        md = admin.list_topics(args.topic, timeout=10).topics[args.topic]
        isrs = {p: len(pm.isrs) for p, pm in md.partitions.items()}
        if all(n == args.replication_factor for n in isrs.values()):
            say(f"every partition's ISR has {args.replication_factor} replicas")
            return
        if time.time() > deadline:
            fail(f"ISR sizes {isrs}, expected {args.replication_factor}")
        time.sleep(0.2)


def produce(deadline):
    acked = {}
    if args.client == "confluent":
        from confluent_kafka import Producer

        producer = Producer(confluent_conf(**{"acks": "all", "linger.ms": 5}))
        errors = []

        def on_delivery(err, msg):
            if err is not None:
                errors.append(str(err))
            else:
                acked[int(msg.value()[2:])] = (msg.partition(), msg.offset())

        for i in range(args.count):
            producer.produce(args.topic, key=b"k-%d" % i, value=b"v-%d" % i,
                             on_delivery=on_delivery)
            producer.poll(0)
        if producer.flush(max(1.0, deadline - time.time())):
            fail("records still unacknowledged")
        if errors:
            fail(f"delivery failed: {errors[:3]}")
    else:
        from kafka import KafkaProducer

        producer = KafkaProducer(**kafka_python_conf(acks="all", linger_ms=5))
        futures = [(i, producer.send(args.topic, key=b"k-%d" % i, value=b"v-%d" % i))
                   for i in range(args.count)]
        producer.flush(timeout=max(1.0, deadline - time.time()))
        for i, f in futures:
            md = f.get(timeout=10)
            acked[i] = (md.partition, md.offset)
        producer.close()
    say(f"acked {len(acked)}")
    return acked


def consume(acked, deadline):
    expected = {pos: i for i, pos in acked.items()}
    seen = {}
    if args.client == "confluent":
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer(confluent_conf(**{"group.id": "ssl-clients", "enable.auto.commit": False}))
        c.assign([TopicPartition(args.topic, p, 0) for p in range(args.partitions)])
        while len(seen) < len(expected) and time.time() < deadline:
            msg = c.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                fail(f"consume: {msg.error()}")
            seen[(msg.partition(), msg.offset())] = int(msg.value()[2:])
        c.close()
    else:
        from kafka import KafkaConsumer, TopicPartition

        c = KafkaConsumer(**kafka_python_conf(enable_auto_commit=False))
        parts = [TopicPartition(args.topic, p) for p in range(args.partitions)]
        c.assign(parts)
        c.seek_to_beginning(*parts)
        while len(seen) < len(expected) and time.time() < deadline:
            for tp, records in c.poll(timeout_ms=1000).items():
                for r in records:
                    seen[(tp.partition, r.offset)] = int(r.value[2:])
        c.close()
    if seen != expected:
        missing = [pos for pos in expected if seen.get(pos) != expected[pos]]
        fail(f"read {len(seen)} of {len(expected)} records; first wrong: {missing[:5]}")
    say(f"read all {len(seen)} records back")


if args.expect_refused:
    expect_refused()
deadline = time.time() + args.timeout
admin = create_topic(deadline)
acked = produce(deadline)
if args.replication_factor > 1:
    wait_for_isr(admin, deadline)
consume(acked, deadline)
print("all ok", flush=True)
