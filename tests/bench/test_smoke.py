"""Smoke test of the benchmark suite: ``python -m bench --quick --no-chart`` runs end to end.

It checks that the harness starts every server, loads it, times the command cases and writes a
JSON with every row. It asserts nothing about the numbers: they are machine- and load-dependent.
"""

from __future__ import annotations

import json
import subprocess

import pytest

SERVER_ROWS = ["webhook_c1", "webhook_c16", "webhook_c64", "mcp_c1", "mcp_c16"]


@pytest.mark.slow
def test_bench_quick_writes_every_row(quick_bench, tmp_path):
    try:
        quick_bench.proc.wait(timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"python -m bench --quick did not finish in 300 s:\n{quick_bench.output()[-4000:]}"
        )
    assert quick_bench.proc.returncode == 0, quick_bench.output()[-4000:]

    result = json.loads((tmp_path / "latest.json").read_text())
    rows = result["rows"]
    assert {*SERVER_ROWS, "command", "forward"} <= set(rows), sorted(rows)

    for key in SERVER_ROWS:
        row = rows[key]
        base = row["base"]
        assert base["status"] == "ok", (key, base)
        assert base["rps"] > 0 and base["p50_ms"] > 0 and base["p99_ms"] > 0, (key, base)
        assert base["errors"] == 0, (key, base)
        hk = row["handler_kit"]
        assert hk["status"] == "ok", (key, hk.get("reason"))
        assert hk["rps"] > 0 and hk["p99_ms"] > 0, (key, hk)
        assert hk["errors"] == 0, (key, hk)
        assert row["ratio"]["rps"] is not None

    cases = rows["command"]["cases"]
    assert set(cases) == {"bare", "pydantic", "handler_kit"}
    for name, case in cases.items():
        assert case["status"] == "ok", (name, case.get("reason"))
        assert case["runs"] >= 1 and case["median_ms"] > 0, (name, case)

    forward = rows["forward"]["cases"]
    assert set(forward) == {"bare", "forward"}
    assert forward["forward"]["status"] == "ok", forward["forward"].get("reason")
    assert forward["forward"]["runs"] >= 1 and forward["forward"]["median_ms"] > 0

    verdicts = {t["target"]: t["result"] for t in result["targets"]}
    assert len(verdicts) == 5, verdicts
    assert set(verdicts.values()) <= {"PASS", "MISS", "N/A"}
