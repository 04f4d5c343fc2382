"""Attacks, load and injected faults against real servers; the figures of docs/reliability.md.

Every server is ``handler-kit serve reliability.apps:app`` on 127.0.0.1, a subprocess in its
own process group (so a fault can kill the whole group, as a container kill does). Each step
prints what it did and what it saw; the run writes ``reliability/results/latest.json`` and the
figures table of ``docs/reliability.md`` (between its markers). It is not part of ``make test``:
it takes minutes and its figures describe a machine, not a contract (the contracts are tests).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import platform
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
DOC = ROOT / "docs" / "reliability.md"
START, END = "<!-- figures:start -->", "<!-- figures:end -->"
HOST = "127.0.0.1"
TOKEN = "reliability-token-0123456789abcdef"
APP = "reliability.apps:app"
GATE = "/hooks/refund_gate"
ONCE = "/hooks/refund_once"
HEADERS = {
    "Authorization": f"Bearer {TOKEN}",
    "Content-Type": "application/json",
    "X-Runbear-Hook-Event": "PreToolUse",
}


def log(message: str) -> None:
    print(message, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def event(call: str, amount: int = 640) -> dict[str, Any]:
    return {
        "session_id": "reliability",
        "hook_event_name": "PreToolUse",
        "tool_name": "issue_refund",
        "tool_input": {"order_id": "4821", "amount": amount},
        "tool_use_id": call,
    }


def body(call: str, amount: int = 640) -> bytes:
    return json.dumps(event(call, amount)).encode()


# -- servers ------------------------------------------------------------------------------


class Served:
    """``handler-kit serve`` in its own process group; ``stop`` is safe more than once."""

    def __init__(self, folder: Path, env: dict[str, str], args: list[str]) -> None:
        self.port = free_port()
        self.log_path = folder / f"serve-{self.port}.log"
        script = Path(sys.executable).with_name("handler-kit")
        argv = [str(script), "serve", APP, "--host", HOST, "--port", str(self.port), *args]
        environment = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "HANDLER_KIT_TOKENS": TOKEN,
            **env,
        }
        with self.log_path.open("wb") as out:
            self.proc = subprocess.Popen(
                argv,
                cwd=ROOT,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve exited at start-up:\n{self.output()[-2000:]}")
            if self.healthy():
                return
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"serve did not start within 30 s:\n{self.output()[-2000:]}")

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def healthy(self, path: str = "/healthz") -> bool:
        try:
            conn = http.client.HTTPConnection(HOST, self.port, timeout=2)
            conn.request("GET", path)
            ok = conn.getresponse().status == 200
            conn.close()
            return ok
        except OSError:
            return False

    def workers(self) -> list[int]:
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        with contextlib.suppress(OSError):
            return [int(pid) for pid in children.read_text().split()]
        return []

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)


@contextlib.contextmanager
def served(folder: Path, env: dict[str, str] | None = None, *args: str) -> Iterator[Served]:
    server = Served(folder, env or {}, list(args))
    try:
        yield server
    finally:
        server.stop()


# -- load ---------------------------------------------------------------------------------


@dataclass
class Outcome:
    call: str
    status: int | None  # None: no answer (connection refused or reset, timeout)
    decision: str | None
    ms: float


@dataclass
class Load:
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def answered(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == 200]

    @property
    def errors(self) -> int:
        return sum(o.status != 200 for o in self.outcomes)

    def latency(self, decision: str | None = "deny") -> dict[str, float]:
        values = sorted(o.ms for o in self.answered if decision is None or o.decision == decision)
        if not values:
            return {"n": 0}
        return {
            "n": len(values),
            "p50_ms": round(values[len(values) // 2], 2),
            "p99_ms": round(values[min(len(values) - 1, int(len(values) * 0.99))], 2),
            "max_ms": round(values[-1], 2),
        }


def decision_of(content: bytes) -> str | None:
    with contextlib.suppress(ValueError, AttributeError):
        answer = json.loads(content)
        specific = answer.get("hookSpecificOutput") or {}
        return str(specific.get("permissionDecision") or answer.get("decision") or "allow")
    return None


async def _load(
    port: int,
    path: str,
    calls: list[str],
    concurrency: int,
    during: Callable[[int], None] | None,
    amount: int,
) -> Load:
    result = Load()
    queue = list(reversed(calls))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    timeout = httpx.Timeout(15.0)
    async with httpx.AsyncClient(
        base_url=f"http://{HOST}:{port}", limits=limits, timeout=timeout
    ) as client:

        async def worker() -> None:
            while queue:
                call = queue.pop()
                started = time.perf_counter()
                try:
                    response = await client.post(path, content=body(call, amount), headers=HEADERS)
                    status, decision = response.status_code, decision_of(response.content)
                except httpx.HTTPError:
                    status, decision = None, None
                ms = (time.perf_counter() - started) * 1000
                result.outcomes.append(Outcome(call, status, decision, ms))
                if during is not None:
                    during(len(result.outcomes))

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return result


def load(
    port: int,
    count: int,
    *,
    prefix: str,
    path: str = GATE,
    concurrency: int = 20,
    during: Callable[[int], None] | None = None,
    amount: int = 640,
) -> Load:
    calls = [f"{prefix}-{index}" for index in range(count)]
    return asyncio.run(_load(port, path, calls, concurrency, during, amount))


def recorded_calls(path: Path) -> set[str]:
    """tool_use_id of every decision record in a JSON-lines audit file (a torn last line, as a
    kill leaves it, is not a record)."""
    found: set[str] = set()
    if not path.exists():
        return found
    for line in path.read_text(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if record.get("kind") == "decision" and record.get("tool_use_id"):
                found.add(record["tool_use_id"])
    return found


# -- attacks ------------------------------------------------------------------------------


def raw(port: int, data: bytes, *, wait: float = 5.0) -> bytes:
    """Send ``data`` on a new connection and read the answer until the server closes it (a
    server that answers early, a 413 say, may reset the connection while the rest is sent)."""
    with socket.create_connection((HOST, port), timeout=wait) as sock:
        with contextlib.suppress(OSError):
            sock.sendall(data)
        chunks = []
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks)


def request(port: int, payload: bytes, headers: dict[str, str], path: str = GATE) -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    head += f"Content-Length: {len(payload)}\r\n\r\n"
    return raw(port, head.encode() + payload)


def status_of(response: bytes) -> tuple[int | None, Any]:
    """(status, the JSON body or None) of a raw HTTP/1.1 response."""
    if not response.startswith(b"HTTP/1.1 "):
        return None, None
    status = int(response[9:12])
    _, _, content = response.partition(b"\r\n\r\n")
    try:
        return status, json.loads(content)
    except ValueError:
        return status, None


def refused(status: int | None, content: Any, *, gate: bool) -> bool:
    """A JSON 4xx; on a fail-closed gate's own route, its denial (200) is the right answer
    too: the runtime reads a 4xx as a failure, which fails open where the gate cannot."""
    if status is not None and 400 <= status < 500 and isinstance(content, dict):
        return True
    if gate and status == 200 and isinstance(content, dict):
        return decision_of(json.dumps(content).encode()) == "deny"
    return False


# An event name no handler has is answered "no opinion" on /hooks, not refused: runtimes add
# events, and a server that refused them would fail every new event (open or closed) until
# upgraded. Its own gate's route refuses it (the gate's event is fixed).
NO_OPINION = {("unknown event", "/hooks")}


def deep(depth: int) -> bytes:
    return b'{"hook_event_name":"PreToolUse","tool_input":' + b"[" * depth + b"]" * depth + b"}"


MCP = {**HEADERS, "Accept": "application/json, text/event-stream"}
# (attack, body, headers, the routes it is sent to)
ATTACKS: list[tuple[str, bytes, dict[str, str], tuple[str, ...]]] = [
    ("no token", body("a"), {**HEADERS, "Authorization": ""}, ("/hooks", GATE, "/mcp")),
    (
        "wrong token",
        body("a"),
        {**HEADERS, "Authorization": "Bearer " + "x" * 24},
        ("/hooks", GATE),
    ),
    ("basic auth", body("a"), {**HEADERS, "Authorization": "Basic Zm9vOmJhcg=="}, ("/hooks",)),
    ("not JSON", b"{not json", HEADERS, ("/hooks", GATE)),
    ("invalid UTF-8", b'{"tool_name":"\xff\xfe"}', HEADERS, ("/hooks", GATE)),
    ("JSON array", b"[1,2,3]", HEADERS, ("/hooks", GATE)),
    ("JSON string", b'"PreToolUse"', HEADERS, ("/hooks", GATE)),
    ("nested 100,000 deep", deep(100_000), HEADERS, ("/hooks", GATE)),
    ("body over the cap", b" " * (2 * 1024 * 1024), HEADERS, ("/hooks", GATE)),
    (
        "event header mismatch",
        body("a"),
        {**HEADERS, "X-Runbear-Hook-Event": "Stop"},
        ("/hooks", GATE),
    ),
    (
        "unknown event",
        json.dumps({**event("a"), "hook_event_name": "Nope"}).encode(),
        {**HEADERS, "X-Runbear-Hook-Event": "Nope"},
        ("/hooks", GATE),
    ),
    (
        "wrong field type",
        json.dumps({**event("a"), "tool_input": 5}).encode(),
        HEADERS,
        ("/hooks", GATE),
    ),
    ("header of 64 KiB", body("a"), {**HEADERS, "X-Big": "a" * 65536}, ("/hooks",)),
    ("unknown handler", body("a"), HEADERS, ("/hooks/nope",)),
    ("MCP body over the cap", b" " * (5 * 1024 * 1024), MCP, ("/mcp",)),
    ("MCP not JSON", b"{", MCP, ("/mcp",)),
]


def attacks(folder: Path) -> dict[str, Any]:
    """Each attack on each of its routes, then slow headers, idle connections and a run of
    wrong tokens (last: the failed-auth limit refuses this address for a while)."""
    results: list[dict[str, Any]] = []
    audit = folder / "attacks.jsonl"
    limits = ("--header-timeout", "2", "--keep-alive-timeout", "2")
    with served(folder, {"HANDLER_KIT_AUDIT": f"jsonl:{audit}"}, *limits) as server:
        for name, payload, headers, routes in ATTACKS:
            for route in routes:
                status, content = status_of(request(server.port, payload, headers, route))
                if (name, route) in NO_OPINION:
                    ok = status == 200 and content == {}
                else:
                    ok = refused(status, content, gate=route == GATE)
                results.append({"attack": name, "route": route, "status": status, "refused": ok})
                verdict = "refused" if ok else "NOT REFUSED"
                log(f"  {name:<24} {route:<20} -> {status}  {verdict}")
        # a lone surrogate is no reason to refuse (the gate decides on the amount), nor to
        # lose the answer's record
        surrogate = (
            b'{"hook_event_name":"PreToolUse","tool_name":"issue_refund","tool_use_id":"lone",'
            b'"tool_input":{"amount":640,"note":"\\ud800"}}'
        )
        status, content = status_of(request(server.port, surrogate, HEADERS))
        ok = refused(status, content, gate=True)
        results.append({"attack": "lone surrogate", "route": GATE, "status": status, "refused": ok})
        log(f"  {'lone surrogate':<24} {GATE:<20} -> {status}  {'denied' if ok else 'NOT DENIED'}")
        # slow headers: a header line every second never completes a request
        started = time.monotonic()
        answer = b""
        with socket.create_connection((HOST, server.port), timeout=10) as sock:
            sock.sendall(b"POST /hooks HTTP/1.1\r\n")
            with contextlib.suppress(OSError):
                for _ in range(10):
                    sock.sendall(b"X-Slow: 1\r\n")
                    sock.settimeout(1)
                    with contextlib.suppress(TimeoutError):
                        answer = sock.recv(4096)
                        if answer:
                            break
        held = time.monotonic() - started
        slow = status_of(answer)[0]
        results.append(
            {"attack": "slow headers", "route": "/hooks", "status": slow, "refused": slow == 408}
        )
        log(f"  {'slow headers':<24} {'/hooks':<20} -> {slow} after {held:.1f} s")
        # idle connections: opened, never used
        idle = [socket.create_connection((HOST, server.port), timeout=5) for _ in range(200)]
        time.sleep(4)
        still_open = 0
        for sock in idle:
            sock.setblocking(False)
            try:
                still_open += sock.recv(1) != b""
            except BlockingIOError:
                still_open += 1
            except OSError:
                pass
            sock.close()
        log(f"  200 idle connections: {still_open} still open after 4 s (keep-alive timeout 2 s)")
        # failed-auth limiting last: it refuses this address for a while
        wrong = [
            status_of(
                request(server.port, body("b"), {**HEADERS, "Authorization": f"Bearer w{i:020d}"})
            )[0]
            for i in range(40)
        ]
        limited = wrong.count(429)
        log(f"  40 wrong tokens in a row: {wrong.count(401)} x 401, {limited} x 429")
        tracebacks = server.output().count("Traceback")
        alive = server.healthy()
    recorded = "lone" in recorded_calls(audit)
    log(f"  the lone surrogate's answer has its record: {recorded}")
    return {
        "attacks": results,
        "sent": len(results) + 200 + 40,
        "cases": len(results),
        "cases_refused": sum(r["refused"] for r in results),
        "surrogate_recorded": recorded,
        "idle_connections_opened": 200,
        "idle_connections_open_after_4s": still_open,
        "slow_headers_held_s": round(held, 1),
        "wrong_tokens_limited": limited,
        "tracebacks_in_log": tracebacks,
        "alive_after": alive,
    }


# -- faults -------------------------------------------------------------------------------


def fault_kill_worker(folder: Path, count: int, durable: bool) -> dict[str, Any]:
    """kill -9 of one of two workers in the middle of the load."""
    audit = folder / f"kill-worker-{durable}.jsonl"
    env = {
        "HANDLER_KIT_AUDIT": f"jsonl:{audit}",
        "HANDLER_KIT_AUDIT_DURABLE": "1" if durable else "0",
    }
    killed: list[int] = []
    with served(folder, env, "--workers", "2") as server:

        def during(done: int) -> None:
            if not killed and done >= count // 3:
                pids = server.workers()
                if pids:
                    os.kill(pids[0], signal.SIGKILL)
                    killed.append(pids[0])

        result = load(server.port, count, prefix=f"kw{int(durable)}", during=during)
    answered = {o.call for o in result.answered}
    lost = len(answered - recorded_calls(audit))
    return summary("kill -9 of one worker", durable, count, result, lost)


def fault_kill_group(folder: Path, count: int, durable: bool) -> dict[str, Any]:
    """kill -9 of the whole process group (a container kill) in the middle of the load."""
    audit = folder / f"kill-group-{durable}.jsonl"
    env = {
        "HANDLER_KIT_AUDIT": f"jsonl:{audit}",
        "HANDLER_KIT_AUDIT_DURABLE": "1" if durable else "0",
    }
    server = Served(folder, env, ["--workers", "2"])
    try:
        fired: list[bool] = []

        def during(done: int) -> None:
            if not fired and done >= count // 2:
                fired.append(True)
                os.killpg(server.proc.pid, signal.SIGKILL)

        result = load(server.port, count, prefix=f"kg{int(durable)}", during=during)
    finally:
        server.kill()
    answered = {o.call for o in result.answered}
    lost = len(answered - recorded_calls(audit))
    return summary("kill -9 of the whole group", durable, count, result, lost)


def fault_sink_stalled(folder: Path, count: int, durable: bool) -> dict[str, Any]:
    """The SQLite decision log locked by another process for the whole load."""
    database = folder / f"stalled-{durable}.db"
    env = {
        "HANDLER_KIT_AUDIT": f"sqlite:{database}",
        "HANDLER_KIT_AUDIT_DURABLE": "1" if durable else "0",
    }
    with served(folder, env) as server:
        load(server.port, 5, prefix="warm")  # the sink has created its table
        time.sleep(0.5)
        lock = sqlite3.connect(database, isolation_level=None, timeout=30)
        lock.execute("BEGIN EXCLUSIVE")
        try:
            result = load(server.port, count, prefix=f"st{int(durable)}", concurrency=20)
            ready = server.healthy("/readyz")
            alive = server.healthy()
        finally:
            lock.execute("ROLLBACK")
            lock.close()
        time.sleep(1.5)
        ready_after = server.healthy("/readyz")
        output = server.output()
    out = summary("decision log stalled (locked)", durable, count, result, None)
    log(f"    /healthz {alive}, /readyz while stalled {ready}, after {ready_after}")
    out.update(
        alive=alive,
        ready_while_stalled=ready,
        ready_after=ready_after,
        dropped_logged="audit records dropped" in output,
    )
    out["note"] = (
        f"/healthz {'200' if alive else 'down'}; /readyz {'200' if ready else '503'} while "
        f"stalled, {'200' if ready_after else '503'} after"
        + ("; drops counted and logged" if out["dropped_logged"] else "")
    )
    return out


def fault_redis_down(folder: Path, count: int) -> dict[str, Any]:
    """The idempotent gate's Redis is down (nothing listens on its port)."""
    env = {"HANDLER_KIT_IDEMPOTENCY_REDIS_URL": f"redis://{HOST}:{free_port()}/0"}
    with served(folder, env) as server:
        result = load(server.port, count, prefix="rd", path=ONCE, amount=100)
    return summary(
        "Redis down (idempotent gate, a refund it would allow)", False, count, result, None
    )


