"""The ACL matrix with stock clients (confluent-kafka and kafka-python), as Kafka's
StandardAuthorizer answers it.

`matrix` mode, for a principal P (the client; `--principal`) and another principal O (only
there so the refused resources are named by some ACL, which matters when the cluster runs
with allow.everyone.if.no.acl.found=true): an admin creates `orders` and `payments` (two
partitions each, one replica, so each of the two brokers leads one) and the ACLs
  P: WRITE, READ, DESCRIBE_CONFIGS on topic orders; READ on group g1
  O: WRITE on topic payments; READ on group g2
then the client must: produce to orders but not to payments (TOPIC_AUTHORIZATION_FAILED);
read orders with group g1 but not with g2 (GROUP_AUTHORIZATION_FAILED); describe the configs
of orders but not alter them (TOPIC_AUTHORIZATION_FAILED). The admin then allows P to write
payments: within a second the same client produces to both partitions (both brokers) and
every broker's Metadata shows the topic. A DENY of WRITE on orders for P then overrides its
ALLOW within a second.

`forwarded` mode: the client P creates topic `forwarded` through a broker, which forwards
CreateTopics to the controller in an Envelope: refused (TOPIC_AUTHORIZATION_FAILED) while P
has no CREATE; once the admin allows P CREATE on the cluster, the same client creates it.

`grant` mode: the admin creates topic `granted`; the client P may not produce to it
(TOPIC_AUTHORIZATION_FAILED, no ACL names it) until the admin allows P WRITE on it, then
produces within a second.

`super` mode: P is a super user: a DENY of everything on payments for P changes nothing, and
group g2 (named only by O's ACL) reads.

Connection settings are confluent-kafka configs as JSON (`--client-config`,
`--admin-config`: `{}` for PLAINTEXT, security.protocol / sasl.* for SASL, ssl.* for TLS),
the SASL ones mapped for kafka-python. Prints "all ok" at the end; fails with one line otherwise.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import fail, say  # noqa: E402

from confluent_kafka import KafkaError, KafkaException, Producer  # noqa: E402
from confluent_kafka import admin as cadmin  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

import kafka  # noqa: E402
import kafka.errors as kerrors  # noqa: E402

TOPIC_AUTHZ = 29
GROUP_AUTHZ = 30


def kafka_python_config(conf):
    """A confluent-kafka config as kafka-python keyword arguments."""
    names = {
        "security.protocol": "security_protocol",
        "sasl.mechanism": "sasl_mechanism",
        "sasl.username": "sasl_plain_username",
        "sasl.password": "sasl_plain_password",
        "ssl.ca.location": "ssl_cafile",
        "ssl.certificate.location": "ssl_certfile",
        "ssl.key.location": "ssl_keyfile",
    }
    return {names[k]: v for k, v in conf.items() if k in names}


def binding(resource_type, name, principal, operation, permission=cadmin.AclPermissionType.ALLOW):
    return cadmin.AclBinding(
        resource_type,
        name,
        cadmin.ResourcePatternType.LITERAL,
        principal,
        "*",
        operation,
        permission,
    )


def create_acls(admin, bindings):
    for b, future in admin.create_acls(bindings, request_timeout=30).items():
        try:
            future.result()
        except KafkaException as e:
            fail(f"creating ACL {b}: {e}")


def create_topics(admin, names):
    futures = admin.create_topics(
        [cadmin.NewTopic(n, 2, 1) for n in names], request_timeout=30
    )
    for name, future in futures.items():
        try:
            future.result()
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                fail(f"creating {name}: {e}")


def leaders(admin, topic, deadline):
    """{partition: leader broker id} once every partition has a leader."""
    while True:
        md = admin.list_topics(topic=topic, timeout=5)
        t = md.topics.get(topic)
        if t is not None and t.error is None and t.partitions:
            found = {p: t.partitions[p].leader for p in t.partitions}
            if all(leader >= 0 for leader in found.values()):
                return found
        if time.time() > deadline:
            fail(f"{topic} has no leaders: {t and t.error}")
        time.sleep(0.2)


def confluent_produce(conf, bootstrap, topic, partition=0):
    """Produces one record; the delivery error code (0 when delivered)."""
    result = {}

    def report(err, _msg):
        result["code"] = err.code() if err is not None else 0

    p = Producer(
        dict(
            conf,
            **{
                "bootstrap.servers": bootstrap,
                "message.timeout.ms": 5000,
                "enable.idempotence": False,
            },
        )
    )
    try:
        p.produce(topic, value=b"v", partition=partition, on_delivery=report)
    except KafkaException as e:
        return e.args[0].code()
    p.flush(10)
    return result.get("code", -1)


def kp_producer(conf, bootstrap):
    return kafka.KafkaProducer(
        bootstrap_servers=bootstrap.split(","),
        acks=1,
        retries=0,
        max_block_ms=2000,
        **kafka_python_config(conf),
    )


def kp_send(producer, topic, partition):
    """None when kafka-python's producer delivered one record, else the exception."""
    try:
        producer.send(topic, b"v", partition=partition).get(timeout=5)
        return None
    except kerrors.KafkaError as e:
        return e


