"""The webhook's answers as a client reads them, to the byte: which model each route reads its
input with (and so which error a bad input gets), what observers are handed, the error bodies
of an answer that cannot be given (its record not committed, its JSON not writable), and the
ASGI messages of an answer.

Each test builds its own app and server, so everything the webhook works out at start-up is
worked out inside the test that checks it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Any

import pytest

from handler_kit import HookApp, PreToolUse, allow, deny
from handler_kit.config import OperationsConfig, ServerConfig
from handler_kit.core.vocabulary import Answer
from handler_kit.server.webhook import Webhook
from handler_kit.testing import running_server

TOKEN = "webhook-answers-token-0123456789"
EVENT_HEADER = "X-Runbear-Hook-Event"
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
CHECKED = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "checked",
    }
}
INVALID = {"error": "invalid_event", "message": "the hook input failed validation"}


def checking_app() -> HookApp:
    """One PreToolUse handler that does not fail closed, and one gate that does."""
    app = HookApp("answers")

    @app.pre_tool_use(matcher="Bash")
    def check(event: PreToolUse) -> Any:
        return deny("checked")

    @app.pre_tool_use(matcher="issue_refund", fail_closed=True)
    def gate(event: PreToolUse) -> Any:
        return allow()

    return app


def body_of(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


PRE = body_of(hook_event_name="PreToolUse", session_id="s1", tool_name="Bash", tool_input={})
# a Stop whose tool_name is a number: refused by PreToolUse's model, read by Stop's (an extra)
STOP_WITH_NUMBER = body_of(hook_event_name="Stop", tool_name=5)
PRE_WITH_NUMBER = body_of(hook_event_name="PreToolUse", tool_name=5)
NAMELESS = body_of(session_id="s1", tool_name="Bash")
TOOL_NAME_NOT_STR = {
    **INVALID,
    "details": [{"path": "tool_name", "message": "Input should be a valid string"}],
}
NAME_MISSING = {**INVALID, "details": [{"path": "hook_event_name", "message": "Field required"}]}

# (path, event header, body) -> (status, JSON body): the route's own event's model reads the
# body (POST /hooks/{name}: its handler's; POST /hooks: the one the header names, whether or
# not a handler handles it), and its error is that model's
ROUTES: list[tuple[str, str | None, bytes, int, dict[str, Any]]] = [
    ("/hooks", "PreToolUse", PRE, 200, CHECKED),
    ("/hooks/", "PreToolUse", PRE, 200, CHECKED),
    ("/hooks/check", "PreToolUse", PRE, 200, CHECKED),
    ("/hooks/check", "PreToolUse", STOP_WITH_NUMBER, 400, TOOL_NAME_NOT_STR),
    ("/hooks/check", "PreToolUse", NAMELESS, 400, NAME_MISSING),
    ("/hooks", "PreToolUse", STOP_WITH_NUMBER, 400, TOOL_NAME_NOT_STR),
    ("/hooks", "PreToolUse", NAMELESS, 400, NAME_MISSING),
    # SessionEnd has no handler here: its model still reads the body, where tool_name is an
    # extra field, so the input is a PreToolUse sent as a SessionEnd
    (
        "/hooks",
        "SessionEnd",
        PRE_WITH_NUMBER,
        400,
        {
            "error": "event_mismatch",
            "message": "X-Runbear-Hook-Event is 'SessionEnd' but hook_event_name is 'PreToolUse'",
        },
    ),
    ("/hooks", "SessionEnd", NAMELESS, 400, NAME_MISSING),
    (
        "/hooks",
        None,
        PRE,
        400,
        {"error": "missing_event_header", "message": "the X-Runbear-Hook-Event header is required"},
    ),
]


def test_each_route_reads_its_input_with_its_events_model_and_observers_get_the_request():
    seen: list[tuple[str, dict[str, Any]]] = []
    app = checking_app().extended(
        observers=[lambda answer, transport, context: seen.append((transport, context))]
    )
    config = ServerConfig(tokens=[TOKEN], require_event_header=True)
    with running_server(app, config=config) as server, server.http(timeout=30) as http:
        answered = []
        for path, event, body, _, _ in ROUTES:
            headers = {"Content-Type": "application/json", "traceparent": TRACEPARENT}
            if event is not None:
                headers[EVENT_HEADER] = event
            response = http.post(path, content=body, headers=headers)
            answered.append((path, event, body, response.status_code, response.json()))
    assert answered == ROUTES
    # each answer given (the first three) was observed with the request it answered
    context = {
        "principal": "token#0",
        "body": PRE,
        "event_from_body": True,
        "traceparent": TRACEPARENT,
    }
    assert seen == [("webhook", context)] * 3


class UnwritableSink:
    """An audit sink that cannot commit a record (a full disk, a read-only volume)."""

    def open(self) -> None:
        pass

    def write(self, records: Sequence[tuple[dict[str, Any], str]]) -> None:
        raise OSError(30, "Read-only file system")

    def close(self) -> None:
        pass


def test_an_answer_whose_record_cannot_be_committed_is_a_503_to_retry():
    """Durable audit: the handler answered, but its record could not be committed, so the
    answer is not given (the handler does not fail closed: there is no safe decision)."""
    operations = OperationsConfig(audit_sinks=[UnwritableSink()], audit_durable=True)
    config = ServerConfig(tokens=[TOKEN], operations=operations)
    with running_server(checking_app(), config=config) as server, server.http(timeout=30) as http:
        response = http.post("/hooks/check", content=PRE)
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/json"
    assert response.content == (
        b'{"error": "audit_unavailable", "message": "the answer\'s audit record could not be '
        b'committed in time; retry later"}'
    )


def test_an_answer_json_cannot_carry_is_a_500_and_the_log_names_its_event(caplog):
    """Whatever makes the answer (here a committer that replaces it), one JSON cannot carry is
    the handler's failure, not a traceback, and the server log says which event's it was."""

    async def replaces(answer: Answer, transport: str, context: dict[str, Any]) -> Answer:
        output = {"hookSpecificOutput": {"additionalContext": object()}}
        return Answer(answer.event, output, answer.invocations)

    app = checking_app().extended(committers=[replaces])
    with (
        caplog.at_level(logging.ERROR, logger="handler_kit"),
        running_server(app, tokens=[TOKEN]) as server,
        server.http(timeout=30) as http,
    ):
        response = http.post("/hooks", content=PRE)
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "error": "handler_failed",
        "message": "the handler failed; see the server log",
    }
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [(r.name, r.getMessage()) for r in logged] == [
        ("handler_kit", "the answer to PreToolUse is not JSON")
    ]
    assert logged[0].exc_info is not None  # with the encoder's error, for whoever debugs it


async def _asgi(webhook: Webhook, path: str, method: str, body: bytes) -> list[dict[str, Any]]:
    """The ASGI messages ``webhook`` sends for a request whose body comes in one message, with
    no content-length (a chunked body the server had received whole before the app read it)."""
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await webhook(scope, receive, send)
    return sent


def _messages(status: int, body: bytes, *extra: tuple[bytes, bytes]) -> list[dict[str, Any]]:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *extra,
    ]
    return [
        {"type": "http.response.start", "status": status, "headers": headers},
        {"type": "http.response.body", "body": body},
    ]


OVER = b"x" * 301
GATE_UNREADABLE = json.dumps(
    {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Blocked by policy: the check 'gate' could not read the "
            "hook input, and it is configured to fail closed.",
        }
    },
    separators=(",", ":"),
).encode()


@pytest.mark.parametrize(
    ("path", "method", "body", "expected"),
    [
        pytest.param(
            "/hooks/check",
            "POST",
            OVER,
            _messages(
                413,
                b'{"error": "body_too_large", "message": "the body is over the 300-byte limit"}',
            ),
            id="over-the-cap",
        ),
        # the gate cannot read it: its safe decision, as any answer
        pytest.param("/hooks/gate", "POST", OVER, _messages(200, GATE_UNREADABLE), id="gate"),
        pytest.param(
            "/hooks/check",
            "GET",
            b"",
            _messages(
                405,
                b'{"error": "method_not_allowed", "message": "use POST"}',
                (b"allow", b"POST"),
            ),
            id="wrong-method",
        ),
    ],
)
def test_the_asgi_messages_of_an_answer_have_lowercase_header_names(path, method, body, expected):
    """ASGI requires lowercase header names: a host app's middleware (Starlette's headers)
    matches them as they are."""
    webhook = Webhook(checking_app(), max_body_bytes=300, require_event_header=False)
    assert asyncio.run(_asgi(webhook, path, method, body)) == expected


@pytest.mark.parametrize("name", ["", 3, None, ["PreToolUse"]])
def test_an_input_naming_no_event_is_refused_with_why(name: Any) -> None:
    """Read without an event known in advance (``POST /hooks`` without the header): a
    ``hook_event_name`` that is not a non-empty string names no event, whatever else the
    input holds."""
    from handler_kit.server.webhook import HTTPError, parse_hook_input

    body = json.dumps({"hook_event_name": name, "session_id": "s-1"}).encode()
    with pytest.raises(HTTPError) as refused:
        parse_hook_input(body, None)
    assert json.loads(refused.value.body()) == {
        "error": "invalid_event",
        "message": "the hook input failed validation",
        "details": [{"path": "hook_event_name", "message": "Field required (a non-empty string)"}],
    }
