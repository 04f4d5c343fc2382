"""Handlers as MCP tools, over real HTTP on 127.0.0.1, with the official ``mcp`` 2.3 client.

Both protocol eras are exercised: the client's ``auto`` mode (2026-07-28, no handshake) and
``legacy`` mode (2025-11-25, ``initialize`` first). The server is the real one
(``handler_kit.testing.running_server`` -> ``create_asgi_app``: auth, webhook, ``/mcp``).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from core_support import stop_group
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from example_servers import context_loader, refund_gate
from handler_kit import HookApp, PostToolUse, PreToolUse, Stop, block, deny
from handler_kit.app import Answer
from handler_kit.mcp import (
    FAST_PATH_ENV,
    build_tools,
    create_mcp_mount,
    tool_input_schema,
    transport_security,
)
from handler_kit.server import ServerConfig
from handler_kit.testing import RunningServer, running_server

TOKEN = "mcp-test-token-0123456789abcdef"
MODES = ("auto", "legacy")
DENY_640 = (
    '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",'
    '"permissionDecisionReason":"Refunds over $500 need a human approver."}}'
)
BLOCK_TICKET = '{"decision":"block","reason":"The reply does not cite the ticket number."}'
ROOT = Path(__file__).resolve().parents[1]


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


async def with_client(
    server: RunningServer,
    mode: str,
    body: Callable[[Client], Awaitable[Any]],
    *,
    token: str | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    """Run ``body`` with an ``mcp.Client`` connected to the server's ``/mcp``."""
    all_headers = {"Authorization": f"Bearer {token or server.token}", **(headers or {})}
    async with httpx2.AsyncClient(headers=all_headers, timeout=httpx2.Timeout(30)) as http:
        transport = streamable_http_client(server.mcp_url, http_client=http)
        async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
            return await body(client)


async def call(server: RunningServer, mode: str, tool: str, arguments: dict[str, Any]) -> Any:
    async def body(client: Client) -> Any:
        return await client.call_tool(tool, arguments)

    return await with_client(server, mode, body)


def mcp_error(coro: Awaitable[Any]) -> MCPError:
    """The MCPError a client call fails with (the transport wraps it in exception groups)."""
    errors: list[MCPError] = []
    try:
        run(coro)
    except* MCPError as group:
        errors.extend(e for e in _leaves(group) if isinstance(e, MCPError))
    assert errors, "the call did not fail"
    return errors[0]


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for sub in error.exceptions for leaf in _leaves(sub)]
    return [error]


def only_text(result: Any) -> str:
    """The one text content of a tool result (never a second item, no structuredContent)."""
    assert len(result.content) == 1
    assert result.content[0].type == "text"
    assert result.structured_content is None
    return result.content[0].text


@pytest.fixture(scope="module")
def gate() -> Iterator[RunningServer]:
    with running_server(refund_gate.app, tokens=[TOKEN]) as server:
        yield server


# -- tools/list ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_tools_list_shows_every_handler_with_its_schema(gate: RunningServer, mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.list_tools()

    listed = run(with_client(gate, mode, body))
    tools = {tool.name: tool for tool in listed.tools}
    assert list(tools) == [h.name for h in refund_gate.app.handlers]
    for handler in refund_gate.app.handlers:
        tool = tools[handler.name]
        schema = tool.input_schema
        assert schema == tool_input_schema(handler.event, handler.model)
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is True
        assert "required" not in schema  # all optional: the runtime omits what it lacks
        declared = set(schema["properties"])
        assert declared == {"hook_event_name", *handler.model.model_fields}
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{handler.name}.{name} has no description"
        assert handler.event in tool.description
        assert handler.description.splitlines()[0] in tool.description
        assert tool.output_schema is None


def test_tool_schema_is_flat_and_typed() -> None:
    from handler_kit.events import PostToolUse as PostToolUseModel
    from handler_kit.events import Stop as StopModel

    stop = tool_input_schema("Stop", StopModel)["properties"]
    assert stop["stop_hook_active"]["type"] == ["boolean", "null"]
    assert stop["hook_event_name"] == {
        "type": "string",
        "description": "Name of the event; optional, this tool always handles Stop.",
        "default": "Stop",
    }
    post = tool_input_schema("PostToolUse", PostToolUseModel)["properties"]
    assert post["tool_input"]["type"] == ["object", "null"]
    assert "type" not in post["tool_response"]  # any JSON value
    assert all("$ref" not in json.dumps(p) for p in post.values())


