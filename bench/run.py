"""``python -m bench``: handler-kit against its baselines, in one run on this machine.

Three comparisons, each alternating the two sides over several rounds so that drift on a shared
machine cancels out, reporting medians:

* webhook: raw-ASGI baseline vs ``handler-kit serve example_servers.refund_gate:app``, loaded
  with the same PreToolUse POST at each connection count;
* mcp: ``tools/call`` of ``refund_gate`` on handler-kit's ``/mcp`` vs a plain ``MCPServer``;
* command: start-up of ``handler-kit command`` vs bare ``python -c json.load``, ``python -c
  "import pydantic"`` and a hand-written pydantic script (``bench/pydantic_hook.py``),
  interleaved runs; in the same runs, the
  ``handler-kit forward`` command hook as ``install --via`` writes it, asking a running
  ``handler-kit serve``, against the same bare Python (row ``forward``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import http.client
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench import payload
from bench.complexity import summary as complexity_summary
from bench.loadgen import LoadError, LoadGenerator, ensure_wrk
from bench.procs import ROOT, Pinning, Server, ServerError, child_env, free_port, get, post
from bench.procs import handler_kit_argv as hk_argv
from bench.speed_lines import summary as speed_lines_summary

HERE = Path(__file__).resolve().parent
APP = "example_servers.refund_gate:app"
WEBHOOK = "webhook"
# POST /hooks (every matching handler, merged) against the same raw function, at one count:
# the route the runtimes' generic URL hooks call, which must be as fast as /hooks/{name}
WEBHOOK_ALL = "webhook_all"
ALL_ROUTE = "/hooks"
ALL_CONNECTIONS = 16
MCP = "mcp"
AUDIT = "audit"
COMMAND = "command"
FORWARD = "forward"  # a row of the command section
MEMORY = "memory"
SHADOW = "shadow"
SECTIONS = (WEBHOOK, MCP, AUDIT, COMMAND, MEMORY, SHADOW)

# Targets printed next to the ratios (never asserted).
TARGET_WEBHOOK_RPS = 0.9
# p99 ratio targets by connection count (none at 1 connection)
TARGET_WEBHOOK_P99 = {16: 1.2, 64: 1.3}
TARGET_WEBHOOK_CPU = 1.11  # CPU per request handler-kit/baseline at 16 connections
TARGET_MCP_RPS = 5.0
TARGET_COMMAND = 1.05
TARGET_FORWARD = 1.5
# the forwarder's round trip (start-up, request, answer) against running the app in process
TARGET_FORWARD_ROUND_TRIP = 1.0
# With the trail on, the server and its writer process share the machine's cores with the load
# generator: the targets leave the writer its share (the CPU per recorded answer, in
# instructions, is `python -m bench.audit_cost`'s).
TARGET_AUDIT_RPS = 0.67
TARGET_AUDIT_P99 = 1.5
# the durable mode's group commit grows with the connections: judged at 64, the other sinks at
# 16 (both counts run by default; other counts are measured, not judged)
TARGET_DURABLE_RPS = 0.5
DURABLE_CONNECTIONS = 64
TARGET_MEMORY_GROWTH = 0.10
# p99 with a shadow candidate vs without, at a fixed offered load of half the capacity
TARGET_SHADOW_P99 = 1.1
AUDIT_CONNECTIONS = 16
# (key, label, extra environment) of each audit variant; the base has no audit trail
AUDIT_SINKS = ("jsonl", "sqlite", "durable", "postgres")


def log(message: str) -> None:
    print(message, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny counts and durations (smoke test)")
    p.add_argument("--rounds", type=int, help="rounds per comparison (default 5, quick 1)")
    p.add_argument("--duration", type=float, help="seconds per load run (default 4, quick 1)")
    p.add_argument("--only", choices=SECTIONS, action="append", help="run only this section")
    p.add_argument("--connections", default="1,16,64", help="webhook connection counts")
    p.add_argument("--mcp-connections", default="1,16", help="MCP connection counts")
    p.add_argument(
        "--audit-connections",
        help=(
            "audit section connection counts (the durable mode's group commit grows with them;"
            f" default {AUDIT_CONNECTIONS},{DURABLE_CONNECTIONS}, quick {AUDIT_CONNECTIONS})"
        ),
    )
    p.add_argument("--command-runs", type=int, help="runs per command case (default 30, quick 2)")
    p.add_argument("--webhook-path", default="/hooks/refund_gate", help="handler-kit route")
    p.add_argument(
        "--audit-sinks",
        default=",".join(AUDIT_SINKS),
        help="audit section: sinks to compare with no audit (jsonl,sqlite,durable,postgres)",
    )
    p.add_argument(
        "--memory-requests",
        type=int,
        help="memory section: requests before the second RSS reading (default 100000, "
        "quick 1500); the first is after 1,000 (quick 300)",
    )
    p.add_argument(
        "--serve-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra handler-kit serve argument (repeatable): --serve-arg=--log-level=warning",
    )
    p.add_argument("--loadgen", choices=("auto", "wrk", "python"), default="auto")
    p.add_argument("--no-install", action="store_true", help="do not apt-get install wrk")
    p.add_argument(
        "--pin", action="store_true", help="pin server and load generator to different cores"
    )
    p.add_argument("--no-chart", action="store_true", help="skip the PNG chart")
    p.add_argument("--out", type=Path, default=HERE / "results", help="results directory")
    p.add_argument(
        "--table",
        type=Path,
        metavar="JSON",
        help="print the targets of a results file as a Markdown table (docs/performance.md) "
        "and exit",
    )
    args = p.parse_args(argv)
    args.rounds = max(1, args.rounds or (1 if args.quick else 5))
    args.memory_requests = max(2, args.memory_requests or (1500 if args.quick else 100_000))
    args.memory_first = min(300 if args.quick else 1000, args.memory_requests // 2)
    args.sinks = [x.strip() for x in args.audit_sinks.split(",") if x.strip()]
    args.duration = max(1.0, args.duration or (1.0 if args.quick else 4.0))
    args.command_runs = max(1, args.command_runs or (2 if args.quick else 30))
    args.audit_connections = args.audit_connections or (
        str(AUDIT_CONNECTIONS) if args.quick else f"{AUDIT_CONNECTIONS},{DURABLE_CONNECTIONS}"
    )
    args.conns = [int(c) for c in args.connections.split(",") if c.strip()]
    args.mcp_conns = [int(c) for c in args.mcp_connections.split(",") if c.strip()]
    args.sections = args.only or list(SECTIONS)
    return args


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


# --------------------------------------------------------------------------- servers


def uvicorn_argv(app: str, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "uvicorn",
        app,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--no-access-log",
        "--log-level",
        "warning",
    ]


_serve_help: str | None = None


def handler_kit_serve_argv(port: int, extra: list[str]) -> list[str]:
    global _serve_help
    argv = [*hk_argv(), "serve"]
    if _serve_help is None:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            _serve_help = subprocess.run(
                [*argv, "--help"],
                cwd=ROOT,
                env=child_env(),
                capture_output=True,
                text=True,
                timeout=60,
            ).stdout
    argv += [APP, "--port", str(port)]
    if "--host" in (_serve_help or ""):
        argv += ["--host", "127.0.0.1"]
    return argv + extra


class Side:
    """One side of a server comparison: its server, the request it gets, its results."""

    def __init__(self, key: str, label: str, path: str, headers: dict, body: bytes) -> None:
        self.key = key
        self.label = label
        self.path = path
        self.headers = headers
        self.body = body
        self.server: Server | None = None
        # entered around each load of this side (a side that runs something beside its
        # server only while it is measured)
        self.during_load: Callable[[], contextlib.AbstractContextManager[object]] = (
            contextlib.nullcontext
        )
        self.status = "ok"
        self.reason = ""
        self.runs: dict[int, list[dict]] = {}
        self.sample = ""
        # more for this side's row (e.g. the durable audit trail's answers per commit)
        self.extra: dict = {}

    def fail(self, status: str, reason: str) -> None:
        self.status, self.reason = status, reason
        log(f"  {self.label}: {status}: {reason}")

    def spawn(self) -> None:
        """Start this side's server process (once) without waiting for it to be ready."""
        if self.server is None or self.server.proc is not None:
            return
        try:
            self.server.spawn()
        except OSError as exc:
            self.fail("error", str(exc))

    def start(self, check: bytes) -> None:
        """Wait until the server (spawned here if it was not) is ready; one request checked."""
        if self.server is None:
            return
        try:
            if self.server.proc is None:
                self.server.spawn()
            self.server.wait_ready()
            status, body = post(self.server.port, self.path, self.headers, self.body)
        except (ServerError, OSError) as exc:
            self.fail("error", str(exc))
            return
        self.sample = body.decode(errors="replace")[:400]
        if status != 200 or check not in body or b'"isError":true' in body:
            self.fail("error", f"preflight got HTTP {status}: {self.sample}")

    def summary(self, conns: list[int]) -> dict:
        out: dict = {"label": self.label, "status": self.status}
        if self.reason:
            out["reason"] = self.reason
        if self.sample:
            out["sample_response"] = self.sample
        out["by_connections"] = {}
        for c in conns:
            runs = self.runs.get(c, [])
            ok = [r for r in runs if "error" not in r]
            out["by_connections"][str(c)] = {
                "rps": median([r["rps"] for r in ok]),
                "p50_ms": median([r["p50_ms"] for r in ok]),
                "p99_ms": median([r["p99_ms"] for r in ok]),
                "cpu_us_per_req": median(
                    [r["cpu_us_per_req"] for r in ok if "cpu_us_per_req" in r]
                ),
                "server_cpu_util": median(
                    [r["server_cpu_util"] for r in ok if "server_cpu_util" in r]
                ),
                "errors": sum(r.get("errors", 0) for r in ok),
                "rounds": runs,
            }
        return out


