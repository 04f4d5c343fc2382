"""The ``shadow`` section: the webhook with a shadow candidate against the same server without
one, at a fixed offered load of half the server's capacity.

A shadow candidate is below saturation by design (at saturation its work is shed), so the
question is what it costs an answer when the server has room: the same offered load on both
sides (``bench/rate.py``, open loop, latency from when each request was due), p99 and CPU per
answer compared. Capacity is measured first, closed loop at 16 connections, on a server of its
own without a shadow. The candidate (``bench/servers/shadow_candidate.py``) is the refund gate's
own handler in a second app, so it costs what the enforced gate costs and always agrees; the
candidate answers made and shed on the shadow side are read from its ``/metrics``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from bench import payload
from bench.idle_neighbour import spinning
from bench.loadgen import HERE, LoadError, LoadGenerator, LoadResult, _parse
from bench.procs import ROOT, Server, ServerError, free_port, get
from bench.run import (
    SHADOW,
    Side,
    _handler_kit_server,
    compare_servers,
    handler_kit_serve_argv,
    log,
)

CANDIDATE = "bench.servers.shadow_candidate:app"
CONNECTIONS = 16
# the offered load, as a share of the capacity measured without a shadow
LOAD_SHARE = 0.5
_SAMPLE = re.compile(r"^(handler_kit_shadow_[a-z_]+)\{([^}]*)\} ([0-9.e+-]+)$", re.M)


class FixedRate:
    """A load generator with :class:`~bench.loadgen.LoadGenerator`'s ``run``, at ``rate``
    requests per second (open loop) whatever the connection count asks."""

    def __init__(self, lg: LoadGenerator, rate: float) -> None:
        self.pinning = lg.pinning
        self.body_dir = lg.body_dir
        self.rate = rate

    def run(
        self,
        port: int,
        path: str,
        headers: dict[str, str],
        body: bytes,
        connections: int,
        duration: float,
    ) -> LoadResult:
        body_file = self.body_dir / "shadow-body.json"
        body_file.write_bytes(body)
        argv = [sys.executable, str(HERE / "rate.py"), "127.0.0.1", str(port), path]
        argv += ["--rate", f"{self.rate:.0f}", "--connections", str(connections)]
        argv += ["--duration", str(duration), "--body-file", str(body_file)]
        for name, value in headers.items():
            argv += ["-H", f"{name}: {value}"]
        done = subprocess.run(
            self.pinning.loadgen(argv),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=duration + 60,
        )
        if done.returncode != 0:
            raise LoadError(f"rate.py exited {done.returncode}: {done.stderr[-800:]}")
        return _parse(done.stdout)


def _side(key: str, label: str, args, lg: LoadGenerator, log_dir: Path, extra: list[str]) -> Side:
    side = Side(key, label, args.webhook_path, payload.WEBHOOK_HEADERS, payload.EVENT_BODY)
    _handler_kit_server(
        side, f"shadow_{key}", lg, log_dir, [*args.serve_arg, *extra], {"HANDLER_KIT_METRICS": "1"}
    )
    return side


def _floor_side(args, lg: LoadGenerator, log_dir: Path) -> Side:
    """The server without a shadow, with an idle-priority busy loop beside it
    (:mod:`bench.idle_neighbour`): what any process at the candidate's priority costs."""
    side = Side(
        "floor", "idle busy loop", args.webhook_path, payload.WEBHOOK_HEADERS, payload.EVENT_BODY
    )
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "bench.idle_neighbour",
        *handler_kit_serve_argv(port, args.serve_arg),
    ]
    side.server = Server(
        "handler_kit_shadow_floor",
        lg.pinning.server(argv),
        port,
        health="/healthz",
        env={"HANDLER_KIT_TOKENS": payload.TOKEN, "HANDLER_KIT_METRICS": "1"},
        log_dir=log_dir,
    )
    server = side.server
    side.during_load = lambda: spinning(server.proc.pid if server.proc is not None else -1)
    return side