def test_description_names_event_matcher_and_fail_closed() -> None:
    tools = build_tools(refund_gate.app)
    text = tools["refund_gate"].tool.description or ""
    assert "PreToolUse" in text and refund_gate.REFUND_TOOLS in text
    assert "Fails closed" in text
    assert "Fails closed" not in (tools["cite_ticket"].tool.description or "")


# -- tools/call: the refund gate ----------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_refund_over_limit_is_denied(gate: RunningServer, mode: str) -> None:
    args = {"tool_name": "issue_refund", "tool_input": {"order_id": "4821", "amount": 640}}
    result = run(call(gate, mode, "refund_gate", args))
    assert result.is_error is False
    assert only_text(result) == DENY_640


@pytest.mark.parametrize("mode", MODES)
def test_small_refund_has_no_opinion(gate: RunningServer, mode: str) -> None:
    args = {"tool_name": "issue_refund", "tool_input": {"order_id": "4821", "amount": 40}}
    result = run(call(gate, mode, "refund_gate", args))
    assert result.is_error is False
    assert only_text(result) == "{}"


def test_hook_event_name_is_optional_and_checked(gate: RunningServer) -> None:
    args = {"tool_name": "issue_refund", "tool_input": {"amount": 640}}
    explicit = run(call(gate, "auto", "refund_gate", {**args, "hook_event_name": "PreToolUse"}))
    assert only_text(explicit) == DENY_640
    wrong = run(call(gate, "auto", "refund_gate", {**args, "hook_event_name": "Stop"}))
    assert wrong.is_error is True
    assert "PreToolUse" in only_text(wrong) and "'Stop'" in only_text(wrong)


@pytest.mark.parametrize("mode", MODES)
def test_wrong_argument_types_are_an_error_result(gate: RunningServer, mode: str) -> None:
    result = run(call(gate, mode, "refund_gate", {"tool_name": 42, "tool_input": "x"}))
    assert result.is_error is True
    text = only_text(result)
    assert text.startswith("Invalid hook input for tool 'refund_gate' (PreToolUse): ")
    assert "tool_name" in text and "tool_input" in text
    assert "42" not in text  # field paths and messages, never the values


def test_matcher_that_does_not_match_is_no_opinion(gate: RunningServer) -> None:
    args = {"tool_name": "search_orders", "tool_input": {"amount": 100000}}
    assert only_text(run(call(gate, "auto", "refund_gate", args))) == "{}"


@pytest.mark.parametrize("mode", MODES)
def test_unknown_tool_is_a_protocol_error(gate: RunningServer, mode: str) -> None:
    error = mcp_error(call(gate, mode, "nope", {}))
    assert str(error) == "Unknown tool: nope"


# -- auth ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_wrong_token_fails(gate: RunningServer, mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("refund_gate", {"tool_name": "issue_refund"})

    # the client reports a 401 as a generic -32603, as it would a 500: the same call with the
    # right token must succeed, so the failure is the token's alone
    assert run(with_client(gate, mode, body)).is_error is False
    error = mcp_error(with_client(gate, mode, body, token="wrong-token-0123456789abcdef"))
    assert error.error.code == -32603


