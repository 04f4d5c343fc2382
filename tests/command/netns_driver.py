"""Run one ``handler-kit forward`` inside a network namespace of its own (started by
``unshare -rmn``, with /etc/resolv.conf bind-mounted to name 127.0.0.1 as the resolver), with
the faults a test asks for on that namespace's 127.0.0.1, and print how it went as JSON.

Run as a script: ``python netns_driver.py PLAN_JSON``. The plan: ``dns`` (``"silent"``: a
resolver on port 53, UDP and TCP, that reads every query and never answers; a number: one that
answers every A query with 127.0.0.1 that many seconds after the forwarder was started: its
deadline counts from then too, so a start-up slowed by a loaded machine moves neither),
``hold_port`` (a TCP port where a server accepts and never sends a byte: a TLS handshake that
never finishes), ``argv``, ``stdin`` and ``env`` of the forwarder. The result: ``code``,
``stdout``, ``stderr`` and ``elapsed``, the forwarder's run in seconds.
"""

from __future__ import annotations

import fcntl
import json
import socket
import struct
import subprocess
import sys
import threading
import time
from typing import Any

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
HELD: list[socket.socket] = []  # every accepted connection stays open, unanswered
STARTED: list[float] = []  # when the forwarder was started (time.monotonic())


def loopback_up() -> None:
    """A new network namespace's loopback is down; bring it up (no ``ip`` needed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(sock, SIOCGIFFLAGS, request)[:18])[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))


def answer(query: bytes) -> bytes:
    """The reply to a DNS query: 127.0.0.1 for an A question, no records for any other."""
    end = 12
    while query[end] != 0:
        end += query[end] + 1
    question = query[12 : end + 5]
    qtype = struct.unpack("!H", query[end + 1 : end + 3])[0]
    records = b""
    if qtype == 1:
        records = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton("127.0.0.1")
    header = query[:2] + struct.pack("!HHHHH", 0x8180, 1, 1 if records else 0, 0, 0)
    return header + question + records


def resolver_sockets() -> tuple[socket.socket, socket.socket]:
    """The resolver's UDP and TCP sockets on port 53, bound (and listening) before the
    forwarder starts: a query sent before the resolver's thread runs waits in them."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 53))
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 53))
    tcp.listen(16)
    return udp, tcp


def resolver(udp: socket.socket, tcp: socket.socket, delay: float | None) -> None:
    threading.Thread(target=hold, args=(tcp,), daemon=True).start()

    def reply(query: bytes, peer: Any) -> None:
        time.sleep(max(0.0, STARTED[0] + (delay or 0) - time.monotonic()))
        udp.sendto(answer(query), peer)

    while True:
        query, peer = udp.recvfrom(4096)
        if delay is not None:
            threading.Thread(target=reply, args=(query, peer), daemon=True).start()


def hold(listener: socket.socket) -> None:
    while True:
        conn, _ = listener.accept()
        HELD.append(conn)


def main(plan: dict[str, Any]) -> None:
    loopback_up()
    dns = plan["dns"]
    delay = None if dns == "silent" else float(dns)
    threading.Thread(target=resolver, args=(*resolver_sockets(), delay), daemon=True).start()
    if plan.get("hold_port"):
        listener = socket.socket()
        listener.bind(("127.0.0.1", plan["hold_port"]))
        listener.listen(16)
        threading.Thread(target=hold, args=(listener,), daemon=True).start()
    start = time.monotonic()
    STARTED.append(start)
    done = subprocess.run(
        plan["argv"], input=plan["stdin"].encode(), capture_output=True, env=plan["env"], timeout=60
    )
    elapsed = time.monotonic() - start
    result = {
        "code": done.returncode,
        "stdout": done.stdout.decode("utf-8", "replace"),
        "stderr": done.stderr.decode("utf-8", "replace"),
        "elapsed": elapsed,
    }
    sys.stdout.write(json.dumps(result))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