def until(what, deadline, check):
    """Polls `check` (returns True when done) until `deadline`; fails naming `what`."""
    while not check():
        if time.time() > deadline:
            fail(f"{what} did not happen in time")
        time.sleep(0.02)


def consume_group(conf, bootstrap, group, topic, want):
    """Reads `want` records of `topic` with kafka-python in `group` and commits them."""
    consumer = kafka.KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap.split(","),
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=20000,
        **kafka_python_config(conf),
    )
    try:
        got = 0
        deadline = time.time() + 30
        while got < want and time.time() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got += len(records)
        if got < want:
            fail(f"group {group} read {got} of {want} records of {topic}")
        consumer.commit()
    finally:
        consumer.close()


def group_refused(conf, bootstrap, group, topic):
    """kafka-python's consumer in `group` fails with GroupAuthorizationFailedError."""
    consumer = kafka.KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap.split(","),
        group_id=group,
        auto_offset_reset="earliest",
        **kafka_python_config(conf),
    )
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                consumer.poll(timeout_ms=500)
            except kerrors.GroupAuthorizationFailedError:
                return
        fail(f"group {group} was not refused")
    finally:
        consumer.close()


def matrix(args, client, admin_conf):
    bootstrap = args.bootstrap
    me, other = args.principal, args.other_principal
    admin = AdminClient(dict(admin_conf, **{"bootstrap.servers": bootstrap}))
    create_topics(admin, ["orders", "payments"])
    deadline = time.time() + 30
    payments_leaders = leaders(admin, "payments", deadline)
    if len(set(payments_leaders.values())) != 2:
        fail(f"payments is not led by both brokers: {payments_leaders}")
    T, G = cadmin.ResourceType.TOPIC, cadmin.ResourceType.GROUP
    op = cadmin.AclOperation
    create_acls(
        admin,
        [
            binding(T, "orders", me, op.WRITE),
            binding(T, "orders", me, op.READ),
            binding(T, "orders", me, op.DESCRIBE_CONFIGS),
            binding(G, "g1", me, op.READ),
            binding(T, "payments", other, op.WRITE),
            binding(G, "g2", other, op.READ),
        ],
    )
    say("ACLs created")

    # Produce: orders yes, payments no.
    until(
        "producing to orders",
        time.time() + 10,
        lambda: confluent_produce(client, bootstrap, "orders") == 0,
    )
    code = confluent_produce(client, bootstrap, "payments")
    if code != TOPIC_AUTHZ:
        fail(f"confluent-kafka producing to payments: error {code}, not TOPIC_AUTHORIZATION_FAILED")
    producer = kp_producer(client, bootstrap)
    error = kp_send(producer, "payments", 0)
    if not isinstance(error, kerrors.TopicAuthorizationFailedError):
        fail(f"kafka-python producing to payments: {error!r}")
    say("produce: orders allowed, payments TOPIC_AUTHORIZATION_FAILED")

    # Read with g1, not with g2.
    consume_group(client, bootstrap, "g1", "orders", 1)
    group_refused(client, bootstrap, "g2", "orders")
    say("groups: g1 reads, g2 GROUP_AUTHORIZATION_FAILED")

    # Describe configs, not alter them.
    me_admin = AdminClient(dict(client, **{"bootstrap.servers": bootstrap}))
    resource = cadmin.ConfigResource(cadmin.ResourceType.TOPIC, "orders")
    try:
        me_admin.describe_configs([resource], request_timeout=30)[resource].result()
    except KafkaException as e:
        fail(f"describing the configs of orders: {e}")
    alter = cadmin.ConfigResource(
        cadmin.ResourceType.TOPIC,
        "orders",
        incremental_configs=[
            cadmin.ConfigEntry(
                "retention.ms",
                "60000",
                incremental_operation=cadmin.AlterConfigOpType.SET,
            )
        ],
    )
    try:
        me_admin.incremental_alter_configs([alter], request_timeout=30)[alter].result()
        fail("altering the configs of orders was allowed")
    except KafkaException as e:
        if e.args[0].code() != TOPIC_AUTHZ:
            fail(f"altering the configs of orders: {e}, not TOPIC_AUTHORIZATION_FAILED")
    say("configs: describe allowed, alter TOPIC_AUTHORIZATION_FAILED")

    # The missing ACL lets the same client in within a second, on every broker.
    create_acls(admin, [binding(T, "payments", me, op.WRITE)])
    added = time.time()
    for partition, leader in sorted(payments_leaders.items()):
        until(
            f"producing to payments-{partition} (broker {leader})",
            added + 1.0,
            lambda: kp_send(producer, "payments", partition) is None,
        )
    for broker in bootstrap.split(","):
        per_broker = AdminClient(dict(client, **{"bootstrap.servers": broker}))

        def visible():
            t = per_broker.list_topics(topic="payments", timeout=1).topics.get("payments")
            return t is not None and t.error is None

        until(f"payments in {broker}'s Metadata", added + 1.0, visible)
    say(f"payments writable on both brokers {time.time() - added:.3f}s after the ACL")

    # DENY overrides ALLOW.
    create_acls(
        admin,
        [binding(T, "orders", me, op.WRITE, cadmin.AclPermissionType.DENY)],
    )
    denied = time.time()
    until(
        "the DENY taking effect",
        denied + 1.0,
        lambda: isinstance(
            kp_send(producer, "orders", 0), kerrors.TopicAuthorizationFailedError
        ),
    )
    code = confluent_produce(client, bootstrap, "orders")
    if code != TOPIC_AUTHZ:
        fail(f"producing to orders after the DENY: error {code}")
    say("DENY overrides ALLOW")
    producer.close()


