"""A handler's own route (``POST /hooks/{name}``) answers on the webhook's fast path, with
what was decided at start-up; every answer it gives must be the general path's
(:meth:`Webhook.handle`) for the same request: same status, same body. The fast path's answers
come from real uvicorn; the general path's from the same app's Webhook, in process."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, NamedTuple

import httpx
import pytest

from handler_kit import (
    HookApp,
    PermissionRequest,
    PreToolUse,
    Stop,
    UserPromptSubmit,
    allow,
    ask,
    block,
    context,
    deny,
    halt,
    rewrite,
)
from handler_kit.config import ServerConfig
from handler_kit.core.events import EVENT_MODELS
from handler_kit.core.outputs import Output, OutputError
from handler_kit.core.vocabulary import dump_json
from handler_kit.server.webhook import HTTPError, Webhook, _OutputJSON
from handler_kit.testing import running_server
from tests.server.support import TOKEN, client_for
from tests.support.apps import webhook

MAX_BODY = 4096


def pre(tool: str = "issue_refund", **fields: Any) -> bytes:
    event = {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "tool_name": tool,
        "tool_input": {"amount": 640},
        **fields,
    }
    return json.dumps(event).encode()


# (route, body, headers): every branch of the route's path
CASES: list[tuple[str, bytes, dict[str, str]]] = [
    ("gate", pre(), {"X-Runbear-Hook-Event": "PreToolUse"}),
    ("gate", pre(), {}),
    ("gate", pre("lookup_order"), {}),  # the matcher does not match: no opinion
    ("gate", pre(tool_input={"amount": 40}), {}),
    ("named_only", pre("special_tool"), {}),
    ("named_only", pre("issue_refund"), {}),
    ("gate", b"{not json", {}),  # fail-closed gate: its safe decision
    ("named_only", b"{not json", {}),  # not fail-closed: 400
    ("named_only", b"[1, 2]", {}),
    ("named_only", b'"text"', {}),
    ("named_only", pre(session_id=5), {}),  # validation fails
    ("gate", pre(session_id=5), {}),
    ("named_only", b'{"hook_event_name": "PreToolUse", "x": "\\udc8f"}', {}),
    ("named_only", pre(), {"X-Runbear-Hook-Event": "PostToolUse"}),  # header mismatch
    ("gate", pre(), {"X-Runbear-Hook-Event": "Stop"}),
    ("named_only", json.dumps({"hook_event_name": "Stop"}).encode(), {}),  # event mismatch
    (
        "named_only",
        json.dumps({"hook_event_name": "Stop"}).encode(),
        {"X-Runbear-Hook-Event": "PreToolUse"},
    ),
    (
        "named_only",
        json.dumps({"hook_event_name": "Stop"}).encode(),
        {"X-Runbear-Hook-Event": "Stop"},
    ),
    ("gate", pre(pad="x" * MAX_BODY), {}),  # over the body cap: the gate's safe decision
    ("named_only", pre(pad="x" * MAX_BODY), {}),  # 413
    ("gate", pre("crash_gate"), {}),
    (
        "raises",
        json.dumps({"hook_event_name": "PostToolUse", "tool_name": "crash_tool"}).encode(),
        {},
    ),
]


@pytest.fixture(scope="module")
def fast() -> Any:
    config = ServerConfig(tokens=[TOKEN], max_body_bytes=MAX_BODY)
    with running_server(webhook.app, tls=True, config=config) as running:
        yield running


def general(route: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    """The general path's answer, :meth:`Webhook.handle`, for the same request."""
    hook = Webhook(webhook.app, max_body_bytes=MAX_BODY, require_event_header=False)
    scope = {
        "type": "http",
        "method": "POST",
        "path": f"/hooks/{route}",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        + [(b"content-length", str(len(body)).encode())],
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        answer = asyncio.run(hook.handle(scope, receive))
    except HTTPError as error:
        return error.status, json.loads(error.body())
    return 200, json.loads(answer)


@pytest.mark.parametrize(("route", "body", "headers"), CASES)
def test_the_fast_path_answers_as_the_general_path(
    fast: Any, route: str, body: bytes, headers: dict[str, str]
) -> None:
    with client_for(fast) as client:
        response = client.post(
            f"/hooks/{route}",
            content=body,
            headers={"Content-Type": "application/json", **headers},
        )
    assert (response.status_code, response.json()) == general(route, body, headers)


def test_a_body_in_several_messages_is_read_whole(fast: Any) -> None:
    def chunks() -> Any:
        body = pre()
        yield body[:10]
        yield body[10:]

    with client_for(fast) as client:
        response = client.post("/hooks/gate", content=chunks())
    assert response.status_code == 200
    assert response.json()["hookSpecificOutput"]["permissionDecision"] == "deny"


# -- the direct route: an async handler, no wrappers, nothing observing -----------------------
#
# Its route runs the handler's first step itself and writes a plain answer (a decision and its
# reason) from templates, with no Invocation or Answer; every other outcome goes on to the
# general answer. Each case below is one outcome of that route; its answer must be the
# general path's byte for byte, with the same status and headers, and the same as the answer
# of the same app with an observer (the general answer path).

direct = HookApp("direct-routes")
SURROGATE = "refused: \udc8f"
ODD_REASON = 'refused: "quoted" \\ back\nslash, é ✓ \x7f'


@direct.pre_tool_use(fail_closed=True, timeout=1.0)
async def closed(event: PreToolUse) -> Any:
    return await _outcome(event)


@direct.pre_tool_use(timeout=1.0)
async def open_(event: PreToolUse) -> Any:
    return await _outcome(event)


# the same outcomes from handlers whose code has no await: their route awaits them itself
@direct.pre_tool_use(fail_closed=True, timeout=1.0)
async def closed_now(event: PreToolUse) -> Any:
    return _decide(event)


@direct.pre_tool_use(timeout=1.0)
async def open_now(event: PreToolUse) -> Any:
    return _decide(event)


# the same four routes with a short deadline, for the cases that run through it (the routes
# above keep a deadline no answer on a loaded machine comes near)
SHORT_DEADLINE = 0.3


@direct.pre_tool_use(fail_closed=True, timeout=SHORT_DEADLINE)
async def closed_short(event: PreToolUse) -> Any:
    return await _outcome(event)


@direct.pre_tool_use(timeout=SHORT_DEADLINE)
async def open_short(event: PreToolUse) -> Any:
    return await _outcome(event)


@direct.pre_tool_use(fail_closed=True, timeout=SHORT_DEADLINE)
async def closed_short_now(event: PreToolUse) -> Any:
    return _decide(event)


@direct.pre_tool_use(timeout=SHORT_DEADLINE)
async def open_short_now(event: PreToolUse) -> Any:
    return _decide(event)


@direct.pre_tool_use(matcher="^issue_refund$")
async def matched(event: PreToolUse) -> Any:
    return deny("matched")


@direct.stop()
async def stop_gate(event: Stop) -> Any:
    return block("cite the ticket")


@direct.user_prompt_submit(fail_closed=True)
async def prompt_gate(event: UserPromptSubmit) -> Any:
    if event.prompt == "halt":
        return halt("stopped")
    if event.prompt == "context":
        return context("x" * 20_000)
    if event.prompt == "empty":
        return Output()
    return block(f"not this prompt: {event.prompt}")


@direct.permission_request()
async def permission(event: PermissionRequest) -> Any:
    if event.tool_name == "ok":
        return allow()
    return deny("no permission")


class Special(Output):
    """A subclass of the helpers' output: rendered, not templated."""


async def _outcome(event: PreToolUse) -> Any:
    if event.tool_name == "suspend":
        await asyncio.sleep(0)
        return deny("after a step")
    if event.tool_name == "hang":
        await asyncio.sleep(30)
    return _decide(event)


def _decide(event: PreToolUse) -> Any:
    tool = event.tool_name
    if tool == "deny":
        return deny("Refunds over $500 need a human approver.")
    if tool == "dynamic":
        return deny(f"refused call {event.tool_use_id}")
    if tool == "odd":
        return deny(ODD_REASON)
    if tool == "surrogate":
        return deny(SURROGATE)
    if tool == "allow":
        return allow()
    if tool == "ask":
        return ask("sure?")
    if tool == "defer":
        return Output(decision="defer")
    if tool == "reason_only":
        return Output(reason="said nothing")
    if tool == "rewrite":
        return rewrite({"amount": 1})
    if tool == "system":
        return Output(decision="deny", reason="r", system_message="m")
    if tool == "empty_extras":
        return Output(decision="deny", reason="r", specific={}, extra={})
    if tool == "subclass":
        return Special(decision="deny", reason="special")
    if tool == "text":
        return "some context"
    if tool == "dict":
        return {"hookSpecificOutput": {"permissionDecision": "ask"}}
    if tool == "bad_dict":
        return {"hookSpecificOutput": {"permisionDecision": "ask"}}
    if tool == "not_json":
        return Output(decision="deny", reason="r", extra={"x": object()})
    if tool == "reason_object":
        return Output(decision="deny", reason=object())  # type: ignore[arg-type]
    if tool == "block":
        return block("PreToolUse has no block")
    if tool == "raise":
        raise RuntimeError("boom")
    if tool == "late":
        # holds the loop through the deadline (however slow the machine): a timeout
        time.sleep(SHORT_DEADLINE + 0.2)
        return deny("late")
    return None


def _pre(tool: str, **fields: Any) -> bytes:
    return pre(tool, tool_use_id="tu-1", **fields)


DIRECT_CASES: list[tuple[str, bytes, dict[str, str]]] = [
    *(
        (route, _pre(tool), {})
        for route in ("closed", "open_", "closed_now", "open_now")
        for tool in (
            "deny",
            "dynamic",
            "odd",
            "surrogate",
            "allow",
            "ask",
            "defer",
            "reason_only",
            "rewrite",
            "system",
            "empty_extras",
            "subclass",
            "text",
            "dict",
            "bad_dict",
            "not_json",
            "reason_object",
            "block",
            "raise",
            "suspend",
            "nothing",
        )
    ),
    ("closed", _pre("deny"), {"X-Runbear-Hook-Event": "PreToolUse"}),
    ("closed", _pre("deny"), {"X-Runbear-Hook-Event": "Stop"}),  # header mismatch
    ("open_", json.dumps({"hook_event_name": "Stop"}).encode(), {}),  # event mismatch
    ("closed", b"{not json", {}),  # fail closed: its safe decision
    ("open_", b"{not json", {}),  # 400
    ("open_", _pre("deny", session_id=5), {}),  # validation fails
    ("closed", _pre("deny", pad="x" * MAX_BODY), {}),  # over the cap
    ("open_", _pre("deny", pad="x" * MAX_BODY), {}),
    ("matched", _pre("issue_refund"), {}),
    ("matched", _pre("lookup_order"), {}),  # no match: no opinion
    ("stop_gate", json.dumps({"hook_event_name": "Stop"}).encode(), {}),
    (
        "stop_gate",
        json.dumps({"hook_event_name": "Stop", "stop_hook_active": True}).encode(),
        {},
    ),  # loop guarded
    *(
        (
            "prompt_gate",
            json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt}).encode(),
            {},
        )
        for prompt in ("halt", "context", "empty", "drop table")
    ),
    *(
        (
            "permission",
            json.dumps({"hook_event_name": "PermissionRequest", "tool_name": tool}).encode(),
            {},
        )
        for tool in ("ok", "no")
    ),
]
# the deadline cases: slower, so fewer
TIMEOUT_CASES = [
    ("closed_short", _pre("hang"), {}),
    ("open_short", _pre("hang"), {}),
    ("closed_short_now", _pre("late"), {}),
    ("open_short_now", _pre("late"), {}),
]


