"""The webhook's request path as a client and the ASGI server see it, head to last byte.

Over the real transport (uvicorn on 127.0.0.1, in this process): the answer to each kind of
request head (method, route, token, event header, declared length, content type), to the
byte, with its headers. At the ASGI level, where the messages matter: a body in one message,
in several, without a ``body`` field, cut off by a disconnect, over the cap; what the webhook
sends for each (lowercase header names, as ASGI requires), how many messages it read, and
what observers were handed with each answer. Then the content-length headers kept per answer
size, and their bound.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from handler_kit import HookApp, PreToolUse, UserPromptSubmit, allow, context
from handler_kit.config import ServerConfig
from handler_kit.server import webhook as webhook_module
from handler_kit.server.app import create_asgi_app
from handler_kit.testing import running_server

TOKEN = "webhook-requests-token-0123456789"
EVENT = "x-runbear-hook-event"
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
CAP = 1024


def requests_app() -> HookApp:
    """An echo whose answer's size follows the prompt's, a fail-closed gate, and a handler of
    a runtime's own event (one the framework does not know)."""
    app = HookApp("requests")

    @app.user_prompt_submit()
    def echo(event: UserPromptSubmit) -> Any:
        return context(f"You said: {event.prompt}")

    @app.pre_tool_use(matcher="issue_refund", fail_closed=True)
    def gate(event: PreToolUse) -> Any:
        return allow()

    @app.on("MyRuntimeEvent", allow_unknown_event=True)
    def runtime_own(event: Any) -> None:
        return None

    return app


def prompt(text: str) -> bytes:
    return json.dumps(
        {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": text}
    ).encode()


def echoed(text: str) -> bytes:
    return (
        b'{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":'
        + json.dumps(f"You said: {text}").encode()
        + b"}}"
    )


GATE_UNREADABLE = (
    b'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",'
    b'"permissionDecisionReason":"Blocked by policy: the check \'gate\' could not read the hook '
    b'input, and it is configured to fail closed."}}'
)
USE_POST = b'{"error": "method_not_allowed", "message": "use POST"}'
TOO_LARGE = b'{"error": "body_too_large", "message": "the body is over the 1024-byte limit"}'
UNAUTHORIZED = b'{"error": "unauthorized", "message": "invalid bearer token"}'
MALFORMED = b'{"error": "malformed_json", "message": "the body is not valid JSON"}'
OVER_CAP = prompt("x" * CAP)


# -- over the real transport ---------------------------------------------------------------


@pytest.fixture(scope="module")
def strict_server() -> Iterator[Any]:
    config = ServerConfig(tokens=[TOKEN], require_event_header=True, max_body_bytes=CAP)
    with running_server(requests_app(), config=config) as server:
        yield server


def json_headers(body: bytes, *extra: tuple[str, str]) -> dict[str, str]:
    return {"content-type": "application/json", "content-length": str(len(body)), **dict(extra)}


AUTH = {"authorization": f"Bearer {TOKEN}"}
PROMPT_EVENT = {EVENT: "UserPromptSubmit"}

# (method, path, request headers, body) -> (status, response body, response headers but the
# server's own date and server)
HEADS: list[Any] = [
    pytest.param(
        "POST",
        "/hooks",
        {**AUTH, **PROMPT_EVENT},
        prompt("hi"),
        200,
        echoed("hi"),
        json_headers(echoed("hi")),
        id="answered",
    ),
    # the webhook reads a body as JSON whatever its content type says
    pytest.param(
        "POST",
        "/hooks/echo",
        {**AUTH, **PROMPT_EVENT, "content-type": "text/plain"},
        prompt("hi"),
        200,
        echoed("hi"),
        json_headers(echoed("hi")),
        id="any-content-type",
    ),
    pytest.param(
        "GET",
        "/hooks",
        AUTH,
        b"",
        405,
        USE_POST,
        json_headers(USE_POST, ("allow", "POST")),
        id="get",
    ),
    # the headers of the 405, without its body
    pytest.param(
        "HEAD",
        "/hooks/echo",
        AUTH,
        b"",
        405,
        b"",
        json_headers(USE_POST, ("allow", "POST")),
        id="head",
    ),
    # the route is looked up before the method is read
    pytest.param(
        "PUT",
        "/hooks/nope",
        AUTH,
        b"",
        404,
        b'{"error": "unknown_handler", "message": "no handler at /hooks/nope; see GET /healthz '
        b'for the list"}',
        json_headers(
            b'{"error": "unknown_handler", "message": "no handler at /hooks/nope; see GET '
            b'/healthz for the list"}'
        ),
        id="unknown-route",
    ),
    pytest.param(
        "POST",
        "/hooks",
        {"authorization": f"Bearer {TOKEN}-wrong", **PROMPT_EVENT},
        prompt("hi"),
        401,
        UNAUTHORIZED,
        json_headers(
            UNAUTHORIZED,
            ("www-authenticate", 'Bearer realm="handler-kit", error="invalid_token"'),
        ),
        id="wrong-token",
    ),
    pytest.param(
        "POST",
        "/hooks/echo",
        AUTH,
        prompt("hi"),
        400,
        b'{"error": "missing_event_header", "message": "the X-Runbear-Hook-Event header is '
        b'required"}',
        json_headers(
            b'{"error": "missing_event_header", "message": "the X-Runbear-Hook-Event header is '
            b'required"}'
        ),
        id="no-event-header",
    ),
    # refused from its head: the declared length is over the cap
    pytest.param(
        "POST",
        "/hooks",
        {**AUTH, **PROMPT_EVENT},
        OVER_CAP,
        413,
        TOO_LARGE,
        json_headers(TOO_LARGE),
        id="over-the-cap",
    ),
    # the gate's own route: its safe decision, as any answer
    pytest.param(
        "POST",
        "/hooks/gate",
        {**AUTH, EVENT: "PreToolUse"},
        OVER_CAP,
        200,
        GATE_UNREADABLE,
        json_headers(GATE_UNREADABLE),
        id="over-the-cap-gate",
    ),
    # the header names a runtime's own event the app handles: the body is read as that event,
    # so another event's body is a mismatch, whatever that event's model would say of it
    pytest.param(
        "POST",
        "/hooks",
        {**AUTH, EVENT: "MyRuntimeEvent"},
        json.dumps({"hook_event_name": "PreToolUse", "tool_name": 5}).encode(),
        400,
        b'{"error": "event_mismatch", "message": "X-Runbear-Hook-Event is \'MyRuntimeEvent\' '
        b"but hook_event_name is 'PreToolUse'\"}",
        json_headers(
            b'{"error": "event_mismatch", "message": "X-Runbear-Hook-Event is \'MyRuntimeEvent\' '
            b"but hook_event_name is 'PreToolUse'\"}"
        ),
        id="runtime-event-mismatch",
    ),
]


@pytest.mark.parametrize(
    ("method", "path", "headers", "body", "status", "answer", "answer_headers"), HEADS
)
def test_each_request_head_gets_its_exact_answer_over_http(
    strict_server: Any,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes,
    status: int,
    answer: bytes,
    answer_headers: dict[str, str],
) -> None:
    with httpx.Client(base_url=strict_server.url, timeout=30) as client:
        response = client.request(method, path, headers=headers, content=body)
    got = {k: v for k, v in response.headers.items() if k not in ("date", "server")}
    assert (response.status_code, response.content, got) == (status, answer, answer_headers)


# -- at the ASGI level ---------------------------------------------------------------------


def _start(status: int, body: bytes, *extra: tuple[bytes, bytes]) -> dict[str, Any]:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *extra,
    ]
    return {"type": "http.response.start", "status": status, "headers": headers}


