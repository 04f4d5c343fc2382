"""The fast path answers exactly as the SDK would: same status, content type and bytes for a
corpus of requests it takes and requests it must hand over, same results for the real client,
same spans with tracing on; and it turns itself off, with a warning, on an SDK it cannot mirror.

Two servers serve the refund gate side by side, one with the fast path and one without; an
observer records which code path answered each call.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.server.runner import ServerRunner
from mcp.shared import _otel as sdk_otel
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from example_servers import refund_gate
from handler_kit.server.mcp import _fast_path, create_mcp_mount
from handler_kit.testing import RunningServer
from tests.server.mcp.support import (
    DENY_640,
    DENY_ARGS,
    JSON_HEADERS,
    MODES,
    TOKEN,
    PathCounter,
    in_process,
    run,
    with_client,
)

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {**JSON_HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
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


UNICODE_ARGS = {
    "tool_name": "issue_refund",
    "tool_input": {"order_id": 'Ærø-€😀 "q" \\ \u2028 \u0007', "amount": 12},
    "tool_use_id": "toolu_é",
}
LEGACY_VERSIONS = (None, "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def fast_path_corpus() -> list[tuple[str, dict[str, str], bytes, bool | str | None]]:
    """(label, headers, body, whether the fast path runs the handler: None when no handler
    runs at all, e.g. arguments the tool refuses; ``"guard"`` when both servers answer a
    request the SDK would refuse with its fail-closed tool's safe decision)."""
    cases: list[tuple[str, dict[str, str], bytes, bool | str | None]] = []
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
            True,  # the fail-closed gate's deny, though it could not read the arguments
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
            "guard",
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
        (
            "modern repeated other header",
            modern_call,
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            True,
        ),
        (
            "modern param-like header name",
            {**modern_call, "X-Mcp-Param-Note": "1"},
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            True,
        ),
        (
            "modern base64 name header",
            {**modern_call, "Mcp-Name": "=?base64?cmVmdW5kX2dhdGU=?="},
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            True,  # the SDK's ladder decodes it: the fast path asks the ladder
        ),
        (
            "modern no name header",
            modern_headers("tools/call"),
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            False,
        ),
        (
            "modern no method header",
            {k: v for k, v in modern_call.items() if k != "Mcp-Method"},
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            False,
        ),
        (
            "modern meta version mismatch",
            modern_call,
            rpc(
                "tools/call",
                call_params(
                    "refund_gate",
                    DENY_ARGS,
                    {**META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"},
                ),
            ),
            False,
        ),
        (
            "modern no accept",
            {k: v for k, v in modern_call.items() if k != "Accept"},
            rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            False,
        ),
        (
            "modern notification",
            modern_headers("notifications/initialized"),
            json.dumps(
                {"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"_meta": META}}
            ).encode(),
            False,
        ),
        (
            "modern batch",
            modern_call,
            b"[" + rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)) + b"]",
            False,
        ),
        (
            # json.loads reads a byte-order mark, pydantic-core does not: the SDK answers
            "modern byte-order mark",
            modern_call,
            b"\xef\xbb\xbf" + rpc("tools/call", call_params("refund_gate", DENY_ARGS, META)),
            False,
        ),
        (
            "modern lone surrogate",
            modern_call,
            rpc(
                "tools/call",
                call_params("refund_gate", {**DENY_ARGS, "session_id": "\ud800"}, META),
            ),
            False,
        ),
        (
            "modern nan and big numbers",
            modern_call,
            rpc(
                "tools/call",
                call_params(
                    "refund_gate",
                    {
                        "tool_name": "issue_refund",
                        "tool_input": {"amount": float("nan"), "n": 10**30, "x": 1e300},
                    },
                    META,
                ),
            ),
            True,
        ),
    ]
    for version in LEGACY_VERSIONS:
        headers = dict(JSON_HEADERS)
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
            (
                f"{tag} no accept",
                {k: v for k, v in headers.items() if k != "Accept"},
                rpc("tools/call", call_params("refund_gate", DENY_ARGS)),
                False,
            ),
        ]
    legacy = {**JSON_HEADERS, "MCP-Protocol-Version": "2025-11-25"}
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


