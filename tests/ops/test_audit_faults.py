"""Faults of the audit trail, through real uvicorn: inputs its encoder cannot write as they are
(a lone surrogate, values nested deeper than pydantic-core writes) still get their records, and
a sink that stalls costs records (counted, in the metric and the log), never the server."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_types.version import LATEST_MODERN_VERSION

from handler_kit import HookApp, Output, PreToolUse, allow
from handler_kit.config import OperationsConfig, ServerConfig
from handler_kit.ops.audit.records import MAX_RECORD_DEPTH, TOO_DEEP
from handler_kit.ops.audit.sqlite import AuditStore
from handler_kit.ops.audit.trail import DROP_LOG_INTERVAL
from handler_kit.testing import RunningServer, running_server
from tests.support.apps import COMMAND_APP
from tests.support.http import TOKEN
from tests.support.payloads import read_jsonl
from tests.support.processes import HANDLER_KIT, clean_env

# -- inputs the encoder cannot write as they are ---------------------------------------------


def echo_app() -> HookApp:
    """A gate that allows every call with the command in its reason: the answer, and so its
    records' ``reason`` and ``output``, carries what the input's command carried."""
    hooks = HookApp("audit-faults")

    @hooks.pre_tool_use()
    def echo(event: PreToolUse) -> Output:
        return allow(f"seen: {(event.tool_input or {}).get('command')}")

    return hooks


def nested(levels: int) -> dict[str, Any]:
    """A ``tool_input`` nesting ``levels`` objects and arrays, itself being level 1."""
    value: Any = "bottom"
    for _ in range(levels - 1):
        value = [value]
    return {"v": value}


def levels_of(value: Any) -> tuple[int, Any]:
    """How many objects and arrays a :func:`nested` value nests, and what is at the bottom."""
    levels = 0
    while isinstance(value, dict | list):
        levels += 1
        value = value["v"] if isinstance(value, dict) else value[0]
    return levels, value


def pre_tool_use(tool_use_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "sess-faults",
        "tool_name": "Bash",
        "tool_use_id": tool_use_id,
        "tool_input": {"command": "ls"},
        **fields,
    }


# Sent as JSON with the lone surrogates as their escapes, as runtimes send them.
WEBHOOK_INPUTS = [
    pre_tool_use("hook-value", tool_input={"command": "echo \ud800"}),
    pre_tool_use("hook-key", tool_input={"\udc8f": "x"}),
    pre_tool_use("hook-ids", tool_name="Bash\ud800", session_id="sess-\udfff"),
    pre_tool_use("hook-deep", tool_input=nested(MAX_RECORD_DEPTH)),  # the input depth limit
]
# MCP arguments are read by the standard library's parser: deeper than pydantic-core writes.
MCP_INPUTS = [
    pre_tool_use("mcp-value", tool_input={"command": "echo \ud800"}),
    pre_tool_use("mcp-deep", tool_input=nested(300)),
]


def mcp_call(server: RunningServer, arguments: dict[str, Any]) -> httpx.Response:
    """``tools/call`` of ``echo`` in the modern protocol, whose bodies the standard library
    reads (so it takes lone surrogates and any depth it can parse)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "echo",
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": LATEST_MODERN_VERSION,
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "MCP-Protocol-Version": LATEST_MODERN_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "echo",
    }
    with server.http(timeout=10) as client:
        return client.post("/mcp", content=json.dumps(body), headers=headers)