def compare_servers(
    section: str,
    sides: list[Side],
    conns: list[int],
    check: bytes,
    lg: LoadGenerator,
    args,
    before_stop=None,
) -> dict:
    """Load ``sides`` (the first is the base) at each connection count, in rotating order,
    ``args.rounds`` times; one row per other side and count. ``before_stop(live sides)`` runs
    after the last load, while the servers still run."""
    try:
        for side in sides:  # all at once: their start-ups overlap, none is loaded yet
            if side.status == "ok":
                side.spawn()
        for side in sides:
            if side.status == "ok":
                log(f"  starting {side.label}")
                side.start(check)
        live = [s for s in sides if s.status == "ok"]
        # warm-up: imports, caches, JIT-free but allocator-warm; a quick run's figures are
        # not read, so it goes without
        for side in [] if args.quick else live:
            with contextlib.suppress(LoadError, subprocess.TimeoutExpired), side.during_load():
                lg.run(side.server.port, side.path, side.headers, side.body, max(conns), 1)
        for rnd in range(args.rounds):
            for i, c in enumerate(conns):
                # two sides alternate (A B, B A, ...); more rotate (A B C, B C A, ...)
                if len(live) <= 2:
                    order = live if (rnd + i) % 2 == 0 else live[::-1]
                else:
                    shift = (rnd + i) % len(live)
                    order = live[shift:] + live[:shift]
                for side in order:
                    cpu_before = side.server.cpu_seconds()
                    try:
                        with side.during_load():
                            res = lg.run(
                                side.server.port,
                                side.path,
                                side.headers,
                                side.body,
                                c,
                                args.duration,
                            ).as_dict()
                    except (LoadError, subprocess.TimeoutExpired) as exc:
                        res = {"error": str(exc)[-500:]}
                    cpu_after = side.server.cpu_seconds()
                    if res.get("requests") and None not in (cpu_before, cpu_after):
                        cpu = cpu_after - cpu_before
                        res["cpu_us_per_req"] = round(cpu * 1e6 / res["requests"], 1)
                        res["server_cpu_util"] = round(cpu / res["seconds"], 3)
                    res["round"] = rnd + 1
                    side.runs.setdefault(c, []).append(res)
                    if "error" in res:
                        log(f"  round {rnd + 1} c={c:<3} {side.label:<22} ERROR {res['error']}")
                    else:
                        log(
                            f"  round {rnd + 1} c={c:<3} {side.label:<22} {res['rps']:9.0f} req/s"
                            f"  p50 {res['p50_ms']:7.2f} ms  p99 {res['p99_ms']:7.2f} ms"
                            f"  cpu {_f(res.get('cpu_us_per_req'), '.0f')} us/req"
                            f" (util {_f(res.get('server_cpu_util'), '.2f')})"
                            + (f"  errors {res['errors']}" if res["errors"] else "")
                        )
        if before_stop is not None:
            before_stop(live)
    finally:
        for side in sides:  # all asked at once: their shutdowns overlap
            if side.server is not None:
                side.server.terminate()
        for side in sides:
            if side.server is not None:
                side.server.stop()
    rows = {}
    base = sides[0]
    a = base.summary(conns)
    for other in sides[1:]:
        b = other.summary(conns)
        for c in conns:
            ma, mb = a["by_connections"][str(c)], b["by_connections"][str(c)]
            if len(sides) == 2:
                key = f"{section}_c{c}"
            else:  # one row per side, and per count when there are several
                key = f"{section}_{other.key}" + (f"_c{c}" if len(conns) > 1 else "")
            rows[key] = {
                "section": section,
                "connections": c,
                "base": _side_row(a, ma),
                "handler_kit": _side_row(b, mb),
                "ratio": {
                    "rps": ratio(mb["rps"], ma["rps"]),
                    "p50": ratio(mb["p50_ms"], ma["p50_ms"]),
                    "p99": ratio(mb["p99_ms"], ma["p99_ms"]),
                    "cpu_per_req": ratio(mb["cpu_us_per_req"], ma["cpu_us_per_req"]),
                },
                "round_ratios": _round_ratios(ma["rounds"], mb["rounds"]),
                **other.extra,
            }
    return rows


