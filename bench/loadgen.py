"""The load generator: Debian's ``wrk`` with ``wrk_post.lua``, or ``pyload.py`` as a fallback."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.procs import HOST, ROOT, Pinning

HERE = Path(__file__).resolve().parent
_RESULT = re.compile(r"^BENCH_RESULT (.*)$", re.MULTILINE)


def ensure_wrk(install: bool, log=print) -> str | None:
    """Path of ``wrk``; if absent and allowed, ``apt-get update`` + ``apt-get install -y wrk``."""
    found = shutil.which("wrk")
    if found or not install:
        return found
    if not shutil.which("apt-get") or os.geteuid() != 0:
        log("wrk not found and apt-get is not usable here (needs root)")
        return None
    log("wrk not found: apt-get update && apt-get install -y wrk")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    lock = ["-o", "DPkg::Lock::Timeout=120"]
    for argv in (
        ["apt-get", "update", "-qq", *lock],
        ["apt-get", "install", "-y", "-qq", *lock, "wrk"],
    ):
        try:
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            log(f"{' '.join(argv)}: timed out")
            return None
        if done.returncode != 0:
            log(f"{' '.join(argv)} failed: {done.stderr.strip()[-500:]}")
            return None
    return shutil.which("wrk")


@dataclass
class LoadResult:
    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    errors: int

    def as_dict(self) -> dict:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in self.__dict__.items()}


class LoadError(RuntimeError):
    pass


def _parse(output: str) -> LoadResult:
    match = _RESULT.search(output)
    if not match:
        raise LoadError(f"no BENCH_RESULT line in load generator output: {output[-800:]}")
    fields = dict(item.split("=", 1) for item in match.group(1).split())
    values = {k: float(v) for k, v in fields.items()}
    seconds = values["duration_us"] / 1e6
    requests = int(values["requests"])
    errors = sum(int(v) for k, v in values.items() if k.startswith("err_"))
    return LoadResult(
        requests=requests,
        seconds=seconds,
        rps=requests / seconds if seconds else 0.0,
        p50_ms=values["p50_us"] / 1000,
        p90_ms=values["p90_us"] / 1000,
        p99_ms=values["p99_us"] / 1000,
        max_ms=values["max_us"] / 1000,
        mean_ms=values["mean_us"] / 1000,
        errors=errors,
    )


class LoadGenerator:
    def __init__(self, wrk: str | None, pinning: Pinning, body_dir: Path) -> None:
        self.wrk = wrk
        self.pinning = pinning
        self.body_dir = body_dir
        self.kind = "wrk" if wrk else "python"

    def describe(self) -> str:
        if not self.wrk:
            return "python (bench/pyload.py, asyncio + uvloop)"
        version = subprocess.run([self.wrk, "-v"], capture_output=True, text=True).stdout
        return (version.splitlines() or ["wrk"])[0].split(" Copyright")[0].strip()

    def run(
        self,
        port: int,
        path: str,
        headers: dict[str, str],
        body: bytes,
        connections: int,
        duration: float,
    ) -> LoadResult:
        body_file = self.body_dir / f"body-{hashlib.sha1(body).hexdigest()[:12]}.json"
        if not body_file.exists():
            body_file.write_bytes(body)
        header_args = [f"{k}: {v}" for k, v in headers.items()]
        if self.wrk:
            argv = [self.wrk, "-t1", f"-c{connections}", f"-d{max(1, round(duration))}s"]
            argv += ["--timeout", "10s", "-s", str(HERE / "wrk_post.lua")]
            for header in header_args:
                argv += ["-H", header]
            argv += [f"http://{HOST}:{port}{path}", "--", str(body_file)]
        else:
            argv = [sys.executable, str(HERE / "pyload.py"), HOST, str(port), path]
            argv += ["--connections", str(connections), "--duration", str(duration)]
            argv += ["--body-file", str(body_file)]
            for header in header_args:
                argv += ["-H", header]
        done = subprocess.run(
            self.pinning.loadgen(argv),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=duration + 60,
        )
        if done.returncode != 0:
            raise LoadError(f"load generator exited {done.returncode}: {done.stderr[-800:]}")
        return _parse(done.stdout)
