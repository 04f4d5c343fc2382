"""Which rows ``make bench`` judges, and how: the audit sinks at 16 connections, the durable mode
at 64 (its group commit grows with the connections), each measured at both by default; the
``/hooks`` route beside ``/hooks/{name}``."""

from __future__ import annotations

from bench.run import AUDIT, WEBHOOK, WEBHOOK_ALL, targets


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


def webhook_row(section: str, connections: int, rps: float, cpu: float) -> dict:
    return {
        "section": section,
        "connections": connections,
        "ratio": {"rps": rps, "p50": 1.0, "p99": 1.0, "cpu_per_req": cpu},
        "round_ratios": {"rps": [rps], "p99": [1.0]},
    }


def test_the_merged_route_is_judged_beside_the_named_one() -> None:
    rows = {
        "webhook_c16": webhook_row(WEBHOOK, 16, 0.93, 1.08),
        "webhook_all_c16": webhook_row(WEBHOOK_ALL, 16, 0.86, 1.17),
    }
    assert judged(rows) == [
        ("webhook req/s vs baseline @16", 0.93, "PASS"),
        ("webhook p99 vs baseline @16", 1.0, "PASS"),
        ("webhook CPU per request vs baseline @16", 1.08, "PASS"),
        ("webhook /hooks req/s vs baseline @16", 0.86, "MISS"),
        ("webhook /hooks p99 vs baseline @16", 1.0, "PASS"),
        ("webhook /hooks CPU per request vs baseline @16", 1.17, "MISS"),
    ]
