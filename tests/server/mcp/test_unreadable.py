"""A ``tools/call`` of a fail-closed tool gets its safe decision as a tool result for every
input its webhook route denies, on the fast path and through the SDK (``mcp_fast_path=False``):
a runtime reads an MCP error (a JSON-RPC ``-32700``, a 413) as "proceed", so an error there is
a gate left open to whoever can shape its input.

Through real uvicorn, with raw posts (the bodies no well-behaved client writes) and with the
real ``mcp`` client (arguments over the body cap). A tool that fails open keeps the error, as
its webhook route keeps its 4xx; a body whose ``id`` or ``params.name`` lies past the cap is
an error for every tool: nothing says which tool it calls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import Client

from example_servers.refund_gate import app as refund_app
from handler_kit.config import ServerConfig
from handler_kit.testing import RunningServer, running_server
from tests.server.mcp.support import MODES, TOKEN, only_text, run, with_client
from tests.support.http import error_body

CAP = 4096
HEADERS = {
    "Authorization": f"Bearer {TOKEN}",
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}
LEGACY = {**HEADERS, "MCP-Protocol-Version": "2025-11-25"}
SAFE_DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "Blocked by policy: the check 'refund_gate' could not read "
        "the hook input, and it is configured to fail closed.",
    }
}
REAL_DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "Refunds over $500 need a human approver.",
    }
}


@pytest.fixture(scope="module", params=[True, False], ids=["fast-path", "sdk"])
def server(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    config = ServerConfig(tokens=[TOKEN], max_body_bytes=CAP, mcp_fast_path=request.param)
    with running_server(refund_app, config=config) as running:
        assert running.asgi is not None and running.asgi.mcp_mount is not None
        assert running.asgi.mcp_mount.fast_path is request.param
        yield running


def rpc(arguments: bytes, tool: str = "refund_gate", request_id: bytes = b"7") -> bytes:
    """A tools/call with ``arguments`` as raw JSON text (which may be no JSON at all)."""
    return (
        b'{"jsonrpc": "2.0", "id": %s, "method": "tools/call", "params": {"name": "%s", '
        b'"arguments": %s}}' % (request_id, tool.encode(), arguments)
    )


def post(server: RunningServer, body: Any, headers: dict[str, str] = LEGACY) -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        return http.post("/mcp", content=body, headers=headers)


def tool_result(response: httpx.Response, request_id: Any = 7) -> Any:
    """The JSON of the one text of a successful (not isError) tool result."""
    assert response.status_code == 200, response.text
    message = response.json()
    assert message["id"] == request_id and "error" not in message, message
    result = message["result"]
    assert result.get("isError") is False, result
    assert [item["type"] for item in result["content"]] == ["text"]
    return json.loads(result["content"][0]["text"])


ISSUE = b'{"tool_name": "issue_refund", '
UNREADABLE = {
    "invalid JSON inside": ISSUE + b'"tool_input": {"amount": 640, "note": tru}}',
    "a string cut short": ISSUE + b'"tool_input": {"amount": "640}}',
    "nested too deep": ISSUE + b'"tool_input": {"x": ' + b"[" * 300 + b"]" * 300 + b"}}",
    "arguments a string": b'"issue_refund 640"',
    "arguments a list": b'[{"tool_name": "issue_refund"}]',
    "arguments a number": b"640",
    "a field of the wrong type": ISSUE + b'"tool_input": 640}',
    "another event": b'{"hook_event_name": "Stop"}',
}


@pytest.mark.parametrize("headers", [LEGACY, HEADERS], ids=["2025-11-25", "no-version"])
@pytest.mark.parametrize("case", list(UNREADABLE))
def test_arguments_the_gate_cannot_read_get_its_safe_decision(
    server: RunningServer, case: str, headers: dict[str, str]
) -> None:
    response = post(server, rpc(UNREADABLE[case]), headers)
    if case == "another event":  # the caller's error, as the webhook's event_mismatch
        assert response.json()["result"]["isError"] is True
        return
    assert tool_result(response) == SAFE_DENY


@pytest.mark.parametrize(
    "name", [b'""', b'["PreToolUse"]', b"7", b"{}"], ids=["empty", "list", "number", "object"]
)
def test_an_event_name_that_is_not_one_gets_the_safe_decision(
    server: RunningServer, name: bytes
) -> None:
    """hook_event_name not a non-empty string: the input names no event, which the gate's
    webhook route reads as an input it cannot read (its safe decision); a tool call with it
    gets the same, not an error result the runtime proceeds on (another event's name stays the
    caller's error on both)."""
    arguments = ISSUE + b'"hook_event_name": %s}' % name
    assert tool_result(post(server, rpc(arguments))) == SAFE_DENY
    if name != b'""':  # the webhook route refuses "" as another event's name (a 400)
        with httpx.Client(base_url=server.url, timeout=30) as http:
            hooked = http.post(
                "/hooks/refund_gate",
                content=arguments,
                headers={"Authorization": f"Bearer {TOKEN}"},
            )
        assert hooked.json() == SAFE_DENY


def test_the_same_arguments_for_a_tool_that_fails_open_stay_an_error(
    server: RunningServer,
) -> None:
    for case in ("invalid JSON inside", "nested too deep"):
        response = post(server, rpc(UNREADABLE[case], "refund_audit_note"))
        assert response.status_code == 400
        assert response.json()["error"]["code"] == -32700
    response = post(server, rpc(UNREADABLE["arguments a string"], "refund_audit_note"))
    assert response.json()["error"]["code"] == -32602
    # and the gate, on the same server, denies
    assert tool_result(post(server, rpc(UNREADABLE["invalid JSON inside"]))) == SAFE_DENY


@pytest.mark.parametrize(("amount", "answer"), [(b"640", REAL_DENY), (b"20", {})])
def test_a_lone_surrogate_is_read_as_the_webhook_reads_it(
    server: RunningServer, amount: bytes, answer: Any
) -> None:
    """The legacy transport's parser refuses ``"\\udc8f"`` (a -32700), the webhook reads it:
    the gate decides on it, an allow as well as a deny."""
    arguments = ISSUE + b'"tool_input": {"amount": %s, "note": "\\udc8f"}}' % amount
    assert tool_result(post(server, rpc(arguments))) == answer
    with httpx.Client(base_url=server.url, timeout=30) as http:
        hooked = http.post(
            "/hooks/refund_gate",
            content=b'{"hook_event_name": "PreToolUse", ' + arguments[1:],
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
    assert hooked.json() == answer  # what the webhook answers, for the same input


def test_a_body_over_the_cap_gets_the_safe_decision_when_id_and_name_are_within_it(
    server: RunningServer,
) -> None:
    padding = b"x" * (3 * CAP)
    over = rpc(ISSUE + b'"tool_input": {"amount": 640, "note": "%s"}}' % padding)
    assert tool_result(post(server, over)) == SAFE_DENY
    # a string id, and a body sent in pieces with no Content-Length
    over_str = rpc(ISSUE + b'"note": "%s"}' % padding, request_id=b'"call-1"')
    pieces = iter([over_str[i : i + 1000] for i in range(0, len(over_str), 1000)])
    assert tool_result(post(server, pieces), "call-1") == SAFE_DENY


def test_a_body_over_the_cap_stays_a_413_when_it_does_not_say_which_call_it_is(
    server: RunningServer,
) -> None:
    padding = "x" * (3 * CAP)
    name_last = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"arguments": {"note": padding}, "name": "refund_gate"},
        }
    )
    no_id = json.dumps(
        {
            "jsonrpc": "2.0",
            "method": "tools/call",
            "params": {"name": "refund_gate", "arguments": {"note": padding}},
        }
    )
    open_tool = rpc(b'{"note": "%s"}' % padding.encode(), "refund_audit_note")
    # the id last, in a body longer than 64 caps: not read to its end
    beyond = json.dumps(
        {
            "method": "tools/call",
            "params": {"name": "refund_gate", "arguments": {"note": "x" * (64 * CAP)}},
            "jsonrpc": "2.0",
            "id": 7,
        }
    )
    for body in (name_last.encode(), no_id.encode(), open_tool, beyond.encode()):
        assert len(body) > CAP
        error_body(post(server, body), 413, "body_too_large")


