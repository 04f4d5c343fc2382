"""The webhook contract (DESIGN.md section 3) through real uvicorn over real TLS: routes,
the bad-input matrix with its status codes and JSON error bodies, failure policies and
deadlines, and the open health route."""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from handler_kit import HookApp, PreToolUse, allow, context, deny
from handler_kit.config import DEFAULT_MAX_BODY_BYTES, ServerConfig
from handler_kit.core.vocabulary import DEFAULT_CALLS_PER_HANDLER, MAX_INPUT_DEPTH, server_deadline
from handler_kit.server.webhook import (
    BodyTooLarge,
    ClientDisconnected,
    HTTPError,
    Webhook,
    parse_hook_input,
    read_body,
    route_path,
    validation_details,
)
from handler_kit.testing import running_server
from tests.server.support import TOKEN, client_for
from tests.support.apps.webhook import HANG_CLOSED_TIMEOUT, HANG_OPEN_TIMEOUT, SECRET_DETAIL
from tests.support.http import error_body

NOTICE = "configured to fail closed"


def pre(tool: str = "issue_refund", **tool_input: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "tool_name": tool,
        "tool_input": tool_input or {"amount": 640},
        "tool_use_id": "toolu_1",
    }


DENY_640 = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "Refunds over $500 need a human approver.",
    }
}
HEADER = {"X-Runbear-Hook-Event": "PreToolUse"}


# -- the happy paths -----------------------------------------------------------------------


def test_post_hooks_answers_with_the_output(http):
    for headers in (HEADER, {}):
        response = http.post("/hooks", json=pre(), headers=headers)
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert response.json() == DENY_640


def test_no_opinion_is_200_empty_object(http):
    response = http.post("/hooks", json=pre(amount=40), headers=HEADER)
    assert (response.status_code, response.content) == (200, b"{}")
    # a tool no handler matches, and an event no handler is registered for
    assert http.post("/hooks", json=pre("lookup_order")).json() == {}
    assert http.post("/hooks", json={"hook_event_name": "SessionEnd"}).json() == {}
    # an event name no one knows: a generic event, no handlers, no opinion
    unknown = {"hook_event_name": "FutureEvent", "anything": [1]}
    assert (
        http.post("/hooks", json=unknown, headers={"X-Runbear-Hook-Event": "FutureEvent"}).json()
        == {}
    )


def test_post_hooks_with_the_header_of_a_known_event_no_handler_handles(http):
    """SessionEnd has no handler here: its header still picks its model, on the first
    request and on the next ones alike."""
    header = {"X-Runbear-Hook-Event": "SessionEnd"}
    for _ in range(2):
        response = http.post(
            "/hooks", json={"hook_event_name": "SessionEnd", "reason": "exit"}, headers=header
        )
        assert (response.status_code, response.content) == (200, b"{}")
    # validated as a SessionEnd: a session_id that is not a string is refused
    refused = http.post(
        "/hooks", json={"hook_event_name": "SessionEnd", "session_id": 5}, headers=header
    )
    error_body(refused, 400, "invalid_event")
    other = http.post("/hooks", json={"hook_event_name": "Stop"}, headers=header)
    error_body(other, 400, "event_mismatch")


def test_named_route_runs_one_handler(http):
    assert http.post("/hooks/gate", json=pre(), headers=HEADER).json() == DENY_640
    # the named handler's matcher does not match: no opinion
    response = http.post("/hooks/named_only", json=pre("issue_refund"), headers=HEADER)
    assert (response.status_code, response.json()) == (200, {})
    matched = http.post("/hooks/named_only", json=pre("special_tool"), headers=HEADER)
    assert matched.json()["hookSpecificOutput"]["permissionDecisionReason"] == "special"
    # /hooks with special_tool runs named_only only (gate's matcher does not match)
    assert http.post("/hooks", json=pre("special_tool")).json() == matched.json()


def test_healthz_is_open_and_lists_handlers(server):
    with httpx.Client(
        base_url=server.url, verify=ssl.create_default_context(cafile=server.ca_file)
    ) as anonymous:
        response = anonymous.get("/healthz")
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "ok" and body["app"] == "webhook-tests"
        assert {
            "name": "gate",
            "event": "PreToolUse",
            "matcher": "issue_refund|orders__refund",
        } in (body["handlers"])
        assert anonymous.head("/healthz").status_code == 200
        error_body(anonymous.post("/healthz"), 405, "method_not_allowed")
        # everything else needs the token
        error_body(anonymous.post("/hooks", json=pre()), 401, "unauthorized")


