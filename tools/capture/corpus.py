#!/usr/bin/env python3
"""Turn the proxy's raw frame log into the on-disk test corpus.

  corpus.py --raw raw.jsonl [--raw more.jsonl] --api-keys apikeys.tsv --out DIR [--max-per-group N]
            [--max-bytes B] [--kafka-version V]

Output files (DIR is wiped of *.request / *.response / MANIFEST.tsv first):

  <client>-<ApiName>-k<key>-v<version>-<seq>.request   request header + body
  <client>-<ApiName>-k<key>-v<version>-<seq>.response  response header + body

No 4-byte size prefix. A .response always has its .request sibling (same stem);
a .request may stand alone (Produce with acks=0 gets no response).

<client> is derived from the request header's client_id:
  librdkafka-*  -> librdkafka   (confluent-kafka / librdkafka)
  kafkapython-* -> kafkapython  (kafka-python)
  javatools-*, GetOffsetShell -> javatools (Kafka's own Java CLI tools)
  anything else -> kraftnode    (Kafka-internal traffic: broker -> controller
                                 registration/heartbeats, txn markers,
                                 share-state persister, ...)

Requests that got no response are kept only when none was expected (Produce
with acks=0); others (e.g. a long-poll Fetch cut short by the client closing
its connection) are dropped.

Deduplication: two exchanges are duplicates when their request and response
bytes are identical once the correlation id is masked. Per (client, key,
version) at most --max-per-group exchanges are kept (--max-per-group-data for
Produce and Fetch), preferring ones whose (request size, response size) has not
been seen yet, then in capture order.

MANIFEST.tsv lists every stem with the client_id, listener and sizes; with
--annotate (run after VerifyCorpus.java) it also gets whether Kafka's own
generated message classes parse each file completely and re-encode it
byte-identically.
"""

import argparse
import collections
import glob
import hashlib
import json
import os
import struct
import sys

KNOWN_JAVA_TOOL_IDS = {"GetOffsetShell"}


def label(client_id):
    cid = client_id or ""
    for prefix in ("librdkafka", "kafkapython", "javatools"):
        if cid.startswith(prefix):
            return prefix
    if cid in KNOWN_JAVA_TOOL_IDS:
        return "javatools"
    return "kraftnode"


def read_uvarint(b, i):
    shift = val = 0
    while True:
        c = b[i]
        i += 1
        val |= (c & 0x7F) << shift
        if not c & 0x80:
            return val, i
        shift += 7


def produce_acks(rb, version):
    """acks of a Produce request (v3+), or None if it cannot be parsed."""
    try:
        (n,) = struct.unpack_from(">h", rb, 8)
        i = 10 + max(n, 0)
        flexible = version >= 9
        if flexible:  # request header v2: tagged fields
            ntags, i = read_uvarint(rb, i)
            for _ in range(ntags):
                _, i = read_uvarint(rb, i)
                size, i = read_uvarint(rb, i)
                i += size
            tlen, i = read_uvarint(rb, i)  # compact nullable transactional_id
            i += max(tlen - 1, 0)
        else:
            (tlen,) = struct.unpack_from(">h", rb, i)
            i += 2 + max(tlen, 0)
        (acks,) = struct.unpack_from(">h", rb, i)
        return acks
    except (struct.error, IndexError):
        return None


def mask_corr_req(b):
    return b[:4] + b"\0\0\0\0" + b[8:]


def mask_corr_resp(b):
    return b"\0\0\0\0" + b[4:]


