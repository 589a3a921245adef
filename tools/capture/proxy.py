#!/usr/bin/env python3
"""Recording TCP proxy for the Kafka wire protocol.

Listens on one or more loopback ports, forwards every connection unchanged to
an upstream Kafka listener, and logs every complete frame it sees:

  * request frames  (client -> server): request header + body, no size prefix
  * response frames (server -> client): response header + body, no size prefix

Responses are matched to requests through the correlation id (tracked per
connection), so every response record carries the api key / api version of its
request. Requests that never get a response (Produce with acks=0) are logged
with no response.

Output is JSON lines (one object per frame) so that corpus.py can post-process
(label by client, deduplicate, name files) without the proxy knowing anything
about the corpus layout.

Usage:
  proxy.py --out raw.jsonl --map broker:19092:9092 --map controller:19093:9093
           [--ready-file F] [--max-seconds N]

Only 127.0.0.1 is ever bound or dialled.
"""

import argparse
import asyncio
import json
import os
import signal
import struct
import sys
import time

HOST = "127.0.0.1"


class Recorder:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)
        self.seq = 0

    def write(self, **rec):
        if self.f.closed:
            return
        self.seq += 1
        rec["seq"] = self.seq
        rec["t"] = round(time.time(), 6)
        self.f.write(json.dumps(rec, separators=(",", ":")) + "\n")

    def close(self):
        self.f.close()


def parse_request_header(frame):
    """api_key, api_version, correlation_id, client_id (header v1/v2 prefix)."""
    if len(frame) < 8:
        return None
    key, ver, corr = struct.unpack_from(">hhi", frame, 0)
    client_id = None
    if len(frame) >= 10:
        (n,) = struct.unpack_from(">h", frame, 8)
        if n >= 0 and 10 + n <= len(frame):
            client_id = frame[10:10 + n].decode("utf-8", "replace")
    return key, ver, corr, client_id


class Conn:
    counter = 0

    def __init__(self, listener, rec):
        Conn.counter += 1
        self.id = Conn.counter
        self.listener = listener
        self.rec = rec
        self.pending = {}  # correlation id -> (api_key, api_version, client_id, req seq)
        self.client_id = None

    def on_request(self, frame):
        hdr = parse_request_header(frame)
        if hdr is None:
            self.rec.write(conn=self.id, listener=self.listener, dir="req", bad=True, hex=frame.hex())
            return
        key, ver, corr, client_id = hdr
        if client_id is not None:
            self.client_id = client_id
        self.rec.write(conn=self.id, listener=self.listener, dir="req", api_key=key,
                       api_version=ver, corr=corr, client_id=client_id, hex=frame.hex())
        self.pending[corr] = (key, ver, client_id, self.rec.seq)

    def on_response(self, frame):
        if len(frame) < 4:
            self.rec.write(conn=self.id, listener=self.listener, dir="resp", bad=True, hex=frame.hex())
            return
        (corr,) = struct.unpack_from(">i", frame, 0)
        req = self.pending.pop(corr, None)
        if req is None:
            self.rec.write(conn=self.id, listener=self.listener, dir="resp", corr=corr,
                           orphan=True, hex=frame.hex())
            return
        key, ver, client_id, req_seq = req
        self.rec.write(conn=self.id, listener=self.listener, dir="resp", api_key=key,
                       api_version=ver, corr=corr, client_id=client_id, req_seq=req_seq,
                       hex=frame.hex())


async def pump(reader, writer, on_frame):
    """Copy bytes reader -> writer, calling on_frame for every complete frame."""
    buf = bytearray()
    try:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                break
            writer.write(data)
            buf += data
            while len(buf) >= 4:
                (size,) = struct.unpack_from(">i", buf, 0)
                if size < 0:
                    buf.clear()  # garbage; stop parsing but keep forwarding
                    break
                if len(buf) < 4 + size:
                    break
                on_frame(bytes(buf[4:4 + size]))
                del buf[:4 + size]
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def handle(listener, upstream_port, rec, creader, cwriter):
    conn = Conn(listener, rec)
    try:
        ureader, uwriter = await asyncio.wait_for(asyncio.open_connection(HOST, upstream_port), 10)
    except Exception as e:
        print(f"proxy: upstream {upstream_port} connect failed: {e}", file=sys.stderr)
        cwriter.close()
        return
    rec.write(conn=conn.id, listener=listener, dir="open")
    await asyncio.gather(
        pump(creader, uwriter, conn.on_request),
        pump(ureader, cwriter, conn.on_response),
    )
    rec.write(conn=conn.id, listener=listener, dir="close", client_id=conn.client_id,
              unanswered=len(conn.pending))


async def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--map", action="append", required=True,
                    help="NAME:LISTEN_PORT:UPSTREAM_PORT (all on 127.0.0.1)")
    ap.add_argument("--ready-file")
    ap.add_argument("--max-seconds", type=float, default=1800)
    args = ap.parse_args()

    rec = Recorder(args.out)
    servers = []
    for m in args.map:
        name, lport, uport = m.split(":")
        lport, uport = int(lport), int(uport)
        srv = await asyncio.start_server(
            lambda r, w, n=name, u=uport: handle(n, u, rec, r, w), HOST, lport)
        servers.append(srv)
        print(f"proxy: {name} {HOST}:{lport} -> {HOST}:{uport}", file=sys.stderr)

    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write(str(os.getpid()))

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), args.max_seconds)
    except asyncio.TimeoutError:
        print("proxy: max-seconds reached, exiting", file=sys.stderr)
    for s in servers:
        s.close()
    rec.close()


if __name__ == "__main__":
    asyncio.run(main())