# -- the bad-input matrix ------------------------------------------------------------------

NESTED = b"[" * 100_000 + b"]" * 100_000
MATRIX = [
    # (id, path, body bytes, extra headers, status, error code)
    ("malformed-json", "/hooks", b'{"hook_event_name": "PreToolUse",', {}, 400, "malformed_json"),
    ("malformed-json-hdr", "/hooks", b'{"hook_event_name": ', HEADER, 400, "malformed_json"),
    ("malformed-json-named", "/hooks/named_only", b"{nope}", {}, 400, "malformed_json"),
    ("empty-body", "/hooks", b"", {}, 400, "malformed_json"),
    ("empty-body-hdr", "/hooks", b"", HEADER, 400, "malformed_json"),
    ("not-utf8", "/hooks", b'{"hook_event_name": "\xff"}', {}, 400, "malformed_json"),
    ("not-utf8-hdr", "/hooks", b'{"hook_event_name": "\xff"}', HEADER, 400, "malformed_json"),
    ("deeply-nested", "/hooks", NESTED, {}, 400, "too_deep"),
    ("deeply-nested-hdr", "/hooks", NESTED, HEADER, 400, "too_deep"),
    ("deeply-nested-named", "/hooks/named_only", NESTED, {}, 400, "too_deep"),
    ("json-array", "/hooks", b'[{"hook_event_name": "PreToolUse"}]', {}, 400, "not_an_object"),
    ("json-array-hdr", "/hooks", b"[1, 2]", HEADER, 400, "not_an_object"),
    ("json-array-named", "/hooks/named_only", b"[]", {}, 400, "not_an_object"),
    ("json-string", "/hooks", b'"PreToolUse"', {}, 400, "not_an_object"),
    ("json-null-hdr", "/hooks", b"null", HEADER, 400, "not_an_object"),
    (
        "wrong-types",
        "/hooks",
        json.dumps({"hook_event_name": "PreToolUse", "tool_name": 5}).encode(),
        {},
        400,
        "invalid_event",
    ),
    (
        "wrong-types-hdr",
        "/hooks",
        json.dumps({"hook_event_name": "PreToolUse", "tool_input": "x"}).encode(),
        HEADER,
        400,
        "invalid_event",
    ),
    (
        "wrong-types-named",
        "/hooks/named_only",
        json.dumps({"hook_event_name": "PreToolUse", "tool_use_id": ["a"]}).encode(),
        {},
        400,
        "invalid_event",
    ),
    ("missing-event-name", "/hooks", b'{"tool_name": "issue_refund"}', {}, 400, "invalid_event"),
    ("missing-event-name-hdr", "/hooks", b'{"tool_name": "x"}', HEADER, 400, "invalid_event"),
    ("event-name-not-str", "/hooks", b'{"hook_event_name": 3}', {}, 400, "invalid_event"),
    ("event-name-empty", "/hooks", b'{"hook_event_name": ""}', {}, 400, "invalid_event"),
    (
        "header-mismatch",
        "/hooks",
        json.dumps(pre()).encode(),
        {"X-Runbear-Hook-Event": "Stop"},
        400,
        "event_mismatch",
    ),
    (
        "header-mismatch-named",
        "/hooks/gate",
        json.dumps(pre()).encode(),
        {"X-Runbear-Hook-Event": "PostToolUse"},
        400,
        "event_mismatch",
    ),
    (
        "route-event-mismatch",
        "/hooks/gate",
        json.dumps({"hook_event_name": "Stop"}).encode(),
        {},
        400,
        "event_mismatch",
    ),
    (
        "unknown-handler",
        "/hooks/no_such_handler",
        json.dumps(pre()).encode(),
        {},
        404,
        "unknown_handler",
    ),
    (
        "unknown-handler-nested",
        "/hooks/gate/extra",
        json.dumps(pre()).encode(),
        {},
        404,
        "unknown_handler",
    ),
]


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "code"),
    [pytest.param(*case[1:], id=case[0]) for case in MATRIX],
)
def test_bad_input_matrix(http, path, body, headers, status, code):
    response = http.post(
        path, content=body, headers={"Content-Type": "application/json", **headers}
    )
    error = error_body(response, status, code)
    if code == "invalid_event":
        assert error["details"] and all({"path", "message"} <= set(d) for d in error["details"])


