#!/usr/bin/env python3
"""Drive a Kafka cluster (through the recording proxy) with a stock Python client.

  drive.py --bootstrap 127.0.0.1:PORT --client librdkafka|kafkapython

Every client.id we set starts with the client label ("librdkafka-...",
"kafkapython-...") so that corpus.py can attribute each captured frame to the
client that sent it. Each step is independent: a failing step is reported and
the driver moves on (error responses are corpus too). Everything is bounded by
explicit timeouts.

Payloads are small on purpose (20 records x 100 bytes per batch) to keep the
captured Produce/Fetch frames small.
"""

import argparse
import sys
import time
import traceback

RECORDS_PER_BATCH = 20
VALUE_SIZE = 100
T = 15  # default per-operation timeout, seconds

RESULTS = []


def step(name, fn, *args, **kwargs):
    t0 = time.time()
    try:
        out = fn(*args, **kwargs)
        RESULTS.append((name, "ok", ""))
        print(f"  ok   {name} ({time.time() - t0:.1f}s){': ' + str(out)[:160] if out is not None else ''}",
              flush=True)
        return out
    except Exception as e:  # noqa: BLE001 - we want to keep going
        msg = f"{type(e).__name__}: {e}"
        RESULTS.append((name, "err", msg))
        print(f"  ERR  {name} ({time.time() - t0:.1f}s): {msg[:300]}", flush=True)
        if "-v" in sys.argv:
            traceback.print_exc()
        return None


