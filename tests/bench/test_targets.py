"""Which audit rows ``make bench`` judges: the sinks at 16 connections, the durable mode at 64
(its group commit grows with the connections), each measured at both by default."""

from __future__ import annotations

from bench.run import AUDIT, targets


def audit_row(connections: int, rps: float, p99: float) -> dict:
    return {
        "section": AUDIT,
        "connections": connections,
        "ratio": {"rps": rps, "p50": 1.0, "p99": p99, "cpu_per_req": None},
        "round_ratios": {"rps": [rps], "p99": [p99]},
    }


def judged(rows: dict) -> list[tuple[str, float, str]]:
    return [(t["target"], t["value"], t["result"]) for t in targets(rows)]


def test_each_sink_is_judged_at_its_own_count_when_measured_at_both() -> None:
    rows = {
        "audit_jsonl_c16": audit_row(16, 0.8, 1.4),
        "audit_jsonl_c64": audit_row(64, 0.5, 3.0),
        "audit_durable_c16": audit_row(16, 0.3, 9.0),
        "audit_durable_c64": audit_row(64, 0.55, 9.0),
    }
    assert judged(rows) == [
        ("audit jsonl req/s vs no audit @16", 0.8, "PASS"),
        ("audit jsonl p99 vs no audit @16", 1.4, "PASS"),
        ("audit durable req/s vs no audit @64", 0.55, "PASS"),
    ]


def test_a_sink_measured_at_one_count_is_judged_there() -> None:
    # `--audit-connections 16` (the quick run's), and results files of earlier runs
    rows = {"audit_jsonl": audit_row(16, 0.6, 1.6), "audit_durable": audit_row(16, 0.3, 9.0)}
    assert judged(rows) == [
        ("audit jsonl req/s vs no audit @16", 0.6, "MISS"),
        ("audit jsonl p99 vs no audit @16", 1.6, "MISS"),
        ("audit durable req/s vs no audit @16", 0.3, "MISS"),
    ]