def summary(name: str, durable: bool, count: int, result: Load, lost: int | None) -> dict[str, Any]:
    decisions: dict[str, int] = {}
    for outcome in result.answered:
        decisions[str(outcome.decision)] = decisions.get(str(outcome.decision), 0) + 1
    out = {
        "fault": name,
        "mode": "durable" if durable else "default",
        "requests": count,
        "answered": len(result.answered),
        "client_errors": result.errors,
        "statuses": sorted({str(o.status) for o in result.outcomes}),
        "decisions": decisions,
        "records_lost": lost,
        "deny_latency": result.latency("deny"),
    }
    log(
        f"  {name} [{out['mode']}]: {out['answered']}/{count} answered, "
        f"{out['client_errors']} client errors, decisions {decisions}, "
        f"records lost {lost if lost is not None else 'n/a'}, deny {out['deny_latency']}"
    )
    return out


def under_load(folder: Path, count: int) -> dict[str, Any]:
    audit = folder / "load.jsonl"
    with served(folder, {"HANDLER_KIT_AUDIT": f"jsonl:{audit}"}) as server:
        result = load(server.port, count, prefix="load", concurrency=50)
    lost = len({o.call for o in result.answered} - recorded_calls(audit))
    return summary("no fault, 50 connections", False, count, result, lost)


