"""The certificate a TLS listener presents, as a new connection sees it, and a connection
held open across a change of the listener's certificate (crates/cli/tests/
stock_tls_rotation.rs). Python's ssl module only: the CA verifies the chain and the host name.

usage:
  tls_peer.py cert HOST:PORT CA
    Connects, prints "cert <DER hex>" of the listener's certificate, closes.
  tls_peer.py hold HOST:PORT CA GO_FILE
    Connects, prints "cert <DER hex>" and "held"; once GO_FILE exists, sends ApiVersions v0
    on the same connection (allowed before SASL authentication) and prints "answered <api
    count>" and the certificate of that same connection again.
Prints "FAILED: <reason>" and exits 1 on any error.
"""

import os
import socket
import ssl
import struct
import sys
import time


def connect(address, ca):
    host, port = address.rsplit(":", 1)
    context = ssl.create_default_context(cafile=ca)
    raw = socket.create_connection((host, int(port)), timeout=30)
    return context.wrap_socket(raw, server_hostname=host)


def read_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("connection closed")
        data += chunk
    return data


def api_versions(sock):
    client_id = b"tls-peer"
    header = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id
    sock.sendall(struct.pack(">i", len(header)) + header)
    size = struct.unpack(">i", read_exactly(sock, 4))[0]
    body = read_exactly(sock, size)
    correlation, error, count = struct.unpack(">ihi", body[:10])
    if correlation != 7 or error != 0:
        raise RuntimeError(f"ApiVersions answered correlation {correlation} error {error}")
    return count


def main():
    mode, address, ca = sys.argv[1:4]
    try:
        sock = connect(address, ca)
        print("cert", sock.getpeercert(binary_form=True).hex(), flush=True)
        if mode == "hold":
            print("held", flush=True)
            go = sys.argv[4]
            while not os.path.exists(go):
                time.sleep(0.05)
            print("answered", api_versions(sock), flush=True)
            print("cert", sock.getpeercert(binary_form=True).hex(), flush=True)
        sock.close()
    except Exception as e:  # noqa: BLE001 - any failure is the answer
        print(f"FAILED: {e!r}", flush=True)
        sys.exit(1)


main()