@pytest.mark.parametrize("process", [True, False], ids=["writer-process", "writer-thread"])
def test_every_answer_has_its_records_whatever_the_input(tmp_path: Path, process: bool) -> None:
    jsonl, db = tmp_path / "audit.jsonl", tmp_path / "audit.db"
    operations = OperationsConfig(audit=[f"jsonl:{jsonl}", f"sqlite:{db}"], audit_process=process)
    config = ServerConfig(tokens=[TOKEN], operations=operations)
    with running_server(echo_app(), config=config) as server:
        with server.http(timeout=10) as client:
            for body in WEBHOOK_INPUTS:
                response = client.post("/hooks/echo", content=json.dumps(body))
                assert response.status_code == 200, response.text
                assert response.json()["hookSpecificOutput"]["permissionDecision"] == "allow"
        for arguments in MCP_INPUTS:
            response = mcp_call(server, arguments)
            assert response.status_code == 200, response.text
            assert response.json()["result"]["isError"] is False, response.text
    # the server has stopped: everything queued is written

    sent = [body["tool_use_id"] for body in WEBHOOK_INPUTS + MCP_INPUTS]
    lines = read_jsonl(jsonl)
    answers = {r["tool_use_id"]: r for r in lines if r["kind"] == "decision"}
    assert sorted(answers) == sorted(sent)
    assert len(lines) == len(sent)
    assert all([h["name"] for h in r["handlers"]] == ["echo"] for r in lines)

    store = AuditStore(str(db))
    try:
        assert store.count(kind="decision") == store.count() == len(sent)
        stored = {r["tool_use_id"]: r for r in store.recent(100, kind="decision")}
    finally:
        store.close()
    assert stored.keys() == answers.keys()

    for records in (answers, stored):
        # a lone surrogate is written as U+FFFD, in values, keys and identifiers alike
        for key in ("hook-value", "mcp-value"):
            recorded = records[key]
            assert recorded["input"]["tool_input"] == {"command": "echo \ufffd"}
            assert recorded["reason"] == "seen: echo \ufffd"
            specific = recorded["output"]["hookSpecificOutput"]
            assert specific["permissionDecisionReason"] == "seen: echo \ufffd"
        assert records["hook-key"]["input"]["tool_input"] == {"\ufffd": "x"}
        assert records["hook-ids"]["tool_name"] == "Bash\ufffd"
        assert records["hook-ids"]["session_id"] == "sess-\ufffd"
        # as deep as the server reads an input: recorded whole
        deep = records["hook-deep"]
        assert levels_of(deep["input"]["tool_input"]) == (MAX_RECORD_DEPTH, "bottom")
        # deeper: cut at that depth, with a marker
        cut = records["mcp-deep"]
        assert levels_of(cut["input"]["tool_input"]) == (MAX_RECORD_DEPTH, TOO_DEEP)


def strict_app() -> HookApp:
    """A fail-closed gate: an input it cannot read gets its deny."""
    hooks = HookApp("audit-faults-strict")

    @hooks.pre_tool_use(fail_closed=True)
    def strict(event: PreToolUse) -> Output:
        return allow("read it")

    return hooks


def deep_body(tool_use_id: str, levels: int) -> bytes:
    """A PreToolUse whose ``tool_input`` nests ``levels`` arrays, with ``tool_use_id`` after
    it (as Claude Code orders its fields) and a decoy id inside it."""
    inner = "[" * levels + '{"tool_use_id": "decoy", "session_id": "decoy"}' + "]" * levels
    return (
        '{"session_id": "sess-deep", "transcript_path": "/t.jsonl", "cwd": "/w", '
        '"hook_event_name": "PreToolUse", "tool_name": "Bash", '
        f'"tool_input": {{"command": {inner}}}, "tool_use_id": "{tool_use_id}"}}'
    ).encode()


@pytest.mark.parametrize("process", [True, False], ids=["writer-process", "writer-thread"])
def test_an_input_too_deep_to_parse_is_recorded_with_its_ids(tmp_path: Path, process: bool) -> None:
    """The gate cannot read it (too deep: a 400 for a handler that does not fail closed), so
    it denies; the record of that deny names the session and the call, read from the top
    level without the deep part."""
    jsonl = tmp_path / "audit.jsonl"
    operations = OperationsConfig(audit=[f"jsonl:{jsonl}"], audit_process=process)
    config = ServerConfig(tokens=[TOKEN], operations=operations)
    # just past the input limit (the standard library parses it), and far past what any
    # parser here reads
    bodies = {"tu-deep-1": MAX_RECORD_DEPTH + 10, "tu-deep-2": 50_000}
    with running_server(strict_app(), config=config) as server, server.http(timeout=10) as client:
        for tool_use_id, levels in bodies.items():
            response = client.post("/hooks/strict", content=deep_body(tool_use_id, levels))
            assert response.status_code == 200, response.text
            specific = response.json()["hookSpecificOutput"]
            assert specific["permissionDecision"] == "deny"
            assert "could not read the hook input" in specific["permissionDecisionReason"]
    answers = [r for r in read_jsonl(jsonl) if r["kind"] == "decision"]
    assert [(r["session_id"], r["tool_use_id"], r["decision"]) for r in answers] == [
        ("sess-deep", "tu-deep-1", "deny"),
        ("sess-deep", "tu-deep-2", "deny"),
    ]
    assert [[h["name"] for h in r["handlers"]] for r in answers] == [["strict"], ["strict"]]


