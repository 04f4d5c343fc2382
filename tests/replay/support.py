"""What the replay tests share: the refund gate's traffic (each input, and what the candidate
makes of it), and schema-2 decision records made in process for the tests that need records
of a given shape rather than a server's (the end-to-end tests record through ``serve``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from handler_kit import HookApp
from handler_kit.core.events import parse_event
from handler_kit.ops.audit.capture import invocation_decision

OLD = "example_servers.refund_gate:app"
CANDIDATE = "example_servers.refund_gate_candidate:app"

# The refund gate's traffic: (name, hook input, the candidate's verdict on its decision)
TRAFFIC: list[tuple[str, dict[str, Any], str]] = [
    (
        "refund of $640",
        {
            "hook_event_name": "PreToolUse",
            "session_id": "s1",
            "tool_use_id": "t1",
            "tool_name": "issue_refund",
            "tool_input": {"order_id": "A-1001", "amount": 640},
        },
        "loosened",
    ),
    (
        "refund of $20",
        {
            "hook_event_name": "PreToolUse",
            "session_id": "s1",
            "tool_use_id": "t2",
            "tool_name": "issue_refund",
            "tool_input": {"order_id": "A-1002", "amount": 20},
        },
        "unchanged",
    ),
    (
        "orders refund of $1,200",
        {
            "hook_event_name": "PreToolUse",
            "session_id": "s1",
            "tool_use_id": "t3",
            "tool_name": "mcp__orders__refund",
            "tool_input": {"order_id": "A-1003", "amount": "1,200"},
        },
        "changed",
    ),
    (
        "issue-refund of $2,000",
        {
            "hook_event_name": "PreToolUse",
            "session_id": "s2",
            "tool_use_id": "t4",
            "tool_name": "issue-refund",
            "tool_input": {"order_id": "A-1004", "amount": 2000},
        },
        "tightened",
    ),
    (
        "IssueRefund of $300",
        {
            "hook_event_name": "PreToolUse",
            "session_id": "s2",
            "tool_use_id": "t5",
            "tool_name": "IssueRefund",
            "tool_input": {"order_id": "A-1005", "amount": 300},
        },
        "unchanged",
    ),
    (
        "refund in KWD",
        {
            "hook_event_name": "PreToolUse",
            "session_id": "s2",
            "tool_use_id": "t6",
            "tool_name": "issue_refund",
            "tool_input": {"order_id": "A-1006", "amount": 450, "currency": "KWD"},
        },
        "unchanged",
    ),
    (
        "session start",
        {"hook_event_name": "SessionStart", "session_id": "s3", "source": "startup"},
        "changed",
    ),
    (
        "reply without a ticket",
        {
            "hook_event_name": "Stop",
            "session_id": "s3",
            "stop_hook_active": False,
            "last_assistant_message": "Your refund is on its way.",
        },
        "unchanged",
    ),
    (
        "reply citing the ticket",
        {
            "hook_event_name": "Stop",
            "session_id": "s3",
            "stop_hook_active": False,
            "last_assistant_message": "Ticket #4821: your refund is on its way.",
        },
        "unchanged",
    ),
    (
        "refund result",
        {
            "hook_event_name": "PostToolUse",
            "session_id": "s1",
            "tool_use_id": "t1",
            "tool_name": "issue_refund",
            "tool_input": {"order_id": "A-1001", "amount": 640},
            "tool_response": {"refunded": True},
        },
        "unchanged",
    ),
    (
        "issue-refund result",
        {
            "hook_event_name": "PostToolUse",
            "session_id": "s2",
            "tool_use_id": "t4",
            "tool_name": "issue-refund",
            "tool_input": {"order_id": "A-1004", "amount": 2000},
            "tool_response": {"refunded": True},
        },
        "changed",
    ),
    (
        "order lookup",
        {
            "hook_event_name": "PreToolUse",
            "session_id": "s1",
            "tool_use_id": "t7",
            "tool_name": "lookup_order",
            "tool_input": {"order_id": "A-1001"},
        },
        "unchanged",
    ),
]
# The per-handler counts the candidate gives on TRAFFIC:
# handler -> (replayed, unchanged, tightened, loosened, changed)
PER_HANDLER = {
    "cite_ticket": (2, 2, 0, 0, 0),
    "refund_audit_note": (2, 1, 0, 0, 1),
    "refund_gate": (6, 3, 1, 1, 1),
    "returns_policy": (1, 0, 0, 0, 1),
}


def decision_record(
    app: HookApp, hook_input: dict[str, Any], n: int, **extra: Any
) -> dict[str, Any]:
    """A schema-2 decision record of ``app``'s answer to ``hook_input``, made in process:
    the whole input, complete."""
    event = parse_event(hook_input)
    answer = asyncio.run(app.answer(event))
    name = event.hook_event_name
    handlers = []
    for inv in answer.invocations:
        decision, reason = invocation_decision(inv, name)
        handlers.append(
            {
                "name": inv.handler.name,
                "status": inv.status.value,
                "decision": decision,
                "reason": reason,
                "error": inv.error,
                "latency_ms": inv.latency_ms,
                "replayed": False,
                "idempotency_key": None,
                "output": inv.output.render(name) if inv.output is not None else None,
            }
        )
    from handler_kit.ops.audit.records import output_decision

    decision, reason = output_decision(answer.output)
    record = {
        "schema_version": 2,
        "kind": "decision",
        "event_id": f"evt_{n:032x}",
        "decision_id": None,
        "time": f"2026-05-09T07:{n // 60:02d}:{n % 60:02d}.000Z",
        "ts": 1778310000.0 + n,  # 2026-05-09T07:00:00Z + n seconds
        "app": app.name,
        "event": name,
        "tool_name": hook_input.get("tool_name"),
        "status": "ok",
        "failed": answer.failed,
        "decision": decision,
        "reason": reason,
        "input": hook_input,
        "input_complete": True,
        "output": answer.output,
        "handlers": handlers,
    }
    record.update(extra)
    return record


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path