def fuzz_summary(path: Path) -> dict[str, Any] | None:
    """What the last ``make fuzz`` wrote (``python -m tests.fuzz --summary``), if it ran."""
    if not path.exists():
        return None
    summary: dict[str, Any] = json.loads(path.read_text())
    return summary


# -- report -------------------------------------------------------------------------------


def machine() -> str:
    load1, load5, _ = os.getloadavg()
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {load1:.1f} / {load5:.1f} at the start"
    )


def table(report: dict[str, Any]) -> str:
    a = report["attacks"]
    lines = [
        f"Measured {report['date']} on {report['machine']} by `make reliability` "
        f"({report['seconds']:.0f} s).",
        "",
        "| what | figure |",
        "|---|---|",
        f"| attacks (kind x route) refused: a JSON 4xx, a fail-closed gate's denial, or (an "
        f"unknown event on /hooks) no opinion | "
        f"{a['cases_refused']} of {a['cases']} |",
        f"| tracebacks in the server log / server alive after | "
        f"{a['tracebacks_in_log']} / {'yes' if a['alive_after'] else 'NO'} |",
        "| a lone surrogate's answer has its record | "
        f"{'yes' if a['surrogate_recorded'] else 'NO'} |",
        f"| slow headers (a line a second): held for | {a['slow_headers_held_s']} s, then 408 |",
        f"| idle connections still open 4 s after opening 200 (keep-alive timeout 2 s) | "
        f"{a['idle_connections_open_after_4s']} |",
        f"| 40 wrong tokens in a row: answered 429 | {a['wrong_tokens_limited']} |",
    ]
    lines += [
        "",
        "| fault | audit mode | answered / sent | client errors | decisions | records lost | "
        "deny p50 / p99 / max | also seen |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in report["faults"]:
        lat = f["deny_latency"]
        latency = (
            f"{lat['p50_ms']} / {lat['p99_ms']} / {lat['max_ms']} ms"
            if lat.get("n")
            else "no denials"
        )
        decisions = ", ".join(f"{k} {v}" for k, v in sorted(f["decisions"].items())) or "none"
        lost = "n/a" if f["records_lost"] is None else str(f["records_lost"])
        lines.append(
            f"| {f['fault']} | {f['mode']} | {f['answered']} / {f['requests']} | "
            f"{f['client_errors']} | {decisions} | {lost} | {latency} | {f.get('note', '')} |"
        )
    fuzz = report.get("fuzz")
    lines.append("")
    if fuzz:
        totals = fuzz["totals"]
        lines.append(
            f"Fuzzing (`make fuzz` of {fuzz['started'][:10]}, seed {fuzz['seed']}, "
            f"{fuzz['examples_per_property']} examples per property): "
            f"{totals['examples']} examples over {totals['properties']} properties in "
            f"{fuzz['seconds']:.0f} s, {totals['failures']} failures."
        )
    else:
        lines.append("Fuzzing: run `make fuzz` first to include its counts here.")
    return "\n".join(lines)


def write_doc(text: str, start: str = START, end: str = END) -> None:
    """Put ``text`` between the ``start`` and ``end`` markers of docs/reliability.md."""
    page = DOC.read_text()
    if start not in page or end not in page:
        raise SystemExit(f"{DOC} has no {start} ... {end} markers")
    head, _, rest = page.partition(start)
    _, _, tail = rest.partition(end)
    DOC.write_text(f"{head}{start}\n{text}\n{end}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reliability", description=__doc__)
    parser.add_argument("--requests", type=int, default=2000, help="requests per fault (2000)")
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite docs/reliability.md")
    parser.add_argument(
        "--fuzz-summary",
        type=Path,
        default=ROOT / ".venv" / "fuzz-summary.json",
        help="the summary `make fuzz` wrote, included in the report (default: "
        ".venv/fuzz-summary.json, where `make fuzz` writes it)",
    )
    options = parser.parse_args(argv)
    count = options.requests
    started = time.monotonic()
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "machine": machine()}
    with tempfile.TemporaryDirectory(prefix="hk-reliability-", dir=str(ROOT)) as name:
        folder = Path(name)  # under the checkout: a real disk, not a tmpfs /tmp
        log("attacks")
        report["attacks"] = attacks(folder)
        log("faults")
        report["faults"] = [
            under_load(folder, count),
            fault_kill_worker(folder, count, durable=False),
            fault_kill_worker(folder, count, durable=True),
            fault_kill_group(folder, count, durable=False),
            fault_kill_group(folder, count, durable=True),
            fault_sink_stalled(folder, min(count, 200), durable=False),
            fault_sink_stalled(folder, min(count, 200), durable=True),
            fault_redis_down(folder, min(count, 500)),
        ]
    report["fuzz"] = fuzz_summary(options.fuzz_summary)
    report["seconds"] = time.monotonic() - started
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.json").write_text(json.dumps(report, indent=2) + "\n")
    text = table(report)
    print(text)
    if not options.no_doc:
        write_doc(text)
    return 0
