"""OpenTelemetry spans: one per invocation, parented by the incoming ``traceparent`` (sent over
real HTTP to a running server), with the decision attributes, and the same ids in the audit
trail."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from handler_kit import HookApp, PreToolUse
from handler_kit.config import OperationsConfig, ServerConfig
from handler_kit.ops import tracing
from handler_kit.ops.operations import Operations
from handler_kit.testing import running_server
from tests.support.http import TOKEN
from tests.support.payloads import pre_tool_use, read_jsonl


def _with_operations(
    hooks: HookApp, settings: OperationsConfig | None
) -> tuple[HookApp, Operations]:
    """``hooks`` with the operations ``settings`` turns on around it, and those operations."""
    operations = Operations.build(hooks, settings or OperationsConfig())
    return operations.apply(hooks), operations


TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_SPAN}-01"


def _tracing() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _hex(value: int, width: int) -> str:
    return f"{value:0{width}x}"


def test_span_is_parented_by_the_incoming_traceparent(tmp_path: Path, ops_app: HookApp) -> None:
    provider, exporter = _tracing()
    audit = tmp_path / "audit.jsonl"
    config = ServerConfig(
        tokens=[TOKEN],
        operations=OperationsConfig(tracer_provider=provider, audit=[f"jsonl:{audit}"]),
    )
    hooks = ops_app
    with running_server(hooks, config=config) as server, server.http() as http:
        response = http.post(
            "/hooks/refund_gate",
            json=pre_tool_use("issue_refund", "toolu_trace", amount=640),
            headers={"traceparent": TRACEPARENT},
        )
        assert response.status_code == 200
        assert response.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
    (span,) = exporter.get_finished_spans()
    assert span.name == "PreToolUse refund_gate"
    assert _hex(span.context.trace_id, 32) == TRACE_ID
    assert span.parent is not None and span.parent.is_remote
    assert _hex(span.parent.span_id, 16) == PARENT_SPAN
    assert span.kind == SpanKind.INTERNAL
    attributes: dict[str, Any] = dict(span.attributes or {})
    assert attributes["handler_kit.event"] == "PreToolUse"
    assert attributes["handler_kit.handler"] == "refund_gate"
    assert attributes["handler_kit.decision"] == "deny"
    assert attributes["handler_kit.tool_name"] == "issue_refund"
    assert attributes["handler_kit.status"] == "ok"
    assert attributes["handler_kit.transport"] == "webhook"
    assert span.end_time > span.start_time  # the measured latency
    # the audit trail names the same span
    records = read_jsonl(audit)
    (decision,) = records
    assert decision["kind"] == "decision" and decision["trace_id"] == TRACE_ID
    assert decision["span_id"] == PARENT_SPAN  # the caller's span is the decision's
    assert decision["event_id"] == attributes["handler_kit.event_id"]
    assert [h["name"] for h in decision["handlers"]] == ["refund_gate"]


def test_without_traceparent_one_root_span_per_answer(ops_app: HookApp) -> None:
    provider, exporter = _tracing()
    hooks, _ = _with_operations(ops_app, OperationsConfig(tracer_provider=provider))
    event = PreToolUse.model_validate(pre_tool_use("orders__refund", "tu-2", amount=10))
    asyncio.run(hooks.answer(event))
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {"PreToolUse", "PreToolUse refund_gate", "PreToolUse refund_logger"}
    root = spans["PreToolUse"]
    assert root.parent is None and root.kind == SpanKind.SERVER
    for name in ("PreToolUse refund_gate", "PreToolUse refund_logger"):
        child = spans[name]
        assert child.parent is not None and child.parent.span_id == root.context.span_id
        assert child.context.trace_id == root.context.trace_id
        assert "handler_kit.decision" not in (child.attributes or {})  # no opinion


def test_failures_are_error_spans(ops_app: HookApp) -> None:
    provider, exporter = _tracing()
    hooks, _ = _with_operations(ops_app, OperationsConfig(tracer_provider=provider))
    event = PreToolUse.model_validate(pre_tool_use("crash_gate", "tu-3"))
    asyncio.run(hooks.answer(event, context={"traceparent": TRACEPARENT}))
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == "RuntimeError: boom"
    assert (span.attributes or {})["handler_kit.status"] == "fail_closed"
    assert (span.attributes or {})["handler_kit.decision"] == "deny"


def test_mcp_calls_are_parented_too(ops_app: HookApp) -> None:
    provider, exporter = _tracing()
    config = ServerConfig(tokens=[TOKEN], operations=OperationsConfig(tracer_provider=provider))
    with running_server(ops_app, config=config) as server, server.http() as http:
        response = http.post(
            "/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {
                    "name": "refund_gate",
                    "arguments": {"tool_name": "issue_refund", "tool_input": {"amount": 900}},
                },
            },
            headers={"traceparent": TRACEPARENT, "Accept": "application/json, text/event-stream"},
        )
        assert response.status_code == 200, response.text
    (span,) = exporter.get_finished_spans()
    assert _hex(span.parent.span_id, 16) == PARENT_SPAN  # type: ignore[union-attr]
    assert (span.attributes or {})["handler_kit.transport"] == "mcp"


def test_env_switch_uses_the_global_provider(
    monkeypatch: pytest.MonkeyPatch, ops_app: HookApp
) -> None:
    """HANDLER_KIT_OTEL=1 with an SDK provider already configured by the application."""
    provider, exporter = _tracing()
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    settings = OperationsConfig.from_env({"HANDLER_KIT_OTEL": "1"})
    assert settings.otel
    hooks, ops = _with_operations(ops_app, settings)
    tracer = ops.tracing
    assert isinstance(tracer, tracing.Tracing) and tracer.provider is provider
    assert not tracer.owned
    event = PreToolUse.model_validate(pre_tool_use("orders__refund", "tu-4", amount=10))
    asyncio.run(hooks.answer(event, context={"traceparent": TRACEPARENT}))
    assert len(exporter.get_finished_spans()) == 2
