"""Figures of docs/scaling.md, measured on this machine: throughput of one gate replica called
directly and through the nginx proxy, of three replicas through the proxy, the CPU the proxy
spends, and what killing one replica in the middle of a load costs (client errors, latency,
records). Durable audit mode throughout: every answer is committed to Postgres before it is
sent.

    bash docker/test-container.sh                 # builds the images once (or has built them)
    .venv/bin/python docker/measure_scaling.py --requests 3000 --clients 10

The images are the ones docker/test-container.sh builds (localhost/handler-kit*:test). The
load client runs on the same machine and takes its share of the CPU: on a small machine the
figures are the whole stack's, not a replica's ceiling.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

DOCKER_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCKER_DIR))

import container_test as ct  # noqa: E402


def cpu_seconds(container: str) -> float:
    """User + system CPU of every process of ``container`` so far, from /proc on the host."""
    top = ct.podman("top", container, "hpid", check=False).stdout.split()[1:]
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in top:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def run(label: str, load: ct.Load, total: int, clients: int, watch: dict[str, str], **kw):
    before = {name: cpu_seconds(c) for name, c in watch.items()}
    elapsed = load.run(total, clients, **kw)
    # a killed replica's processes are gone: its share is not measurable afterwards
    cpu = {name: max(cpu_seconds(c) - before[name], 0.0) for name, c in watch.items()}
    lat = sorted(load.latencies)
    row = {
        "scenario": label,
        "calls": total,
        "answered": len(load.received),
        "errors": sum(load.errors.values()),
        "error_kinds": dict(load.errors),
        "per_s": len(load.received) / elapsed,
        "p50_ms": 1000 * statistics.median(lat),
        "p99_ms": 1000 * lat[int(len(lat) * 0.99) - 1],
        "max_ms": 1000 * lat[-1],
        "cpu_s": cpu,
    }
    cpu_text = ", ".join(f"{k} {v:.1f}s" for k, v in cpu.items())
    print(
        f"{label:<40} {row['answered']:>5}/{total} answered, {row['errors']} errors "
        f"{row['error_kinds'] or ''} {row['per_s']:7.0f}/s  p50 {row['p50_ms']:.1f} ms  "
        f"p99 {row['p99_ms']:.1f} ms  max {row['max_ms']:.0f} ms  CPU: {cpu_text}",
        flush=True,
    )
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--image", default="localhost/handler-kit:test")
    parser.add_argument("--redis-image", default="localhost/handler-kit-redis:test")
    parser.add_argument("--nginx-image", default="localhost/handler-kit-nginx:test")
    parser.add_argument("--postgres-image", default="localhost/handler-kit-postgres:test")
    default_pc = Path.home() / ".cache/handler-kit/container/podman-compose-venv/bin/podman-compose"
    parser.add_argument("--podman-compose", default=str(default_pc))
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=10)
    args = parser.parse_args()

    import tempfile

    work = Path(tempfile.mkdtemp(prefix="hk-measure-"))
    run_id = f"hkms-{os.getpid()}"
    token = f"measure-token-{os.getpid():010d}"
    ca_file = str(ct.write_tls(work / "tls"))
    port, gate_port = ct.free_port(), ct.free_port()
    env = ct.compose_env(argparse.Namespace(**vars(args)), work, token, port)
    env["GATE1_PORT"] = str(gate_port)
    compose = [args.podman_compose, "-p", run_id, "-f", str(ct.COMPOSE_FILE)]
    compose += ["-f", str(DOCKER_DIR / "compose.measure.yaml")]
    proxy_url, gate_url = f"https://127.0.0.1:{port}", f"http://127.0.0.1:{gate_port}"
    n, c = args.requests, args.clients
    print(
        f"machine: {os.cpu_count()} CPUs ({cpu_model()}), {platform.platform()}; "
        f"{n} calls per scenario from {c} client threads on the same machine",
        flush=True,
    )
    try:
        subprocess.run([*compose, "up", "-d", "--no-build"], env=env, check=True,
                       capture_output=True, timeout=300)  # fmt: skip
        gates = [ct.compose_container(run_id, f"gate{i}") for i in (1, 2, 3)]
        proxy = ct.compose_container(run_id, "proxy")
        postgres = ct.compose_container(run_id, "postgres")
        wait_ready(gates)
        watch = {"proxy": proxy, "gate1": gates[0], "postgres": postgres}

        def load(url: str, verify: str | bool, tag: str) -> ct.Load:
            return ct.Load(url, verify, token, prefix=f"toolu_{tag}_{os.getpid()}_")

        # warm-up: connections, the schema, Python's first calls
        load(proxy_url, ca_file, "warm").run(300, c)
        load(gate_url, False, "warmd").run(300, c)
        run("1 replica, direct (HTTP)", load(gate_url, False, "d1"), n, c, watch)
        for gate in gates[1:]:
            ct.podman("stop", "-t", "5", gate)
        time.sleep(6)  # past the proxy's fail_timeout for the stopped ones
        run("1 replica via proxy (TLS at nginx)", load(proxy_url, ca_file, "p1"), n, c, watch)
        for gate in gates[1:]:
            ct.podman("start", gate)
        wait_ready(gates)
        time.sleep(6)
        watch3 = {"proxy": proxy, **{f"gate{i + 1}": g for i, g in enumerate(gates)}}
        run("3 replicas via proxy", load(proxy_url, ca_file, "p3"), n, c, watch3)
        kill_load = load(proxy_url, ca_file, "kill")
        killed: dict[str, float] = {}

        def kill(i: int) -> None:
            if i == n // 3 and not killed:
                killed["t"] = time.monotonic()
                ct.podman("kill", gates[1], check=False)

        run("3 replicas via proxy, gate2 killed at 1/3", kill_load, n, c, watch3,
            on_progress=kill)  # fmt: skip
        ids = set(
            ct.psql(postgres, "SELECT tool_use_id FROM handler_kit_audit WHERE kind = 'decision' "
                    f"AND tool_use_id LIKE '{kill_load.prefix}%'")
        )  # fmt: skip
        missing = set(kill_load.received) - ids
        print(f"kill: {len(kill_load.received)} answers received, {len(missing)} without a "
              f"record; {len(ids)} answer records", flush=True)  # fmt: skip
    finally:
        subprocess.run([*compose, "down", "-v", "-t", "3"], env=env, capture_output=True,
                       timeout=180)  # fmt: skip
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0


def wait_ready(gates: list[str]) -> None:
    probe = "import urllib.request as r; print(r.urlopen('http://127.0.0.1:8000/readyz', timeout=4).status)"  # noqa: E501
    deadline = time.monotonic() + 120
    pending = list(gates)
    while pending and time.monotonic() < deadline:
        for gate in list(pending):
            r = ct.podman("exec", gate, "python3", "-c", probe, check=False, timeout=30)
            if r.stdout.strip() == "200":
                pending.remove(gate)
        time.sleep(1)
    if pending:
        raise SystemExit(f"not ready: {pending}")


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "?"


if __name__ == "__main__":
    sys.exit(main())