def test_mcp_answers_401_with_www_authenticate(gate: RunningServer) -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789abcdef"}):
        response = httpx.post(gate.mcp_url, json=request, headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")


# -- stop-loop guard, failures, deadlines ------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_stop_guard_holds(gate: RunningServer, mode: str) -> None:
    reply = {"last_assistant_message": "Your refund is on its way."}
    first = run(call(gate, mode, "cite_ticket", {**reply, "stop_hook_active": False}))
    assert only_text(first) == BLOCK_TICKET
    again = run(call(gate, mode, "cite_ticket", {**reply, "stop_hook_active": True}))
    assert again.is_error is False
    assert only_text(again) == "{}"


def failing_app() -> HookApp:
    hooks = HookApp("failing")

    @hooks.post_tool_use()
    def crashes(event: PostToolUse) -> None:
        """Always raises."""
        raise RuntimeError("secret database password hunter2")

    @hooks.pre_tool_use(matcher="issue_refund", fail_closed=True)
    def crashing_gate(event: PreToolUse) -> None:
        """A policy gate that raises."""
        raise RuntimeError("secret detail")

    @hooks.pre_tool_use(name="slow_gate", timeout=1, fail_closed=True)
    async def slow_gate(event: PreToolUse) -> Any:
        await asyncio.sleep(5)
        return deny("too late")

    @hooks.stop(timeout=1)
    async def slow_check(event: Stop) -> Any:
        await asyncio.sleep(3)
        return block("too late")

    return hooks


@pytest.fixture(scope="module")
def failing() -> Iterator[RunningServer]:
    with running_server(failing_app(), tokens=[TOKEN]) as server:
        yield server


@pytest.mark.parametrize("mode", MODES)
def test_failing_handler_is_a_generic_error_result(failing: RunningServer, mode: str) -> None:
    result = run(call(failing, mode, "crashes", {"tool_name": "x"}))
    assert result.is_error is True
    text = only_text(result)
    assert text == "The handler 'crashes' failed; see the server log."
    assert "secret" not in text and "Traceback" not in text


@pytest.mark.parametrize("mode", MODES)
def test_failing_fail_closed_gate_denies(failing: RunningServer, mode: str) -> None:
    result = run(call(failing, mode, "crashing_gate", {"tool_name": "issue_refund"}))
    assert result.is_error is False
    output = json.loads(only_text(result))
    specific = output["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "crashing_gate" in specific["permissionDecisionReason"]
    assert "secret" not in only_text(result)


def test_deadline_fail_closed_denies_and_fail_open_errors(failing: RunningServer) -> None:
    started = time.perf_counter()
    gate_result = run(call(failing, "auto", "slow_gate", {"tool_name": "issue_refund"}))
    assert time.perf_counter() - started < 4  # the server's deadline, not the handler's 5 s
    decision = json.loads(only_text(gate_result))["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert "did not answer in time" in decision["permissionDecisionReason"]
    stop_result = run(call(failing, "legacy", "slow_check", {"last_assistant_message": "x"}))
    assert stop_result.is_error is True
    assert only_text(stop_result) == "The handler 'slow_check' did not answer in time."


# -- byte-identical to the webhook ------------------------------------------------------------

RUNBEAR_COMMON = {
    "session_id": "6b3d0c1e",
    "agent_id": "f47ac10b-58cc-4372-a567-0e02b2c3d479",
    "agent_name": "Support",
    "org_id": "0c9e",
    "thread_id": "6b3d0c1e",
    "turn_id": "1720000000.000100",
    "channel": "slack",
    "channel_id": "C0123456789",
    "channel_user_id": "U0123456789",
    "user_name": "Dana",
    "user_email": "dana@example.com",
}


def sample_events(event: str) -> list[dict[str, Any]]:
    """Hook inputs for ``event`` that make the example handlers answer every way they can."""
    base = {"hook_event_name": event, **RUNBEAR_COMMON}
    if event == "PreToolUse":
        return [
            {**base, "tool_name": name, "tool_input": {"order_id": "4821", "amount": amount}}
            for name in ("issue_refund", "orders__refund", "lookup_order")
            for amount in (640, 40, "$1,200.50", None)
        ]
    if event == "PostToolUse":
        return [
            {
                **base,
                "tool_name": "issue_refund",
                "tool_input": {"order_id": 'Ærø-€😀 "quoted" \\ \u2028', "amount": 640},
                "tool_response": {"ok": True},
                "tool_use_id": "toolu_01",
            },
            {**base, "tool_name": "lookup_order", "tool_input": {}, "tool_response": "x"},
        ]
    if event == "Stop":
        return [
            {**base, "last_assistant_message": text, "stop_hook_active": active}
            for text in ("Refund issued for ticket #4821.", "Refund issued.")
            for active in (False, True)
        ]
    if event == "SessionStart":
        return [
            {**base, "source": "startup", "prompt": "Hi"},
            {**base, "source": "startup", "channel_user_id": "U_nobody", "user_email": None},
        ]
    if event == "UserPromptSubmit":
        return [
            {**base, "prompt": "Can I get a refund for order 4821 and #4907? Shipping?"},
            {**base, "prompt": "What is the warranty on 5102?", "channel_user_id": "U0222222222"},
            {**base, "prompt": "hello"},
        ]
    return [base]


def example_apps() -> list[HookApp]:
    """Every HookApp an example server module exposes as ``app`` (new examples join in)."""
    import importlib
    import pkgutil

    import example_servers

    apps = []
    for info in pkgutil.iter_modules(example_servers.__path__):
        module = importlib.import_module(f"example_servers.{info.name}")
        app = getattr(module, "app", None)
        if isinstance(app, HookApp):
            apps.append(app)
    assert {refund_gate.app, context_loader.app} <= set(apps)
    return apps


@pytest.mark.parametrize("hook_app", example_apps(), ids=lambda app: app.name)
def test_webhook_and_mcp_answer_byte_identical(hook_app: HookApp) -> None:
    async def mcp_texts(server: RunningServer, mode: str, calls: list[Any]) -> list[str]:
        async def body(client: Client) -> list[str]:
            texts = []
            for name, event in calls:
                result = await client.call_tool(name, event)
                assert result.is_error is False, (name, result)
                texts.append(only_text(result))
            return texts

        return await with_client(server, mode, body)

    with running_server(hook_app, tokens=[TOKEN]) as server:
        calls = [(h.name, e) for h in hook_app.handlers for e in sample_events(h.event)]
        assert len(calls) >= len(hook_app.handlers)
        with server.http() as http:
            webhook = []
            for name, event in calls:
                response = http.post(f"/hooks/{name}", content=json.dumps(event))
                assert response.status_code == 200, response.text
                webhook.append(response.content)
        answered = {body for body in webhook}
        assert len(answered) > 1, "the samples should make the handlers answer differently"
        for mode in MODES:
            texts = run(mcp_texts(server, mode, calls))
            for (name, event), expected, text in zip(calls, webhook, texts, strict=True):
                assert text.encode() == expected, (mode, name, event)


# -- host checks ----------------------------------------------------------------------------


def test_default_hosts_are_loopback_only(gate: RunningServer) -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with gate.http() as http:
        for host, status in (
            (f"127.0.0.1:{gate.port}", 200),
            (f"localhost:{gate.port}", 200),
            ("localhost", 200),
            ("hooks.example.com", 421),
            ("evil.example:80", 421),
        ):
            response = http.post("/mcp", json=request, headers={"Host": host})
            assert response.status_code == status, (host, response.text)
        evil_origin = http.post("/mcp", json=request, headers={"Origin": "https://evil.example"})
        assert evil_origin.status_code == 403


def test_configured_hosts_are_accepted() -> None:
    config = ServerConfig(tokens=[TOKEN], allowed_hosts=["hooks.example.com", "api.example:8443"])
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with running_server(refund_gate.app, config=config) as server, server.http() as http:
        for host, status in (
            ("hooks.example.com", 200),
            ("hooks.example.com:443", 200),
            ("api.example:8443", 200),
            ("api.example", 421),
            ("other.example.com", 421),
        ):
            response = http.post("/mcp", json=request, headers={"Host": host})
            assert response.status_code == status, host
        origin = {"Host": "hooks.example.com", "Origin": "https://hooks.example.com"}
        assert http.post("/mcp", json=request, headers=origin).status_code == 200


def test_any_host_turns_the_check_off() -> None:
    config = ServerConfig(tokens=[TOKEN], allowed_hosts=["*"])
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with running_server(refund_gate.app, config=config) as server, server.http() as http:
        response = http.post("/mcp", json=request, headers={"Host": "whatever.example"})
        assert response.status_code == 200


def test_unsupported_host_patterns_fail_at_start() -> None:
    for bad in ("*:443", "*.example.com", "https://hooks.example.com"):
        with pytest.raises(ValueError, match="not supported"):
            transport_security([bad])


# -- streaming and stateful modes ------------------------------------------------------------


@pytest.mark.parametrize(
    ("stateless", "json_response"), [(True, False), (False, True), (False, False)]
)
@pytest.mark.parametrize("mode", MODES)
def test_other_modes_work(mode: str, stateless: bool, json_response: bool) -> None:
    config = ServerConfig(tokens=[TOKEN], mcp_stateless=stateless, mcp_json_response=json_response)
    args = {"tool_name": "issue_refund", "tool_input": {"amount": 640}}
    with running_server(refund_gate.app, config=config) as server:
        assert only_text(run(call(server, mode, "refund_gate", args))) == DENY_640


def test_lifespan_can_run_again_and_requires_entry() -> None:
    mount = create_mcp_mount(refund_gate.app)

    async def cycle() -> None:
        for _ in range(2):
            async with mount.lifespan():  # noqa: SIM117 - nested on purpose
                async with mount.lifespan():  # nested: shares the running manager
                    assert mount._manager is not None
            assert mount._manager is None

    run(cycle())

    async def unstarted() -> None:
        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"{}"}

        async def send(message: dict[str, Any]) -> None:
            pass

        scope = {"type": "http", "method": "POST", "headers": [], "path": "/mcp"}
        await mount.asgi(scope, receive, send)

    with pytest.raises(RuntimeError, match="lifespan"):
        run(unstarted())


# -- the fast path ---------------------------------------------------------------------------


class PathCounter:
    """Observer counting which MCP code path answered."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def __call__(self, answer: Answer, transport: str, context: dict[str, Any]) -> None:
        if transport == "mcp":
            self.paths.append(context["mcp_path"])


@pytest.fixture(scope="module")
def twin_servers() -> Iterator[tuple[RunningServer, RunningServer, PathCounter]]:
    """The refund gate twice: fast path on, and off (every request through the SDK)."""
    counter = PathCounter()
    refund_gate.app.observers.append(counter)
    previous = os.environ.get(FAST_PATH_ENV)
    try:
        with running_server(refund_gate.app, tokens=[TOKEN]) as fast:
            os.environ[FAST_PATH_ENV] = "0"
            with running_server(refund_gate.app, tokens=[TOKEN]) as sdk:
                yield fast, sdk, counter
    finally:
        refund_gate.app.observers.remove(counter)
        if previous is None:
            os.environ.pop(FAST_PATH_ENV, None)
        else:
            os.environ[FAST_PATH_ENV] = previous


MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
BASE_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {**BASE_HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def rpc(method: str, params: Any = None, id: Any = 1, **extra: Any) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method, **extra}
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode()


def call_params(name: str, arguments: Any, meta: Any = None, **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments, **extra}
    if meta is not None:
        params["_meta"] = meta
    return params


DENY_ARGS = {"tool_name": "issue_refund", "tool_input": {"amount": 640}}
UNICODE_ARGS = {
    "tool_name": "issue_refund",
    "tool_input": {"order_id": 'Ærø-€😀 "q" \\ \u2028 \u0007', "amount": 12},
    "tool_use_id": "toolu_é",
}
LEGACY_VERSIONS = (None, "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def fast_path_corpus() -> list[tuple[str, dict[str, str], bytes, bool | None]]:
    """(label, headers, body, whether the fast path runs the handler: None when no handler
    runs at all, e.g. arguments the tool refuses)."""
    cases: list[tuple[str, dict[str, str], bytes, bool | None]] = []
    modern_call = modern_headers("tools/call", "refund_gate")
    cases += [
        (
            "modern deny",
            modern_call,
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            True,
        ),
        (
            "modern str id",
            modern_call,
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META), id="ïd-1"),
            True,
        ),
        (
            "modern no args",
            modern_call,
            rpc("tools/call", call_params("refund_gate", None, META)),
            True,
        ),
        (
            "modern unicode",
            modern_headers("tools/call", "refund_audit_note"),
            rpc("tools/call", call_params("refund_audit_note", UNICODE_ARGS, META), id=7),
            True,
        ),
        (
            "modern isError",
            modern_call,
            rpc("tools/call", call_params("refund_gate", {"hook_event_name": "Stop"}, META)),
            None,  # answered on the fast path before any handler runs
        ),
        (
            "modern bad types",
            modern_call,
            rpc("tools/call", call_params("refund_gate", {"tool_name": 1}, META)),
            None,  # answered on the fast path before any handler runs
        ),
        ("modern list", modern_headers("tools/list"), rpc("tools/list", {"_meta": META}), True),
        (
            "modern charset",
            {**modern_call, "Content-Type": "application/json; charset=utf-8"},
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            True,
        ),
        (
            "modern wildcard accept",
            {**modern_call, "Accept": "*/*"},
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            True,
        ),
        (
            "modern unknown tool",
            modern_headers("tools/call", "nope"),
            rpc("tools/call", call_params("nope", {}, META)),
            False,
        ),
        (
            "modern name mismatch",
            modern_headers("tools/call", "cite_ticket"),
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            False,
        ),
        (
            "modern method mismatch",
            modern_headers("tools/list"),
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            False,
        ),
        (
            "modern no meta",
            modern_call,
            rpc("tools/call", call_params("refund_gate", DENY_ARGS)),
            False,
        ),
        (
            "modern bad caps",
            modern_call,
            rpc(
                "tools/call",
                call_params(
                    "refund_gate",
                    DENY_ARGS,
                    {**META, "io.modelcontextprotocol/clientCapabilities": 5},
                ),
            ),
            False,
        ),
        (
            "modern args not object",
            modern_call,
            rpc("tools/call", call_params("refund_gate", [1], META)),
            False,
        ),
        (
            "modern discover",
            modern_headers("server/discover"),
            rpc("server/discover", {"_meta": META}),
            False,
        ),
        (
            "modern unknown version",
            {**modern_call, "MCP-Protocol-Version": "2099-01-01"},
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            False,
        ),
        (
            "modern sse only",
            {**modern_call, "Accept": "text/event-stream"},
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            False,
        ),
        (
            "modern param header",
            {**modern_call, "Mcp-Param-Amount": "640"},
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            False,
        ),
        (
            "modern duplicate header",
            modern_call,
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            False,
        ),
    ]
    for version in LEGACY_VERSIONS:
        headers = dict(BASE_HEADERS)
        if version:
            headers["MCP-Protocol-Version"] = version
        tag = f"legacy {version}"
        cases += [
            (
                f"{tag} deny",
                headers,
                rpc("tools/call", call_params("refund_gate", DENY_ARGS)),
                True,
            ),
            (
                f"{tag} unicode",
                headers,
                rpc("tools/call", call_params("refund_audit_note", UNICODE_ARGS), id="é"),
                True,
            ),
            (f"{tag} list", headers, rpc("tools/list"), True),
            (f"{tag} list params", headers, rpc("tools/list", {}), True),
        ]
    legacy = {**BASE_HEADERS, "MCP-Protocol-Version": "2025-11-25"}
    cases += [
        (
            "legacy no id 0",
            legacy,
            rpc("tools/call", call_params("refund_gate", DENY_ARGS), id=0),
            True,
        ),
        (
            "legacy progress meta",
            legacy,
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, {"progressToken": 5})),
            True,
        ),
        (
            "legacy isError",
            legacy,
            rpc("tools/call", call_params("refund_gate", {"hook_event_name": "Stop"})),
            None,  # answered on the fast path before any handler runs
        ),
        ("legacy null args", legacy, rpc("tools/call", call_params("refund_gate", None)), True),
        (
            "legacy bad progress",
            legacy,
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, {"progressToken": 1.5})),
            False,
        ),
        ("legacy unknown tool", legacy, rpc("tools/call", call_params("nope", {})), False),
        (
            "legacy float id",
            legacy,
            rpc("tools/call", call_params("refund_gate", DENY_ARGS), id=1.5),
            False,
        ),
        (
            "legacy null id",
            legacy,
            rpc("tools/call", call_params("refund_gate", DENY_ARGS), id=None),
            False,
        ),
        (
            "legacy bool id",
            legacy,
            rpc("tools/call", call_params("refund_gate", DENY_ARGS), id=True),
            False,
        ),
        (
            "legacy huge id",
            legacy,
            rpc("tools/call", call_params("refund_gate", DENY_ARGS), id=2**60),
            False,
        ),
        (
            "legacy extra key",
            legacy,
            rpc("tools/call", call_params("refund_gate", DENY_ARGS), extra=1),
            False,
        ),
        (
            "legacy task param",
            legacy,
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, task={"ttl": 1})),
            False,
        ),
        (
            "legacy initialize",
            legacy,
            rpc(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            ),
            False,
        ),
        (
            "legacy notification",
            legacy,
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
            False,
        ),
        ("legacy batch", legacy, b"[" + rpc("tools/list") + b"]", False),
        ("legacy bad json", legacy, b"{nope", False),
        ("legacy wrong jsonrpc", legacy, rpc("tools/list").replace(b'"2.0"', b'"1.0"'), False),
        ("legacy text/plain", {**legacy, "Content-Type": "text/plain"}, rpc("tools/list"), False),
        (
            "legacy no accept json",
            {**legacy, "Accept": "text/event-stream"},
            rpc("tools/list"),
            False,
        ),
        ("legacy evil host", {**legacy, "Host": "evil.example"}, rpc("tools/list"), False),
        (
            "legacy evil origin",
            {**legacy, "Origin": "https://evil.example"},
            rpc("tools/list"),
            False,
        ),
        ("legacy session id", {**legacy, "Mcp-Session-Id": "abc"}, rpc("tools/list"), False),
        (
            "legacy big args",
            legacy,
            rpc("tools/call", call_params("refund_gate", {**DENY_ARGS, "pad": "x" * 200_000})),
            True,
        ),
    ]
    return cases


def test_fast_path_answers_exactly_as_the_sdk(twin_servers: Any) -> None:
    """Every request of the corpus gets the same status, content type and bytes from both
    servers; tools/call requests the fast path should take are answered by it, the others by
    the SDK (and the fast path never runs a handler it then hands over)."""
    fast, sdk, counter = twin_servers
    clients = [httpx.Client(base_url=server.url) for server in (fast, sdk)]
    try:
        for label, headers, body, expect_fast in fast_path_corpus():
            answers = []
            marks = [len(counter.paths)]
            for http in clients:
                header_list = [*headers.items(), ("Authorization", f"Bearer {TOKEN}")]
                if label == "modern duplicate header":
                    header_list.append(("Mcp-Name", "refund_gate"))
                response = http.post("/mcp", content=body, headers=header_list)
                answers.append(
                    (response.status_code, response.headers.get("content-type"), response.content)
                )
                marks.append(len(counter.paths))
            assert answers[0] == answers[1], label
            by_fast_server = counter.paths[marks[0] : marks[1]]
            by_sdk_server = counter.paths[marks[1] : marks[2]]
            if expect_fast and b'"tools/call"' in body:
                assert by_fast_server == ["fast"], label
            else:
                assert by_fast_server == ["sdk"] * len(by_sdk_server), label
            assert set(by_sdk_server) <= {"sdk"}, label
    finally:
        for http in clients:
            http.close()
    assert counter.paths.count("fast") > 10


@pytest.mark.parametrize("mode", MODES)
def test_fast_path_serves_the_real_client(twin_servers: Any, mode: str) -> None:
    fast, sdk, counter = twin_servers

    async def session(client: Client) -> list[Any]:
        listed = await client.list_tools()
        out: list[Any] = [[t.model_dump() for t in listed.tools]]
        for args in (DENY_ARGS, UNICODE_ARGS, {"hook_event_name": "Stop"}, {"tool_name": 5}):
            result = await client.call_tool("refund_gate", args)
            out.append(result.model_dump())
        result = await client.call_tool("refund_audit_note", UNICODE_ARGS)
        out.append(result.model_dump())
        return out

    counter.paths.clear()
    from_fast = run(with_client(fast, mode, session))
    assert counter.paths == ["fast"] * 3  # two of the five calls fail validation first
    counter.paths.clear()
    from_sdk = run(with_client(sdk, mode, session))
    assert counter.paths == ["sdk"] * 3
    assert from_fast == from_sdk
    assert json.loads(from_fast[1]["content"][0]["text"]) == json.loads(DENY_640)


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_fast_path_opens_the_sdk_span_when_tracing_is_on(
    twin_servers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a tracer provider configured, both paths record the same span per message."""
    from mcp.shared import _otel as sdk_otel
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import handler_kit.mcp

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(sdk_otel, "_tracer", provider.get_tracer("mcp-python-sdk"))
    monkeypatch.setattr(handler_kit.mcp, "get_tracer_provider", lambda: provider)
    fast, sdk, counter = twin_servers
    legacy = {**BASE_HEADERS, "MCP-Protocol-Version": "2025-11-25"}
    traced_meta = {**META, "traceparent": TRACEPARENT}
    requests = [
        (
            modern_headers("tools/call", "refund_gate"),
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, traced_meta)),
        ),
        (
            legacy,
            rpc("tools/call", call_params("refund_gate", {"hook_event_name": "Stop"}), id="x"),
        ),
        (
            legacy,
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, {"traceparent": TRACEPARENT})),
        ),
        (modern_headers("tools/list"), rpc("tools/list", {"_meta": META}, id=9)),
    ]

    def spans_of(server: RunningServer) -> list[Any]:
        exporter.clear()
        with httpx.Client(base_url=server.url) as http:
            for headers, body in requests:
                auth = {"Authorization": f"Bearer {TOKEN}"}
                assert http.post("/mcp", content=body, headers={**headers, **auth}).is_success
        return [
            (
                span.name,
                span.kind,
                dict(span.attributes or {}),
                span.status.status_code,
                span.parent.span_id if span.parent else None,
                span.context.trace_id if span.parent else None,
            )
            for span in exporter.get_finished_spans()
            if span.instrumentation_scope.name == "mcp-python-sdk"
        ]

    counter.paths.clear()
    from_fast = spans_of(fast)
    from_sdk = spans_of(sdk)
    assert counter.paths == ["fast", "fast", "sdk", "sdk"]
    assert from_fast == from_sdk
    assert len(from_fast) == 4
    assert from_fast[0][0] == "tools/call refund_gate"
    assert from_fast[0][4] == 0x00F067AA0BA902B7  # parented by the traceparent in _meta
    assert from_fast[1][2]["error.type"] == "tool_error"