def forwarded(args, client, admin_conf):
    bootstrap = args.bootstrap
    admin = AdminClient(dict(admin_conf, **{"bootstrap.servers": bootstrap}))
    me_admin = AdminClient(dict(client, **{"bootstrap.servers": bootstrap}))

    def create():
        """The error code of the client's CreateTopics of `forwarded` (0: created)."""
        future = me_admin.create_topics(
            [cadmin.NewTopic("forwarded", 1, 1)], request_timeout=30
        )["forwarded"]
        try:
            future.result()
            return 0
        except KafkaException as e:
            return e.args[0].code()

    code = create()
    if code != TOPIC_AUTHZ:
        fail(f"creating a topic without CREATE: error {code}, not TOPIC_AUTHORIZATION_FAILED")
    say("CreateTopics without CREATE: TOPIC_AUTHORIZATION_FAILED")
    create_acls(
        admin,
        [binding(cadmin.ResourceType.BROKER, "kafka-cluster", args.principal,
                 cadmin.AclOperation.CREATE)],
    )
    until("the client's CreateTopics with CREATE on the cluster", time.time() + 5,
          lambda: create() == 0)
    say("CreateTopics with CREATE on the cluster: created")


def grant(args, client, admin_conf):
    bootstrap = args.bootstrap
    admin = AdminClient(dict(admin_conf, **{"bootstrap.servers": bootstrap}))
    create_topics(admin, ["granted"])
    leaders(admin, "granted", time.time() + 30)
    code = confluent_produce(client, bootstrap, "granted")
    if code != TOPIC_AUTHZ:
        fail(f"confluent-kafka producing to granted with no ACL: error {code}")
    producer = kp_producer(client, bootstrap)
    error = kp_send(producer, "granted", 0)
    if not isinstance(error, kerrors.TopicAuthorizationFailedError):
        fail(f"kafka-python producing to granted with no ACL: {error!r}")
    say("no ACL: TOPIC_AUTHORIZATION_FAILED")
    create_acls(
        admin,
        [binding(cadmin.ResourceType.TOPIC, "granted", args.principal,
                 cadmin.AclOperation.WRITE)],
    )
    added = time.time()
    until("producing to granted after the ACL", added + 1.0,
          lambda: kp_send(producer, "granted", 0) is None)
    say(f"WRITE for {args.principal}: produced {time.time() - added:.3f}s after the ACL")
    producer.close()
    code = confluent_produce(client, bootstrap, "granted")
    if code != 0:
        fail(f"confluent-kafka producing to granted with the ACL: error {code}")


def superuser(args, client, admin_conf):
    bootstrap = args.bootstrap
    me, other = args.principal, args.other_principal
    admin = AdminClient(dict(admin_conf, **{"bootstrap.servers": bootstrap}))
    create_topics(admin, ["payments"])
    leaders(admin, "payments", time.time() + 30)
    T, G = cadmin.ResourceType.TOPIC, cadmin.ResourceType.GROUP
    op = cadmin.AclOperation
    create_acls(
        admin,
        [
            binding(T, "payments", me, op.ALL, cadmin.AclPermissionType.DENY),
            binding(T, "payments", other, op.WRITE),
            binding(G, "g2", other, op.READ),
        ],
    )
    code = confluent_produce(client, bootstrap, "payments")
    if code != 0:
        fail(f"a super user producing to payments: error {code}")
    consume_group(client, bootstrap, "g2", "payments", 1)
    say("super user: the DENY and others' ACLs changed nothing")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["matrix", "forwarded", "grant", "super"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--principal", required=True)
    parser.add_argument("--other-principal", default="User:bob")
    parser.add_argument("--client-config", default="{}")
    parser.add_argument("--admin-config", default="{}")
    args = parser.parse_args()
    client = json.loads(args.client_config)
    admin_conf = json.loads(args.admin_config)
    modes = {"matrix": matrix, "forwarded": forwarded, "grant": grant, "super": superuser}
    modes[args.mode](args, client, admin_conf)
    print("all ok", flush=True)


if __name__ == "__main__":
    main()
