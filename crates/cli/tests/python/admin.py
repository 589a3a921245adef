"""Admin operations against a kraftd cluster with stock clients (confluent-kafka, which
bundles librdkafka, and kafka-python), as crates/cli/tests/stock_clients.rs runs them.

usage: admin.py BOOTSTRAP[,BOOTSTRAP...]

Every step asserts what a Kafka user would expect; the first failure exits non-zero with a
message naming the step. Prints "ok <step>" per step.
"""

import sys
import time

from confluent_kafka import admin as cadmin
from confluent_kafka import KafkaException
from kafka import KafkaAdminClient
from kafka.admin import NewTopic as KNewTopic

BOOTSTRAP = sys.argv[1]
SERVERS = BOOTSTRAP.split(",")


def step(name):
    print("ok", name, flush=True)


def wait_for(what, check, timeout=20.0):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            value = check()
            if value:
                return value
            last = value
        except Exception as e:  # a retriable error while metadata propagates
            last = e
        time.sleep(0.2)
    raise AssertionError(f"{what}: still {last!r} after {timeout}s")


def confluent(server):
    return cadmin.AdminClient({"bootstrap.servers": server, "socket.timeout.ms": 10000})


c = confluent(BOOTSTRAP)

# Describe the cluster: every broker is there, with a cluster id and a controller.
desc = c.describe_cluster(request_timeout=15).result()
assert desc.cluster_id, desc
assert len(desc.nodes) == len(SERVERS), (desc.nodes, SERVERS)
step("describe cluster")

# Create topics, list them.
futures = c.create_topics(
    [cadmin.NewTopic("orders", 3, 3), cadmin.NewTopic("events", 1, 1, config={"retention.ms": "3600000"})],
    request_timeout=20,
)
for name, f in futures.items():
    f.result()
step("create topics")

# Every broker lists them, with leaders.
for server in SERVERS:
    def listed(server=server):
        md = confluent(server).list_topics(timeout=10)
        t = md.topics.get("orders")
        return t is not None and len(t.partitions) == 3 and all(p.leader >= 0 for p in t.partitions.values()) and "events" in md.topics
    wait_for(f"topics on {server}", listed)
step("list topics on every broker")

# Creating it again is TOPIC_ALREADY_EXISTS.
try:
    c.create_topics([cadmin.NewTopic("orders", 1, 1)])["orders"].result()
    raise AssertionError("creating an existing topic succeeded")
except KafkaException as e:
    assert e.args[0].code() == 36, e  # TOPIC_ALREADY_EXISTS
step("duplicate topic refused")

# Add partitions.
c.create_partitions([cadmin.NewPartitions("orders", 5)])["orders"].result()
wait_for("5 partitions", lambda: len(c.list_topics(timeout=10).topics["orders"].partitions) == 5)
step("create partitions")

# A topic config and a dynamic broker config, read back from every broker.
resource = cadmin.ConfigResource(cadmin.ResourceType.TOPIC, "orders")
entry = cadmin.ConfigEntry("retention.ms", "86400000", incremental_operation=cadmin.AlterConfigOpType.SET)
resource.add_incremental_config(entry)
c.incremental_alter_configs([resource])[resource].result()
# A dynamic config per broker (librdkafka cannot name the cluster-default resource "").
for broker_id in c.list_topics(timeout=10).brokers:
    per_broker = cadmin.ConfigResource(cadmin.ResourceType.BROKER, str(broker_id))
    per_broker.add_incremental_config(
        cadmin.ConfigEntry("log.retention.ms", "7200000", incremental_operation=cadmin.AlterConfigOpType.SET)
    )
    c.incremental_alter_configs([per_broker])[per_broker].result()
step("incremental alter configs")

for server in SERVERS:
    client = confluent(server)

    def topic_config(client=client):
        r = cadmin.ConfigResource(cadmin.ResourceType.TOPIC, "orders")
        configs = client.describe_configs([r])[r].result()
        e = configs["retention.ms"]
        return e.value == "86400000" and e.source == cadmin.ConfigSource.DYNAMIC_TOPIC_CONFIG.value

    wait_for(f"topic config on {server}", topic_config)
md = c.list_topics(timeout=10)
for broker_id in md.brokers:
    def broker_config(broker_id=broker_id):
        r = cadmin.ConfigResource(cadmin.ResourceType.BROKER, str(broker_id))
        configs = c.describe_configs([r])[r].result()
        e = configs["log.retention.ms"]
        return e.value == "7200000" and e.source == cadmin.ConfigSource.DYNAMIC_BROKER_CONFIG.value

    wait_for(f"broker config of {broker_id}", broker_config)
step("describe configs on every broker")

# ACLs: create, describe, delete.
binding = cadmin.AclBinding(
    cadmin.ResourceType.TOPIC, "orders", cadmin.ResourcePatternType.LITERAL,
    "User:alice", "*", cadmin.AclOperation.READ, cadmin.AclPermissionType.ALLOW,
)
c.create_acls([binding])[binding].result()
acl_filter = cadmin.AclBindingFilter(
    cadmin.ResourceType.ANY, None, cadmin.ResourcePatternType.ANY,
    None, None, cadmin.AclOperation.ANY, cadmin.AclPermissionType.ANY,
)
wait_for("ACL described", lambda: binding in c.describe_acls(acl_filter).result())
deleted = c.delete_acls([acl_filter])[acl_filter].result()
assert binding in deleted, deleted
wait_for("ACL gone", lambda: c.describe_acls(acl_filter).result() == [])
step("ACLs")

# SCRAM credentials: upsert and describe.
upsert = cadmin.UserScramCredentialUpsertion(
    "alice", cadmin.ScramCredentialInfo(cadmin.ScramMechanism.SCRAM_SHA_256, 8192), b"alice-secret"
)
c.alter_user_scram_credentials([upsert])["alice"].result()

def scram_described():
    d = c.describe_user_scram_credentials(["alice"])["alice"].result()
    return any(i.iterations == 8192 for i in d.scram_credential_infos)

wait_for("SCRAM described", scram_described)
step("SCRAM credentials")

# kafka-python: list and delete topics.
k = KafkaAdminClient(bootstrap_servers=SERVERS, request_timeout_ms=20000)
assert {"orders", "events"} <= set(k.list_topics()), k.list_topics()
k.create_topics([KNewTopic("kp-topic", 2, 2)])
wait_for("kp-topic listed", lambda: "kp-topic" in k.list_topics())
k.delete_topics(["kp-topic", "events"])
wait_for("topics deleted", lambda: not ({"kp-topic", "events"} & set(k.list_topics())))
for server in SERVERS:
    wait_for(f"topics deleted on {server}", lambda server=server: "events" not in confluent(server).list_topics(timeout=10).topics)
k.close()
step("kafka-python create, list, delete")
print("all ok", flush=True)
