"""SASL over a SASL_PLAINTEXT listener with the stock clients (stock_sasl.rs runs it).

    sasl.py logins <plaintext bootstrap> <sasl bootstrap>
        Creates SCRAM users with AlterUserScramCredentials over the PLAINTEXT listener (no
        restart), then confluent-kafka and kafka-python produce and consume over SASL with
        SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN (kafka-python also with the v0 handshake and
        raw tokens); a wrong password and an unknown user are refused with
        SASL_AUTHENTICATION_FAILED; a deleted credential stops new logins.

    sasl.py reauth <sasl bootstrap> <seconds>
        A confluent-kafka and a kafka-python producer and consumer keep working over SCRAM for
        <seconds> while the listener's sessions last connections.max.reauth.ms.

    sasl.py replicated <plaintext bootstrap>
        An acks=all produce to a topic replicated on two brokers, read back: the followers
        fetched over the SASL inter-broker listener.

    sasl.py sasl-ssl <sasl_ssl bootstrap> <CA PEM>
        Over a SASL_SSL listener only (no open listener; the TLS server verified against the
        CA): the admin that `kraftd format --add-scram` created (SCRAM-SHA-512, admin-secret)
        creates a topic and a SCRAM-SHA-256 user with AlterUserScramCredentials, no
        restart; confluent-kafka and kafka-python produce and consume as each (kafka-python
        also with the v0 handshake's raw tokens); a wrong password and an unknown user are
        refused with SASL_AUTHENTICATION_FAILED.

Prints "all ok" at the end; any failure exits 1 with "FAILED: <reason>".
"""

import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import create_topic, fail, say  # noqa: E402

from confluent_kafka import (  # noqa: E402
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka import admin as cadmin  # noqa: E402

FAILED_MESSAGE = (
    "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
)


# The CA of a SASL_SSL listener (sasl-ssl mode); None: SASL_PLAINTEXT.
SSL_CA = None


def confluent_sasl(bootstrap, mechanism, user, password):
    conf = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }
    if SSL_CA:
        conf.update({"security.protocol": "SASL_SSL", "ssl.ca.location": SSL_CA,
                     "ssl.endpoint.identification.algorithm": "https"})
    return conf


def kafka_python_sasl(bootstrap, mechanism, user, password, **extra):
    if SSL_CA:
        extra = dict(ssl_cafile=SSL_CA, ssl_check_hostname=True, **extra)
    return dict(
        bootstrap_servers=bootstrap,
        security_protocol="SASL_SSL" if SSL_CA else "SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=password,
        **extra,
    )