# -- several workers behind one port ----------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_serve_with_two_workers_answers_mcp_and_webhook(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "HANDLER_KIT_TOKENS": TOKEN, "PYTHONPATH": str(ROOT)}
    env.pop(FAST_PATH_ENV, None)
    script = Path(sys.executable).with_name("handler-kit")
    launcher = [str(script)] if script.exists() else [sys.executable, "-m", "handler_kit.cli"]
    command = [
        *launcher,
        "serve",
        "example_servers.refund_gate:app",
        "--workers",
        "2",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # two workers importing on a loaded CI box
        while True:
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("server did not start:\n" + (tmp_path / "serve.log").read_text())
            time.sleep(0.1)
        server = RunningServer(
            url=base, token=TOKEN, ca_file=None, hook_app=refund_gate.app, port=port
        )

        async def mcp_calls() -> list[str]:
            async def one(i: int) -> str:
                amount = 640 if i % 2 else 40
                args = {"tool_name": "issue_refund", "tool_input": {"amount": amount}}
                # a fresh client per call: consecutive calls land on either worker
                result = await call(server, MODES[i % 2], "refund_gate", args)
                assert result.is_error is False
                return only_text(result)

            return await asyncio.gather(*(one(i) for i in range(40)))

        texts = run(mcp_calls())
        assert texts == [DENY_640 if i % 2 else "{}" for i in range(40)]

        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            for i in range(40):
                amount = 640 if i % 2 else 40
                event = {
                    "hook_event_name": "PreToolUse",
                    "tool_name": "issue_refund",
                    "tool_input": {"amount": amount},
                }
                response = http.post("/hooks/refund_gate", json=event)
                assert response.status_code == 200
                assert response.text == (DENY_640 if i % 2 else "{}")
    finally:
        stop_group(process)
        log.close()


def test_readme_client_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's MCP client example, pointed at a real server, prints the deny."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"<!-- section:mcp -->(.*?)<!-- /section:mcp -->", readme, re.S)
    assert section is not None
    (code,) = re.findall(r"```python\n(.*?)```", section.group(1), re.S)
    with running_server(refund_gate.app, tokens=[TOKEN]) as server:
        code = code.replace("<token>", TOKEN).replace("http://127.0.0.1:8000", server.url)
        exec(compile(code, "README:mcp", "exec"), {"__name__": "readme_mcp"})
    assert capsys.readouterr().out.strip() == DENY_640
