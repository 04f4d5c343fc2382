"""Smoke test of the benchmark suite: ``python -m bench --quick --no-chart`` runs end to end.

It checks that the harness starts every server, loads it, times the command cases and writes a
JSON with every row. It asserts nothing about the numbers: they are machine- and load-dependent.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVER_ROWS = ["webhook_c1", "webhook_c16", "webhook_c64", "mcp_c1", "mcp_c16"]
# Files the handler-kit side of each section needs; while they are missing the row says so.
NEEDS = {
    "webhook": ["handler_kit/cli_serve.py", "example_servers/refund_gate.py"],
    "mcp": ["handler_kit/cli_serve.py", "handler_kit/mcp.py", "example_servers/refund_gate.py"],
    "command": ["handler_kit/command.py", "example_servers/refund_gate.py"],
}


def _written(section: str) -> bool:
    return all((ROOT / f).exists() for f in NEEDS[section])


@pytest.mark.slow
def test_bench_quick_writes_every_row(tmp_path):
    argv = [sys.executable, "-m", "bench", "--quick", "--no-chart", "--out", str(tmp_path)]
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output, _ = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.terminate()  # the bench stops its servers on SIGTERM
        try:
            output, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
        pytest.fail(f"python -m bench --quick did not finish in 300 s:\n{output[-4000:]}")
    assert proc.returncode == 0, output[-4000:]

    result = json.loads((tmp_path / "latest.json").read_text())
    rows = result["rows"]
    assert {*SERVER_ROWS, "command"} <= set(rows), sorted(rows)

    for key in SERVER_ROWS:
        row = rows[key]
        base = row["base"]
        assert base["status"] == "ok", (key, base)
        assert base["rps"] > 0 and base["p50_ms"] > 0 and base["p99_ms"] > 0, (key, base)
        assert base["errors"] == 0, (key, base)
        hk = row["handler_kit"]
        if _written(row["section"]):
            assert hk["status"] == "ok", (key, hk.get("reason"))
            assert hk["rps"] > 0 and hk["p99_ms"] > 0, (key, hk)
            assert hk["errors"] == 0, (key, hk)
            assert row["ratio"]["rps"] is not None
        else:
            assert hk["status"] == "missing", (key, hk)

    cases = rows["command"]["cases"]
    assert set(cases) == {"bare", "pydantic", "handler_kit"}
    for name in ("bare", "pydantic"):
        assert cases[name]["status"] == "ok", cases[name]
        assert cases[name]["runs"] >= 1 and cases[name]["median_ms"] > 0
    if _written("command"):
        assert cases["handler_kit"]["status"] == "ok", cases["handler_kit"].get("reason")
        assert cases["handler_kit"]["median_ms"] > 0
    else:
        assert cases["handler_kit"]["status"] == "missing"

    verdicts = {t["target"]: t["result"] for t in result["targets"]}
    assert len(verdicts) == 4, verdicts
    assert set(verdicts.values()) <= {"PASS", "MISS", "N/A"}