def value(i, size=VALUE_SIZE):
    s = (f"record-{i:05d}-" * ((size // 13) + 1)).encode()
    return s[:size]


# ---------------------------------------------------------------------------
# librdkafka (confluent-kafka)
# ---------------------------------------------------------------------------

def drive_librdkafka(bs):
    from confluent_kafka import (Consumer, Producer, TopicPartition, TopicCollection,
                                 ConsumerGroupTopicPartitions, ElectionType, KafkaError)
    from confluent_kafka.admin import (
        AdminClient, NewTopic, NewPartitions, ConfigResource, ConfigEntry, AlterConfigOpType,
        ResourceType, AclBinding, AclBindingFilter, ResourcePatternType, AclOperation,
        AclPermissionType, ScramMechanism, ScramCredentialInfo, UserScramCredentialUpsertion,
        UserScramCredentialDeletion, OffsetSpec)

    P = "rk-"
    plain, compact, codecs_t, txn_t = P + "plain", P + "compact", P + "codecs", P + "txn"
    base = {"bootstrap.servers": bs, "socket.timeout.ms": 10000}
    admin = AdminClient({**base, "client.id": "librdkafka-admin"})

    def wait(fs):
        if isinstance(fs, dict):
            out = {}
            for k, f in fs.items():
                try:
                    out[str(k)] = f.result(timeout=T)
                except Exception as e:  # keep the per-item error as the result
                    out[str(k)] = f"{type(e).__name__}: {e}"
            return out
        return fs.result(timeout=T)

    # -- topics ----------------------------------------------------------
    step("create_topics", lambda: wait(admin.create_topics([
        NewTopic(plain, num_partitions=3, replication_factor=1,
                 config={"retention.ms": "3600000", "cleanup.policy": "delete",
                         "max.message.bytes": "1048576"}),
        NewTopic(compact, num_partitions=1, replication_factor=1,
                 config={"cleanup.policy": "compact", "min.compaction.lag.ms": "1000"}),
        NewTopic(codecs_t, num_partitions=1, replication_factor=1),
        NewTopic(txn_t, num_partitions=2, replication_factor=1),
    ], operation_timeout=T, request_timeout=T)))
    step("create_topics_validate_only", lambda: wait(admin.create_topics(
        [NewTopic(P + "validate", num_partitions=2, replication_factor=1)],
        validate_only=True, request_timeout=T)))
    step("create_topics_already_exists", lambda: wait(admin.create_topics(
        [NewTopic(plain, num_partitions=1, replication_factor=1)], request_timeout=T)))
    time.sleep(1)
    step("list_topics", lambda: sorted(admin.list_topics(timeout=T).topics))
    step("list_topics_one", lambda: list(admin.list_topics(topic=plain, timeout=T).topics))
    step("describe_topics", lambda: wait(admin.describe_topics(
        TopicCollection([plain, compact]), request_timeout=T)))
    step("describe_cluster", lambda: wait(admin.describe_cluster(
        include_authorized_operations=True, request_timeout=T)))

    # -- configs ---------------------------------------------------------
    step("describe_configs", lambda: wait(admin.describe_configs([
        ConfigResource(ResourceType.TOPIC, plain),
        ConfigResource(ResourceType.BROKER, "1")], request_timeout=T)))
    step("incremental_alter_configs", lambda: wait(admin.incremental_alter_configs([
        ConfigResource(ResourceType.TOPIC, plain, incremental_configs=[
            ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("max.message.bytes", None, incremental_operation=AlterConfigOpType.DELETE),
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ]),
        ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
            ConfigEntry("log.cleaner.backoff.ms", "16000", incremental_operation=AlterConfigOpType.SET),
        ]),
    ], request_timeout=T)))
    step("alter_configs_legacy", lambda: wait(admin.alter_configs([
        ConfigResource(ResourceType.TOPIC, compact,
                       set_config={"cleanup.policy": "compact", "segment.ms": "600000"})],
        request_timeout=T)))

    # -- partitions ------------------------------------------------------
    step("create_partitions", lambda: wait(admin.create_partitions(
        [NewPartitions(plain, 4)], operation_timeout=T, request_timeout=T)))
    step("create_partitions_invalid", lambda: wait(admin.create_partitions(
        [NewPartitions(compact, 1)], request_timeout=T)))

    # -- ACLs ------------------------------------------------------------
    acls = [
        AclBinding(ResourceType.TOPIC, plain, ResourcePatternType.LITERAL,
                   "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.GROUP, "rk-", ResourcePatternType.PREFIXED,
                   "User:alice", "127.0.0.1", AclOperation.ALL, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL,
                   "User:bob", "*", AclOperation.WRITE, AclPermissionType.DENY),
    ]
    step("create_acls", lambda: wait(admin.create_acls(acls, request_timeout=T)))
    time.sleep(1)
    any_filter = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY,
                                  None, None, AclOperation.ANY, AclPermissionType.ANY)
    step("describe_acls", lambda: wait(admin.describe_acls(any_filter, request_timeout=T)))
    step("delete_acls", lambda: wait(admin.delete_acls([
        AclBindingFilter(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL,
                         "User:bob", None, AclOperation.ANY, AclPermissionType.ANY)],
        request_timeout=T)))

    # -- SCRAM -----------------------------------------------------------
    step("alter_user_scram_credentials", lambda: wait(admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                     b"alice-secret", b"salt-for-alice-256"),
        UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                     b"bob-secret", b"salt-for-bob"),
    ], request_timeout=T)))
    # a user may appear only once per request: second mechanism in a second request
    step("alter_user_scram_credentials_512", lambda: wait(admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                                     b"alice-secret", b"salt-for-alice-512")], request_timeout=T)))
    time.sleep(0.5)
    step("describe_user_scram_credentials_all", lambda: wait(
        admin.describe_user_scram_credentials(request_timeout=T)))
    step("describe_user_scram_credentials_some", lambda: wait(
        admin.describe_user_scram_credentials(["alice", "nobody"], request_timeout=T)))
    step("delete_user_scram_credentials", lambda: wait(admin.alter_user_scram_credentials([
        UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_256)], request_timeout=T)))

    # -- produce ---------------------------------------------------------
    def produce(name, topic, partition, extra, n_batches=1, keyed=True, headers=True):
        conf = {**base, "client.id": f"librdkafka-{name}", "linger.ms": 5,
                "batch.num.messages": RECORDS_PER_BATCH, **extra}
        p = Producer(conf)
        errs = []

        def cb(err, msg):
            if err is not None:
                errs.append(str(err))
        for b in range(n_batches):
            for i in range(RECORDS_PER_BATCH):
                kw = {}
                if keyed:
                    kw["key"] = f"key-{i % 5}".encode()
                if headers and i % 4 == 0:
                    kw["headers"] = [("h1", b"v1"), ("trace", f"{b}-{i}".encode())]
                p.produce(topic, value=value(b * RECORDS_PER_BATCH + i), partition=partition,
                          on_delivery=cb, **kw)
            p.flush(T)
        left = p.flush(T)
        return {"undelivered": left, "errors": errs[:3]}

    for acks in ("0", "1", "all"):
        step(f"produce_acks_{acks}", produce, f"producer-acks{acks}", plain, 0,
             {"acks": acks, "enable.idempotence": False, "compression.type": "none"})
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        step(f"produce_{codec}", produce, f"producer-{codec}", codecs_t, 0,
             {"acks": "all", "enable.idempotence": False, "compression.type": codec})
    step("produce_idempotent", produce, "producer-idempotent", plain, 1,
         {"enable.idempotence": True, "compression.type": "lz4"}, n_batches=2)
    step("produce_compact_topic", produce, "producer-compact", compact, 0,
         {"acks": "1", "compression.type": "none"}, headers=False)
    step("produce_unkeyed_p2", produce, "producer-unkeyed", plain, 2,
         {"acks": "1", "compression.type": "none"}, keyed=False, headers=False)

    # -- transactions ----------------------------------------------------
    def transactions():
        p = Producer({**base, "client.id": "librdkafka-txn", "transactional.id": "rk-txn-id",
                      "linger.ms": 5, "transaction.timeout.ms": 30000})
        p.init_transactions(T)
        p.begin_transaction()
        for i in range(RECORDS_PER_BATCH):
            p.produce(txn_t, value=value(i), key=b"k", partition=i % 2)
        p.flush(T)
        # send consumer offsets as part of the transaction (AddOffsetsToTxn/TxnOffsetCommit)
        c = Consumer({**base, "client.id": "librdkafka-txn-consumer", "group.id": "rk-txn-group",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        try:
            p.send_offsets_to_transaction([TopicPartition(plain, 0, 5)],
                                          c.consumer_group_metadata(), T)
        finally:
            c.close()
        p.commit_transaction(T)
        p.begin_transaction()
        for i in range(5):
            p.produce(txn_t, value=value(i, 50), partition=0)
        p.flush(T)
        p.abort_transaction(T)
        return "committed one, aborted one"
    step("transactions", transactions)

    # -- list offsets ----------------------------------------------------
    now_ms = int(time.time() * 1000)
    step("list_offsets", lambda: wait(admin.list_offsets({
        TopicPartition(plain, 0): OffsetSpec.earliest(),
        TopicPartition(plain, 1): OffsetSpec.latest(),
        TopicPartition(plain, 2): OffsetSpec.max_timestamp(),
        TopicPartition(codecs_t, 0): OffsetSpec.for_timestamp(now_ms - 60000),
    }, request_timeout=T)))
    step("list_offsets_read_committed", lambda: wait(admin.list_offsets({
        TopicPartition(txn_t, 0): OffsetSpec.latest()},
        isolation_level=__import__("confluent_kafka").IsolationLevel.READ_COMMITTED,
        request_timeout=T)))

    # -- consume with assigned partitions (Fetch) ------------------------
    def consume_assigned(name, tps, extra, want):
        c = Consumer({**base, "client.id": f"librdkafka-{name}", "group.id": f"rk-unused-{name}",
                      "enable.auto.commit": False, "fetch.max.bytes": 65536, "message.max.bytes": 65536,
                      "max.partition.fetch.bytes": 16384, "fetch.wait.max.ms": 100, **extra})
        c.assign(tps)
        got, deadline = 0, time.time() + T
        while got < want and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got += 1
        c.close()
        return f"consumed {got}"
    step("consume_assigned_plain", consume_assigned, "consumer-assign",
         [TopicPartition(plain, 0, 0), TopicPartition(plain, 1, 0)], {}, 60)
    step("consume_assigned_codecs", consume_assigned, "consumer-codecs",
         [TopicPartition(codecs_t, 0, 0)], {}, 5 * RECORDS_PER_BATCH)
    step("consume_read_committed", consume_assigned, "consumer-txn",
         [TopicPartition(txn_t, 0, 0), TopicPartition(txn_t, 1, 0)],
         {"isolation.level": "read_committed"}, RECORDS_PER_BATCH)
    step("consume_offset_by_time", consume_assigned, "consumer-bytime",
         [TopicPartition(plain, 0, -2)], {"auto.offset.reset": "latest"}, 10)

    # -- consumer groups -------------------------------------------------
    def consume_group(name, group, extra, want=20):
        c = Consumer({**base, "client.id": f"librdkafka-{name}", "group.id": group,
                      "auto.offset.reset": "earliest", "enable.auto.commit": False,
                      "fetch.max.bytes": 65536, "message.max.bytes": 65536, "max.partition.fetch.bytes": 16384, **extra})
        c.subscribe([plain])
        got, deadline = 0, time.time() + 25
        while got < want and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got += 1
                if got % 10 == 0:
                    c.commit(message=m, asynchronous=False)
        committed = c.committed([TopicPartition(plain, 0), TopicPartition(plain, 1)], timeout=T)
        c.close()
        return f"consumed {got}, committed {[(tp.partition, tp.offset) for tp in committed]}"
    step("consume_group_classic", consume_group, "consumer-classic", "rk-group-classic",
         {"session.timeout.ms": 10000, "heartbeat.interval.ms": 1000,
          "partition.assignment.strategy": "range,roundrobin"})
    step("consume_group_consumer_protocol", consume_group, "consumer-kip848", "rk-group-848",
         {"group.protocol": "consumer"})

    step("list_consumer_groups", lambda: str(wait(admin.list_consumer_groups(request_timeout=T))))
    step("describe_consumer_groups", lambda: wait(admin.describe_consumer_groups(
        ["rk-group-classic", "rk-group-848"], include_authorized_operations=True,
        request_timeout=T)))
    step("list_consumer_group_offsets", lambda: wait(admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("rk-group-classic")], request_timeout=T)))
    step("alter_consumer_group_offsets", lambda: wait(admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("rk-group-classic", [TopicPartition(plain, 0, 3)])],
        request_timeout=T)))

    # -- records / leaders -----------------------------------------------
    step("delete_records", lambda: wait(admin.delete_records(
        [TopicPartition(plain, 0, 5)], request_timeout=T)))
    step("elect_leaders", lambda: str(wait(admin.elect_leaders(
        ElectionType.PREFERRED, [TopicPartition(plain, 0)]))))

    # -- cleanup ---------------------------------------------------------
    step("delete_consumer_groups", lambda: wait(admin.delete_consumer_groups(
        ["rk-group-classic", "rk-txn-group", "rk-does-not-exist"], request_timeout=T)))
    step("delete_topics", lambda: wait(admin.delete_topics(
        [plain, compact, codecs_t, txn_t], operation_timeout=T, request_timeout=T)))
    step("delete_topics_unknown", lambda: wait(admin.delete_topics(
        [P + "nope"], request_timeout=T)))