def confluent_round_trip(conf, topic, n=5, partitions=1):
    """Produces n fresh values with confluent-kafka and reads them back; raises on failure."""
    values = [f"c-{uuid.uuid4()}" for _ in range(n)]
    errors = []
    p = Producer({**conf, "acks": "all", "message.timeout.ms": 10000,
                  "error_cb": lambda e: errors.append(e)})
    delivered = []
    for v in values:
        p.produce(topic, v.encode(), on_delivery=lambda err, msg: delivered.append(err))
    p.flush(15)
    if len(delivered) != n or any(delivered):
        raise RuntimeError(f"delivery failed: {delivered} {errors}")
    c = Consumer({**conf, "group.id": f"g-{uuid.uuid4()}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    # Assigned, not subscribed: no group to join, so a round trip takes a second.
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    seen = set()
    deadline = time.time() + 20
    while not set(values) <= seen and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            seen.add(m.value().decode())
    c.close()
    if not set(values) <= seen:
        raise RuntimeError("consumer did not read back what was produced")


def kafka_python_round_trip(conf, topic, n=5):
    from kafka import KafkaConsumer, KafkaProducer

    values = [f"k-{uuid.uuid4()}" for _ in range(n)]
    p = KafkaProducer(acks="all", **conf)
    for v in values:
        p.send(topic, v.encode()).get(timeout=15)
    p.close()
    c = KafkaConsumer(topic, group_id=None, auto_offset_reset="earliest",
                      consumer_timeout_ms=1000, **conf)
    seen = set()
    deadline = time.time() + 20
    while not set(values) <= seen and time.time() < deadline:
        for m in c:
            seen.add(m.value.decode())
    c.close()
    if not set(values) <= seen:
        raise RuntimeError("consumer did not read back what was produced")


def retry(what, f, seconds=20):
    deadline = time.time() + seconds
    while True:
        try:
            return f()
        except Exception as e:  # noqa: BLE001
            if time.time() > deadline:
                fail(f"{what}: {e!r}")
            time.sleep(0.5)


def confluent_refusal(conf):
    """The errors a confluent-kafka admin client reports logging in with `conf`: served
    from poll until the authentication error shows (3 s at most), then from a metadata call
    (which succeeds if the login did)."""
    errors = []
    a = cadmin.AdminClient({**conf, "error_cb": lambda e: errors.append(e)})
    deadline = time.time() + 3
    while time.time() < deadline and not any(e.code() == KafkaError._AUTHENTICATION for e in errors):
        a.poll(0.05)
        try:
            a.list_topics(timeout=0.2)
            return errors  # logged in
        except KafkaException:
            pass
    return errors


def expect_confluent_refused(conf, mechanism, what):
    errors = confluent_refusal(conf)
    auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    if not auth:
        fail(f"{what}: confluent-kafka was not refused: {errors}")
    text = str(auth[0])
    if FAILED_MESSAGE.format(mechanism) not in text:
        fail(f"{what}: unexpected refusal: {text}")
    say(f"{what}: confluent-kafka refused ({auth[0].str()})")


def expect_kafka_python_refused(conf, mechanism, what):
    """kafka-python cannot bootstrap, and says why in its log: the server's refusal."""
    import logging

    from kafka import KafkaConsumer

    class Capture(logging.Handler):
        def __init__(self):
            super().__init__(logging.DEBUG)
            self.lines = []

        def emit(self, record):
            self.lines.append(record.getMessage())

    capture = Capture()
    logger = logging.getLogger("kafka")
    logger.addHandler(capture)
    logger.setLevel(logging.DEBUG)
    try:
        c = KafkaConsumer(request_timeout_ms=5000, bootstrap_timeout_ms=1500, **conf)
        c.topics()
        c.close()
        fail(f"{what}: kafka-python logged in")
    except Exception as e:  # noqa: BLE001
        seen = [line for line in capture.lines
                if "SaslAuthenticationFailed" in line and FAILED_MESSAGE.format(mechanism) in line]
        if not seen and FAILED_MESSAGE.format(mechanism) not in str(e):
            fail(f"{what}: kafka-python failed without the server's refusal: {e!r}; "
                 f"its log: {[line for line in capture.lines if 'ail' in line][:5]}")
        say(f"{what}: kafka-python refused ({(seen or [str(e)])[0]})")
    finally:
        logger.removeHandler(capture)
        logger.setLevel(logging.NOTSET)


def logins(plain_bootstrap, sasl_bootstrap):
    admin = cadmin.AdminClient({"bootstrap.servers": plain_bootstrap})
    topic = "sasl-topic"
    create_topic(admin, topic, 1, 1, {}, time.time() + 30)
    upserts = [
        cadmin.UserScramCredentialUpsertion(
            "carol", cadmin.ScramCredentialInfo(cadmin.ScramMechanism.SCRAM_SHA_256, 4096),
            b"carol-256"),
        cadmin.UserScramCredentialUpsertion(
            "erin", cadmin.ScramCredentialInfo(cadmin.ScramMechanism.SCRAM_SHA_512, 8192),
            b"erin-512"),
        cadmin.UserScramCredentialUpsertion(
            "dave", cadmin.ScramCredentialInfo(cadmin.ScramMechanism.SCRAM_SHA_256, 4096),
            b"dave-secret"),
    ]
    for user, f in admin.alter_user_scram_credentials(upserts).items():
        f.result()
    say("SCRAM users created over PLAINTEXT")

    cases = [
        ("SCRAM-SHA-256", "carol", "carol-256"),
        ("SCRAM-SHA-512", "erin", "erin-512"),
        ("PLAIN", "alice", "alice-secret"),
    ]
    for mechanism, user, password in cases:
        # The credential reaches the broker through the metadata log: retry until it has.
        retry(f"confluent-kafka {mechanism} as {user}",
              lambda: confluent_round_trip(confluent_sasl(sasl_bootstrap, mechanism, user, password), topic))
        say(f"confluent-kafka {mechanism} as {user}: produced and consumed")
        retry(f"kafka-python {mechanism} as {user}",
              lambda: kafka_python_round_trip(kafka_python_sasl(sasl_bootstrap, mechanism, user, password), topic))
        say(f"kafka-python {mechanism} as {user}: produced and consumed")
    # A 0.11-level client: SaslHandshake v0, then raw SASL tokens (Produce v3 still served).
    retry("kafka-python with the v0 handshake",
          lambda: kafka_python_round_trip(kafka_python_sasl(
              sasl_bootstrap, "SCRAM-SHA-256", "carol", "carol-256", api_version=(0, 11, 0)), topic))
    say("kafka-python with SaslHandshake v0 and raw tokens: produced and consumed")

    for mechanism, user, password, what in [
        ("SCRAM-SHA-256", "carol", "wrong", "wrong SCRAM password"),
        ("SCRAM-SHA-512", "carol", "carol-256", "no SHA-512 credential"),
        ("SCRAM-SHA-256", "nobody", "x", "unknown SCRAM user"),
        ("PLAIN", "alice", "wrong", "wrong PLAIN password"),
        ("PLAIN", "nobody", "x", "unknown PLAIN user"),
    ]:
        expect_confluent_refused(confluent_sasl(sasl_bootstrap, mechanism, user, password), mechanism, what)
        expect_kafka_python_refused(kafka_python_sasl(sasl_bootstrap, mechanism, user, password), mechanism, what)

    # A deleted credential stops new logins (once the broker has the deletion).
    dave = confluent_sasl(sasl_bootstrap, "SCRAM-SHA-256", "dave", "dave-secret")
    retry("dave logs in", lambda: confluent_round_trip(dave, topic, 1))
    deletion = cadmin.UserScramCredentialDeletion("dave", cadmin.ScramMechanism.SCRAM_SHA_256)
    admin.alter_user_scram_credentials([deletion])["dave"].result()
    deadline = time.time() + 20
    while not any(e.code() == KafkaError._AUTHENTICATION for e in confluent_refusal(dave)):
        if time.time() > deadline:
            fail("dave still logs in 20 s after his credential was deleted")
        time.sleep(0.3)
    expect_confluent_refused(dave, "SCRAM-SHA-256", "deleted credential")
    print("all ok", flush=True)


def reauth(sasl_bootstrap, seconds):
    from kafka import KafkaConsumer, KafkaProducer

    admin_conf = confluent_sasl(sasl_bootstrap, "PLAIN", "alice", "alice-secret")
    admin = cadmin.AdminClient(admin_conf)
    topic = "reauth-topic"
    create_topic(admin, topic, 1, 1, {}, time.time() + 30)
    conf = confluent_sasl(sasl_bootstrap, "SCRAM-SHA-512", "erin", "erin-512")
    producer = Producer({**conf, "acks": "all", "linger.ms": 0})
    consumer = Consumer({**conf, "group.id": f"g-{uuid.uuid4()}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    kp_conf = kafka_python_sasl(sasl_bootstrap, "SCRAM-SHA-256", "carol", "carol-256")
    kp = KafkaProducer(acks="all", **kp_conf)
    kc = KafkaConsumer(topic, group_id=None, auto_offset_reset="earliest", **kp_conf)
    sent, seen = set(), set()
    end = time.time() + seconds
    i = 0
    while time.time() < end:
        v = f"r-{i}"
        i += 1
        producer.produce(topic, v.encode())
        if producer.flush(10) != 0:
            fail(f"confluent-kafka could not deliver {v}")
        w = f"k-{i}"
        kp.send(topic, w.encode()).get(timeout=10)
        sent |= {v, w}
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            seen.add(m.value().decode())
        for records in kc.poll(timeout_ms=200).values():
            seen |= {r.value.decode() for r in records}
    deadline = time.time() + 20
    while not sent <= seen and time.time() < deadline:
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            seen.add(m.value().decode())
    if not sent <= seen:
        fail(f"read back {len(sent & seen)} of {len(sent)} values")
    say(f"{len(sent)} values produced and read over {seconds} s of re-authenticated sessions")
    print("all ok", flush=True)


def replicated(plain_bootstrap):
    admin = cadmin.AdminClient({"bootstrap.servers": plain_bootstrap})
    topic = "replicated-topic"
    create_topic(admin, topic, 2, 2, {"min.insync.replicas": "2"}, time.time() + 30)
    conf = {"bootstrap.servers": plain_bootstrap}
    retry("acks=all round trip on a 2-replica topic",
          lambda: confluent_round_trip(conf, topic, 20, partitions=2), seconds=30)
    say("acks=all with min.insync.replicas=2: followers replicate over SASL")
    print("all ok", flush=True)


def sasl_ssl(bootstrap, ca):
    global SSL_CA
    SSL_CA = ca
    admin_conf = confluent_sasl(bootstrap, "SCRAM-SHA-512", "admin", "admin-secret")
    admin = cadmin.AdminClient(admin_conf)
    topic = "sasl-ssl-topic"
    create_topic(admin, topic, 1, 1, {}, time.time() + 30)
    say("the formatted admin created a topic over SASL_SSL")
    upsert = cadmin.UserScramCredentialUpsertion(
        "carol", cadmin.ScramCredentialInfo(cadmin.ScramMechanism.SCRAM_SHA_256, 4096),
        b"carol-256")
    admin.alter_user_scram_credentials([upsert])["carol"].result()
    say("carol (SCRAM-SHA-256) created over SASL_SSL")
    for mechanism, user, password in [
        ("SCRAM-SHA-512", "admin", "admin-secret"),
        ("SCRAM-SHA-256", "carol", "carol-256"),
    ]:
        # carol's credential reaches the broker through the metadata log: retry until it has.
        retry(f"confluent-kafka {mechanism} as {user}",
              lambda: confluent_round_trip(confluent_sasl(bootstrap, mechanism, user, password), topic))
        say(f"confluent-kafka over SASL_SSL, {mechanism} as {user}: produced and consumed")
        retry(f"kafka-python {mechanism} as {user}",
              lambda: kafka_python_round_trip(kafka_python_sasl(bootstrap, mechanism, user, password), topic))
        say(f"kafka-python over SASL_SSL, {mechanism} as {user}: produced and consumed")
    # SaslHandshake v0, then raw SASL tokens inside the TLS stream.
    retry("kafka-python with the v0 handshake over SASL_SSL",
          lambda: kafka_python_round_trip(kafka_python_sasl(
              bootstrap, "SCRAM-SHA-256", "carol", "carol-256", api_version=(0, 11, 0)), topic))
    say("kafka-python over SASL_SSL with SaslHandshake v0 and raw tokens: produced and consumed")
    for mechanism, user, password, what in [
        ("SCRAM-SHA-512", "admin", "wrong", "wrong admin password over SASL_SSL"),
        ("SCRAM-SHA-256", "carol", "wrong", "wrong SCRAM-SHA-256 password over SASL_SSL"),
        ("SCRAM-SHA-512", "nobody", "x", "unknown user over SASL_SSL"),
    ]:
        expect_confluent_refused(confluent_sasl(bootstrap, mechanism, user, password), mechanism, what)
        expect_kafka_python_refused(kafka_python_sasl(bootstrap, mechanism, user, password), mechanism, what)
    print("all ok", flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "logins":
        logins(sys.argv[2], sys.argv[3])
    elif mode == "reauth":
        reauth(sys.argv[2], float(sys.argv[3]))
    elif mode == "replicated":
        replicated(sys.argv[2])
    elif mode == "sasl-ssl":
        sasl_ssl(sys.argv[2], sys.argv[3])
    else:
        fail(f"unknown mode {mode}")