def capacity(args, lg: LoadGenerator, log_dir: Path) -> float | None:
    """Closed-loop req/s at 16 connections of the server without a shadow (median of the
    rounds, at most 3)."""
    side = _side("capacity", "capacity", args, lg, log_dir, [])
    assert side.server is not None
    try:
        side.start(b"deny")
        if side.status != "ok":
            return None
        runs = []
        for _ in range(min(args.rounds, 3)):
            try:
                runs.append(
                    lg.run(
                        side.server.port,
                        side.path,
                        side.headers,
                        side.body,
                        CONNECTIONS,
                        args.duration,
                    ).rps
                )
            except (LoadError, subprocess.TimeoutExpired) as exc:
                log(f"  capacity run failed: {exc}")
        return sorted(runs)[len(runs) // 2] if runs else None
    except ServerError as exc:
        log(f"  capacity server failed: {exc}")
        return None
    finally:
        side.server.stop()


def shadow_counts(port: int) -> dict[str, float]:
    """The shadow series of a server's ``/metrics``, summed by name and result or reason."""
    status, body = get(port, "/metrics", {"Authorization": f"Bearer {payload.TOKEN}"})
    counts: dict[str, float] = {}
    if status != 200:
        return counts
    for name, labels, value in _SAMPLE.findall(body.decode()):
        if name.endswith("_created"):
            continue
        kind = re.search(r'(?:result|reason)="([^"]*)"', labels)
        key = f"{name.removeprefix('handler_kit_shadow_')}:{kind[1] if kind else ''}"
        counts[key] = counts.get(key, 0.0) + float(value)
    return counts


def run_shadow(args, lg: LoadGenerator, log_dir: Path) -> dict:
    log(
        f"\n== shadow: webhook {args.webhook_path} with a shadow candidate vs without, at "
        f"{LOAD_SHARE:.0%} of capacity"
    )
    cap = capacity(args, lg, log_dir)
    if not cap:
        log("  shadow: n/a (the capacity run failed)")
        return {}
    rate = cap * LOAD_SHARE
    log(f"  capacity {cap:.0f} req/s at {CONNECTIONS} connections: offered load {rate:.0f} req/s")
    base = _side("off", "no shadow", args, lg, log_dir, [])
    shadowed = _side("on", "shadow candidate", args, lg, log_dir, ["--shadow", CANDIDATE])

    def before_stop(live: list[Side]) -> None:
        if shadowed in live and shadowed.server is not None:
            counts = shadow_counts(shadowed.server.port)
            shadowed.extra.update(
                capacity_rps=round(cap, 1),
                offered_rps=round(rate, 1),
                shadow_answers=counts.get("answers_total:agree", 0.0)
                + counts.get("answers_total:disagree", 0.0),
                shadow_disagreed=counts.get("answers_total:disagree", 0.0),
                shadow_shed=counts.get("shed_total:queue_full", 0.0)
                + counts.get("shed_total:expired", 0.0),
            )
            log(
                f"  candidate answers {shadowed.extra['shadow_answers']:.0f} "
                f"(disagreed {shadowed.extra['shadow_disagreed']:.0f}), shed "
                f"{shadowed.extra['shadow_shed']:.0f}"
            )

    floor = _floor_side(args, lg, log_dir)
    rows = compare_servers(
        SHADOW,
        [base, shadowed, floor],
        [CONNECTIONS],
        b"deny",
        FixedRate(lg, rate),
        args,
        before_stop,
    )
    # the candidate's row keeps its name; the floor's is a reference, with no target
    out = {}
    if f"{SHADOW}_on" in rows:
        out[f"{SHADOW}_c{CONNECTIONS}"] = rows[f"{SHADOW}_on"]
    if f"{SHADOW}_floor" in rows:
        out[f"{SHADOW}_floor_c{CONNECTIONS}"] = {**rows[f"{SHADOW}_floor"], "reference": True}
    return out