def sent(status: int, body: bytes, *extra: tuple[bytes, bytes]) -> list[dict[str, Any]]:
    """The two ASGI messages of an answer: lowercase header names, as ASGI requires (a host
    app's middleware, Starlette's headers, matches them as they are)."""
    return [_start(status, body, *extra), {"type": "http.response.body", "body": body}]


def part(body: bytes, more: bool = True) -> dict[str, Any]:
    return {"type": "http.request", "body": body, "more_body": more}


DISCONNECT = {"type": "http.disconnect"}
HI = prompt("hi")
OBSERVED = {"principal": "token#0", "event_from_body": True}


def exchange(
    asgi: Any, method: str, path: str, headers: list[tuple[bytes, bytes]], messages: list[Any]
) -> tuple[list[dict[str, Any]], int]:
    """What ``asgi`` sends for a request of these head and body messages, and how many of
    the messages it read."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"authorization", f"Bearer {TOKEN}".encode()), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    queue = list(messages)
    answer: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        assert queue, "read past the request's last message"
        return queue.pop(0)

    async def send(message: dict[str, Any]) -> None:
        answer.append(message)

    asyncio.run(asgi(scope, receive, send))
    return answer, len(messages) - len(queue)


# (method, path, request headers, body messages) -> (messages sent, messages read, what the
# observer was handed: (transport, context) per answer)
MESSAGES: list[Any] = [
    pytest.param(
        "POST",
        "/hooks",
        [(b"traceparent", TRACEPARENT.encode())],
        [part(HI, more=False)],
        sent(200, echoed("hi")),
        1,
        [("webhook", {**OBSERVED, "body": HI, "traceparent": TRACEPARENT})],
        id="one-message",
    ),
    pytest.param(
        "POST",
        "/hooks/echo",
        [],
        [part(HI[:5]), part(b""), part(HI[5:], more=False)],
        sent(200, echoed("hi")),
        3,
        [("webhook", {**OBSERVED, "body": HI})],
        id="several-messages",
    ),
    # ASGI: a message without a body field has an empty body
    pytest.param(
        "POST", "/hooks", [], [{"type": "http.request"}], sent(400, MALFORMED), 1, [], id="no-body"
    ),
    # an empty body the gate cannot read: its safe decision, and nothing of the body
    pytest.param(
        "POST",
        "/hooks/gate",
        [],
        [{"type": "http.request"}],
        sent(200, GATE_UNREADABLE),
        1,
        [("webhook", {**OBSERVED, "event_from_body": False, "body": None})],
        id="no-body-gate",
    ),
    # refused from its head, before a byte of the body is read
    pytest.param(
        "POST",
        "/hooks",
        [(b"content-length", b"%d" % (CAP + 1))],
        [DISCONNECT],
        sent(413, TOO_LARGE),
        0,
        [],
        id="declared-over-the-cap",
    ),
    pytest.param(
        "POST",
        "/hooks",
        [],
        [part(b"x" * 1000), part(b"x" * 100), part(b"}", more=False)],
        sent(413, TOO_LARGE),
        2,
        [],
        id="found-over-the-cap",
    ),
    # over the cap in one message, with no length declared (a chunked body uvicorn read
    # whole): refused once it is in, as one declared over the cap is
    pytest.param(
        "POST",
        "/hooks",
        [],
        [part(OVER_CAP, more=False)],
        sent(413, TOO_LARGE),
        1,
        [],
        id="one-message-over-the-cap",
    ),
    # the gate's route: its safe decision, and nothing of the body
    pytest.param(
        "POST",
        "/hooks/gate",
        [],
        [part(OVER_CAP, more=False)],
        sent(200, GATE_UNREADABLE),
        1,
        [("webhook", {**OBSERVED, "event_from_body": False, "body": None})],
        id="one-message-over-the-cap-gate",
    ),
    # the client went away: nothing to answer, no handler run
    pytest.param("POST", "/hooks", [], [DISCONNECT], [], 1, [], id="disconnect"),
    pytest.param(
        "POST", "/hooks", [], [part(HI[:5]), DISCONNECT], [], 2, [], id="disconnect-midway"
    ),
    pytest.param(
        "GET", "/hooks", [], [], sent(405, USE_POST, (b"allow", b"POST")), 0, [], id="get"
    ),
]


@pytest.fixture
def fresh_length_headers(monkeypatch: pytest.MonkeyPatch) -> dict[int, tuple[bytes, bytes]]:
    """The content-length headers the webhook keeps per answer size, empty: every size
    answered in the test is new to it (whatever earlier tests of the process answered)."""
    kept: dict[int, tuple[bytes, bytes]] = {}
    monkeypatch.setattr(webhook_module, "_LENGTH_HEADERS", kept)
    return kept


@pytest.mark.parametrize(
    ("method", "path", "headers", "messages", "answer", "read", "observed"), MESSAGES
)
def test_each_request_in_asgi_messages_gets_its_exact_answer(
    fresh_length_headers: dict[int, tuple[bytes, bytes]],
    method: str,
    path: str,
    headers: list[tuple[bytes, bytes]],
    messages: list[dict[str, Any]],
    answer: list[dict[str, Any]],
    read: int,
    observed: list[tuple[str, dict[str, Any]]],
) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    app = requests_app().extended(observers=[lambda a, transport, c: seen.append((transport, c))])
    asgi = create_asgi_app(app, ServerConfig(tokens=[TOKEN], max_body_bytes=CAP))
    assert exchange(asgi, method, path, headers, messages) == (answer, read)
    assert seen == observed


def test_a_length_header_is_made_once_per_answer_size_and_only_so_many_are_kept(
    fresh_length_headers: dict[int, tuple[bytes, bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer does not format its content-length when an earlier answer of its size did;
    the sizes kept are bounded (a client choosing its answers' sizes cannot grow them)."""
    monkeypatch.setattr(webhook_module, "_KEPT_LENGTHS", 2)
    asgi = create_asgi_app(requests_app(), ServerConfig(tokens=[TOKEN]))

    def length_header(text: str) -> tuple[bytes, bytes]:
        answer, _ = exchange(asgi, "POST", "/hooks", [], [part(prompt(text), more=False)])
        assert answer == sent(200, echoed(text))
        header: tuple[bytes, bytes] = answer[0]["headers"][1]
        return header

    one, two, three = len(echoed("a")), len(echoed("ab")), len(echoed("abc"))
    first = length_header("a")
    assert length_header("b") is first  # the same size: the header made for the first
    assert length_header("ab") == (b"content-length", b"%d" % two)
    assert length_header("abc") == (b"content-length", b"%d" % three)
    assert fresh_length_headers == {
        one: (b"content-length", b"%d" % one),
        two: (b"content-length", b"%d" % two),
    }
    assert fresh_length_headers[one] is first
    # a size past the bound is made anew for each answer, and still right
    assert length_header("xyz") == (b"content-length", b"%d" % three)
    assert sorted(fresh_length_headers) == [one, two]