def test_validation_details_name_the_field_without_echoing_values(http):
    body = {"hook_event_name": "PreToolUse", "tool_name": 5, "tool_input": "SECRET-VALUE-42"}
    for headers in (HEADER, {}):
        error = error_body(http.post("/hooks", json=body, headers=headers), 400, "invalid_event")
        assert {d["path"] for d in error["details"]} == {"tool_name", "tool_input"}
        assert "SECRET-VALUE-42" not in json.dumps(error)
    missing = error_body(http.post("/hooks", json={"tool_name": "x"}), 400, "invalid_event")
    assert [d["path"] for d in missing["details"]] == ["hook_event_name"]


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/hooks"), ("PUT", "/hooks"), ("DELETE", "/hooks/gate"), ("GET", "/hooks/gate")],
)
def test_wrong_method_is_405(http, method, path):
    response = http.request(method, path)
    error_body(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "POST"


def test_no_token_and_wrong_token_are_401(server):
    with client_for(server) as http:
        del http.headers["Authorization"]
        response = http.post("/hooks", json=pre(), headers=HEADER)
        error_body(response, 401, "unauthorized")
        assert response.headers["www-authenticate"].startswith("Bearer")
        response = http.post(
            "/hooks", json=pre(), headers={**HEADER, "Authorization": f"Bearer {TOKEN}-wrong"}
        )
        error_body(response, 401, "unauthorized")
        assert response.headers["www-authenticate"].startswith("Bearer")


# -- the body cap --------------------------------------------------------------------------


def padded_event(size: int) -> bytes:
    """A valid PreToolUse input of exactly ``size`` bytes."""
    head = json.dumps(pre("lookup_order"))[:-1] + ', "padding": "'
    tail = '"}'
    return (head + "x" * (size - len(head) - len(tail)) + tail).encode()


def test_default_cap_is_one_mebibyte(http):
    assert DEFAULT_MAX_BODY_BYTES == 1024 * 1024
    exact = padded_event(DEFAULT_MAX_BODY_BYTES)
    assert len(exact) == DEFAULT_MAX_BODY_BYTES
    assert http.post("/hooks", content=exact, headers=HEADER).json() == {}
    over = padded_event(DEFAULT_MAX_BODY_BYTES + 1)
    error_body(http.post("/hooks", content=over, headers=HEADER), 413, "body_too_large")


def test_declared_length_over_the_cap_is_413(strict_server):
    with client_for(strict_server) as http:
        response = http.post("/hooks", content=padded_event(4097), headers=HEADER)
        error_body(response, 413, "body_too_large")
        assert http.post("/hooks", content=padded_event(4096), headers=HEADER).json() == {}


def test_chunked_body_over_the_cap_is_413(strict_server):
    body = padded_event(6000)

    def chunks() -> Iterator[bytes]:  # no Content-Length: Transfer-Encoding: chunked
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    with client_for(strict_server) as http:
        request = http.build_request("POST", "/hooks", content=chunks(), headers=HEADER)
        assert "content-length" not in request.headers
        assert request.headers["transfer-encoding"] == "chunked"
        error_body(http.send(request), 413, "body_too_large")

        small = padded_event(3000)
        ok = http.post("/hooks", content=iter([small[:1500], small[1500:]]), headers=HEADER)
        assert (ok.status_code, ok.json()) == (200, {})


def test_require_event_header(strict_server):
    with client_for(strict_server) as http:
        response = http.post("/hooks", json=pre())
        error_body(response, 400, "missing_event_header")
        assert http.post("/hooks", json=pre(), headers=HEADER).json() == DENY_640
        error_body(http.post("/hooks/gate", json=pre()), 400, "missing_event_header")


# -- failing handlers ----------------------------------------------------------------------


def test_handler_that_raises_is_500_without_details(http):
    event = {"hook_event_name": "PostToolUse", "tool_name": "crash_tool"}
    response = http.post("/hooks", json=event)
    error = error_body(response, 500, "handler_failed")
    assert set(error) == {"error", "message"}
    for leak in (SECRET_DETAIL, "RuntimeError", "Traceback", "raises", ".py"):
        assert leak not in response.text


def test_fail_closed_gate_that_raises_denies(http):
    response = http.post("/hooks", json=pre("crash_gate"), headers=HEADER)
    assert response.status_code == 200
    out = response.json()["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert NOTICE in out["permissionDecisionReason"]
    assert SECRET_DETAIL not in response.text


def test_hanging_handler_fail_open_is_500_timeout_after_the_deadline(http):
    started = time.monotonic()
    response = http.post(
        "/hooks", json={"hook_event_name": "PostToolUse", "tool_name": "hang_tool"}
    )
    elapsed = time.monotonic() - started
    assert error_body(response, 500, "handler_timeout") == {
        "error": "handler_timeout",
        "message": "the handler did not answer in time",
    }
    assert elapsed >= server_deadline(HANG_OPEN_TIMEOUT)


def test_hanging_fail_closed_gate_denies_before_the_runtime_gives_up(server):
    """The client waits exactly what the runtime would (the handler's timeout); the server's
    own deadline is shorter, so the deny arrives first."""
    with client_for(server, timeout=HANG_CLOSED_TIMEOUT) as http:
        started = time.monotonic()
        response = http.post("/hooks", json=pre("hang_gate"), headers=HEADER)
        elapsed = time.monotonic() - started
    assert response.status_code == 200
    out = response.json()["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "'hangs_closed' did not answer in time" in out["permissionDecisionReason"]
    assert elapsed >= server_deadline(HANG_CLOSED_TIMEOUT)


def test_helper_the_event_cannot_carry_is_never_sent(http):
    # fail open: no answer at all (500), certainly not a deny on SessionStart
    response = http.post("/hooks", json={"hook_event_name": "SessionStart", "source": "resume"})
    error_body(response, 500, "handler_failed")
    assert "permissionDecision" not in response.text
    # fail closed on PreToolUse: a block is not sent, the gate's policy denies instead
    response = http.post("/hooks", json=pre("wrong_gate"), headers=HEADER)
    assert response.status_code == 200
    body = response.json()
    assert "decision" not in body
    assert body["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "'wrong_helper_closed' failed" in body["hookSpecificOutput"]["permissionDecisionReason"]
    # fail closed on UserPromptExpansion: a rewrite is not sent, the policy blocks
    response = http.post(
        "/hooks", json={"hook_event_name": "UserPromptExpansion", "command_name": "deploy"}
    )
    body = response.json()
    assert body["decision"] == "block" and NOTICE in body["reason"]
    assert "updatedInput" not in response.text


def test_output_json_cannot_carry_is_a_json_500(http):
    response = http.post(
        "/hooks", json={"hook_event_name": "PostToolUse", "tool_name": "weird_tool"}
    )
    error_body(response, 500, "handler_failed")


def test_lone_surrogates_in_input_and_echoed_output(http):
    """Claude Code sends prompts with lone surrogate escapes (see the mojibake capture); they
    parse on every path, and a handler echoing them still gets a JSON answer."""
    body = b'{"hook_event_name": "UserPromptSubmit", "prompt": "caf\\udc8f!"}'
    for headers in ({}, {"X-Runbear-Hook-Event": "UserPromptSubmit"}):
        response = http.post("/hooks", content=body, headers=headers)
        assert response.status_code == 200, response.text
        assert response.json()["hookSpecificOutput"]["additionalContext"] == "You said: caf\udc8f!"
    response = http.post("/hooks/echo_prompt", content=body)
    assert response.status_code == 200, response.text


def test_several_handlers_merge_over_http(http):
    """Stop: stop_context's context; UserPromptSubmit: echo_prompt's context."""
    response = http.post("/hooks", json={"hook_event_name": "Stop", "last_assistant_message": "x"})
    assert response.json() == {
        "hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "reply checked"}
    }


# -- inputs a gate cannot read ---------------------------------------------------------------

UNREADABLE = "Blocked by policy: the check 'gate' could not read the hook input"


def deep_pre(depth: int, *, surrogate: bool = False) -> bytes:
    """An over-limit refund whose ``tool_input`` nests ``depth`` levels (itself level 1, then
    arrays); with a lone surrogate escape, a body pydantic-core refuses and the standard
    library reads."""
    arrays = depth - 1
    note = ', "note": "caf\\udc8f"' if surrogate else ""
    return (
        '{"hook_event_name": "PreToolUse", "tool_name": "issue_refund", '
        f'"tool_input": {{"amount": 640, "deep": {"[" * arrays}{"]" * arrays}}}{note}}}'
    ).encode()


def assert_unreadable_deny(response: httpx.Response) -> None:
    assert response.status_code == 200, response.text
    out = response.json()["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert out["permissionDecisionReason"].startswith(UNREADABLE)


def test_the_runtimes_deep_input_is_the_gates_deny_on_its_route(http, caplog):
    """About a thousand levels in two kilobytes: a 400 here let the refund through, since a
    runtime proceeds on any 4xx."""
    body = deep_pre(1000)
    assert len(body) < 2200
    with caplog.at_level(logging.WARNING, logger="handler_kit"):
        response = http.post("/hooks/gate", content=body, headers=HEADER)
    assert_unreadable_deny(response)
    assert "gate could not read its PreToolUse input (too_deep:" in caplog.text
    # /hooks: no single gate answers for the input, so it stays a bad request
    error_body(http.post("/hooks", content=body, headers=HEADER), 400, "too_deep")
    error_body(http.post("/hooks", content=body), 400, "too_deep")
    # readable, but not the gate's event: a misrouted call, not an unreadable input
    response = http.post("/hooks/gate", json={"hook_event_name": "Stop"})
    error_body(response, 400, "event_mismatch")


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"hook_event_name": "PreToolUse", "tool_name": "issue_refund",', id="json"),
        pytest.param(
            b'{"hook_event_name": "PreToolUse", "tool_input": {"amount": "\xff"}}', id="utf8"
        ),
        pytest.param(b"[]", id="array"),
        pytest.param(b"", id="empty"),
        pytest.param(json.dumps({**pre(), "tool_name": 5}).encode(), id="types"),
        pytest.param(json.dumps({**pre(), "hook_event_name": None}).encode(), id="no-name"),
        # the route's own validator takes any string: an empty one names no event either
        pytest.param(json.dumps({**pre(), "hook_event_name": ""}).encode(), id="empty-name"),
    ],
)
def test_any_input_a_gate_cannot_read_is_its_deny_on_its_route(http, body):
    for headers in (HEADER, {}):
        assert_unreadable_deny(http.post("/hooks/gate", content=body, headers=headers))
    # a handler that does not fail closed keeps the 400
    assert http.post("/hooks/named_only", content=body).status_code == 400


def test_a_body_over_the_cap_is_the_gates_deny_on_its_route(strict_server):
    """A tool input padded past the cap must not be a way around the gate."""
    with client_for(strict_server) as http:
        assert_unreadable_deny(http.post("/hooks/gate", content=padded_event(5000), headers=HEADER))
        chunked = iter([padded_event(5000)[:2500], padded_event(5000)[2500:]])
        assert_unreadable_deny(http.post("/hooks/gate", content=chunked, headers=HEADER))
        response = http.post("/hooks/named_only", content=padded_event(5000), headers=HEADER)
        error_body(response, 413, "body_too_large")


@pytest.mark.parametrize("surrogate", [False, True], ids=["pydantic-core", "stdlib"])
def test_the_depth_limit_is_the_same_on_every_parser(http, surrogate):
    """Nested to the limit, an input is read (the gate's own deny); one level more, it is not,
    whichever parser reads it."""
    at_limit = http.post("/hooks/gate", content=deep_pre(MAX_INPUT_DEPTH, surrogate=surrogate))
    assert (at_limit.status_code, at_limit.json()) == (200, DENY_640)
    over = deep_pre(MAX_INPUT_DEPTH + 1, surrogate=surrogate)
    assert_unreadable_deny(http.post("/hooks/gate", content=over))
    assert http.post("/hooks", content=deep_pre(MAX_INPUT_DEPTH, surrogate=surrogate)).json() == (
        DENY_640
    )
    for headers in (HEADER, {}):
        error_body(http.post("/hooks", content=over, headers=headers), 400, "too_deep")


# -- async handlers that hold the event loop ----------------------------------------------------

# short: the handlers always block past it (a slower machine only blocks them longer)
BLOCKING_TIMEOUT = 0.3
BLOCKED_FOR = 2 * BLOCKING_TIMEOUT  # always well past the deadline, however slow the machine

blocking = HookApp("blocking")


@blocking.pre_tool_use(matcher="refund", timeout=BLOCKING_TIMEOUT, fail_closed=True)
async def sleeps_in_gate(event):
    time.sleep(BLOCKED_FOR)  # the mistake: a blocking call in an async handler
    return allow("late allow")


@blocking.pre_tool_use(matcher="awaits_then_sleeps", timeout=BLOCKING_TIMEOUT, fail_closed=True)
async def awaits_then_sleeps(event):
    await asyncio.sleep(0)
    time.sleep(BLOCKED_FOR)
    return allow("late allow")


@blocking.post_tool_use(timeout=BLOCKING_TIMEOUT)
async def sleeps_in_note(event):
    time.sleep(BLOCKED_FOR)
    return context("late context")


def test_an_async_handler_that_blocks_the_loop_never_sends_its_late_answer(caplog):
    with (
        running_server(blocking) as server,
        server.http(timeout=30) as http,
        caplog.at_level(logging.WARNING, logger="handler_kit"),
    ):
        denied = [
            http.post("/hooks/sleeps_in_gate", json=pre("refund")),
            http.post("/hooks", json=pre("awaits_then_sleeps")),
        ]
        note = http.post("/hooks", json={"hook_event_name": "PostToolUse", "tool_name": "R"})
    for response in denied:
        assert response.status_code == 200, response.text
        out = response.json()["hookSpecificOutput"]
        assert out["permissionDecision"] == "deny"
        assert "did not answer in time" in out["permissionDecisionReason"]
    # fail open: the timeout failure, as for any other late handler
    error_body(note, 500, "handler_timeout")
    for name in ("sleeps_in_gate", "sleeps_in_note"):  # cannot suspend: named as the blocker
        assert f"{name} blocked the event loop" in caplog.text
    # under its deadline's timer, which the blocked loop could not fire: late, so not sent
    assert "awaits_then_sleeps answered" in caplog.text
    assert "(the event loop was held)" in caplog.text


# -- sync handlers: handler-kit's own threads -------------------------------------------------

GATE_DENY = "Refunds need a human approver today."


def test_hung_sync_handlers_leave_threads_for_every_other_handler():
    """More hung calls of one handler than asyncio's default executor has threads, and than
    the handler's own limit: each call over the limit waits for its deadline, then fails as
    any timeout does, and a fast sync gate still answers its own deny."""
    release = threading.Event()
    started: list[int] = []
    lock = threading.Lock()
    threaded = HookApp("threads")

    @threaded.post_tool_use(matcher="hung", timeout=1)
    def hung(event):
        with lock:
            started.append(1)
        release.wait(60)  # a call that never returns in time (a database that stopped)

    @threaded.pre_tool_use(matcher="issue_refund", fail_closed=True)
    def sync_gate(event):
        return deny(GATE_DENY)

    hung_calls = 40  # more than asyncio's default executor has threads on any machine
    try:
        with running_server(threaded) as server:
            # one client, a connection per call (a client each would cost more than the calls)
            with server.http(timeout=30) as shared:

                def call(_: int) -> int:
                    post = {"hook_event_name": "PostToolUse", "tool_name": "hung"}
                    return shared.post("/hooks", json=post).status_code

                with ThreadPoolExecutor(hung_calls) as pool:
                    statuses = list(pool.map(call, range(hung_calls)))
            assert statuses == [500] * hung_calls  # each answered at its deadline
            assert len(started) == DEFAULT_CALLS_PER_HANDLER  # the rest never took a thread
            with server.http(timeout=30) as http:
                response = http.post("/hooks", json=pre("issue_refund"))
            assert response.status_code == 200, response.text
            out = response.json()["hookSpecificOutput"]
            assert out["permissionDecisionReason"] == GATE_DENY
    finally:
        release.set()


# -- TLS -----------------------------------------------------------------------------------


def test_tls_is_real(server):
    assert server.url.startswith("https://127.0.0.1:")
    # the server's certificate verifies against its CA, for 127.0.0.1 and localhost
    with client_for(server) as http:
        assert http.get("/healthz").status_code == 200
    localhost = server.url.replace("127.0.0.1", "localhost")
    context_ = ssl.create_default_context(cafile=server.ca_file)
    assert httpx.get(f"{localhost}/healthz", verify=context_).status_code == 200
    # and not against the system trust store
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/healthz")
    # plain HTTP to the TLS port gets no answer
    with pytest.raises(httpx.TransportError):
        httpx.get(server.url.replace("https://", "http://") + "/healthz", timeout=5)


def test_a_body_in_several_messages_is_read_whole(server: Any) -> None:
    def chunks() -> Any:
        body = json.dumps(
            {
                "hook_event_name": "PreToolUse",
                "session_id": "s1",
                "tool_name": "issue_refund",
                "tool_input": {"amount": 640},
            }
        ).encode()
        yield body[:10]
        yield body[10:]

    with client_for(server) as client:
        response = client.post("/hooks/gate", content=chunks())
    assert response.status_code == 200
    assert response.json()["hookSpecificOutput"]["permissionDecision"] == "deny"


# -- what observers get for an unreadable input; the route below a mount point; the webhook as
# an ASGI endpoint of its own --------------------------------------------------------------

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
GATE_UNREADABLE = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "Blocked by policy: the check 'gate' could not read the hook "
        "input, and it is configured to fail closed.",
    }
}


def _gate_app() -> HookApp:
    app = HookApp("observed")

    @app.pre_tool_use(fail_closed=True)
    def gate(event: PreToolUse) -> Any:
        return allow()

    return app


def test_observers_get_an_unreadable_inputs_ids_body_and_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[tuple[Any, ...]] = []
    app = _gate_app().extended(
        observers=[lambda a, t, c: seen.append((a.event.session_id, a.output, t, c))]
    )
    config = ServerConfig(tokens=[TOKEN], max_body_bytes=300)
    body = json.dumps({"hook_event_name": "PreToolUse", "session_id": "s-9", "tool_name": 5})
    # read by the route's own validator, which takes any string: it names no event
    unnamed = json.dumps({"hook_event_name": "", "session_id": "s-8", "tool_name": "Bash"})
    headers = {"Authorization": f"Bearer {TOKEN}", "traceparent": TRACEPARENT}
    over = [b"x" * 200, b"x" * 200]

    def slowly() -> Iterator[bytes]:  # in two ASGI messages: the second comes later
        yield over[0]
        time.sleep(0.3)
        yield over[1]

    with (
        caplog.at_level(logging.WARNING, logger="handler_kit"),
        running_server(app, config=config) as server,
    ):
        # unreadable; naming no event; over the cap, announced in its head; over the cap,
        # found while read
        for content in (body.encode(), unnamed.encode(), b"".join(over), slowly()):
            response = httpx.post(f"{server.url}/hooks/gate", content=content, headers=headers)
            assert (response.status_code, response.json()) == (200, GATE_UNREADABLE)
    said = "gate could not read its PreToolUse input ({}): answered with its safe decision"
    too_large = said.format("body_too_large: the body is over the 300-byte limit")
    assert [r.getMessage() for r in caplog.records if "could not read" in r.getMessage()] == [
        said.format("invalid_event: the hook input failed validation"),
        said.format("invalid_event: the hook input failed validation"),
        too_large,
        too_large,
    ]
    # the event answered is not the body validated: the audit writer must not derive the
    # input from the body
    trace = {"principal": "token#0", "traceparent": TRACEPARENT, "event_from_body": False}
    assert seen == [
        ("s-9", GATE_UNREADABLE, "webhook", {**trace, "body": body.encode()}),
        ("s-8", GATE_UNREADABLE, "webhook", {**trace, "body": unnamed.encode()}),
        # nothing of a body over the cap is kept
        (None, GATE_UNREADABLE, "webhook", {**trace, "body": None}),
        (None, GATE_UNREADABLE, "webhook", {**trace, "body": None}),
    ]


@pytest.mark.parametrize(
    ("path", "root", "below"),
    [
        ("/hooks/x", "", "/hooks/x"),
        ("/agent/hooks/x", "/agent", "/hooks/x"),
        ("/agent", "/agent", ""),
        ("/agentx/hooks", "/agent", "/agentx/hooks"),
        ("/other/hooks", "/agent", "/other/hooks"),
    ],
)
def test_route_path_below_the_mount_point(path: str, root: str, below: str) -> None:
    assert route_path({"path": path, "root_path": root}) == below
    if not root:
        assert route_path({"path": path}) == below


def test_validation_details_name_each_path_or_the_body() -> None:
    class Model(BaseModel):
        items: list[int]

    with pytest.raises(ValidationError) as nested:
        Model.model_validate({"items": [1, "x"]})
    assert validation_details(nested.value) == [
        {
            "path": "items.1",
            "message": "Input should be a valid integer, unable to parse string as an integer",
        }
    ]
    with pytest.raises(ValidationError) as whole:
        TypeAdapter(int).validate_python("x")
    assert validation_details(whole.value) == [
        {
            "path": "(body)",
            "message": "Input should be a valid integer, unable to parse string as an integer",
        }
    ]


def test_the_webhook_is_an_asgi_endpoint_below_a_mount_point() -> None:
    """Served alone (no auth in front, so the request's own headers are read) and mounted at
    /agent: the gate's answer, and its safe decision for an input it cannot read."""
    webhook = Webhook(_gate_app(), max_body_bytes=300, require_event_header=False)
    event = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}})

    async def post(root: str, path: str, content: bytes) -> httpx.Response:
        transport = httpx.ASGITransport(app=webhook, root_path=root)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.post(path, content=content)

    allowed = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    for root, path in (("", "/hooks/gate"), ("/agent", "/agent/hooks/gate")):
        answered = asyncio.run(post(root, path, event.encode()))
        assert (answered.status_code, answered.json()) == (200, allowed)
        unreadable = asyncio.run(post(root, path, b"[]"))
        assert (unreadable.status_code, unreadable.json()) == (200, GATE_UNREADABLE)
    missing = asyncio.run(post("/agent", "/agent/hooks/other", event.encode()))
    assert missing.status_code == 404


