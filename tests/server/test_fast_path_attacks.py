"""A hostile review of the fast paths: the webhook's routes, the MCP fast path and the HTTP
protocol's head limits, attacked with the handlers and inputs a fast path is most likely to
get wrong. A fail-closed gate must answer its safe decision for every failure it can observe,
whatever the handler raised; the MCP fast path must answer as the SDK, byte for byte.

Real uvicorn on 127.0.0.1 throughout: the webhook and MCP servers in a thread, the protocol
attacks over raw sockets against uvicorn running handler-kit's own protocol class."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

import httpx
import pytest

from handler_kit import HookApp, PreToolUse, allow, deny
from handler_kit.config import ServerConfig
from handler_kit.core.outputs import Output
from handler_kit.server._protocols import protocol_class
from handler_kit.server.app import create_asgi_app
from handler_kit.testing import HookClient, running_server
from tests.server.mcp.support import JSON_HEADERS
from tests.server.support import TOKEN

MAX_BODY = 4096
DEADLINE = 0.5


class CaughtUp(BaseException):
    """A BaseException of the app's own (some libraries signal with one)."""


class LyingDecision(str):
    """Renders as its value, but hashes and compares as ``"allow"``: a cache keyed by
    equality takes it for the allow it is not."""

    def __hash__(self) -> int:
        return hash("allow")

    def __eq__(self, other: object) -> bool:
        return other == "allow" or str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)


class LyingReason(str):
    """Compares equal to every string and hashes as a reason the route has answered before."""

    def __hash__(self) -> int:
        return hash("cached reason")

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False


async def _decides_at_once(event: PreToolUse) -> Any:
    return None


class LyingCode:
    """A callable whose ``__code__`` (that of a function without an await) is not the code its
    call runs: it looks like a function to :func:`inspect.iscoroutinefunction`, and a
    bytecode check of ``__code__`` would take it for one that cannot suspend. Compiled
    functions (Cython) are such objects."""

    __name__ = "lying_code"
    __qualname__ = "lying_code"
    __defaults__ = None
    __kwdefaults__ = None
    __annotations__: dict[str, Any] = {}

    __code__ = _decides_at_once.__code__

    async def __call__(self, event: PreToolUse) -> Any:
        await asyncio.Event().wait()  # never set: only the deadline ends this call
        return allow()


async def _own_task_cancelled() -> None:
    task = asyncio.ensure_future(asyncio.sleep(30))
    await asyncio.sleep(0)
    task.cancel()
    await task  # raises the CancelledError of a task of the handler's own


def _outcome(tool: str) -> Any:
    if tool == "liar":
        return Output(decision=LyingDecision("deny"), reason="r")
    if tool == "cached_reason":
        return deny("cached reason")
    if tool == "lying_reason":
        return deny(LyingReason("another reason"))
    if tool == "cancelled":
        raise asyncio.CancelledError
    if tool == "generator_exit":
        raise GeneratorExit
    if tool == "system_exit":
        raise SystemExit(0)
    if tool == "own_base_exception":
        raise CaughtUp
    if tool == "dict_subclass":
        return type("Answer", (dict,), {})(
            {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}
        )
    return deny("no")


attacks = HookApp("fast-path-attacks")


# a handler without an await (its route awaits it itself) and one with (stepped), each fail
# closed and not
@attacks.pre_tool_use(fail_closed=True, timeout=5.0)
async def closed_now(event: PreToolUse) -> Any:
    return _outcome(event.tool_name or "")


@attacks.pre_tool_use(timeout=5.0)
async def open_now(event: PreToolUse) -> Any:
    return _outcome(event.tool_name or "")


@attacks.pre_tool_use(fail_closed=True, timeout=5.0)
async def closed_stepped(event: PreToolUse) -> Any:
    await asyncio.sleep(0)
    if event.tool_name == "own_task":
        await _own_task_cancelled()
    return _outcome(event.tool_name or "")


@attacks.pre_tool_use(timeout=5.0)
async def open_stepped(event: PreToolUse) -> Any:
    await asyncio.sleep(0)
    if event.tool_name == "own_task":
        await _own_task_cancelled()
    return _outcome(event.tool_name or "")


