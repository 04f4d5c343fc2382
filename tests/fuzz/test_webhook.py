"""Properties of the webhook, through the real ASGI app (in process, for speed, so an exception
the app raises reaches the test) and, for a small fixed sample, through real uvicorn.

Any JSON value or byte string within the body cap gets a 200 or a JSON 4xx, never a 500 or a
traceback; a fail-closed handler's own route answers its safe decision instead of a 4xx it
cannot read. Over the cap, a 413 (or that safe decision). Whatever a handler returns comes
back rendered, or as its failure policy: its safe decision when it fails closed, a JSON 500
otherwise.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from handler_kit import Output, rewrite
from handler_kit.core.outputs import SAFE_DECISIONS, normalize
from handler_kit.core.vocabulary import dump_json
from handler_kit.testing import running_server
from tests.fuzz.support import (
    CONFIG,
    HEADERS,
    MAX_BODY,
    OUTPUT_HANDLERS,
    RETURNS,
    ROUTES,
    check_answer,
    encode,
    event_headers,
    examples,
    handler_answers,
    hook_inputs,
    input_bytes,
    inputs_app,
    json_values,
    strict_json,
)

# The routes of inputs_app's fail-closed handlers: there an unreadable input is answered.
FAIL_CLOSED_ROUTES = {f"/hooks/{h.name}" for h in inputs_app.handlers if h.fail_closed}


async def _chunks(body: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


def post(
    loop: asyncio.Runner,
    http: httpx.AsyncClient,
    route: str,
    body: bytes,
    event_header: str | None = None,
    chunk: int | None = None,
) -> httpx.Response:
    """POST ``body`` to ``route``: in one piece with a Content-Length, or (``chunk``) as a
    stream of pieces of that size without one, as a chunked upload arrives."""
    # as bytes: a header is sent as it is, any latin-1 byte included
    headers = (
        {} if event_header is None else {"X-Runbear-Hook-Event": event_header.encode("latin-1")}
    )
    content: Any = body if chunk is None else _chunks(body, chunk)
    return loop.run(http.post(route, content=content, headers=headers))


def check_input_answer(route: str, response: httpx.Response) -> None:
    body = check_answer(response)
    if route in FAIL_CLOSED_ROUTES and response.status_code != 200:
        # a gate that cannot read its input answers its safe decision; only an input that
        # names another event is refused, as on every route
        assert body["error"] == "event_mismatch", body


chunking = st.none() | st.integers(1, 4096)


@settings(max_examples=examples(0.5))
@given(
    value=hook_inputs() | json_values(),
    route=st.sampled_from(ROUTES),
    header=event_headers,
    ascii_only=st.booleans(),
    chunk=chunking,
)
@example(
    value={"hook_event_name": "PreToolUse", "tool_name": "rewrite_tool", "tool_input": {"a": [1]}},
    route="/hooks",
    header=None,
    ascii_only=False,
    chunk=None,
)
def test_any_json_value_gets_a_200_or_a_json_4xx(
    loop: asyncio.Runner,
    inputs_http: httpx.AsyncClient,
    value: Any,
    route: str,
    header: str | None,
    ascii_only: bool,
    chunk: int | None,
) -> None:
    body = encode(value, ascii_only)
    if len(body) > MAX_BODY:
        return
    check_input_answer(route, post(loop, inputs_http, route, body, header, chunk))


@settings(max_examples=examples(0.5))
@given(body=input_bytes(), route=st.sampled_from(ROUTES), header=event_headers, chunk=chunking)
@example(body=b"\xff\xfe", route="/hooks/gate", header=None, chunk=None)
@example(
    body=b'{"hook_event_name": "PreToolUse"' + b"[" * 300, route="/hooks", header=None, chunk=7
)
def test_any_byte_string_gets_a_200_or_a_json_4xx(
    loop: asyncio.Runner,
    inputs_http: httpx.AsyncClient,
    body: bytes,
    route: str,
    header: str | None,
    chunk: int | None,
) -> None:
    if len(body) > MAX_BODY:
        return
    check_input_answer(route, post(loop, inputs_http, route, body, header, chunk))


@settings(max_examples=examples(0.1))
@given(
    extra=st.integers(1, MAX_BODY),
    route=st.sampled_from(ROUTES),
    chunk=st.none() | st.sampled_from([1024, 8192, MAX_BODY]),
)
def test_a_body_over_the_cap_gets_a_413(
    loop: asyncio.Runner, inputs_http: httpx.AsyncClient, extra: int, route: str, chunk: int | None
) -> None:
    head = b'{"hook_event_name": "PreToolUse", "tool_name": "gate_tool", "pad": "'
    body = head + b"x" * (MAX_BODY + extra - len(head) - 2) + b'"}'
    response = post(loop, inputs_http, route, body, None, chunk)
    answer = check_answer(response)
    if route in FAIL_CLOSED_ROUTES:
        assert response.status_code == 200, answer
    elif route == "/hooks/nobody":
        assert answer["error"] == "unknown_handler"
    else:
        assert (response.status_code, answer["error"]) == (413, "body_too_large")


# -- whatever a handler returns ------------------------------------------------------------

_INPUTS = {
    "PreToolUse": {"tool_name": "t", "tool_input": {"amount": 1}},
    "PermissionRequest": {"tool_name": "t", "tool_input": {}},
    "UserPromptSubmit": {"prompt": "hello"},
    "PostToolUse": {"tool_name": "t", "tool_input": {}, "tool_response": {"ok": True}},
    "Stop": {"last_assistant_message": "done"},
    "SessionStart": {"source": "startup"},
    "Notification": {"message": "hi"},
}


def hook_input(event: str) -> bytes:
    return encode({"hook_event_name": event, "session_id": "s1", **_INPUTS[event]})


def expected_answer(event: str, value: Any) -> Any:
    """The body a lone handler's ``value`` must come back as; None when it is not one the
    event can carry, or holds a value strict JSON cannot carry, rendered or not (then the
    handler has failed)."""
    try:
        out = normalize(event, value)
        held = (out.updated_input, out.specific, out.extra, out.reason, out.context)
        strict_json(dump_json((*held, out.stop_reason, out.system_message)))
        return strict_json(dump_json(out.render(event)))
    except Exception:
        return None


@settings(max_examples=examples(0.5))
@given(data=st.data(), handler=st.sampled_from(OUTPUT_HANDLERS))
@example(data=rewrite({"a": math.nan}), handler=OUTPUT_HANDLERS[0])
@example(data=rewrite({"a": b"raw"}, reason="\udc8f"), handler=OUTPUT_HANDLERS[0])
@example(
    data=Output(decision="deny", reason="r", extra={"x": math.inf}), handler=OUTPUT_HANDLERS[0]
)
# held but not rendered (no verdict to carry it): still the handler's bug
@example(data=Output(updated_input={"": math.nan}), handler=OUTPUT_HANDLERS[2])
def test_any_handler_answer_is_rendered_or_its_failure_policy(
    loop: asyncio.Runner, outputs_http: httpx.AsyncClient, data: Any, handler: Any
) -> None:
    name, event, fail_closed = handler
    value = (
        data.draw(handler_answers(event), label="value")
        if isinstance(data, st.DataObject)
        else data
    )
    RETURNS.clear()
    RETURNS[name] = value
    response = post(loop, outputs_http, f"/hooks/{name}", hook_input(event))
    body = check_answer(response, allowed_5xx=True)
    expected = expected_answer(event, value)
    if expected is not None:
        assert (response.status_code, body) == (200, expected)
    elif fail_closed:
        assert response.status_code == 200, body
        safe = SAFE_DECISIONS[event]
        if safe == "deny":
            assert body["hookSpecificOutput"]["permissionDecision"] == "deny", body
        else:
            assert body["decision"] == "block", body
    else:
        assert (response.status_code, body["error"]) == (500, "handler_failed"), body


@settings(max_examples=examples(0.5))
@given(data=st.data(), event=st.sampled_from(sorted({e for _, e, _ in OUTPUT_HANDLERS})))
def test_merged_answers_are_json_and_fail_closed_events_always_answer(
    loop: asyncio.Runner, outputs_http: httpx.AsyncClient, data: Any, event: str
) -> None:
    """POST /hooks runs every handler of the event; with a fail-closed one among them the
    answer is a 200 whatever they return."""
    RETURNS.clear()
    for name, handler_event, _ in OUTPUT_HANDLERS:
        if handler_event == event:
            RETURNS[name] = data.draw(handler_answers(event), label=name)
    response = post(loop, outputs_http, "/hooks", hook_input(event))
    check_answer(response, allowed_5xx=True)
    if any(closed for _, e, closed in OUTPUT_HANDLERS if e == event):
        assert response.status_code == 200


# -- a fixed sample through real uvicorn ---------------------------------------------------


@pytest.fixture(scope="module")
def uvicorn_http() -> Iterator[httpx.Client]:
    with (
        running_server(inputs_app, config=CONFIG) as server,
        httpx.Client(base_url=server.url, headers=HEADERS, timeout=30) as client,
    ):
        yield client


@settings(max_examples=30, derandomize=True)
@given(body=input_bytes(), route=st.sampled_from(ROUTES))
def test_real_uvicorn_answers_a_sample_the_same_way(
    uvicorn_http: httpx.Client, body: bytes, route: str
) -> None:
    if len(body) > MAX_BODY:
        return
    check_input_answer(route, uvicorn_http.post(route, content=body))