def _round_ratios(base_runs: list[dict], runs: list[dict]) -> dict:
    """handler-kit/base of each round (the two runs of one round ran minutes apart at most):
    the spread across rounds printed next to the medians."""
    by_round = {r["round"]: r for r in base_runs if "error" not in r}
    out: dict[str, list[float]] = {"rps": [], "p99": []}
    for run in runs:
        other = by_round.get(run.get("round"))
        if "error" in run or other is None:
            continue
        for metric, field in (("rps", "rps"), ("p99", "p99_ms")):
            value = ratio(run[field], other[field])
            if value is not None:
                out[metric].append(round(value, 3))
    return out


def _side_row(side: dict, metrics: dict) -> dict:
    row = {k: v for k, v in side.items() if k != "by_connections"}
    row.update(metrics)
    if row["status"] == "ok" and metrics["rps"] is None:
        row["status"] = "error"
        row.setdefault("reason", "every load run failed")
    return row


def run_webhook(args, lg: LoadGenerator, log_dir: Path) -> dict:
    log(f"\n== webhook: raw-ASGI baseline vs handler-kit {args.webhook_path}")
    sides = _webhook_sides(args.webhook_path, lg, log_dir, args)
    rows = compare_servers(WEBHOOK, sides, args.conns, b"deny", lg, args)
    if args.webhook_path != ALL_ROUTE:
        log(f"\n== webhook: raw-ASGI baseline vs handler-kit {ALL_ROUTE} (every handler, merged)")
        sides = _webhook_sides(ALL_ROUTE, lg, log_dir, args)
        rows.update(compare_servers(WEBHOOK_ALL, sides, [ALL_CONNECTIONS], b"deny", lg, args))
    return rows


def _webhook_sides(path: str, lg: LoadGenerator, log_dir: Path, args) -> list[Side]:
    """The raw function (any path but /healthz answers the deny) and handler-kit on ``path``."""
    base = Side(
        "base", "baseline (raw ASGI)", "/hooks", payload.WEBHOOK_HEADERS, payload.EVENT_BODY
    )
    port = free_port()
    base.server = Server(
        "baseline",
        lg.pinning.server(uvicorn_argv("bench.servers.baseline:app", port)),
        port,
        health="tcp",
        env={"HANDLER_KIT_TOKENS": payload.TOKEN},
        log_dir=log_dir,
    )
    hk = Side(
        "handler_kit",
        "handler-kit webhook" if path != ALL_ROUTE else f"handler-kit {ALL_ROUTE}",
        path,
        payload.WEBHOOK_HEADERS,
        payload.EVENT_BODY,
    )
    _handler_kit_server(hk, WEBHOOK, lg, log_dir, args.serve_arg)
    return [base, hk]


def run_mcp(args, lg: LoadGenerator, log_dir: Path) -> dict:
    log("\n== mcp: tools/call refund_gate, plain SDK MCPServer vs handler-kit /mcp")
    base = Side("base", "plain SDK MCPServer", "/mcp", payload.MCP_HEADERS, payload.MCP_BODY)
    port = free_port()
    base.server = Server(
        "plain_mcp",
        lg.pinning.server(uvicorn_argv("bench.servers.plain_mcp:app", port)),
        port,
        health="/healthz",
        log_dir=log_dir,
    )
    hk = Side("handler_kit", "handler-kit /mcp", "/mcp", payload.MCP_HEADERS, payload.MCP_BODY)
    _handler_kit_server(hk, MCP, lg, log_dir, args.serve_arg)
    return compare_servers(MCP, [base, hk], args.mcp_conns, b"deny", lg, args)


def _handler_kit_server(
    side: Side,
    section: str,
    lg: LoadGenerator,
    log_dir: Path,
    extra: list[str],
    env: dict[str, str] | None = None,
) -> None:
    port = free_port()
    side.server = Server(
        f"handler_kit_{section}",
        lg.pinning.server(handler_kit_serve_argv(port, extra)),
        port,
        health="/healthz",
        env={"HANDLER_KIT_TOKENS": payload.TOKEN, **(env or {})},
        log_dir=log_dir,
    )


# --------------------------------------------------------------------------- audit


def run_audit(args, lg: LoadGenerator, log_dir: Path) -> dict:
    """The webhook with each audit sink against the same server without one, side by side at
    16 connections. The files are on the disk the results go to (a real disk, not tmpfs):
    the durable mode's cost is its fsyncs."""
    log(f"\n== audit: webhook {args.webhook_path} with each audit sink vs without one")
    folder = Path(tempfile.mkdtemp(prefix="audit-", dir=args.out))
    rows: dict = {}
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, folder, True)
        sides = [
            Side(
                "off",
                "no audit",
                args.webhook_path,
                payload.WEBHOOK_HEADERS,
                payload.EVENT_BODY,
            )
        ]
        _handler_kit_server(sides[0], "audit_off", lg, log_dir, args.serve_arg)
        # each server starts up as soon as it is made, while the next sink's database
        # (PostgreSQL's) is made; compare_servers waits for them
        sides[0].spawn()
        stack.callback(sides[0].server.stop)
        for sink in args.sinks:
            env = _audit_env(sink, folder, stack)
            if env is None:
                rows[f"{AUDIT}_{sink}"] = _not_available(sink, "no PostgreSQL server to run")
                log(f"  {sink}: n/a (no PostgreSQL here)")
                continue
            side = Side(
                sink,
                f"audit {sink}",
                args.webhook_path,
                payload.WEBHOOK_HEADERS,
                payload.EVENT_BODY,
            )
            _handler_kit_server(side, f"audit_{sink}", lg, log_dir, args.serve_arg, env)
            sides.append(side)
            side.spawn()
            stack.callback(side.server.stop)
        if len(sides) > 1:
            rows.update(
                compare_servers(
                    AUDIT,
                    sides,
                    [int(c) for c in args.audit_connections.split(",") if c.strip()],
                    b"deny",
                    lg,
                    args,
                    before_stop=_commit_stats,
                )
            )
    return rows