attacks.on("PreToolUse", fail_closed=True, timeout=DEADLINE, name="lying_closed")(LyingCode())
attacks.on("PreToolUse", timeout=DEADLINE, name="lying_open")(LyingCode())

observed_attacks = attacks.extended(observers=(lambda answer, transport, context: None,))

TOOLS = [
    "liar",
    "cached_reason",
    "lying_reason",
    "cancelled",
    "generator_exit",
    "system_exit",
    "own_base_exception",
    "dict_subclass",
]


def pre(tool: str) -> bytes:
    event = {"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": tool}
    return json.dumps({**event, "tool_input": {"amount": 640}, "tool_use_id": "tu-1"}).encode()


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[httpx.Client, httpx.Client]]:
    config = ServerConfig(tokens=[TOKEN], max_body_bytes=MAX_BODY)
    with (
        running_server(attacks, config=config) as plain,
        running_server(observed_attacks, config=config) as watched,
        httpx.Client(base_url=plain.url, timeout=10) as plain_client,
        httpx.Client(base_url=watched.url, timeout=10) as watched_client,
    ):
        yield plain_client, watched_client


class Answered(NamedTuple):
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def _wire(client: httpx.Client, route: str, body: bytes) -> Answered:
    response = client.post(
        f"/hooks/{route}",
        content=body,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    kept = {"content-type", "content-length", "allow"}
    return Answered(
        response.status_code,
        sorted((k, v) for k, v in response.headers.items() if k in kept),
        response.content,
    )


def _both(servers: Any, route: str, body: bytes) -> Answered:
    """The route's answer, from the app (the first server; the second observes its answers)."""
    return _wire(servers[0], route, body)


@pytest.mark.parametrize("tool", TOOLS)
def test_odd_outputs_and_base_exceptions_get_their_expected_answer(servers: Any, tool: str) -> None:
    for route in ("closed_now", "open_now", "closed_stepped", "open_stepped"):
        _both(servers, route, pre("cached_reason"))  # the route's reason cache holds it
        answered = _both(servers, route, pre(tool))
        assert answered.headers[1] == ("content-type", "application/json"), answered
        body = json.loads(answered.body)
        if tool == "liar":  # it renders as deny, so it is one on every path
            assert body["hookSpecificOutput"]["permissionDecision"] == "deny"
        elif tool in ("cached_reason", "lying_reason"):
            # a reason that compares equal to every other is written as its own text
            reason = "cached reason" if tool == "cached_reason" else "another reason"
            assert body["hookSpecificOutput"] == {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        elif tool == "dict_subclass":
            assert body == {
                "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}
            }
        elif tool in ("cancelled", "generator_exit", "system_exit", "own_base_exception"):
            if route.startswith("closed"):
                assert answered.status == 200
                assert body["hookSpecificOutput"]["permissionDecision"] == "deny"
                assert "fail closed" in body["hookSpecificOutput"]["permissionDecisionReason"]
            else:
                assert (answered.status, body["error"]) == (500, "handler_failed")


def test_a_cancelled_task_of_the_handlers_own_is_its_failure(servers: Any) -> None:
    closed = _both(servers, "closed_stepped", pre("own_task"))
    assert closed.status == 200 and b"fail closed" in closed.body
    opened = _both(servers, "open_stepped", pre("own_task"))
    assert opened.status == 500 and json.loads(opened.body)["error"] == "handler_failed"


def test_a_handler_whose_code_object_lies_keeps_its_deadline(servers: Any) -> None:
    """Its call suspends for ever: only the deadline answers it, on the direct route too."""
    closed = _both(servers, "lying_closed", pre("any"))
    assert closed.status == 200 and b"did not answer in time" in closed.body
    opened = _both(servers, "lying_open", pre("any"))
    assert (opened.status, json.loads(opened.body)["error"]) == (500, "handler_timeout")


# -- MCP: the same handlers as tools, fast path against the SDK ------------------------------


@pytest.fixture(scope="module")
def mcp_twins() -> Iterator[tuple[httpx.Client, httpx.Client]]:
    fast_config = ServerConfig(tokens=[TOKEN])
    sdk_config = ServerConfig(tokens=[TOKEN], mcp_fast_path=False)
    with (
        running_server(attacks, config=fast_config) as fast,
        running_server(attacks, config=sdk_config) as sdk,
        httpx.Client(base_url=fast.url, timeout=10) as fast_client,
        httpx.Client(base_url=sdk.url, timeout=10) as sdk_client,
    ):
        yield fast_client, sdk_client


def _rpc(tool: str, arguments: dict[str, Any], request_id: Any = 1) -> bytes:
    params = {"name": tool, "arguments": arguments}
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    ).encode()


MCP_CASES = [
    *(("closed_stepped", tool, 1) for tool in [*TOOLS, "own_task"]),
    *(("open_now", tool, 1) for tool in ("cancelled", "system_exit", "liar")),
    ("lying_closed", "any", 1),
    # ids at the edges of what the fast path takes, and just past them (the SDK answers)
    ("closed_now", "cached_reason", 2**53 - 1),
    ("closed_now", "cached_reason", -(2**53) + 1),
    ("closed_now", "cached_reason", 2**53),
    ("closed_now", "cached_reason", ""),
    ("closed_now", "cached_reason", "\u2028\x00\"'"),
    ("closed_now", "cached_reason", -0.0),
]


@pytest.mark.parametrize(("tool_name", "tool", "request_id"), MCP_CASES)
def test_mcp_tools_answer_as_the_sdk(
    mcp_twins: Any, tool_name: str, tool: str, request_id: Any
) -> None:
    headers = {**JSON_HEADERS, "Authorization": f"Bearer {TOKEN}"}
    body = _rpc(tool_name, {"tool_name": tool, "session_id": "s1"}, request_id)
    answers = []
    for client in mcp_twins:
        response = client.post("/mcp", content=body, headers=headers)
        answers.append((response.status_code, response.headers["content-type"], response.content))
    assert answers[0] == answers[1]
    status, _, content = answers[0]
    if type(request_id) is float:  # not an id the fast path takes: the SDK's own answer
        return
    assert status == 200
    result = json.loads(content)["result"]
    text = result["content"][0]["text"]
    if tool_name.startswith(("closed", "lying_closed")):  # fail closed: the deny, no error
        assert not result.get("isError")
        assert json.loads(text)["hookSpecificOutput"]["permissionDecision"] == "deny"


# -- the HTTP protocol: head limits, malformed heads, pipelining, a head in pieces ------------

MAX_HEAD = 4096
PROTOCOL_TOKEN = "protocol-attack-token-0123456789"
ATTACKS_BODY = pre("cached_reason")


@pytest.fixture(scope="module")
def protocol_port() -> Iterator[int]:
    """uvicorn with handler-kit's protocol class (as ``handler-kit serve`` runs it)."""
    import uvicorn

    asgi = create_asgi_app(attacks, ServerConfig(tokens=[PROTOCOL_TOKEN]))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    http = protocol_class(
        keep_alive=5.0, head_timeout=5.0, max_head_bytes=MAX_HEAD, max_unanswered=250
    )
    config = uvicorn.Config(asgi, log_level="error", lifespan="on", http=http)  # type: ignore[arg-type]
    server = uvicorn.Server(config)
    server.config.setup_event_loop = lambda: None  # type: ignore[method-assign]
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        for _ in range(1000):
            if server.started:
                break
            time.sleep(0.01)
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def _request(extra: bytes = b"", path: bytes = b"/hooks/closed_now") -> bytes:
    return (
        b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s"
        % (path, PROTOCOL_TOKEN.encode(), len(ATTACKS_BODY), extra, ATTACKS_BODY)
    )


def _head_bytes(extra_name: bytes) -> int:
    """What the protocol counts of ``_request``'s head before an extra header's value: the
    URL and each header's name and value."""
    return sum(
        map(
            len,
            (
                b"/hooks/closed_now",
                b"Host127.0.0.1",
                b"AuthorizationBearer " + PROTOCOL_TOKEN.encode(),
                b"Content-Typeapplication/json",
                b"Content-Length%d" % len(ATTACKS_BODY),
                extra_name,
            ),
        )
    )


def _exchange(port: int, data: bytes, piece: int | None = None, close: bool = True) -> bytes:
    """Send ``data`` (in pieces of ``piece`` bytes, each its own TCP segment) and read until
    the server closes the connection, or for a while when it keeps it open."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if piece is None:
            sock.sendall(data)
        else:
            for start in range(0, len(data), piece):
                sock.sendall(data[start : start + piece])
                time.sleep(0.0005)
        if not close:
            sock.settimeout(1.0)
        reply = b""
        with contextlib.suppress(TimeoutError):
            while chunk := sock.recv(65536):
                reply += chunk
        return reply


def _answers(reply: bytes) -> list[tuple[int, Any]]:
    """(status, JSON body) of each response in ``reply``."""
    found = []
    while reply:
        head, _, rest = reply.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        length = next(
            int(line.split(b":", 1)[1])
            for line in lines
            if line.lower().startswith(b"content-length:")
        )
        assert any(line.lower() == b"content-type: application/json" for line in lines), head
        found.append((status, json.loads(rest[:length])))
        reply = rest[length:]
    return found


def test_a_head_exactly_at_the_limit_is_served_one_byte_more_is_431(protocol_port: int) -> None:
    room = MAX_HEAD - _head_bytes(b"X-Filler")
    at_limit = _exchange(protocol_port, _request(b"X-Filler: %s\r\n" % (b"a" * room)), close=False)
    assert [status for status, _ in _answers(at_limit)] == [200]
    over = _exchange(protocol_port, _request(b"X-Filler: %s\r\n" % (b"a" * (room + 1))))
    assert _answers(over) == [
        (431, {"error": "request_header_fields_too_large", "message": ANY_MESSAGE})
    ]


class _AnyMessage(str):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and bool(other)

    __hash__ = str.__hash__


ANY_MESSAGE = _AnyMessage("any message")


@pytest.mark.parametrize(
    ("label", "data"),
    [
        ("obs-fold", _request(b"X-Folded: 1\r\n  continued\r\n")),
        ("two content lengths", _request(b"Content-Length: %d\r\n" % len(ATTACKS_BODY))),
        ("content length and chunked", _request(b"Transfer-Encoding: chunked\r\n")),
        ("a NUL in a header", _request(b"X-Nul: a\x00b\r\n")),
        ("a long URL", _request(path=b"/hooks/closed_now?" + b"q" * MAX_HEAD)),
    ],
)
def test_a_malformed_or_oversized_head_is_a_json_4xx(
    protocol_port: int, label: str, data: bytes
) -> None:
    answers = _answers(_exchange(protocol_port, data))
    assert len(answers) == 1, label
    status, body = answers[0]
    assert status in (400, 431), label
    assert set(body) == {"error", "message"}, label


def test_pipelined_requests_and_a_head_in_pieces_are_each_answered(protocol_port: int) -> None:
    pipelined = _exchange(protocol_port, _request() * 3, close=False)
    assert [status for status, _ in _answers(pipelined)] == [200, 200, 200]
    in_pieces = _exchange(protocol_port, _request(), piece=7, close=False)
    assert _answers(in_pieces) == _answers(_exchange(protocol_port, _request(), close=False))


def test_the_in_process_client_raises_a_handlers_base_exception_as_a_failure() -> None:
    """``HookClient.for_app`` raises what a handler raised, a BaseException too (as an
    Exception naming it: a SystemExit would stop the client's portal), and the client goes on
    serving; without ``raise_handler_exceptions`` the answer is the gate's deny."""
    event = {"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "system_exit"}
    with HookClient.for_app(attacks) as client:
        with pytest.raises(RuntimeError, match="'closed_now' raised SystemExit") as raised:
            client.send(event, handler="closed_now")
        assert isinstance(raised.value.__cause__, SystemExit)
        assert client.send({**event, "tool_name": "x"}, handler="closed_now").output == deny("no")
    with HookClient.for_app(attacks, raise_handler_exceptions=False) as client:
        answer = client.send(event, handler="closed_now")
        assert answer.output is not None and answer.output.decision == "deny"
