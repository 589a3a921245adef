"""Security configs by name on a broker resource, with stock clients (kafka_security_configs.rs).

kafka-python sets sasl.kerberos.min.time.before.relogin on the broker (IncrementalAlterConfigs,
after its own check that DescribeConfigs lists the key as dynamic) and reads it back;
confluent-kafka is refused GSSAPI in sasl.enabled.mechanisms with INVALID_CONFIG by both
IncrementalAlterConfigs and AlterConfigs, a read-only config and a keystore setting without a
listener prefix with Kafka's messages; and no secret of the broker's properties file
(ssl.keystore.password, a listener's SCRAM JAAS config) is ever described, in values or
synonyms. Arguments: bootstrap address, broker id. Prints "all ok".
"""

import sys
import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import admin as cadmin
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

BOOTSTRAP, BROKER_ID = sys.argv[1], sys.argv[2]
RELOGIN = "sasl.kerberos.min.time.before.relogin"


def fail(reason):
    print("FAILED:", reason, flush=True)
    sys.exit(1)


# kafka-python: set and read back.
admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP, request_timeout_ms=30000)
resource = ConfigResource(ConfigResourceType.BROKER, BROKER_ID, configs={RELOGIN: "120000"})
result = admin.alter_configs([resource])
if result != {"broker": {BROKER_ID: "OK"}}:
    fail(f"kafka-python alter_configs {RELOGIN}: {result}")
deadline = time.time() + 30
while True:
    described = admin.describe_configs(
        [ConfigResource(ConfigResourceType.BROKER, BROKER_ID)], config_filter="all"
    )["broker"][BROKER_ID]
    entry = described.get(RELOGIN, {})
    if entry.get("value") == "120000":
        break
    if time.time() > deadline:
        fail(f"{RELOGIN} never read back: {entry}")
    time.sleep(0.2)
if entry.get("config_source") != "DYNAMIC_BROKER_CONFIG" or entry.get("read_only"):
    fail(f"{RELOGIN} described as {entry}")
print(f"kafka-python set and read back {RELOGIN}", flush=True)

# confluent-kafka: refusals, with Kafka's error code.
c = cadmin.AdminClient({"bootstrap.servers": BOOTSTRAP})


def refused(resource_name, key, value, words, legacy=False):
    r = cadmin.ConfigResource(cadmin.ResourceType.BROKER, resource_name)
    if legacy:
        r.set_config(key, value)
        future = c.alter_configs([r])[r]
    else:
        r.add_incremental_config(
            cadmin.ConfigEntry(key, value, incremental_operation=cadmin.AlterConfigOpType.SET)
        )
        future = c.incremental_alter_configs([r])[r]
    try:
        future.result(timeout=30)
    except KafkaException as e:
        error = e.args[0]
        if error.code() != KafkaError.INVALID_CONFIG or words not in error.str():
            fail(f"{key}={value} on broker {resource_name!r}: {error.code()} {error.str()}")
        print(f"refused {key}={value} on {resource_name!r}: {error.str()}", flush=True)
        return
    fail(f"{key}={value} on broker {resource_name!r} was accepted")


refused(BROKER_ID, "sasl.enabled.mechanisms", "GSSAPI", "kraftd does not support the SASL mechanism GSSAPI")
refused(BROKER_ID, "sasl.enabled.mechanisms", "GSSAPI", "kraftd does not support", legacy=True)
refused(
    BROKER_ID,
    "listener.name.plaintext.sasl.enabled.mechanisms",
    "SCRAM-SHA-256,OAUTHBEARER",
    "the SASL mechanism OAUTHBEARER (it serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) "
    "(listener.name.plaintext.sasl.enabled.mechanisms=SCRAM-SHA-256,OAUTHBEARER)",
)
refused(BROKER_ID, "super.users", "User:mallory", "Cannot update these configs dynamically")
refused(
    BROKER_ID,
    "ssl.keystore.location",
    "/tmp/k.pem",
    "These security configs can be dynamically updated only per-listener",
)
refused(BROKER_ID, "principal.builder.class", "com.example.Builder", "kraftd does not support principal.builder.class")

# The value set above survived the refusals (each resource fails alone, nothing written).
r = cadmin.ConfigResource(cadmin.ResourceType.BROKER, BROKER_ID)
entries = c.describe_configs([r])[r].result(timeout=30)
if entries[RELOGIN].value != "120000":
    fail(f"{RELOGIN} is now {entries[RELOGIN].value}")
if entries["sasl.kerberos.service.name"].value != "kafka":
    fail(f"sasl.kerberos.service.name: {entries['sasl.kerberos.service.name']}")

# Secrets: null values, sensitive, in every synonym too; never the text.
for key in [
    "ssl.keystore.password",
    "listener.name.plaintext.ssl.keystore.password",
    "listener.name.plaintext.scram-sha-256.sasl.jaas.config",
    "sasl.jaas.config",
    "ssl.key.password",
]:
    entry = entries.get(key)
    if entry is None or entry.value is not None or not entry.is_sensitive:
        fail(f"{key} described as {entry!r} (value {getattr(entry, 'value', None)!r})")
    if any(s.value is not None for s in entry.synonyms.values()):
        fail(f"{key} has a synonym with a value: {entry.synonyms}")
# A listener's override has its base config as a synonym (both secret here).
own = entries["listener.name.plaintext.ssl.keystore.password"]
static = (cadmin.ConfigSource.STATIC_BROKER_CONFIG, cadmin.ConfigSource.STATIC_BROKER_CONFIG.value)
if own.source not in static or sorted(own.synonyms) != [
    "listener.name.plaintext.ssl.keystore.password",
    "ssl.keystore.password",
]:
    fail(f"the listener's keystore password: source {own.source}, synonyms {list(own.synonyms)}")
everything = repr(
    [(e.name, e.value, [(s.name, s.value) for s in e.synonyms.values()]) for e in entries.values()]
)
if "hunter2" in everything:
    fail("a secret was described")
raw = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, BROKER_ID)], include_synonyms=True, config_filter="all")
if "hunter2" in repr(raw):
    fail("a secret was described to kafka-python")
print("secrets are not described", flush=True)
print("all ok", flush=True)