def test_a_command_hook_records_the_ids_of_an_input_too_deep_to_parse(tmp_path: Path) -> None:
    """The same through ``handler-kit command``: the gate's deny, and its record's ids."""
    jsonl = tmp_path / "audit.jsonl"
    body = deep_body("tu-deep-cmd", 5_000).replace(b'"Bash"', b'"issue_refund"')
    env = clean_env(HANDLER_KIT_AUDIT=f"jsonl:{jsonl}")
    proc = subprocess.run(
        [str(HANDLER_KIT), "command", COMMAND_APP, "--handler", "refund_gate"],
        input=body,
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    specific = json.loads(proc.stdout)["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    answers = [r for r in read_jsonl(jsonl) if r["kind"] == "decision"]
    assert [(r["session_id"], r["tool_use_id"]) for r in answers] == [("sess-deep", "tu-deep-cmd")]


# -- a sink that stalls ----------------------------------------------------------------------


class StalledSink:
    """An audit sink whose writes wait until released, as on a pipe nobody reads, a full
    disk or a locked database (bounded, so a failing test still ends)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.records: list[dict[str, Any]] = []

    def open(self) -> None:
        pass

    def write(self, records: Sequence[tuple[dict[str, Any], str]]) -> None:
        self.entered.set()
        self.release.wait(60)
        self.records.extend(record for record, _ in records)

    def close(self) -> None:
        pass


def gate_app(timeout: float = 3.0) -> HookApp:
    hooks = HookApp("stalled-sink")

    @hooks.pre_tool_use(timeout=timeout)
    def gate(event: PreToolUse) -> Output:
        return allow("ok")

    return hooks


QUEUE_SIZE = 4


def answered_promptly(client: httpx.Client, count: int) -> None:
    """``count`` gate calls, each answered within the client's timeout, then ``/healthz``."""
    for index in range(count):
        response = client.post("/hooks/gate", json=pre_tool_use(f"toolu_{index}"))
        assert response.status_code == 200, response.text
    assert client.get("/healthz").status_code == 200


def dropped_metric(client: httpx.Client) -> float:
    text = client.get("/metrics").text
    found = re.search(r"^handler_kit_audit_dropped_total (\S+)$", text, re.MULTILINE)
    assert found is not None, text
    return float(found.group(1))


def drop_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == "handler_kit.audit" and r.getMessage().startswith("audit records dropped")
    ]


def test_a_stalled_sink_drops_and_counts_records_and_the_server_answers_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="handler_kit.audit")
    sink = StalledSink()
    operations = OperationsConfig(audit_sinks=[sink], audit_queue_size=QUEUE_SIZE, metrics=True)
    config = ServerConfig(tokens=[TOKEN], operations=operations)
    with running_server(gate_app(), config=config) as server:
        try:
            with server.http(timeout=5) as client:
                answered_promptly(client, 1)
                assert sink.entered.wait(10), "the writer never reached the sink"
                # the writer holds the first answer; the queue takes QUEUE_SIZE more
                answered_promptly(client, QUEUE_SIZE + 20)
                assert dropped_metric(client) == 20
            assert server.asgi is not None and server.asgi.operations is not None
            trail = server.asgi.operations.audit
            assert trail is not None and trail.dropped == 20
            # one line for the lot (the test runs well within one interval), with the count
            assert DROP_LOG_INTERVAL >= 10
            warnings = drop_warnings(caplog)
            assert len(warnings) == 1, [w.getMessage() for w in warnings]
            assert "audit queue is full" in warnings[0].getMessage()
        finally:
            sink.release.set()
    # what was queued is written at shutdown
    assert len([r for r in sink.records if r["kind"] == "decision"]) == 1 + QUEUE_SIZE


def test_block_waits_at_most_a_deadline_for_a_stalled_sink(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="handler_kit.audit")
    sink = StalledSink()
    operations = OperationsConfig(
        audit_sinks=[sink], audit_queue_size=QUEUE_SIZE, audit_on_full="block", metrics=True
    )
    config = ServerConfig(tokens=[TOKEN], operations=operations)
    # a short deadline: the one wait for room the stalled writer costs
    with running_server(gate_app(timeout=0.5), config=config) as server:
        try:
            with server.http(timeout=5) as client:
                answered_promptly(client, 1)
                assert sink.entered.wait(10), "the writer never reached the sink"
                answered_promptly(client, QUEUE_SIZE + 10)
                assert dropped_metric(client) == 10
                assert len(drop_warnings(caplog)) == 1
                # the writer moves again: answers are queued again, none dropped
                sink.release.set()
                assert server.asgi is not None and server.asgi.operations is not None
                trail = server.asgi.operations.audit
                assert trail is not None and trail.flush(10)
                answered_promptly(client, 3)
                assert dropped_metric(client) == 10
        finally:
            sink.release.set()
    assert len([r for r in sink.records if r["kind"] == "decision"]) == 1 + QUEUE_SIZE + 3
