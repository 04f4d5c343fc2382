"""The audit records of a table of answers, each written out as the exact JSON lines expected:
the one record builder (``records.record_lines``) against what the format says, field by field
and byte for byte. Ids, times and latencies are fixed (a tracer's ids, the answer's end time),
so each line is one literal."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from handler_kit import HookApp, allow, deny
from handler_kit.core.events import model_for
from handler_kit.core.vocabulary import Answer
from handler_kit.ops.audit.capture import Observed, TraceIds, capture
from handler_kit.ops.audit.records import (
    MAX_RECORD_DEPTH,
    JsonLinesSink,
    RecordPolicy,
    Redactor,
    record_lines,
)
from handler_kit.ops.audit.trail import AuditTrail
from handler_kit.ops.idempotency import ReplayedOutput

# 2026-05-09T07:35:25.123Z
END_NS = 1_778_312_125_123_456_789
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
ANSWER_SPAN = "00f067aa0ba902b7"
ANSWER_ID = "evt_0196b3f0a1c3aaaaaaaaaaaaaaaaaaaa"


def _app() -> HookApp:
    app = HookApp("lines")

    @app.pre_tool_use(matcher="Bash", name="gate")
    def gate(event: Any) -> Any:
        return deny("no rm -rf in prod")

    @app.pre_tool_use(matcher="Edit", name="first")
    def first(event: Any) -> Any:
        return allow("first is fine")

    @app.pre_tool_use(matcher="Edit", name="second")
    def second(event: Any) -> Any:
        return deny("second says no")

    @app.pre_tool_use(matcher="Write", name="closed", fail_closed=True)
    def closed(event: Any) -> Any:
        raise RuntimeError("the approvals service is down")

    @app.pre_tool_use(matcher="Read", name="slow")
    def slow(event: Any) -> Any:
        return None

    @app.user_prompt_submit(name="prompt")
    def prompt(event: Any) -> Any:
        return None

    return app


APP = _app()


def _event(name: str, **fields: Any) -> Any:
    data = {
        "hook_event_name": name,
        "session_id": "sess-1",
        "cwd": "/tmp/not-recorded",
        "transcript_path": "/tmp/not-recorded.jsonl",
        **fields,
    }
    return model_for(name).model_validate(data)


def _observed(
    answer: Answer, *, latencies: tuple[float, ...] = (1.25, 3.5), body: bytes | None = None
) -> Observed:
    """``answer`` as observed on the webhook, its latencies and ids fixed."""
    for inv, latency in zip(answer.invocations, latencies, strict=False):
        inv.latency_ms = latency
    count = len(answer.invocations)
    return Observed(
        answer=answer,
        transport="webhook",
        principal="token#1",
        traceparent=None,
        end_ns=END_NS,
        pid=4242,
        decision_id=ANSWER_ID,
        body=body,
        trace=TraceIds(
            TRACE,
            ANSWER_SPAN,
            None,
            [f"{n:016x}" for n in range(1, count + 1)],
            ANSWER_ID,
            [f"evt_0196b3f0a1c3{n:020x}" for n in range(1, count + 1)],
        ),
    )


def _policy(**options: Any) -> RecordPolicy:
    redactor = Redactor(options.pop("paths", ()), secrets=options.pop("secrets", ()))
    return RecordPolicy(redactor=redactor, app_version="1.2.3", replica="host:1", **options)


def _lines(item: Observed, policy: RecordPolicy | None = None) -> list[str]:
    return [line for _, line in record_lines(capture(item), "lines", policy or _policy())]


def _answer(event: Any) -> Answer:
    return asyncio.run(APP.answer(event))


def _one() -> Answer:
    return _answer(
        _event("PreToolUse", tool_name="Bash", tool_use_id="toolu_1", tool_input={"command": "ls"})
    )


def _merged() -> Observed:
    event = _event("PreToolUse", tool_name="Edit", tool_use_id="toolu_2", tool_input={"file": "a"})
    return _observed(_answer(event))


def _fail_closed() -> Observed:
    event = _event("PreToolUse", tool_name="Write", tool_use_id="toolu_3", tool_input={})
    return _observed(_answer(event))


def _timeout() -> Observed:
    event = _event("PreToolUse", tool_name="Read", tool_use_id="toolu_4")
    slow = [h for h in APP.handlers if h.name == "slow"]
    return _observed(APP.answer_timed_out(event, slow), latencies=(5000.0,))


def _redacted() -> Observed:
    tool_input = {
        "command": "curl -H 'Authorization: Bearer abcdefghijklmnop' https://user:hunter2@x.io",
        "password": "hunter2",
        "card": {"number": "4111111111111111", "holder": "server-secret-token-0123456789"},
    }
    event = _event("PreToolUse", tool_name="Bash", tool_use_id="toolu_5", tool_input=tool_input)
    return _observed(_answer(event))


def _prompt() -> Observed:
    event = _event("UserPromptSubmit", prompt="deploy with sk-abcdefghijklmnopqrstuvwx now")
    return _observed(_answer(event))


def _replayed() -> Observed:
    answer = _one()
    inv = answer.invocations[0]
    assert inv.output is not None
    inv.output = ReplayedOutput.of(inv.output)
    return _observed(answer)


def _too_deep() -> Observed:
    deep: Any = "leaf"
    for _ in range(MAX_RECORD_DEPTH + 1):
        deep = {"k": deep}
    event = _event("PreToolUse", tool_name="Bash", tool_use_id="toolu_6", tool_input=deep)
    return _observed(_answer(event))


FULL_BODY = (
    b'{"hook_event_name":"PreToolUse","session_id":"sess-1","cwd":"/srv/app"'
    b',"tool_name":"Bash","tool_use_id":"toolu_7","tool_input":{"command":"ls"},"extra":null}'
)
SECRET_BODY = (
    b'{"hook_event_name":"PreToolUse","session_id":"sess-1","tool_name":"Bash"'
    b',"tool_use_id":"toolu_8","tool_input":{"command":"ls","api_key":"k-123"}}'
)


def _full(body: bytes) -> Observed:
    """An answer to ``body`` as the webhook received it."""
    event = model_for("PreToolUse").model_validate_json(body)
    return _observed(_answer(event), body=body)


ROWS: dict[str, tuple[Callable[[], Observed], dict[str, Any]]] = {
    "one handler": (lambda: _observed(_one()), {}),
    "merged": (_merged, {}),
    "fail closed": (_fail_closed, {}),
    "timeout": (_timeout, {}),
    "redacted": (
        _redacted,
        {"paths": ["tool_input.card.number"], "secrets": ["server-secret-token-0123456789"]},
    ),
    "text on": (_prompt, {"text": True}),
    "text off": (_prompt, {}),
    "tool_input off": (lambda: _observed(_one()), {"tool_input": False}),
    "replayed": (_replayed, {}),
    "too deep": (_too_deep, {}),
    "full input": (lambda: _full(FULL_BODY), {"full_input": True}),
    "full input redacted": (lambda: _full(SECRET_BODY), {"full_input": True}),
    "policy input with a body": (lambda: _full(FULL_BODY), {}),
}


EXPECTED: dict[str, list[str]] = {
    "one handler": [
        (
            '{"schema_version":2,"kind":"decision"'
            ',"event_id":"evt_0196b3f0a1c3aaaaaaaaaaaaaaaaaaaa","decision_id":null'
            ',"time":"2026-05-09T07:35:25.123Z","ts":1778312125.1234567,"app":"lines"'
            ',"app_version":"1.2.3","replica":"host:1","transport":"webhook","pid":4242'
            ',"principal":"token#1","event":"PreToolUse","tool_name":"Bash","session_id":"sess-1"'
            ',"turn_id":null,"tool_use_id":"toolu_1","agent_id":null'
            ',"idempotency_key":"tool_use_id=toolu_1:PreToolUse:*:a5a413ec3104aade"'
            ',"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"'
            ',"parent_span_id":null,"status":"ok","failed":false,"decision":"deny"'
            ',"reason":"no rm -rf in prod","latency_ms":1.25,"input_digest":"a5a413ec3104aade"'
            ',"input":{"tool_input":{"command":"ls"}},"input_complete":false'
            ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}'
            ',"handlers":[{"name":"gate","status":"ok","decision":"deny"'
            ',"reason":"no rm -rf in prod","error":null,"latency_ms":1.25,"replayed":false'
            ',"idempotency_key":"tool_use_id=toolu_1:PreToolUse:gate:a5a413ec3104aade"'
            ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}}]}'
        ),
    ],
    "merged": [
        (
            '{"schema_version":2,"kind":"decision"'
            ',"event_id":"evt_0196b3f0a1c3aaaaaaaaaaaaaaaaaaaa","decision_id":null'
            ',"time":"2026-05-09T07:35:25.123Z","ts":1778312125.1234567,"app":"lines"'
            ',"app_version":"1.2.3","replica":"host:1","transport":"webhook","pid":4242'
            ',"principal":"token#1","event":"PreToolUse","tool_name":"Edit","session_id":"sess-1"'
            ',"turn_id":null,"tool_use_id":"toolu_2","agent_id":null'
            ',"idempotency_key":"tool_use_id=toolu_2:PreToolUse:*:613281796bd78b77"'
            ',"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"'
            ',"parent_span_id":null,"status":"ok","failed":false,"decision":"deny"'
            ',"reason":"second says no","latency_ms":3.5,"input_digest":"613281796bd78b77"'
            ',"input":{"tool_input":{"file":"a"}},"input_complete":false'
            ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"second says no"}}'
            ',"handlers":[{"name":"first","status":"ok","decision":"allow"'
            ',"reason":"first is fine","error":null,"latency_ms":1.25,"replayed":false'
            ',"idempotency_key":"tool_use_id=toolu_2:PreToolUse:first:613281796bd78b77"'
            ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"allow"'
            ',"permissionDecisionReason":"first is fine"}}},{"name":"second","status":"ok"'
            ',"decision":"deny","reason":"second says no","error":null,"latency_ms":3.5'
            ',"replayed":false'
            ',"idempotency_key":"tool_use_id=toolu_2:PreToolUse:second:613281796bd78b77"'
            ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"second says no"}}}]}'
        ),
    ],
    "fail closed": [
        (
            '{"schema_version":2,"kind":"decision"'
            ',"event_id":"evt_0196b3f0a1c3aaaaaaaaaaaaaaaaaaaa","decision_id":null'
            ',"time":"2026-05-09T07:35:25.123Z","ts":1778312125.1234567,"app":"lines"'
            ',"app_version":"1.2.3","replica":"host:1","transport":"webhook","pid":4242'
            ',"principal":"token#1","event":"PreToolUse","tool_name":"Write"'
            ',"session_id":"sess-1","turn_id":null,"tool_use_id":"toolu_3","agent_id":null'
            ',"idempotency_key":"tool_use_id=toolu_3:PreToolUse:*:5274235b81f5973b"'
            ',"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"'
            ',"parent_span_id":null,"status":"fail_closed","failed":false,"decision":"deny"'
            ',"reason":"Blocked by policy: the check \'closed\' failed'
            ', and it is configured to fail closed."'
            ',"latency_ms":1.25,"input_digest":"5274235b81f5973b","input":{"tool_input":{}}'
            ',"input_complete":false,"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny"'
            ',"permissionDecisionReason":"Blocked by policy: the check \'closed\' failed'
            ', and it is configured to fail closed."}}'
            ',"handlers":[{"name":"closed","status":"fail_closed","decision":"deny"'
            ',"reason":"Blocked by policy: the check \'closed\' failed'
            ', and it is configured to fail closed."'
            ',"error":"RuntimeError: the approvals service is down","latency_ms":1.25'
            ',"replayed":false'
            ',"idempotency_key":"tool_use_id=toolu_3:PreToolUse:closed:5274235b81f5973b"'
            ',"output":null}]}'
        ),
    ],
    "timeout": [
        (
            '{"schema_version":2,"kind":"decision"'
            ',"event_id":"evt_0196b3f0a1c3aaaaaaaaaaaaaaaaaaaa","decision_id":null'
            ',"time":"2026-05-09T07:35:25.123Z","ts":1778312125.1234567,"app":"lines"'
            ',"app_version":"1.2.3","replica":"host:1","transport":"webhook","pid":4242'
            ',"principal":"token#1","event":"PreToolUse","tool_name":"Read","session_id":"sess-1"'
            ',"turn_id":null,"tool_use_id":"toolu_4","agent_id":null'
            ',"idempotency_key":"tool_use_id=toolu_4:PreToolUse:*:707e915937567edc"'
            ',"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"'
            ',"parent_span_id":null,"status":"timeout","failed":true,"decision":null'
            ',"reason":null,"latency_ms":5000.0,"input_digest":"707e915937567edc","input":{}'
            ',"input_complete":false,"output":{},"handlers":[{"name":"slow","status":"timeout"'
            ',"decision":null,"reason":null,"error":"handler did not answer in time"'
            ',"latency_ms":5000.0,"replayed":false'
            ',"idempotency_key":"tool_use_id=toolu_4:PreToolUse:slow:707e915937567edc"'
            ',"output":null}]}'
        ),
    ],
    "redacted": [
        (
            '{"schema_version":2,"kind":"decision"'
            ',"event_id":"evt_0196b3f0a1c3aaaaaaaaaaaaaaaaaaaa","decision_id":null'
            ',"time":"2026-05-09T07:35:25.123Z","ts":1778312125.1234567,"app":"lines"'
            ',"app_version":"1.2.3","replica":"host:1","transport":"webhook","pid":4242'
            ',"principal":"token#1","event":"PreToolUse","tool_name":"Bash","session_id":"sess-1"'
            ',"turn_id":null,"tool_use_id":"toolu_5","agent_id":null'
            ',"idempotency_key":"tool_use_id=toolu_5:PreToolUse:*:e02a57aca9093acf"'
            ',"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"'
            ',"parent_span_id":null,"status":"ok","failed":false,"decision":"deny"'
            ',"reason":"no rm -rf in prod","latency_ms":1.25,"input_digest":"e02a57aca9093acf"'
            ',"input":{"tool_input":{"command":"curl -H \'Authorization: [REDACTED]\' https://[REDACTED]@x.io"'
            ',"password":"[REDACTED]","card":{"number":"[REDACTED]","holder":"[REDACTED]"}}}'
            ',"input_complete":false,"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}'
            ',"handlers":[{"name":"gate","status":"ok","decision":"deny"'
            ',"reason":"no rm -rf in prod","error":null,"latency_ms":1.25,"replayed":false'
            ',"idempotency_key":"tool_use_id=toolu_5:PreToolUse:gate:e02a57aca9093acf"'
            ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}}]}'
        ),
    ],
    "text on": [
        (
            '{"schema_version":2,"kind":"decision"'
            ',"event_id":"evt_0196b3f0a1c3aaaaaaaaaaaaaaaaaaaa","decision_id":null'
            ',"time":"2026-05-09T07:35:25.123Z","ts":1778312125.1234567,"app":"lines"'
            ',"app_version":"1.2.3","replica":"host:1","transport":"webhook","pid":4242'
            ',"principal":"token#1","event":"UserPromptSubmit","tool_name":null'
            ',"session_id":"sess-1","turn_id":null,"tool_use_id":null,"agent_id":null'
            ',"idempotency_key":"session_id=sess-1:UserPromptSubmit:*:3528748208c07d06"'
            ',"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"'
            ',"parent_span_id":null,"status":"ok","failed":false,"decision":null,"reason":null'
            ',"latency_ms":1.25,"input_digest":"3528748208c07d06"'
            ',"input":{"prompt":"deploy with [REDACTED] now"},"input_complete":false,"output":{}'
            ',"handlers":[{"name":"prompt","status":"ok","decision":null,"reason":null'
            ',"error":null,"latency_ms":1.25,"replayed":false'
            ',"idempotency_key":"session_id=sess-1:UserPromptSubmit:prompt:3528748208c07d06"'
            ',"output":{}}]}'
        ),
    ],
    "text off": [
        (
            '{"schema_version":2,"kind":"decision"'
            ',"event_id":"evt_0196b3f0a1c3aaaaaaaaaaaaaaaaaaaa","decision_id":null'
            ',"time":"2026-05-09T07:35:25.123Z","ts":1778312125.1234567,"app":"lines"'
            ',"app_version":"1.2.3","replica":"host:1","transport":"webhook","pid":4242'
            ',"principal":"token#1","event":"UserPromptSubmit","tool_name":null'
            ',"session_id":"sess-1","turn_id":null,"tool_use_id":null,"agent_id":null'
            ',"idempotency_key":"session_id=sess-1:UserPromptSubmit:*:3528748208c07d06"'
            ',"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"'
            ',"parent_span_id":null,"status":"ok","failed":false,"decision":null,"reason":null'
            ',"latency_ms":1.25,"input_digest":"3528748208c07d06","input":{}'
            ',"input_complete":false,"output":{},"handlers":[{"name":"prompt","status":"ok"'
            ',"decision":null,"reason":null,"error":null,"latency_ms":1.25,"replayed":false'
            ',"idempotency_key":"session_id=sess-1:UserPromptSubmit:prompt:3528748208c07d06"'
            ',"output":{}}]}'
        ),
    ],
    "tool_input off": [
        (
            '{"schema_version":2,"kind":"decision"'
            ',"event_id":"evt_0196b3f0a1c3aaaaaaaaaaaaaaaaaaaa","decision_id":null'
            ',"time":"2026-05-09T07:35:25.123Z","ts":1778312125.1234567,"app":"lines"'
            ',"app_version":"1.2.3","replica":"host:1","transport":"webhook","pid":4242'
            ',"principal":"token#1","event":"PreToolUse","tool_name":"Bash","session_id":"sess-1"'
            ',"turn_id":null,"tool_use_id":"toolu_1","agent_id":null'
            ',"idempotency_key":"tool_use_id=toolu_1:PreToolUse:*:a5a413ec3104aade"'
            ',"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"'
            ',"parent_span_id":null,"status":"ok","failed":false,"decision":"deny"'
            ',"reason":"no rm -rf in prod","latency_ms":1.25,"input_digest":"a5a413ec3104aade"'
            ',"input":{},"input_complete":false'
            ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}'
            ',"handlers":[{"name":"gate","status":"ok","decision":"deny"'
            ',"reason":"no rm -rf in prod","error":null,"latency_ms":1.25,"replayed":false'
            ',"idempotency_key":"tool_use_id=toolu_1:PreToolUse:gate:a5a413ec3104aade"'
            ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}}]}'
        ),
    ],
    "replayed": [
        (
            '{"schema_version":2,"kind":"decision"'
            ',"event_id":"evt_0196b3f0a1c3aaaaaaaaaaaaaaaaaaaa","decision_id":null'
            ',"time":"2026-05-09T07:35:25.123Z","ts":1778312125.1234567,"app":"lines"'
            ',"app_version":"1.2.3","replica":"host:1","transport":"webhook","pid":4242'
            ',"principal":"token#1","event":"PreToolUse","tool_name":"Bash","session_id":"sess-1"'
            ',"turn_id":null,"tool_use_id":"toolu_1","agent_id":null'
            ',"idempotency_key":"tool_use_id=toolu_1:PreToolUse:*:a5a413ec3104aade"'
            ',"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"'
            ',"parent_span_id":null,"status":"ok","failed":false,"decision":"deny"'
            ',"reason":"no rm -rf in prod","latency_ms":1.25,"input_digest":"a5a413ec3104aade"'
            ',"input":{"tool_input":{"command":"ls"}},"input_complete":false'
            ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}'
            ',"handlers":[{"name":"gate","status":"ok","decision":"deny"'
            ',"reason":"no rm -rf in prod","error":null,"latency_ms":1.25,"replayed":true'
            ',"idempotency_key":"tool_use_id=toolu_1:PreToolUse:gate:a5a413ec3104aade"'
            ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}}]}'
        ),
    ],
    "full input": [
        (
            '{"schema_version":2,"kind":"decision"'
            ',"event_id":"evt_0196b3f0a1c3aaaaaaaaaaaaaaaaaaaa","decision_id":null'
            ',"time":"2026-05-09T07:35:25.123Z","ts":1778312125.1234567,"app":"lines"'
            ',"app_version":"1.2.3","replica":"host:1","transport":"webhook","pid":4242'
            ',"principal":"token#1","event":"PreToolUse","tool_name":"Bash","session_id":"sess-1"'
            ',"turn_id":null,"tool_use_id":"toolu_7","agent_id":null'
            ',"idempotency_key":"tool_use_id=toolu_7:PreToolUse:*:c3c4ff8dbdb30fd8"'
            ',"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"'
            ',"parent_span_id":null,"status":"ok","failed":false,"decision":"deny"'
            ',"reason":"no rm -rf in prod","latency_ms":1.25,"input_digest":"204c8cd12ed30b0a"'
            ',"input":{"hook_event_name":"PreToolUse","session_id":"sess-1","cwd":"/srv/app"'
            ',"tool_name":"Bash","tool_use_id":"toolu_7","tool_input":{"command":"ls"}'
            ',"extra":null},"input_complete":true'
            ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}'
            ',"handlers":[{"name":"gate","status":"ok","decision":"deny"'
            ',"reason":"no rm -rf in prod","error":null,"latency_ms":1.25,"replayed":false'
            ',"idempotency_key":"tool_use_id=toolu_7:PreToolUse:gate:c3c4ff8dbdb30fd8"'
            ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}}]}'
        ),
    ],
    "full input redacted": [
        (
            '{"schema_version":2,"kind":"decision"'
            ',"event_id":"evt_0196b3f0a1c3aaaaaaaaaaaaaaaaaaaa","decision_id":null'
            ',"time":"2026-05-09T07:35:25.123Z","ts":1778312125.1234567,"app":"lines"'
            ',"app_version":"1.2.3","replica":"host:1","transport":"webhook","pid":4242'
            ',"principal":"token#1","event":"PreToolUse","tool_name":"Bash","session_id":"sess-1"'
            ',"turn_id":null,"tool_use_id":"toolu_8","agent_id":null'
            ',"idempotency_key":"tool_use_id=toolu_8:PreToolUse:*:8966cf8bc0fc92d3"'
            ',"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"'
            ',"parent_span_id":null,"status":"ok","failed":false,"decision":"deny"'
            ',"reason":"no rm -rf in prod","latency_ms":1.25,"input_digest":"5a434a5250567d5a"'
            ',"input":{"hook_event_name":"PreToolUse","session_id":"sess-1","tool_name":"Bash"'
            ',"tool_use_id":"toolu_8","tool_input":{"command":"ls","api_key":"[REDACTED]"}}'
            ',"input_complete":false,"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}'
            ',"handlers":[{"name":"gate","status":"ok","decision":"deny"'
            ',"reason":"no rm -rf in prod","error":null,"latency_ms":1.25,"replayed":false'
            ',"idempotency_key":"tool_use_id=toolu_8:PreToolUse:gate:8966cf8bc0fc92d3"'
            ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}}]}'
        ),
    ],
    "policy input with a body": [
        (
            '{"schema_version":2,"kind":"decision"'
            ',"event_id":"evt_0196b3f0a1c3aaaaaaaaaaaaaaaaaaaa","decision_id":null'
            ',"time":"2026-05-09T07:35:25.123Z","ts":1778312125.1234567,"app":"lines"'
            ',"app_version":"1.2.3","replica":"host:1","transport":"webhook","pid":4242'
            ',"principal":"token#1","event":"PreToolUse","tool_name":"Bash","session_id":"sess-1"'
            ',"turn_id":null,"tool_use_id":"toolu_7","agent_id":null'
            ',"idempotency_key":"tool_use_id=toolu_7:PreToolUse:*:c3c4ff8dbdb30fd8"'
            ',"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"'
            ',"parent_span_id":null,"status":"ok","failed":false,"decision":"deny"'
            ',"reason":"no rm -rf in prod","latency_ms":1.25,"input_digest":"204c8cd12ed30b0a"'
            ',"input":{"tool_input":{"command":"ls"}},"input_complete":false'
            ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}'
            ',"handlers":[{"name":"gate","status":"ok","decision":"deny"'
            ',"reason":"no rm -rf in prod","error":null,"latency_ms":1.25,"replayed":false'
            ',"idempotency_key":"tool_use_id=toolu_7:PreToolUse:gate:c3c4ff8dbdb30fd8"'
            ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
            ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}}]}'
        ),
    ],
}

# The input nested deeper than a record holds: the ids recorded, the input cut where it is too
# deep (the value at the last level a record holds is replaced by the marker).
DEEP_DECISION = (
    (
        '{"schema_version":2,"kind":"decision"'
        ',"event_id":"evt_0196b3f0a1c3aaaaaaaaaaaaaaaaaaaa","decision_id":null'
        ',"time":"2026-05-09T07:35:25.123Z","ts":1778312125.1234567,"app":"lines"'
        ',"app_version":"1.2.3","replica":"host:1","transport":"webhook","pid":4242'
        ',"principal":"token#1","event":"PreToolUse","tool_name":"Bash","session_id":"sess-1"'
        ',"turn_id":null,"tool_use_id":"toolu_6","agent_id":null'
        ',"idempotency_key":"tool_use_id=toolu_6:PreToolUse:*:852c15f701d9eab3"'
        ',"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"'
        ',"parent_span_id":null,"status":"ok","failed":false,"decision":"deny"'
        ',"reason":"no rm -rf in prod","latency_ms":1.25,"input_digest":"852c15f701d9eab3"'
        ',"input":'
    )
    + '{"tool_input":'
    + '{"k":' * MAX_RECORD_DEPTH
    + '"[truncated: nested deeper than 200 levels]"'
    + "}" * MAX_RECORD_DEPTH
    + "}"
    + (
        ',"input_complete":false'
        ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
        ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}'
        ',"handlers":[{"name":"gate","status":"ok","decision":"deny"'
        ',"reason":"no rm -rf in prod","error":null,"latency_ms":1.25,"replayed":false'
        ',"idempotency_key":"tool_use_id=toolu_6:PreToolUse:gate:852c15f701d9eab3"'
        ',"output":{"hookSpecificOutput":{"hookEventName":"PreToolUse"'
        ',"permissionDecision":"deny","permissionDecisionReason":"no rm -rf in prod"}}}]}'
    )
)
EXPECTED["too deep"] = [DEEP_DECISION]


@pytest.mark.parametrize("row", sorted(ROWS))
def test_each_answer_is_recorded_as_written(row: str) -> None:
    make, options = ROWS[row]
    assert _lines(make(), _policy(**options)) == EXPECTED[row]


@pytest.mark.parametrize("row", sorted(ROWS))
def test_the_records_hold_what_their_lines_say(row: str) -> None:
    """The records (what SQLite and PostgreSQL copy into columns) are the lines' values, of
    the lines' types, in the lines' order."""
    make, options = ROWS[row]
    pairs = record_lines(capture(make()), "lines", _policy(**options))
    assert [record for record, _ in pairs] == [json.loads(line) for line in EXPECTED[row]]
    for record, line in pairs:
        assert list(record) == list(json.loads(line))
        assert type(record["status"]) is str  # the status's text, not the enum


def test_the_durable_trail_commits_the_same_lines(tmp_path: Path) -> None:
    """Durable mode, through the writer process: the answer's acknowledgement is the future
    its Observed carries, settled True once the lines are on disk, and they are the lines."""
    path = tmp_path / "audit.jsonl"
    trail = AuditTrail("lines", _policy(), specs=[f"jsonl:{path}"], durable=True)
    item = _observed(_one())

    async def scenario() -> bool:
        await trail.start()
        item.ack = trail.submit(item)
        assert item.ack is not None and not isinstance(item.ack, bool)
        # what crosses the pipe: plain tuples (a NamedTuple or an enum pickles and unpickles
        # through a Python call each), a status as its text
        channel = trail._channel
        assert channel is not None
        assert [type(captured) for captured in channel.batch] == [tuple]
        assert [type(invocation[1]) for invocation in channel.batch[0][12]] == [str]
        return await trail.committed(item.ack, 30.0)

    try:
        assert asyncio.run(scenario()) is True
    finally:
        trail.close()
    assert path.read_text().splitlines() == EXPECTED["one handler"]


def test_the_lines_a_sink_given_in_code_writes(tmp_path: Path) -> None:
    """The writer thread (sinks given in code) writes the same lines."""
    path = tmp_path / "audit.jsonl"
    trail = AuditTrail("lines", _policy(), sinks=[JsonLinesSink(str(path))], process=False)
    trail.submit(_merged())
    trail.close()
    assert path.read_text().splitlines() == EXPECTED["merged"]


def test_the_input_digest_is_of_the_body_as_received() -> None:
    """The digest of the bytes the webhook read, whatever the input's serialization; the
    idempotency keys keep theirs (of the input as serialized)."""
    (line,) = _lines(_full(FULL_BODY), _policy())
    record = json.loads(line)
    assert record["input_digest"] == hashlib.sha256(FULL_BODY).hexdigest()[:16]
    assert not record["idempotency_key"].endswith(record["input_digest"])