# Headers sent a second time (a dict cannot hold them): a routing header, and one the SDK does
# not read (the fast path's one-dict check sees a repeat and checks header by header).
REPEATED_HEADERS = {
    "modern duplicate header": [("Mcp-Name", "refund_gate")],
    "modern repeated other header": [("X-Extra", "1"), ("X-Extra", "2")],
}


def test_fast_path_answers_exactly_as_the_sdk(twin_servers: Any) -> None:
    """Every request of the corpus gets the same status, content type and bytes from both
    servers; tools/call requests the fast path should take are answered by it, the others by
    the SDK (and the fast path never runs a handler it then hands over)."""
    fast, sdk, counter = twin_servers
    clients = [httpx.Client(base_url=server.url) for server in (fast, sdk)]
    for http in clients:
        del http.headers["accept"]  # httpx's default: every case sends its own, or none
    try:
        for label, headers, body, expect_fast in fast_path_corpus():
            answers = []
            marks = [len(counter.paths)]
            for http in clients:
                header_list = [*headers.items(), ("Authorization", f"Bearer {TOKEN}")]
                header_list += REPEATED_HEADERS.get(label, [])
                response = http.post("/mcp", content=body, headers=header_list)
                answers.append(
                    (response.status_code, response.headers.get("content-type"), response.content)
                )
                marks.append(len(counter.paths))
            assert answers[0] == answers[1], label
            by_fast_server = counter.paths[marks[0] : marks[1]]
            by_sdk_server = counter.paths[marks[1] : marks[2]]
            if expect_fast == "guard":
                assert by_fast_server == by_sdk_server == ["guard"], label
                continue
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
    assert counter.paths == ["fast"] * 4  # the call for another event is refused first
    counter.paths.clear()
    from_sdk = run(with_client(sdk, mode, session))
    assert counter.paths == ["sdk"] * 4
    assert from_fast == from_sdk
    assert json.loads(from_fast[1]["content"][0]["text"]) == json.loads(DENY_640)


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_fast_path_opens_the_sdk_span_when_tracing_is_on(
    twin_servers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a tracer provider configured, both paths record the same span per message."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(sdk_otel, "_tracer", provider.get_tracer("mcp-python-sdk"))
    monkeypatch.setattr(_fast_path, "_tracer_provider", lambda: provider)
    fast, sdk, counter = twin_servers
    legacy = {**JSON_HEADERS, "MCP-Protocol-Version": "2025-11-25"}
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
            if span.instrumentation_scope and span.instrumentation_scope.name == "mcp-python-sdk"
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


# -- an SDK the fast path cannot mirror ---------------------------------------------------------


class DriftedRunner(ServerRunner):
    """The SDK's runner as a release that changed its private serializer would present it."""

    def _serialize(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("_serialize() got an unexpected keyword argument")


def test_fast_path_turns_itself_off_on_an_sdk_it_cannot_mirror(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The response templates cannot be built: the request is the SDK's (a handler never runs
    twice), a warning says why, and the fast path stays off for the mount's lifetime."""
    monkeypatch.setattr(_fast_path, "ServerRunner", DriftedRunner)
    counter = PathCounter()
    mount = create_mcp_mount(refund_gate.app.extended(observers=[counter]))
    assert mount.fast_path is True
    request = rpc("tools/call", call_params("refund_gate", DENY_ARGS))

    async def twice() -> list[httpx.Response]:
        async with in_process(mount) as http:
            return [await http.post("/mcp", content=request, headers=JSON_HEADERS) for _ in "12"]

    with caplog.at_level(logging.WARNING, logger="handler_kit.mcp"):
        responses = run(twice())
    for response in responses:
        assert response.status_code == 200, response.text
        assert response.json()["result"]["content"][0]["text"] == DENY_640
    assert counter.paths == ["sdk", "sdk"]
    assert mount.fast_path is False
    warnings = [r for r in caplog.records if "fast path disabled" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
