"""What one side of a mixed cluster wrote, enforced by the other (mixed_kafka_security.rs runs
it): confluent-kafka (librdkafka) as the SCRAM user alice against the enforcing broker's own
SASL_PLAINTEXT listener, which no other broker has, so the client knows of that broker only.

    mixed_security.py enforce <bootstrap> <broker id> <allowed topic> <denied topic> \
        <max.message.bytes>

The other side wrote, through Kafka's tools: alice's SCRAM-SHA-256 credential (password
alice-secret), an ACL allowing her to write <allowed topic> and nothing on <denied topic>, a
producer_byte_rate quota for her, and <max.message.bytes> on <allowed topic>. Each check waits
(up to WAIT_S) for the enforcing broker's metadata to catch up, then holds:

- alice logs in with SCRAM-SHA-256, and the brokers she is told of are exactly <broker id>;
  a wrong password is refused with SASL_AUTHENTICATION_FAILED;
- she writes <allowed topic>; every record for <denied topic> fails with
  TOPIC_AUTHORIZATION_FAILED;
- a record under <max.message.bytes> is written, one over it fails with MSG_SIZE_TOO_LARGE
  (the broker's MESSAGE_TOO_LARGE);
- a burst over her byte rate gets a produce response with a throttle time from <broker id>.

Then, as the other side deletes what it wrote, one thing at a time:

    mixed_security.py lifted <bootstrap> <broker id> <allowed topic> <max.message.bytes> \
        <cluster message.max.bytes>
        the quota, then the topic config deleted, then the cluster-wide default
        message.max.bytes set: the admin writes a record over the old topic limit, one over
        the cluster-wide limit is refused, and alice's burst is not throttled
    mixed_security.py unauthorized <bootstrap> <allowed topic>
        the ACL removed: alice's writes are refused with TOPIC_AUTHORIZATION_FAILED
    mixed_security.py unauthenticated <bootstrap>
        alice's credential deleted: her login is refused

Prints "all ok" at the end; any failure exits 1 with "FAILED: <reason>".
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients_common import fail, say  # noqa: E402
from sasl import confluent_refusal, confluent_sasl, expect_confluent_refused  # noqa: E402

from confluent_kafka import KafkaError, Producer  # noqa: E402
from confluent_kafka import admin as cadmin  # noqa: E402

# How long the enforcing broker may take to apply what the other side's controller committed.
WAIT_S = 60
# The burst that must exceed alice's producer_byte_rate: records of RECORD_BYTES in batches
# of at most BATCH_BYTES (under the topic's max.message.bytes, so only the quota acts).
RECORD_BYTES = 1000
BURST_RECORDS = 48
BATCH_BYTES = 8000


def produce(conf, topic, values, **extra):
    """Produces `values` to `topic` and waits for every delivery report: the delivery
    errors (None for a delivered record) and the throttle events seen meanwhile."""
    deliveries, throttles, errors = [], [], []
    p = Producer({**conf, "acks": "all", "message.timeout.ms": 20000,
                  "throttle_cb": throttles.append, "error_cb": errors.append, **extra})
    for v in values:
        while True:
            try:
                p.produce(topic, v, on_delivery=lambda err, msg: deliveries.append(err))
                break
            except BufferError:
                p.poll(0.1)
    if p.flush(40) != 0:
        fail(f"{topic}: records still undelivered after 40 s; client errors: {errors}")
    return deliveries, throttles


def refused_with(conf, topic, size, code):
    """A probe for `until`: one record of `size` bytes to `topic`, refused with `code`."""
    errs, _ = produce(conf, topic, [b"x" * size])
    return (errs[0] if errs[0] is not None and errs[0].code() == code else None), errs


def burst(conf, topic):
    """The throttle events of a burst of BURST_RECORDS to `topic`, every record written."""
    errs, events = produce(conf, topic, [b"q" * RECORD_BYTES] * BURST_RECORDS,
                           **{"batch.size": BATCH_BYTES, "linger.ms": 20})
    if any(errs):
        fail(f"{topic}: the burst was refused: {errs}")
    return events


def until(what, probe):
    """Calls `probe` until it returns a value (not None), for at most WAIT_S; the value."""
    deadline = time.time() + WAIT_S
    last = None
    while time.time() < deadline:
        value, last = probe()
        if value is not None:
            return value
        time.sleep(0.5)
    fail(f"{what}: not seen in {WAIT_S} s; last seen: {last}")


def logged_in_brokers(conf):
    try:
        brokers = cadmin.AdminClient(conf).list_topics(timeout=5).brokers
        return sorted(brokers), None
    except Exception as e:  # noqa: BLE001
        return None, repr(e)


def enforce(bootstrap, broker_id, allowed, denied, max_message_bytes):
    alice = confluent_sasl(bootstrap, "SCRAM-SHA-256", "alice", "alice-secret")
    brokers = until("alice logs in with SCRAM-SHA-256", lambda: logged_in_brokers(alice))
    if brokers != [broker_id]:
        fail(f"alice's metadata lists brokers {brokers}, not only the enforcing {broker_id}")
    say(f"alice logged in with SCRAM-SHA-256; the only broker she knows is {brokers}")
    expect_confluent_refused(confluent_sasl(bootstrap, "SCRAM-SHA-256", "alice", "wrong"),
                             "SCRAM-SHA-256", "alice with a wrong password")

    def write_allowed():
        errs, _ = produce(alice, allowed, [f"v{i}".encode() for i in range(5)])
        return (len(errs) if not any(errs) else None), errs
    until(f"alice writes {allowed}", write_allowed)
    say(f"alice wrote 5 records to {allowed}")

    errs, _ = produce(alice, denied, [b"no"] * 3)
    codes = [e.code() if e else None for e in errs]
    if codes != [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 3:
        fail(f"{denied}: expected TOPIC_AUTHORIZATION_FAILED for each record, got {errs}")
    say(f"{denied}: every record refused with {errs[0].name()}")

    refused = until(f"a record over max.message.bytes={max_message_bytes} refused",
                    lambda: refused_with(alice, allowed, max_message_bytes + 1000,
                                         KafkaError.MSG_SIZE_TOO_LARGE))
    say(f"{allowed}: a {max_message_bytes + 1000}-byte record refused with {refused.name()}")
    errs, _ = produce(alice, allowed, [b"y" * (max_message_bytes // 2)])
    if any(errs):
        fail(f"{allowed}: a {max_message_bytes // 2}-byte record was refused: {errs}")
    say(f"{allowed}: a {max_message_bytes // 2}-byte record written")

    def throttled():
        events = burst(alice, allowed)
        hits = [e for e in events if e.throttle_time > 0]
        return (hits or None), [str(e) for e in events]
    hits = until("a produce response with a throttle time", throttled)
    others = [e for e in hits if e.broker_id != broker_id]
    if others:
        fail(f"throttled by brokers other than {broker_id}: {others}")
    say(f"alice throttled by broker {broker_id}: {len(hits)} responses, the longest "
        f"{max(e.throttle_time for e in hits):.3f} s")
    print("all ok", flush=True)


def lifted(bootstrap, broker_id, allowed, max_message_bytes, cluster_max):
    """After the quota, then max.message.bytes were deleted, and then the cluster-wide
    default message.max.bytes set to `cluster_max` (a dynamic broker config): once the admin
    writes a record over the old topic limit (the deletion applied), one over `cluster_max`
    is refused (the default applied), and alice's burst is not throttled (the quota's
    deletion, earlier in the metadata log, applied too: a broker applies the log in order)."""
    admin = confluent_sasl(bootstrap, "SCRAM-SHA-512", "admin", "admin-secret")
    alice = confluent_sasl(bootstrap, "SCRAM-SHA-256", "alice", "alice-secret")

    def large_written():
        errs, _ = produce(admin, allowed, [b"x" * (max_message_bytes + 1000)])
        return (True if not any(errs) else None), errs
    until(f"a record over the deleted max.message.bytes={max_message_bytes} written",
          large_written)
    say(f"{allowed}: a {max_message_bytes + 1000}-byte record written once the config was deleted")

    refused = until(f"a record over the cluster-wide message.max.bytes={cluster_max} refused",
                    lambda: refused_with(admin, allowed, cluster_max + 10000,
                                         KafkaError.MSG_SIZE_TOO_LARGE))
    say(f"{allowed}: a {cluster_max + 10000}-byte record refused with {refused.name()} under "
        f"the cluster-wide message.max.bytes={cluster_max}")
    hits = [str(e) for e in burst(alice, allowed) if e.throttle_time > 0]
    if hits:
        fail(f"alice throttled by broker {broker_id} after her quota was deleted: {hits}")
    say("alice's burst ran free of throttling once her quota was deleted")
    print("all ok", flush=True)


def unauthorized(bootstrap, allowed):
    """After the ACL was removed: alice's writes to the allowed topic are refused."""
    alice = confluent_sasl(bootstrap, "SCRAM-SHA-256", "alice", "alice-secret")

    err = until(f"alice refused on {allowed} once her ACL was removed",
                lambda: refused_with(alice, allowed, 10, KafkaError.TOPIC_AUTHORIZATION_FAILED))
    say(f"{allowed}: alice refused with {err.name()} once her ACL was removed")
    print("all ok", flush=True)


def unauthenticated(bootstrap):
    """After alice's SCRAM-SHA-256 credential was deleted: her login is refused."""
    alice = confluent_sasl(bootstrap, "SCRAM-SHA-256", "alice", "alice-secret")

    def refused():
        errors = confluent_refusal(alice)
        auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
        return (auth[0] if auth else None), errors
    err = until("alice's login refused once her credential was deleted", refused)
    say(f"alice refused once her credential was deleted ({err.str()})")
    print("all ok", flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "enforce":
        enforce(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6]))
    elif mode == "lifted":
        lifted(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
    elif mode == "unauthorized":
        unauthorized(sys.argv[2], sys.argv[3])
    elif mode == "unauthenticated":
        unauthenticated(sys.argv[2])
    else:
        fail(f"unknown mode {mode}")
