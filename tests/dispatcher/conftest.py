"""The dispatcher's peers, started once per test module: a scripted HTTPS endpoint and an MCP
server (``tests.support.dispatch``) behind a throw-away CA, an MCP server that answers canned
Claude Code outputs, and a factory of dispatchers that trust the CA. tests/cli/ uses them too,
for ``handler-kit dispatch``."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from handler_kit.dispatcher import Dispatcher
from tests.support.dispatch import McpRecorder, ScriptServer, build_mcp_app
from tests.support.processes import Tls, make_tls, serve_asgi


@pytest.fixture(scope="module")
def dispatch_tls() -> Iterator[Tls]:
    with make_tls() as material:
        yield material


@pytest.fixture(scope="module")
def script_server(dispatch_tls: Tls) -> Iterator[ScriptServer]:
    server = ScriptServer()
    with serve_asgi(server, dispatch_tls) as port:
        server.base = f"https://127.0.0.1:{port}"
        yield server


@pytest.fixture
def scripted(script_server: ScriptServer) -> ScriptServer:
    """The scripted HTTPS endpoint, its request log emptied for this test."""
    script_server.reset()
    return script_server


@pytest.fixture(scope="module")
def mcp_test_server(dispatch_tls: Tls) -> Iterator[McpRecorder]:
    recorder = McpRecorder()
    with serve_asgi(build_mcp_app(recorder), dispatch_tls) as port:
        recorder.url = f"https://127.0.0.1:{port}/mcp"
        yield recorder


# What the tool of :func:`answering_server` returns, by name: JSON text, as a Claude Code hook
# written for the CLI would print it.
ANSWERS = {
    "deny_beside_ignored": {
        "continue": "no",
        "suppressOutput": "yes",
        "systemMessage": 5,
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Refunds over $500 need a human approver.",
            "additionalContext": 5,
        },
    },
    "block_beside_ignored": {
        "decision": "block",
        "reason": "Billing questions only.",
        "stopReason": ["halt"],
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "updatedInput": "x"},
    },
    "ill_typed_decision": {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": 5},
    },
}


@pytest.fixture(scope="module")
def answering_server(dispatch_tls: Tls) -> Iterator[str]:
    """An MCP server whose tool ``answer(name)`` returns ``ANSWERS[name]`` as JSON text (a
    JSON-looking string cannot be passed through an argument: the SDK parses it)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Mount

    server = MCPServer("answers", log_level="WARNING")

    def answer(name: str) -> str:
        """One canned Claude Code output."""
        return json.dumps(ANSWERS[name])

    server.add_tool(answer, structured_output=False)
    mcp_asgi = server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: object) -> AsyncIterator[None]:
        async with server.session_manager.run():
            yield

    app = Starlette(routes=[Mount("/", app=mcp_asgi)], lifespan=lifespan)
    with serve_asgi(app, dispatch_tls) as port:
        yield f"https://127.0.0.1:{port}/mcp"


@pytest.fixture
def dispatcher_for(dispatch_tls: Tls, request: pytest.FixtureRequest) -> Callable[..., Dispatcher]:
    """``dispatcher_for(document, **options)``: a Dispatcher trusting the test CA, allowed to
    call 127.0.0.1, with the MCP test server registered as ``ctx`` when the document uses it."""

    def make(document: dict[str, Any], **options: Any) -> Dispatcher:
        servers = options.pop("mcp_servers", None)
        if servers is None and "mcp_tool" in json.dumps(document):
            recorder = request.getfixturevalue("mcp_test_server")
            recorder.calls.clear()
            recorder.authorizations.clear()
            servers = {"ctx": recorder.url}
        options.setdefault("allow_private", True)
        options.setdefault("ca_file", dispatch_tls.ca_file)
        return Dispatcher(document, mcp_servers=servers, **options)

    return make
