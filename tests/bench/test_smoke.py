"""Smoke test of the benchmark suite: ``python -m bench --quick --no-chart`` runs end to end.

It checks that the harness starts every server, loads it, times the command cases, reads the
workers' memory and writes a JSON with every row (the audit rows with each sink; PostgreSQL's
is n/a where PostgreSQL is not installed) and every target. It asserts nothing about the
numbers: they are machine- and load-dependent.
"""

from __future__ import annotations

import json
import subprocess

import pytest

SERVER_ROWS = ["webhook_c1", "webhook_c16", "webhook_c64", "webhook_all_c16", "mcp_c1", "mcp_c16"]
AUDIT_ROWS = ["audit_jsonl", "audit_sqlite", "audit_durable", "audit_postgres"]
MEMORY_ROWS = ["memory_webhook", "memory_mcp"]


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
    assert {*SERVER_ROWS, *AUDIT_ROWS, *MEMORY_ROWS, "command", "forward"} <= set(rows), sorted(
        rows
    )

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
    assert set(cases) == {"bare", "import_pydantic", "pydantic", "handler_kit"}
    for name, case in cases.items():
        assert case["status"] == "ok", (name, case.get("reason"))
        assert case["runs"] >= 1 and case["median_ms"] > 0, (name, case)

    forward = rows["forward"]["cases"]
    assert set(forward) == {"bare", "forward"}
    assert forward["forward"]["status"] == "ok", forward["forward"].get("reason")
    assert forward["forward"]["runs"] >= 1 and forward["forward"]["median_ms"] > 0

    for key in AUDIT_ROWS:
        row = rows[key]
        if row["handler_kit"]["status"] == "n/a":  # PostgreSQL is not installed here
            assert key == "audit_postgres", row
            continue
        for side in ("base", "handler_kit"):
            assert row[side]["status"] == "ok", (key, side, row[side].get("reason"))
            assert row[side]["rps"] > 0 and row[side]["errors"] == 0, (key, side, row[side])
        assert row["ratio"]["rps"] is not None and row["ratio"]["p99"] is not None
    durable = rows["audit_durable"]
    assert durable["commits"] > 0 and durable["answers_per_commit"] >= 1, durable

    for key in MEMORY_ROWS:
        row = rows[key]
        assert row["status"] == "ok", (key, row.get("reason"))
        assert row["rss_first_kb"] > 0 and row["rss_last_kb"] > 0, row
        assert row["requests_last"] > row["requests_first"] > 0, row

    assert rows["forward"]["ratio"]["forward/command"] is not None

    verdicts = {t["target"]: t["result"] for t in result["targets"]}
    # webhook: req/s at 1, 16 and 64 connections, p99 at 16 and 64, CPU at 16; /hooks at 16:
    # req/s, p99, CPU; MCP; audit: req/s of each sink and p99 of each but the durable one;
    # command, forward (twice), memory; shadow p99 at half the capacity
    assert len(verdicts) == 6 + 3 + 1 + 7 + 1 + 2 + 2 + 1, verdicts
    assert any(name.startswith("shadow") for name in verdicts), verdicts
    assert set(verdicts.values()) <= {"PASS", "MISS", "N/A"}
    assert all(t["result"] != "N/A" for t in result["targets"] if "postgres" not in t["target"]), (
        result["targets"]
    )