# ---------------------------------------------------------------------------
# kafka-python
# ---------------------------------------------------------------------------

def drive_kafkapython(bs):
    from kafka import KafkaAdminClient, KafkaProducer, KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata
    from kafka.admin import (ConfigResource, ConfigResourceType, AlterConfigOp, ACL, ACLFilter,
                             ACLOperation, ACLPermissionType, ResourcePattern,
                             ResourcePatternFilter, ResourceType, ACLResourcePatternType,
                             ScramMechanism, UserScramCredentialUpsertion,
                             UserScramCredentialDeletion, OffsetSpec)

    P = "kp-"
    plain, compact, codecs_t = P + "plain", P + "compact", P + "codecs"
    admin = KafkaAdminClient(bootstrap_servers=bs, client_id="kafkapython-admin",
                             request_timeout_ms=T * 1000)

    step("api_versions", lambda: len(admin.api_versions()) if hasattr(admin, "api_versions") else None)
    step("create_topics", lambda: admin.create_topics({
        plain: {"num_partitions": 3, "replication_factor": 1,
                "configs": {"retention.ms": "3600000", "max.message.bytes": "1048576"}},
        compact: {"num_partitions": 1, "replication_factor": 1,
                  "configs": {"cleanup.policy": "compact"}},
        codecs_t: {"num_partitions": 1, "replication_factor": 1},
    }, timeout_ms=T * 1000, raise_errors=False))
    step("create_topics_validate_only", lambda: admin.create_topics(
        {P + "validate": {"num_partitions": 2, "replication_factor": 1}},
        validate_only=True, raise_errors=False))
    step("create_topics_already_exists", lambda: admin.create_topics(
        {plain: {"num_partitions": 1, "replication_factor": 1}}, raise_errors=False))
    time.sleep(1)
    step("list_topics", lambda: sorted(admin.list_topics()))
    step("describe_topics", lambda: len(admin.describe_topics([plain, compact])))
    step("describe_topic_partitions", lambda: admin.describe_topic_partitions([plain]))
    step("describe_cluster", lambda: admin.describe_cluster())
    step("describe_features", lambda: admin.describe_features())
    step("describe_metadata_quorum", lambda: admin.describe_metadata_quorum())
    step("describe_log_dirs", lambda: str(admin.describe_log_dirs())[:100])

    step("describe_configs", lambda: str(admin.describe_configs([
        ConfigResource(ConfigResourceType.TOPIC, plain),
        ConfigResource(ConfigResourceType.BROKER, "1")], include_synonyms=True))[:100])
    step("list_config_resources", lambda: str(admin.list_config_resources())[:100])
    step("incremental_alter_configs", lambda: admin.alter_configs([
        ConfigResource(ConfigResourceType.TOPIC, plain, configs={
            "retention.ms": (AlterConfigOp.SET, "7200000"),
            "max.message.bytes": (AlterConfigOp.DELETE, None),
        })], incremental=True, raise_on_unknown=False))
    step("alter_configs_legacy", lambda: admin.alter_configs([
        ConfigResource(ConfigResourceType.TOPIC, compact, configs={"segment.ms": "600000"})],
        incremental=False, raise_on_unknown=False))

    step("create_partitions", lambda: str(admin.create_partitions({plain: 4}, raise_errors=False))[:100])

    step("create_acls", lambda: str(admin.create_acls([
        ACL("User:carol", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
            ResourcePattern(ResourceType.TOPIC, plain)),
        ACL("User:carol", "*", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW,
            ResourcePattern(ResourceType.GROUP, "kp-", ACLResourcePatternType.PREFIXED)),
    ]))[:150])
    time.sleep(1)
    step("describe_acls", lambda: str(admin.describe_acls(ACLFilter(
        None, None, ACLOperation.ANY, ACLPermissionType.ANY,
        ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))))[:150])
    step("delete_acls", lambda: str(admin.delete_acls([ACLFilter(
        "User:carol", None, ACLOperation.ANY, ACLPermissionType.ANY,
        ResourcePatternFilter(ResourceType.GROUP, None, ACLResourcePatternType.ANY))]))[:150])

    step("alter_user_scram_credentials", lambda: admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("carol", ScramMechanism.SCRAM_SHA_256, "carol-secret",
                                     salt=b"salt-for-carol"),
        UserScramCredentialUpsertion("dave", ScramMechanism.SCRAM_SHA_512, "dave-secret",
                                     iterations=8192, salt=b"salt-for-dave"),
    ]))
    time.sleep(0.5)
    step("describe_user_scram_credentials", lambda: admin.describe_user_scram_credentials())
    step("describe_user_scram_credentials_some",
         lambda: admin.describe_user_scram_credentials(["carol", "nobody"]))
    step("delete_user_scram_credentials", lambda: admin.alter_user_scram_credentials([
        UserScramCredentialDeletion("dave", ScramMechanism.SCRAM_SHA_512)]))

    def produce(name, topic, partition, **extra):
        p = KafkaProducer(bootstrap_servers=bs, client_id=f"kafkapython-{name}", linger_ms=5,
                          batch_size=16384, request_timeout_ms=T * 1000, **extra)
        futs = []
        for i in range(RECORDS_PER_BATCH):
            hdrs = [("h1", b"v1")] if i % 4 == 0 else None
            futs.append(p.send(topic, value=value(i), key=f"key-{i % 5}".encode(),
                               partition=partition, headers=hdrs))
        p.flush(T)
        ok = 0
        for f in futs:
            try:
                f.get(timeout=T)
                ok += 1
            except Exception:
                pass
        p.close(timeout=T)
        return f"acked {ok}"

    for acks in (0, 1, "all"):
        step(f"produce_acks_{acks}", produce, f"producer-acks{acks}", plain, 0, acks=acks)
    for codec in (None, "gzip", "snappy", "lz4", "zstd"):
        step(f"produce_{codec}", produce, f"producer-{codec or 'none'}", codecs_t, 0,
             acks="all", compression_type=codec)
    step("produce_idempotent", produce, "producer-idempotent", plain, 1,
         enable_idempotence=True, acks="all")

    def transactions():
        p = KafkaProducer(bootstrap_servers=bs, client_id="kafkapython-txn",
                          transactional_id="kp-txn-id", linger_ms=5, request_timeout_ms=T * 1000)
        p.init_transactions()
        p.begin_transaction()
        for i in range(RECORDS_PER_BATCH):
            p.send(plain, value=value(i), key=b"k", partition=2)
        p.flush(T)
        p.send_offsets_to_transaction({TopicPartition(plain, 0): OffsetAndMetadata(5, "", -1)},
                                      "kp-txn-group")
        p.commit_transaction()
        p.begin_transaction()
        p.send(plain, value=value(0, 50), key=b"k", partition=2)
        p.flush(T)
        p.abort_transaction()
        p.close(timeout=T)
        return "committed one, aborted one"
    step("transactions", transactions)

    now_ms = int(time.time() * 1000)
    step("list_offsets", lambda: str(admin.list_partition_offsets({
        TopicPartition(plain, 0): OffsetSpec.EARLIEST,
        TopicPartition(plain, 1): OffsetSpec.LATEST,
        TopicPartition(plain, 2): OffsetSpec.MAX_TIMESTAMP,
        TopicPartition(codecs_t, 0): now_ms - 60000,
    }))[:150])

    def consume_assigned(name, tps, want):
        c = KafkaConsumer(bootstrap_servers=bs, client_id=f"kafkapython-{name}",
                          enable_auto_commit=False, group_id=None, fetch_max_wait_ms=100,
                          fetch_max_bytes=65536, max_partition_fetch_bytes=16384,
                          consumer_timeout_ms=3000, request_timeout_ms=T * 1000)
        c.assign(tps)
        for tp in tps:
            c.seek(tp, 0)
        got, deadline = 0, time.time() + T
        while got < want and time.time() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                got += len(recs)
        # offsets_for_times / beginning / end -> ListOffsets
        c.beginning_offsets(tps)
        c.end_offsets(tps)
        c.offsets_for_times({tps[0]: now_ms - 60000})
        c.close()
        return f"consumed {got}"
    step("consume_assigned_plain", consume_assigned, "consumer-assign",
         [TopicPartition(plain, 0), TopicPartition(plain, 1)], 60)
    step("consume_assigned_codecs", consume_assigned, "consumer-codecs",
         [TopicPartition(codecs_t, 0)], 5 * RECORDS_PER_BATCH)

    def consume_group(name, group, want=20):
        c = KafkaConsumer(plain, bootstrap_servers=bs, client_id=f"kafkapython-{name}",
                          group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                          fetch_max_wait_ms=100, session_timeout_ms=10000,
                          heartbeat_interval_ms=1000, request_timeout_ms=T * 1000)
        got, deadline = 0, time.time() + 25
        while got < want and time.time() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                got += len(recs)
            if got:
                c.commit()
        committed = c.committed(TopicPartition(plain, 0))
        c.close()
        return f"consumed {got}, committed p0={committed}"
    step("consume_group_classic", consume_group, "consumer-classic", "kp-group-classic")

    step("list_groups", lambda: str(admin.list_groups())[:150])
    step("describe_groups", lambda: str(admin.describe_groups(["kp-group-classic"]))[:150])
    step("list_group_offsets", lambda: str(admin.list_group_offsets(
        {"kp-group-classic": None}))[:150] if True else None)
    step("alter_group_offsets", lambda: str(admin.alter_group_offsets(
        "kp-group-classic", {TopicPartition(plain, 0): OffsetAndMetadata(2, "rewound", -1)}))[:150])
    step("delete_group_offsets", lambda: str(admin.delete_group_offsets(
        "kp-group-classic", [TopicPartition(plain, 1)]))[:150])
    step("delete_records", lambda: str(admin.delete_records({TopicPartition(plain, 0): 3}))[:150])
    step("list_transactions", lambda: str(admin.list_transactions())[:150])
    step("describe_transactions", lambda: str(admin.describe_transactions(["kp-txn-id"]))[:150])
    step("describe_producers", lambda: str(admin.describe_producers([TopicPartition(plain, 1)]))[:150])
    step("delete_groups", lambda: str(admin.delete_groups(["kp-group-classic", "kp-nope"]))[:150])
    step("delete_topics", lambda: str(admin.delete_topics([plain, compact, codecs_t],
                                                          raise_errors=False))[:150])
    step("delete_topics_unknown", lambda: str(admin.delete_topics([P + "nope"],
                                                                  raise_errors=False))[:150])
    admin.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--client", required=True, choices=["librdkafka", "kafkapython"])
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    print(f"drive: {args.client} against {args.bootstrap}", flush=True)
    t0 = time.time()
    {"librdkafka": drive_librdkafka, "kafkapython": drive_kafkapython}[args.client](args.bootstrap)
    n_err = sum(1 for r in RESULTS if r[1] != "ok")
    print(f"drive: {args.client}: {len(RESULTS) - n_err} steps ok, {n_err} steps with errors "
          f"({time.time() - t0:.0f}s)", flush=True)


if __name__ == "__main__":
    main()