def _audit_env(sink: str, folder: Path, stack: contextlib.ExitStack) -> dict[str, str] | None:
    if sink == "jsonl":
        return {"HANDLER_KIT_AUDIT": f"jsonl:{folder / 'audit.jsonl'}"}
    if sink == "sqlite":
        return {"HANDLER_KIT_AUDIT": f"sqlite:{folder / 'audit.db'}"}
    if sink == "durable":
        # /metrics for the answers per commit (handler_kit_audit_commit_answers): the one
        # place the server says how its group commit batched
        return {
            "HANDLER_KIT_AUDIT": f"sqlite:{folder / 'durable.db'}",
            "HANDLER_KIT_AUDIT_DURABLE": "1",
            "HANDLER_KIT_METRICS": "1",
        }
    if sink == "postgres":
        url = _postgres(stack)
        return None if url is None else {"HANDLER_KIT_AUDIT": url}
    raise SystemExit(f"unknown audit sink {sink!r}: use {','.join(AUDIT_SINKS)}")


def _postgres(stack: contextlib.ExitStack) -> str | None:
    """A new database on the PostgreSQL server ``BENCH_POSTGRES_URL`` names (the URL of its
    ``postgres`` database: the smoke test passes its session's server), else on a throw-away
    server (the tests' helper); None when there is none."""
    try:
        from tests.support.postgres import new_database, postgres_server
    except ImportError:
        return None
    try:
        url = os.environ.get("BENCH_POSTGRES_URL") or stack.enter_context(postgres_server())
        return new_database(url)
    except Exception as exc:
        log(f"  postgres: {type(exc).__name__}: {exc}")
        return None
    except BaseException as exc:  # pytest.skip: no PostgreSQL binaries
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return None


def _not_available(key: str, reason: str) -> dict:
    side = {"label": f"audit {key}", "status": "n/a", "reason": reason}
    for field in ("rps", "p50_ms", "p99_ms", "cpu_us_per_req", "server_cpu_util"):
        side[field] = None
    return {
        "section": AUDIT,
        "connections": AUDIT_CONNECTIONS,
        "base": {**side, "label": "no audit"},
        "handler_kit": side,
        "ratio": {"rps": None, "p50": None, "p99": None, "cpu_per_req": None},
        "round_ratios": {"rps": [], "p99": []},
    }


def _commit_stats(sides: list[Side]) -> None:
    """The durable side's answers per commit, from its /metrics histogram."""
    for side in sides:
        if side.key != "durable" or side.server is None:
            continue
        try:
            status, body = get(side.server.port, "/metrics", payload.WEBHOOK_HEADERS)
        except OSError as exc:
            side.extra["answers_per_commit"] = None
            side.extra["commit_stats_error"] = str(exc)
            continue
        values = {}
        for line in body.decode(errors="replace").splitlines():
            for name in ("_sum", "_count"):
                if line.startswith(f"handler_kit_audit_commit_answers{name} "):
                    values[name] = float(line.split()[-1])
        answers, commits = values.get("_sum"), values.get("_count")
        side.extra["commits"] = commits
        side.extra["committed_answers"] = answers
        side.extra["answers_per_commit"] = ratio(answers, commits) if status == 200 else None


# --------------------------------------------------------------------------- memory


def run_memory(args, lg: LoadGenerator, log_dir: Path) -> dict:
    """A handler-kit worker's resident memory after ``memory_first`` requests and after
    ``memory_requests`` (webhook, then MCP, each on a server of its own)."""
    log(
        f"\n== memory: worker RSS after {args.memory_first:,} and {args.memory_requests:,} requests"
    )
    rows = {}
    sides = []
    for section, path, headers, body in (
        (WEBHOOK, args.webhook_path, payload.WEBHOOK_HEADERS, payload.EVENT_BODY),
        (MCP, "/mcp", payload.MCP_HEADERS, payload.MCP_BODY),
    ):
        side = Side(section, f"handler-kit {section}", path, headers, body)
        _handler_kit_server(side, f"memory_{section}", lg, log_dir, args.serve_arg)
        sides.append(side)
    # both start up together; the second idles (its memory untouched) while the first is loaded
    try:
        for side in sides:
            side.spawn()
        for side in sides:
            rows[f"{MEMORY}_{side.key}"] = _memory_row(side, lg, args)
    finally:
        for side in sides:
            if side.server is not None:
                side.server.stop()
    return rows


def _memory_row(side: Side, lg: LoadGenerator, args) -> dict:
    row: dict = {"section": MEMORY, "label": f"{side.key} worker RSS", "status": "ok"}
    try:
        side.start(b"deny")
        if side.status != "ok":
            row.update(status=side.status, reason=side.reason)
        else:
            row.update(_memory_run(side, lg, args))
    finally:
        if side.server is not None:
            side.server.stop()
    log(
        f"  {row['label']}: {_f(row.get('rss_first_kb'), ',.0f')} kB after "
        f"{row.get('requests_first', 0):,} requests, {_f(row.get('rss_last_kb'), ',.0f')} "
        f"kB after {row.get('requests_last', 0):,}: growth {_f(row.get('growth'), '.1%')}"
        + ("" if row["status"] == "ok" else f"  {row['status']}: {row.get('reason', '')}")
    )
    return row


def _memory_run(side: Side, lg: LoadGenerator, args) -> dict:
    server = side.server
    assert server is not None and server.proc is not None
    served = 1  # the preflight request

    def load_until(total: int) -> None:
        nonlocal served
        while served < total:
            # short runs at first (a run may not stop exactly at a count), longer later
            seconds = 1.0 if total - served < 20_000 else 5.0
            res = lg.run(server.port, side.path, side.headers, side.body, 16, seconds)
            if res.errors:
                raise LoadError(f"{res.errors} errors under load")
            served += res.requests

    try:
        # the first requests one by one on one keep-alive connection: an exact count
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        try:
            while served < args.memory_first:
                conn.request("POST", side.path, body=side.body, headers=side.headers)
                response = conn.getresponse()
                response.read()
                if response.status != 200:
                    raise LoadError(f"HTTP {response.status} during the first requests")
                served += 1
        finally:
            conn.close()
        first, first_at = rss_kb(server.proc.pid), served
        load_until(args.memory_requests)
        last, last_at = rss_kb(server.proc.pid), served
    except (LoadError, subprocess.TimeoutExpired) as exc:
        return {"status": "error", "reason": str(exc)[-300:]}
    return {
        "rss_first_kb": first,
        "requests_first": first_at,
        "rss_last_kb": last,
        "requests_last": last_at,
        "growth": ratio(last, first) - 1 if first and last else None,
    }


