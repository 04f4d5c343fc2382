"""Connection floods against a real server: what they do to a good client's gate calls.

A flood holds as many connections as it can, each having sent one byte of a request and no
token, and opens a new one whenever the server closes one (as an attacker would); meanwhile a
good client at another address calls the refund gate, a new connection per call, as a runtime
does. Floods from one address, from one address with the per-address limit raised to the
connection limit (a server behind a proxy, or before the limit existed), and from several
addresses, each under the per-address limit. The figures go to docs/reliability.md (between its
floods markers) and reliability/results/floods.json:

    .venv/bin/python -m reliability.floods      # about a minute
"""

from __future__ import annotations

import argparse
import contextlib
import json
import selectors
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from reliability.run import (
    GATE,
    HEADERS,
    HOST,
    RESULTS,
    ROOT,
    body,
    decision_of,
    machine,
    served,
    write_doc,
)

START, END = "<!-- floods:start -->", "<!-- floods:end -->"
# the server's defaults: 1000 connections per worker, a 4th of them per address
MAX_CONNECTIONS = 1000


class Flood:
    """``per_address`` connections from each of ``addresses``, kept open (reopened when the
    server closes one), each having sent one byte, in a thread of its own."""

    def __init__(self, port: int, addresses: list[str], per_address: int) -> None:
        self.port, self.addresses, self.per_address = port, addresses, per_address
        self.selector = selectors.DefaultSelector()
        self.stopping = threading.Event()
        self.refused = 0  # connections the server answered 429
        self.closed = 0  # connections the server closed, with or without an answer
        self.opened = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self, address: str) -> None:
        try:
            sock = socket.create_connection(
                (HOST, self.port), timeout=2, source_address=(address, 0)
            )
            sock.sendall(b"P")
        except OSError:
            return
        sock.setblocking(False)
        self.selector.register(sock, selectors.EVENT_READ, address)
        self.opened += 1

    def stop(self) -> int:
        """Stop reopening; the connections the server still holds (a refused one has its
        answer or its end to be read), then close them all."""
        self.stopping.set()
        self.thread.join(timeout=10)
        # the kernel hands the server its connections in order: once a call made now is
        # answered, every flood connection before it was accepted, and refused or held
        httpx.get(f"http://{HOST}:{self.port}/healthz", timeout=30)
        ready = {key.fileobj for key, _ in self.selector.select(timeout=1.0)}
        keys = list(self.selector.get_map().values())
        for key in keys:
            self.selector.unregister(key.fileobj)
            key.fileobj.close()  # type: ignore[union-attr]
        return sum(key.fileobj not in ready for key in keys)

    def _run(self) -> None:
        for address in self.addresses:
            for _ in range(self.per_address):
                self._open(address)
        while not self.stopping.is_set():
            for key, _ in self.selector.select(timeout=0.05):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                data = b""
                with contextlib.suppress(OSError):
                    data = sock.recv(4096)
                if data.startswith(b"HTTP/1.1 429 "):
                    self.refused += 1
                self.closed += 1
                self.selector.unregister(sock)
                sock.close()
                self._open(str(key.data))

    def __enter__(self) -> Flood:
        self.thread.start()
        deadline = time.monotonic() + 20
        wanted = len(self.addresses) * self.per_address
        while self.opened < wanted and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # the server has refused what it refuses
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.stopping.is_set():
            self.stop()


def good_client(port: int, seconds: float) -> dict[str, Any]:
    """Calls to the gate from 127.0.0.1 for ``seconds``, a new connection each (a refund it
    denies): how many were denied, what else came back, and how long a denial took."""
    statuses: dict[str, int] = {}
    denials: list[float] = []
    end = time.monotonic() + seconds
    calls = 0
    while time.monotonic() < end:
        calls += 1
        started = time.perf_counter()
        try:
            response = httpx.post(
                f"http://{HOST}:{port}{GATE}",
                content=body(f"flood-{calls}"),
                headers=HEADERS,
                timeout=5,
            )
            kind = str(response.status_code)
            if response.status_code == 200 and decision_of(response.content) == "deny":
                denials.append((time.perf_counter() - started) * 1000)
                kind = "deny"
        except httpx.HTTPError as exc:
            kind = type(exc).__name__
        statuses[kind] = statuses.get(kind, 0) + 1
        time.sleep(0.05)
    denials.sort()
    latency = (
        {
            "p50_ms": round(denials[len(denials) // 2], 2),
            "max_ms": round(denials[-1], 2),
        }
        if denials
        else {}
    )
    return {"calls": calls, "outcomes": statuses, "deny": latency}


def scenario(
    folder: Path,
    name: str,
    addresses: list[str],
    per_address: int,
    seconds: float,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    print(name, flush=True)
    with served(folder, env) as server:
        if not addresses:
            return {"name": name, "flood": None, "client": good_client(server.port, seconds)}
        with Flood(server.port, addresses, per_address) as flood:
            client = good_client(server.port, seconds)
            held = flood.stop()
        return {
            "name": name,
            "flood": {
                "addresses": len(addresses),
                "per_address": per_address,
                "held_at_end": held,
                "answered_429": flood.refused,
                "closed_by_server": flood.closed,
            },
            "client": client,
        }


def table(report: dict[str, Any]) -> str:
    lines = [
        f"Measured {report['date']} on {report['machine']} by `python -m reliability.floods` "
        f"({report['seconds']:.0f} s); each flood {report['window']:.0f} s, the good client "
        "calling the gate every 50 ms meanwhile.",
        "",
        "| flood | flood connections the server held at the end / answered 429 "
        "| good client: calls | denied (its gate's answer) | anything else | deny p50 / max |",
        "|---|---|---|---|---|---|",
    ]
    for row in report["scenarios"]:
        flood, client = row["flood"], row["client"]
        held = f"{flood['held_at_end']} / {flood['answered_429']}" if flood else "-"
        outcomes = dict(client["outcomes"])
        denied = outcomes.pop("deny", 0)
        other = ", ".join(f"{kind}: {n}" for kind, n in sorted(outcomes.items())) or "none"
        latency = client["deny"]
        timing = f"{latency['p50_ms']} / {latency['max_ms']} ms" if latency else "-"
        lines.append(
            f"| {row['name']} | {held} | {client['calls']} | {denied} | {other} | {timing} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reliability.floods", description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0, help="each flood (5)")
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite docs/reliability.md")
    options = parser.parse_args(argv)
    started = time.monotonic()
    one = ["127.0.0.2"]
    many = [f"127.0.0.{n}" for n in range(2, 10)]
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine(),
        "window": options.seconds,
    }
    with tempfile.TemporaryDirectory(prefix="hk-floods-", dir=str(ROOT)) as name:
        folder = Path(name)
        seconds = options.seconds
        no_limit = {"HANDLER_KIT_MAX_UNANSWERED_PER_ADDRESS": str(MAX_CONNECTIONS)}
        report["scenarios"] = [
            scenario(folder, "none", [], 0, seconds),
            scenario(folder, "1 address x 1005 connections", one, 1005, seconds),
            scenario(
                folder,
                "1 address x 1005, per-address limit raised to 1000 (as behind a proxy)",
                one,
                1005,
                seconds,
                no_limit,
            ),
            scenario(folder, "8 addresses x 130 connections", many, 130, seconds),
        ]
    report["seconds"] = time.monotonic() - started
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "floods.json").write_text(json.dumps(report, indent=2) + "\n")
    text = table(report)
    print(text)
    if not options.no_doc:
        write_doc(text, START, END)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