def test_a_body_over_the_cap_with_its_id_last_gets_the_safe_decision(
    server: RunningServer,
) -> None:
    """The TypeScript SDK (Claude Code's MCP client) writes ``{method, params, jsonrpc, id}``:
    the id comes after the arguments, past the cap. The body is read on to its end (only its
    last bytes kept) for a fail-closed tool, and the id taken from there."""
    padding = "x" * (3 * CAP)
    # what JSON.stringify({...request, jsonrpc: "2.0", id}) writes, the arguments' own last
    # member an "id" too
    arguments = {"tool_name": "issue_refund", "tool_input": {"note": padding}, "id": 999}
    request = {"method": "tools/call", "params": {"name": "refund_gate", "arguments": arguments}}
    typescript = json.dumps({**request, "jsonrpc": "2.0", "id": 7}, separators=(",", ":"))
    assert tool_result(post(server, typescript.encode())) == SAFE_DENY
    # a string id, after jsonrpc or before it, in pieces with no Content-Length
    id_first = json.dumps({**request, "id": "call-1", "jsonrpc": "2.0"}).encode()
    pieces = iter([id_first[i : i + 1000] for i in range(0, len(id_first), 1000)])
    assert tool_result(post(server, pieces), "call-1") == SAFE_DENY
    # the id right at the cap, where it could be cut short: read whole at the body's end
    at_the_cap = (
        b'{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "refund_gate", '
        b'"arguments": {}}, "pad": "'
    )
    at_the_cap += b"x" * (CAP - len(at_the_cap) - len(b'", "id": 1')) + b'", "id": 1234567}'
    assert tool_result(post(server, at_the_cap), 1234567) == SAFE_DENY


@pytest.fixture(scope="module", params=[True, False], ids=["fast-path", "sdk"])
def default_cap(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    config = ServerConfig(tokens=[TOKEN], mcp_fast_path=request.param)
    with running_server(refund_app, config=config) as running:
        yield running


@pytest.mark.parametrize("mode", MODES)
def test_the_mcp_client_calling_with_arguments_over_1_mib_gets_the_safe_decision(
    default_cap: RunningServer, mode: str
) -> None:
    arguments = {"tool_name": "issue_refund", "tool_input": {"amount": 640, "note": "x" * 2**20}}

    async def body(client: Client) -> Any:
        return await client.call_tool("refund_gate", arguments)

    result = run(with_client(default_cap, mode, body))
    assert result.is_error is False
    assert json.loads(only_text(result)) == SAFE_DENY