def rss_kb(pid: int) -> int | None:
    """VmRSS of a process, in kB (Linux /proc)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


# --------------------------------------------------------------------------- command


def run_command(args) -> dict:
    log("\n== command: start-up, stdin = the PreToolUse event, interleaved runs")
    # The forwarder asks a real server, started first and idle between its requests; its
    # command line is the one `handler-kit install --via URL` writes for the refund gate.
    server_port = free_port()
    server = Server(
        "handler_kit_forward",
        handler_kit_serve_argv(server_port, []),
        server_port,
        health="/healthz",
        env={"HANDLER_KIT_TOKENS": payload.TOKEN},
        log_dir=args.out,
    )
    forward_argv = [
        sys.executable,
        "-m",
        "handler_kit",
        "forward",
        f"http://127.0.0.1:{server_port}/hooks/refund_gate",
        "--app",
        APP,
        "--timeout",
        "3.5",
        "--fail-closed",
    ]
    try:
        return _run_command_cases(args, server, forward_argv)
    finally:
        server.stop()


def _run_command_cases(args, server: Server, forward_argv: list[str]) -> dict:
    cases = {
        "bare": (
            "bare python json.load",
            [sys.executable, "-c", "import json,sys; json.load(sys.stdin)"],
            None,
        ),
        # the interpreter with pydantic imported and nothing built: the share of a command
        # hook's start-up that any process importing pydantic pays
        "import_pydantic": (
            "python -c import pydantic",
            [sys.executable, "-c", "import pydantic"],
            None,
        ),
        "pydantic": (
            "hand-written pydantic",
            [sys.executable, str(HERE / "pydantic_hook.py")],
            b"deny",
        ),
        "handler_kit": ("handler-kit command", [*hk_argv(), "command", APP], b"deny"),
        FORWARD: ("handler-kit forward", forward_argv, b"deny"),
    }
    status: dict[str, dict] = {
        k: {"label": v[0], "status": "ok", "argv": v[1]} for k, v in cases.items()
    }
    try:
        server.spawn()  # starting up while the other cases' preflights run; waited for below
    except OSError as exc:
        status[FORWARD].update(status="error", reason=f"server: {exc}")
    # Bytecode as an installed package has it: pip compiles .pyc files at install time, but
    # an environment with PYTHONDONTWRITEBYTECODE=1 would recompile handler-kit and the example
    # on every run while pydantic's cached bytecode is read. One shared cache folder for all
    # three cases, warmed by the preflight run below.
    env = child_env(
        {"PYTHONPYCACHEPREFIX": str(args.out / "pycache.tmp"), "HANDLER_KIT_TOKEN": payload.TOKEN}
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def once(argv: list[str]) -> tuple[float, float, subprocess.CompletedProcess]:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            argv, input=payload.EVENT_BODY, cwd=ROOT, env=env, capture_output=True, timeout=60
        )
        wall = (time.perf_counter() - start) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime) * 1000
        return wall, cpu, done

    for key, (label, argv, check) in cases.items():  # preflight, also warms the page cache
        if key == FORWARD and status[key]["status"] == "ok":
            try:
                server.wait_ready()
            except ServerError as exc:
                status[FORWARD].update(status="error", reason=f"server: {exc}")
        if status[key]["status"] != "ok":
            log(f"  {label}: {status[key]['status']}: {status[key].get('reason', '')}")
            continue
        try:
            _, _, done = once(argv)
        except (OSError, subprocess.TimeoutExpired) as exc:
            status[key].update(status="error", reason=str(exc))
            continue
        out = done.stdout.decode(errors="replace")
        status[key]["sample_output"] = out[:400]
        if done.returncode != 0 or (check and check not in done.stdout):
            reason = f"exit {done.returncode}, stdout {out[:300]!r}, stderr {done.stderr[-500:]!r}"
            status[key].update(status="error", reason=reason)
            log(f"  {label}: error: {reason}")

    live = [k for k in cases if status[k]["status"] == "ok"]
    times: dict[str, list[list[float]]] = {k: [] for k in cases}
    cpu_times: dict[str, list[float]] = {k: [] for k in cases}
    per_round = -(-args.command_runs // args.rounds)
    for rnd in range(args.rounds):
        for k in live:
            times[k].append([])
        for i in range(per_round):
            shift = (rnd * per_round + i) % max(1, len(live))
            for k in live[shift:] + live[:shift]:
                ms, cpu_ms, done = once(cases[k][1])
                if done.returncode == 0:
                    times[k][rnd].append(ms)
                    cpu_times[k].append(cpu_ms)
        log(
            f"  round {rnd + 1}: "
            + "  ".join(f"{cases[k][0]} {median(times[k][rnd]) or 0:.1f} ms" for k in live)
        )
    measured: dict[str, dict] = {}
    for k in cases:
        flat = [t for rnd in times[k] for t in rnd]
        measured[k] = {
            **status[k],
            "median_ms": median(flat),
            "min_ms": min(flat) if flat else None,
            "cpu_median_ms": median(cpu_times[k]),
            "round_medians_ms": [median(r) for r in times[k]],
            "runs": len(flat),
        }
    runs = per_round * args.rounds
    row: dict = {
        "section": COMMAND,
        "runs_per_case": runs,
        "cases": {k: v for k, v in measured.items() if k != FORWARD},
    }
    c = row["cases"]
    row["ratio"] = {
        "handler_kit/pydantic": ratio(c["handler_kit"]["median_ms"], c["pydantic"]["median_ms"]),
        "handler_kit/bare": ratio(c["handler_kit"]["median_ms"], c["bare"]["median_ms"]),
        "pydantic/bare": ratio(c["pydantic"]["median_ms"], c["bare"]["median_ms"]),
        "cpu handler_kit/pydantic": ratio(
            c["handler_kit"]["cpu_median_ms"], c["pydantic"]["cpu_median_ms"]
        ),
        # CPU time per invocation (user + system of the child), against Python importing
        # pydantic and against bare Python
        "cpu handler_kit/import pydantic": ratio(
            c["handler_kit"]["cpu_median_ms"], c["import_pydantic"]["cpu_median_ms"]
        ),
        "cpu handler_kit/bare": ratio(
            c["handler_kit"]["cpu_median_ms"], c["bare"]["cpu_median_ms"]
        ),
    }
    # the same bare-Python and in-process command runs, interleaved with the forwarder's
    f = {"bare": measured["bare"], FORWARD: measured[FORWARD]}
    forward_row: dict = {
        "section": COMMAND,
        "runs_per_case": runs,
        "cases": f,
        "ratio": {
            "forward/bare": ratio(f[FORWARD]["median_ms"], f["bare"]["median_ms"]),
            "cpu forward/bare": ratio(f[FORWARD]["cpu_median_ms"], f["bare"]["cpu_median_ms"]),
            # the whole round trip (start-up, request, the server's answer) against the app
            # run in the hook's own process
            "forward/command": ratio(f[FORWARD]["median_ms"], c["handler_kit"]["median_ms"]),
            "cpu forward/command": ratio(
                f[FORWARD]["cpu_median_ms"], c["handler_kit"]["cpu_median_ms"]
            ),
        },
    }
    return {COMMAND: row, FORWARD: forward_row}


# --------------------------------------------------------------------------- report


def _audit_counts(rows: dict, sink: str) -> set[int]:
    """The connection counts ``sink``'s audit rows were measured at."""
    prefix = f"{AUDIT}_{sink}"
    return {
        row["connections"]
        for key, row in rows.items()
        if row["section"] == AUDIT and (key == prefix or key.startswith(f"{prefix}_c"))
    }