def annotate(out, roundtrip_tsv):
    """Add Kafka's own round-trip verdict (VerifyCorpus.java output) to MANIFEST.tsv."""
    verdict = {}
    with open(roundtrip_tsv) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 2:
                verdict[parts[0]] = parts[1] if parts[1] == "ok" else f"{parts[1]}({parts[2]})" if len(parts) > 2 else parts[1]
    path = os.path.join(out, "MANIFEST.tsv")
    with open(path) as f:
        lines = f.read().splitlines()
    res = []
    for line in lines:
        if line.startswith("#"):
            head = line.split("\t")
            res.append("\t".join(head[:5] + ["java_roundtrip_request", "java_roundtrip_response"] + head[5:]))
            continue
        stem = line.split("\t")[0]
        res.append("\t".join([line, verdict.get(stem + ".request", "-"), verdict.get(stem + ".response", "-")]))
    with open(path, "w") as f:
        f.write("\n".join(res) + "\n")
    not_ok = {k: v for k, v in verdict.items() if v != "ok"}
    print(f"annotate: {len(verdict) - len(not_ok)} files round-trip byte-identically through Kafka's "
          f"own message classes, {len(not_ok)} do not:")
    for k, v in sorted(not_ok.items()):
        print(f"  {k}: {v}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--annotate", metavar="ROUNDTRIP_TSV",
                    help="only add VerifyCorpus.java results to DIR/MANIFEST.tsv and exit")
    ap.add_argument("--raw", action="append", help="proxy log (repeatable)")
    ap.add_argument("--api-keys")
    ap.add_argument("--max-per-group", type=int, default=8)
    ap.add_argument("--max-per-group-data", type=int, default=16,
                    help="cap for Produce and Fetch, where payload variety matters")
    ap.add_argument("--max-bytes", type=int, default=3 * 1024 * 1024)
    ap.add_argument("--kafka-version", default="?")
    args = ap.parse_args()
    if args.annotate:
        annotate(args.out, args.annotate)
        return 0
    if not (args.raw and args.api_keys):
        ap.error("--raw and --api-keys are required")

    names = {}
    with open(args.api_keys) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 2 and parts[0].lstrip("-").isdigit():
                names[int(parts[0])] = parts[1]

    # --- load and pair -----------------------------------------------------
    pairs = []      # (req_record, resp_record or None), in capture order per raw file
    for fidx, raw in enumerate(args.raw):
        reqs, resp_by_req = {}, {}
        with open(raw) as f:
            for line in f:
                r = json.loads(line)
                if r.get("bad") or r.get("orphan"):
                    continue
                r["seq"] = (fidx, r["seq"])
                if r["dir"] == "req":
                    reqs[r["seq"]] = r
                elif r["dir"] == "resp":
                    resp_by_req[(fidx, r["req_seq"])] = r
        for seq in sorted(reqs):
            pairs.append((reqs[seq], resp_by_req.get(seq)))

    # --- group, dedup ------------------------------------------------------
    groups = collections.OrderedDict()
    seen = set()
    dup = unanswered = 0
    for req, resp in pairs:
        key = (label(req.get("client_id")), req["api_key"], req["api_version"])
        rb = bytes.fromhex(req["hex"])
        if resp is None and not (req["api_key"] == 0 and produce_acks(rb, req["api_version"]) == 0):
            unanswered += 1
            continue
        sb = bytes.fromhex(resp["hex"]) if resp else None
        fp = hashlib.sha256(mask_corr_req(rb) + b"|" + (mask_corr_resp(sb) if sb is not None else b"-")).digest()
        if (key, fp) in seen:
            dup += 1
            continue
        seen.add((key, fp))
        groups.setdefault(key, []).append((req, rb, sb))

    selected = {}
    for key, items in groups.items():
        cap = args.max_per_group_data if key[1] in (0, 1) else args.max_per_group
        chosen, shapes = [], set()
        for it in items:  # pass 1: new (req size, resp size) shapes
            shape = (len(it[1]), len(it[2]) if it[2] is not None else -1)
            if shape not in shapes and len(chosen) < cap:
                shapes.add(shape)
                chosen.append(it)
        for it in items:  # pass 2: fill up in capture order
            if len(chosen) >= cap:
                break
            if not any(it is c for c in chosen):
                chosen.append(it)
        chosen.sort(key=lambda it: it[0]["seq"])
        selected[key] = chosen

    # --- size budget: shrink the biggest groups until under max-bytes -------
    def total():
        return sum(len(rb) + (len(sb) if sb is not None else 0)
                   for items in selected.values() for _, rb, sb in items)
    while total() > args.max_bytes:
        key = max(selected, key=lambda k: sum(len(rb) + len(sb or b"") for _, rb, sb in selected[k]))
        if len(selected[key]) <= 1:
            break
        # drop the largest exchange of the heaviest group
        big = max(selected[key], key=lambda it: len(it[1]) + len(it[2] or b""))
        selected[key] = [it for it in selected[key] if it is not big]

    # --- write -------------------------------------------------------------
    os.makedirs(args.out, exist_ok=True)
    for p in (glob.glob(os.path.join(args.out, "*.request")) + glob.glob(os.path.join(args.out, "*.response"))
              + glob.glob(os.path.join(args.out, "MANIFEST.tsv"))):
        os.remove(p)

    manifest = ["# stem\tclient_id\tlistener\trequest_bytes\tresponse_bytes\t"
                f"(captured from Apache Kafka {args.kafka_version}; no size prefix)"]
    n_files = 0
    for (client, k, v), items in sorted(selected.items()):
        name = names.get(k, f"Unknown{k}")
        for i, (req, rb, sb) in enumerate(items, 1):
            stem = f"{client}-{name}-k{k}-v{v}-{i:03d}"
            with open(os.path.join(args.out, stem + ".request"), "wb") as f:
                f.write(rb)
            n_files += 1
            if sb is not None:
                with open(os.path.join(args.out, stem + ".response"), "wb") as f:
                    f.write(sb)
                n_files += 1
            manifest.append(f"{stem}\t{req.get('client_id')}\t{req['listener']}\t{len(rb)}\t"
                            f"{len(sb) if sb is not None else '-'}")
    with open(os.path.join(args.out, "MANIFEST.tsv"), "w") as f:
        f.write("\n".join(manifest) + "\n")

    # --- summary -----------------------------------------------------------
    print(f"corpus: {len(pairs)} exchanges captured, {dup} exact duplicates and "
          f"{unanswered} unanswered (client went away) dropped, "
          f"{sum(len(v) for v in selected.values())} kept in {n_files} files, "
          f"{total()} bytes -> {args.out}")
    per_client = collections.defaultdict(list)
    for (client, k, v), items in sorted(selected.items()):
        per_client[client].append(f"{names.get(k, k)}(k{k})v{v}x{len(items)}")
    for client in sorted(per_client):
        print(f"  {client}: {len(per_client[client])} key/version groups: " + " ".join(per_client[client]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