def _recorded(answer: Any, transport: str, context: dict[str, Any]) -> None:
    OBSERVED.append(answer)


OBSERVED: list[Any] = []


@pytest.fixture(scope="module")
def direct_servers() -> Any:
    config = ServerConfig(tokens=[TOKEN], max_body_bytes=MAX_BODY)
    observed = direct.extended(observers=(_recorded,))
    with (
        running_server(direct, config=config) as plain,
        running_server(observed, config=config) as watched,
        httpx.Client(base_url=plain.url, timeout=10) as plain_client,
        httpx.Client(base_url=watched.url, timeout=10) as watched_client,
    ):
        yield plain_client, watched_client


def _wire(client: httpx.Client, route: str, body: bytes, headers: dict[str, str]) -> Answered:
    response = client.post(
        f"/hooks/{route}",
        content=body,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json", **headers},
    )
    kept = {"content-type", "content-length", "allow"}
    return Answered(
        response.status_code,
        sorted((k, v) for k, v in response.headers.items() if k in kept),
        response.content,
    )


def _general(hook_app: HookApp, route: str, body: bytes, headers: dict[str, str]) -> Answered:
    """:meth:`Webhook.handle`'s answer, with the headers the webhook sends with it."""
    hook = Webhook(hook_app, max_body_bytes=MAX_BODY, require_event_header=False)
    scope = {
        "type": "http",
        "method": "POST",
        "path": f"/hooks/{route}",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        + [(b"content-length", str(len(body)).encode())],
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        content = asyncio.run(hook.handle(scope, receive))
        status, extra = 200, []
    except HTTPError as error:
        content, status, extra = error.body(), error.status, error.headers
    sent = [
        ("content-length", str(len(content))),
        ("content-type", "application/json"),
        *((k.decode(), v.decode()) for k, v in extra),
    ]
    return Answered(status, sorted(sent), content)


class Answered(NamedTuple):
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def _check(
    servers: Any, case: tuple[str, bytes, dict[str, str]], observed: bool = True
) -> Answered:
    plain, watched = servers
    route, body, headers = case
    fast = _wire(plain, route, body, headers)
    assert fast == _general(direct, route, body, headers)
    if not observed:
        return fast
    before = len(OBSERVED)
    assert _wire(watched, route, body, headers) == fast
    if fast.status in (200, 500):  # an answer (not a 4xx): observed, on the general path
        assert len(OBSERVED) == before + 1
    return fast


def test_routes_of_async_handlers_without_observers_are_direct() -> None:
    def routes(hook_app: HookApp) -> dict[str, Any]:
        return Webhook(hook_app, max_body_bytes=MAX_BODY, require_event_header=False)._routes

    served = routes(direct)
    assert all(route.direct for route in served.values())
    assert served["/hooks/closed_now"].inline and served["/hooks/closed_short_now"].inline
    assert not served["/hooks/closed"].inline  # it awaits: stepped, under its deadline
    assert not served["/hooks/closed_short"].inline
    observed = routes(direct.extended(observers=(_recorded,)))
    assert not any(route.direct for route in observed.values())
    assert not routes(webhook.app)["/hooks/named_only"].direct  # sync: on the app's threads


@pytest.mark.parametrize("case", DIRECT_CASES)
def test_the_direct_route_answers_as_the_general_path(direct_servers: Any, case: Any) -> None:
    _check(direct_servers, case)


def test_the_direct_route_times_out_as_the_general_path(direct_servers: Any) -> None:
    for case in TIMEOUT_CASES:
        answered = _check(direct_servers, case, observed=False)
        if case[0].startswith("closed"):
            assert answered.status == 200 and b"fail closed" in answered.body
        else:
            assert answered.status == 500 and b"handler_timeout" in answered.body


def test_the_direct_route_refuses_a_wrong_token(direct_servers: Any) -> None:
    client, _ = direct_servers
    response = client.post(
        "/hooks/closed", content=_pre("deny"), headers={"Authorization": "Bearer nope" * 4}
    )
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"


def test_plain_outputs_are_written_as_rendered() -> None:
    """The templates write every plain output of every event as ``dump_json(render)`` does."""
    reasons = [None, "r", ODD_REASON, "", "x" * 2000, "ünï", 'a"b', "\x00", "\u2028"]
    decisions = [None, "allow", "deny", "ask", "defer", "block"]
    for event in EVENT_MODELS:
        encoder = _OutputJSON(event)
        for decision in decisions:
            for reason in reasons * 2:  # the second time from the kept bodies
                output = Output(decision=decision, reason=reason)
                try:
                    output.check(event)
                except OutputError:
                    continue
                expected = dump_json(output.render(event))
                assert encoder.encode(output) == expected, (event, decision, reason)