def targets(rows: dict) -> list[dict]:
    """Every target with its value, PASS/MISS (N/A when a row has no value: a side failed,
    or the feature is not there)."""
    out = []

    def add(
        name: str,
        value: float | None,
        op: str,
        limit: float,
        cpu: float | None = None,
        spread: list[float] | None = None,
        unit: str = "x",
    ) -> None:
        if value is None:
            verdict = "N/A"
        else:
            verdict = "PASS" if (value >= limit if op == ">=" else value <= limit) else "MISS"
        out.append(
            {
                "target": name,
                "value": value,
                "op": op,
                "limit": limit,
                "unit": unit,
                "result": verdict,
                # the same comparison from server/child CPU time: steadier on a shared box
                "cpu_based_value": cpu,
                # the per-round values the median is taken over
                "spread": [min(spread), max(spread)] if spread else None,
            }
        )

    def capacity(row: dict) -> float | None:  # req/s ratio implied by CPU per request
        cpu = row["ratio"].get("cpu_per_req")
        return 1 / cpu if cpu else None

    # /hooks/{name}, then /hooks (every handler, merged), each judged alike
    for section, label in ((WEBHOOK, "webhook"), (WEBHOOK_ALL, f"webhook {ALL_ROUTE}")):
        for key in sorted(
            (k for k in rows if rows[k]["section"] == section),
            key=lambda k: rows[k]["connections"],
        ):
            web, c = rows[key], rows[key]["connections"]
            spread = web.get("round_ratios", {})
            add(
                f"{label} req/s vs baseline @{c}",
                web["ratio"]["rps"],
                ">=",
                TARGET_WEBHOOK_RPS,
                capacity(web),
                spread.get("rps"),
            )
            if c in TARGET_WEBHOOK_P99:
                add(
                    f"{label} p99 vs baseline @{c}",
                    web["ratio"]["p99"],
                    "<=",
                    TARGET_WEBHOOK_P99[c],
                    spread=spread.get("p99"),
                )
            if c == 16:
                add(
                    f"{label} CPU per request vs baseline @16",
                    web["ratio"]["cpu_per_req"],
                    "<=",
                    TARGET_WEBHOOK_CPU,
                )
    mcp_rows = [r for k, r in rows.items() if r["section"] == MCP]
    if mcp_rows:
        pick = rows.get("mcp_c16") or max(mcp_rows, key=lambda r: r["connections"])
        add(
            f"MCP tools/call req/s vs plain SDK @{pick['connections']}",
            pick["ratio"]["rps"],
            ">=",
            TARGET_MCP_RPS,
            capacity(pick),
            pick.get("round_ratios", {}).get("rps"),
        )
    for key in (k for k in rows if rows[k]["section"] == AUDIT):
        row = rows[key]
        sink = key.removeprefix(f"{AUDIT}_").split("_c")[0]
        judged_at = DURABLE_CONNECTIONS if sink == "durable" else AUDIT_CONNECTIONS
        if row["connections"] != judged_at and len(_audit_counts(rows, sink)) > 1:
            continue  # measured at another count too: judged at its own (in the JSON rows)
        spread = row.get("round_ratios", {})
        limit = TARGET_DURABLE_RPS if sink == "durable" else TARGET_AUDIT_RPS
        add(
            f"audit {sink} req/s vs no audit @{row['connections']}",
            row["ratio"]["rps"],
            ">=",
            limit,
            capacity(row) if row["ratio"]["cpu_per_req"] else None,
            spread.get("rps"),
        )
        if sink != "durable":
            add(
                f"audit {sink} p99 vs no audit @{row['connections']}",
                row["ratio"]["p99"],
                "<=",
                TARGET_AUDIT_P99,
                spread=spread.get("p99"),
            )
    cmd = rows.get(COMMAND)
    if cmd:
        add(
            "command time vs pydantic script",
            cmd["ratio"]["handler_kit/pydantic"],
            "<=",
            TARGET_COMMAND,
            cmd["ratio"]["cpu handler_kit/pydantic"],
        )
    fwd = rows.get(FORWARD)
    if fwd:
        add(
            "forward time vs bare python",
            fwd["ratio"]["forward/bare"],
            "<=",
            TARGET_FORWARD,
            fwd["ratio"]["cpu forward/bare"],
        )
        add(
            "forward round trip vs in-process command",
            fwd["ratio"].get("forward/command"),
            "<=",
            TARGET_FORWARD_ROUND_TRIP,
            fwd["ratio"].get("cpu forward/command"),
        )
    floors = [
        r["ratio"]["p99"] for r in rows.values() if r["section"] == SHADOW and r.get("reference")
    ]
    for key in (k for k in rows if rows[k]["section"] == SHADOW and not rows[k].get("reference")):
        row = rows[key]
        floor = f"; an idle busy loop alone {floors[0]:.2f}x" if floors and floors[0] else ""
        add(
            f"shadow p99 vs none @{row.get('offered_rps') or 0:.0f} req/s (half capacity{floor})",
            row["ratio"]["p99"],
            "<=",
            TARGET_SHADOW_P99,
            row["ratio"].get("cpu_per_req"),
            row.get("round_ratios", {}).get("p99"),
        )
    for key in (k for k in rows if rows[k]["section"] == MEMORY):
        row = rows[key]
        add(
            f"{row['label']} growth, {row.get('requests_last') or 0:,} vs "
            f"{row.get('requests_first') or 0:,} requests",
            row.get("growth"),
            "<=",
            TARGET_MEMORY_GROWTH,
            unit="%",
        )
    return out