def _read(messages: list[dict[str, Any]], limit: int, first: bool = False) -> bytes:
    """read_body over these ASGI messages; ``first``: the first one handed in as received."""
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    async def read() -> bytes:
        return await read_body(receive, limit, queue.pop(0) if first else None)

    body = asyncio.run(read())
    assert queue == []  # every message read, none past the last
    return body


REQUEST = "http.request"


@pytest.mark.parametrize("first", [False, True], ids=["received", "handed-in"])
def test_read_body_joins_the_messages_up_to_the_limit(first: bool) -> None:
    assert _read([{"type": REQUEST, "body": b"abc"}], 3, first) == b"abc"
    assert _read([{"type": REQUEST}], 3, first) == b""
    chunked = [
        {"type": REQUEST, "body": b"ab", "more_body": True},
        {"type": REQUEST, "more_body": True},
        {"type": REQUEST, "body": b"cd", "more_body": True},
        {"type": REQUEST, "body": b"e"},
    ]
    assert _read(chunked, 5, first) == b"abcde"
    with pytest.raises(BodyTooLarge):
        _read([{"type": REQUEST, "body": b"abcd"}], 3, first)
    with pytest.raises(BodyTooLarge):
        _read(chunked, 4, first)
    with pytest.raises(ClientDisconnected):
        _read([{"type": "http.disconnect"}], 3, first)
    with pytest.raises(ClientDisconnected):
        _read([{"type": REQUEST, "body": b"ab", "more_body": True}, {"type": "http.disconnect"}], 9)


@pytest.mark.parametrize(
    ("body", "event", "expected"),
    [
        (b"[1]", "PreToolUse", ("not_an_object", "the body must be a JSON object (a hook input)")),
        (b"[1]", None, ("not_an_object", "the body must be a JSON object (a hook input)")),
        (b"{nope}", None, ("malformed_json", "the body is not valid JSON")),
        (b'{"session_id": 1}', "Stop", ("invalid_event", "the hook input failed validation")),
        (b'{"session_id": 1}', None, ("invalid_event", "the hook input failed validation")),
        (
            b'{"hook_event_name": "Stop", "session_id": 1}',
            None,
            ("invalid_event", "the hook input failed validation"),
        ),
    ],
)
def test_a_bad_hook_input_is_refused_with_its_code_and_message(body, event, expected):
    with pytest.raises(HTTPError) as info:
        parse_hook_input(body, event)
    assert (info.value.status, info.value.code, info.value.message) == (400, *expected)
    assert str(info.value) == expected[1]


def test_an_input_without_an_event_name_says_so():
    with pytest.raises(HTTPError) as info:
        parse_hook_input(b'{"session_id": "s"}', None)
    assert info.value.details == [
        {"path": "hook_event_name", "message": "Field required (a non-empty string)"}
    ]