def _f(value: float | None, fmt: str, suffix: str = "") -> str:
    return "-" if value is None else format(value, fmt) + suffix


def target_line(t: dict) -> str:
    percent = t.get("unit") == "%"
    fmt, suffix = (".1%", "") if percent else (".2f", "x")
    limit = f"{t['limit']:.0%}" if percent else f"{t['limit']}x"
    verdict = "n/a" if t["result"] == "N/A" else t["result"]
    line = (
        f"{verdict:<5} {t['target']:<52} {_f(t['value'], fmt, suffix):>7} "
        f"(target {t['op']} {limit})"
    )
    if t.get("spread"):
        low, high = t["spread"]
        line += f"  rounds {low:.2f}-{high:.2f}x"
    if t.get("cpu_based_value") is not None:
        line += f"  from CPU time: {t['cpu_based_value']:.2f}x"
    return line


def print_report(result: dict) -> None:
    rows = result["rows"]
    meta = result["meta"]
    log("\n" + "=" * 78)
    log(
        f"handler-kit bench  {meta['started_at']}  load generator: {meta['loadgen']}  "
        f"pinning: {meta['pinning']}"
    )
    log(
        f"rounds {meta['rounds']}, {meta['duration_s']:.0f} s per load run, medians over rounds; "
        f"load average {meta['loadavg_start']} -> {meta['loadavg_end']}"
    )
    header = (
        f"{'row':<16}{'side':<24}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}"
        f"{'cpu us/req':>12}{'util':>6}  status"
    )
    for section in (WEBHOOK, WEBHOOK_ALL, MCP, AUDIT, SHADOW):
        keys = [k for k in rows if rows[k]["section"] == section]
        if not keys:
            continue
        log("\n" + header)
        for k in keys:
            row = rows[k]
            for who in ("base", "handler_kit"):
                s = row[who]
                note = s["status"] + (f" ({s['errors']} errors)" if s.get("errors") else "")
                if s["status"] != "ok":
                    note += ": " + s.get("reason", "")[:60]
                log(
                    f"{k if who == 'base' else '':<16}{s['label']:<24}{_f(s['rps'], '.0f'):>10}"
                    f"{_f(s['p50_ms'], '.2f'):>10}{_f(s['p99_ms'], '.2f'):>10}"
                    f"{_f(s['cpu_us_per_req'], '.0f'):>12}{_f(s['server_cpu_util'], '.2f'):>6}"
                    f"  {note}"
                )
            r = row["ratio"]
            log(
                f"{'':<16}{'ratio handler-kit/base':<24}{_f(r['rps'], '.2f', 'x'):>10}"
                f"{_f(r['p50'], '.2f', 'x'):>10}{_f(r['p99'], '.2f', 'x'):>10}"
                f"{_f(r['cpu_per_req'], '.2f', 'x'):>12}"
            )
            if "shadow_shed" in row:
                log(
                    f"{'':<16}{'offered load':<24}{_f(row.get('offered_rps'), '.0f'):>10}"
                    f"  (capacity {_f(row.get('capacity_rps'), '.0f')} req/s); candidate "
                    f"answers {_f(row.get('shadow_answers'), '.0f')}, shed "
                    f"{_f(row.get('shadow_shed'), '.0f')}"
                )
            if row.get("answers_per_commit") is not None or "commits" in row:
                log(
                    f"{'':<16}{'answers per commit':<24}"
                    f"{_f(row.get('answers_per_commit'), '.1f'):>10}"
                    f"  ({_f(row.get('committed_answers'), '.0f')} answers, "
                    f"{_f(row.get('commits'), '.0f')} commits)"
                )
    for key, title in ((COMMAND, "command case"), (FORWARD, "forward case")):
        cmd = rows.get(key)
        if not cmd:
            continue
        log(f"\n{title:<26}{'median ms':>10}{'min ms':>10}{'cpu ms':>10}{'runs':>6}  status")
        for case in cmd["cases"].values():
            note = case["status"] + (
                ": " + case.get("reason", "")[:60] if case["status"] != "ok" else ""
            )
            log(
                f"{case['label']:<26}{_f(case['median_ms'], '.1f'):>10}"
                f"{_f(case['min_ms'], '.1f'):>10}{_f(case['cpu_median_ms'], '.1f'):>10}"
                f"{case['runs']:>6}  {note}"
            )
        for name, value in cmd["ratio"].items():
            log(f"{'ratio ' + name:<26}{_f(value, '.2f', 'x'):>10}")
    memory = [rows[k] for k in rows if rows[k]["section"] == MEMORY]
    if memory:
        log(f"\n{'memory':<26}{'requests':>10}{'RSS kB':>10}{'requests':>10}{'RSS kB':>10}")
        for row in memory:
            log(
                f"{row['label']:<26}{row.get('requests_first') or 0:>10,}"
                f"{_f(row.get('rss_first_kb'), ',.0f'):>10}{row.get('requests_last') or 0:>10,}"
                f"{_f(row.get('rss_last_kb'), ',.0f'):>10}  growth "
                f"{_f(row.get('growth'), '.1%')}  {row['status']}"
            )
    log("\ntargets (printed, not asserted; n/a: the row has no value)")
    for t in result["targets"]:
        log("  " + target_line(t))
    log("=" * 78)


def write_chart(result: dict, path: Path) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install -e '.[bench]')"
    rows = result["rows"]
    fig, axes = plt.subplots(3, 2, figsize=(12, 12))
    colors = {"base": "#8c8c8c", "handler_kit": "#2a7ab9"}

    def bars(ax, section: str, metric: str, title: str) -> None:
        keys = [k for k in rows if rows[k]["section"] == section]
        if not keys:
            ax.set_axis_off()
            return
        xs = range(len(keys))
        for offset, who in ((-0.2, "base"), (0.2, "handler_kit")):
            values = [rows[k][who][metric] or 0 for k in keys]
            drawn = ax.bar(
                [x + offset for x in xs],
                values,
                0.4,
                label=rows[keys[0]][who]["label"],
                color=colors[who],
            )
            ax.bar_label(drawn, fmt="%.0f" if metric == "rps" else "%.1f", fontsize=7)
        ticks = [
            f"{rows[k]['connections']} conn" if section != AUDIT else k.removeprefix("audit_")
            for k in keys
        ]
        ax.set_xticks(list(xs), ticks)
        ax.set_title(title)
        ax.legend(fontsize=8)

    bars(axes[0][0], WEBHOOK, "rps", "webhook: requests/s (higher is better)")
    bars(axes[0][1], WEBHOOK, "p99_ms", "webhook: p99 latency, ms (lower is better)")
    bars(axes[1][0], MCP, "rps", "MCP tools/call: requests/s (higher is better)")
    cmd = rows.get(COMMAND)
    ax = axes[1][1]
    if cmd:
        cases = list(cmd["cases"].values())
        drawn = ax.bar(
            [c["label"] for c in cases],
            [c["median_ms"] or 0 for c in cases],
            color=["#bbbbbb", "#a5a5a5", "#8c8c8c", "#2a7ab9"][: len(cases)],
        )
        ax.bar_label(drawn, fmt="%.0f", fontsize=7)
        ax.set_title("command hook start-up: median wall ms (lower is better)")
        ax.tick_params(axis="x", labelsize=8)
    else:
        ax.set_axis_off()
    bars(axes[2][0], AUDIT, "rps", "webhook with each audit sink: requests/s @16")
    ax = axes[2][1]
    memory = [rows[k] for k in rows if rows[k]["section"] == MEMORY]
    if memory:
        xs = range(len(memory))
        for offset, field, label, color in (
            (-0.2, "rss_first_kb", "after the first requests", "#8c8c8c"),
            (0.2, "rss_last_kb", "after all requests", "#2a7ab9"),
        ):
            drawn = ax.bar(
                [x + offset for x in xs],
                [(r.get(field) or 0) / 1024 for r in memory],
                0.4,
                label=label,
                color=color,
            )
            ax.bar_label(drawn, fmt="%.0f", fontsize=7)
        ax.set_xticks(list(xs), [r["label"] for r in memory])
        ax.set_title("worker RSS, MiB (growth target < 10%)")
        ax.legend(fontsize=8)
    else:
        ax.set_axis_off()
    meta = result["meta"]
    fig.suptitle(
        f"handler-kit bench {meta['started_at']} ({meta['loadgen']}, {meta['rounds']} rounds, "
        f"medians; shared 2-core machine, noisy)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return None


# --------------------------------------------------------------------------- main


def _loadavg() -> str:
    with contextlib.suppress(OSError, AttributeError):
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    return "?"


def _git_rev() -> str | None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
        if done.returncode == 0:
            return done.stdout.strip()
    return None


def _terminate(signum, _frame):
    raise SystemExit(128 + signum)  # unwinds through the finally blocks that stop servers


def markdown_table(result: dict) -> str:
    """The targets of a run as the Markdown table docs/performance.md shows."""
    meta = result["meta"]
    lines = [
        f"Run of {meta['started_at']} (git {meta.get('git') or '?'}, {meta['cpus']} CPUs, "
        f"{meta['platform']}, Python {meta['python']}, {meta['loadgen']}, {meta['rounds']} "
        f"rounds of {meta['duration_s']:.0f} s, load average {meta['loadavg_start']} -> "
        f"{meta.get('loadavg_end', '?')}):",
        "",
        "| target | value | limit | result | rounds | from CPU time |",
        "|---|---|---|---|---|---|",
    ]
    for t in result["targets"]:
        percent = t.get("unit") == "%"
        value = _f(t["value"], ".1%" if percent else ".2f", "" if percent else "x")
        limit = f"{t['op']} " + (f"{t['limit']:.0%}" if percent else f"{t['limit']}x")
        spread = "{:.2f}-{:.2f}x".format(*t["spread"]) if t.get("spread") else ""
        cpu = _f(t.get("cpu_based_value"), ".2f", "x") if t.get("cpu_based_value") else ""
        verdict = "n/a" if t["result"] == "N/A" else t["result"]
        lines.append(f"| {t['target']} | {value} | {limit} | {verdict} | {spread} | {cpu} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.table is not None:
        try:
            table = markdown_table(json.loads(args.table.read_text()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            print(f"error: --table {args.table}: not a results file of this tool ({exc!r})")
            return 2
        print(table)
        return 0
    signal.signal(signal.SIGTERM, _terminate)
    started = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    pinning = Pinning(args.pin)
    wrk = None
    if args.loadgen != "python" and {WEBHOOK, MCP, AUDIT, MEMORY, SHADOW} & set(args.sections):
        wrk = ensure_wrk(install=not args.no_install, log=log)
        if wrk is None and args.loadgen == "wrk":
            log("error: --loadgen wrk but wrk is not available")
            return 2
        if wrk is None:
            log("wrk unavailable: falling back to the Python load generator (bench/pyload.py)")
    meta = {
        "started_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "quick": args.quick,
        "rounds": args.rounds,
        "duration_s": args.duration,
        "webhook_path": args.webhook_path,
        "serve_args": args.serve_arg,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "pinning": pinning.describe(),
        "git": _git_rev(),
        "handler_kit": " ".join(hk_argv()),
        "loadavg_start": _loadavg(),
    }
    rows: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        lg = LoadGenerator(wrk, pinning, Path(tmp))
        meta["loadgen"] = lg.describe()
        log(f"load generator: {meta['loadgen']}; pinning: {meta['pinning']}")
        if WEBHOOK in args.sections:
            rows.update(run_webhook(args, lg, args.out))
        if MCP in args.sections:
            rows.update(run_mcp(args, lg, args.out))
        if AUDIT in args.sections:
            rows.update(run_audit(args, lg, args.out))
        if SHADOW in args.sections:
            from bench.shadow import run_shadow

            rows.update(run_shadow(args, lg, args.out))
    if COMMAND in args.sections:
        rows.update(run_command(args))
    if MEMORY in args.sections:
        with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
            rows.update(run_memory(args, LoadGenerator(wrk, pinning, Path(tmp)), args.out))
    meta["loadavg_end"] = _loadavg()
    meta["elapsed_s"] = round(time.monotonic() - started, 1)
    result = {"meta": meta, "rows": rows}
    result["targets"] = targets(rows)
    tmp_json = args.out / "latest.json.tmp"
    tmp_json.write_text(json.dumps(result, indent=2) + "\n")
    tmp_json.replace(args.out / "latest.json")
    print_report(result)
    # the code's own row: deterministic, so printed from the tree as it is, not stored per run
    log(complexity_summary())
    log(speed_lines_summary())
    log(f"wrote {args.out / 'latest.json'}")
    if not args.no_chart:
        problem = write_chart(result, args.out / "latest.png")
        log(f"chart: {problem}" if problem else f"wrote {args.out / 'latest.png'}")
    log(f"elapsed {meta['elapsed_s']:.0f} s")
    return 0
