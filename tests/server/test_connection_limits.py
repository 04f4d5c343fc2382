"""Connection exhaustion, against a real ``handler-kit serve``: connections that stay idle, or
send their request head a line at a time, are closed by the server; a request head over the
size limit is refused; past ``--max-connections`` a request is answered 503; and a worker at
its descriptor limit serves again once the idle connections are gone. Ordinary requests are
answered all along."""

from __future__ import annotations

import contextlib
import json
import selectors
import socket
import time
from collections.abc import Iterator

import httpx

from tests.support.processes import Process, clean_env, free_port, process, serve, serve_argv

APP = "example_servers.refund_gate:app"
TOKEN = "conn-limits-token-0123456789"
IDLE = 50
SLOW = 50
# Far above the timeouts the servers below are given: a server that closes nothing fails
# the tests, one that is merely slow does not.
DEADLINE = 20.0


def limits_env(**settings: str) -> dict[str, str]:
    return clean_env(HANDLER_KIT_TOKENS=TOKEN, **settings)


@contextlib.contextmanager
def serving(port: int, env: dict[str, str]) -> Iterator[Process]:
    """``handler-kit serve`` of the refund gate, once it answers (uvicorn logs its start-up
    before it listens)."""
    with serve(APP, port=port, env=env) as server:
        server.wait_healthy(f"http://127.0.0.1:{port}")
        yield server


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)


@contextlib.contextmanager
def connections(port: int, count: int) -> Iterator[list[socket.socket]]:
    opened = [connect(port) for _ in range(count)]
    try:
        yield opened
    finally:
        for sock in opened:
            sock.close()


def json_error(reply: bytes) -> str:
    """The ``error`` of a raw HTTP answer whose body must be a JSON error object."""
    head, _, content = reply.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head.lower(), head
    return str(json.loads(content)["error"])


def answered(port: int, timeout: float = DEADLINE) -> httpx.Response:
    """An ordinary webhook call, on a connection of its own."""
    event = {"hook_event_name": "SessionStart", "session_id": "s1", "source": "startup"}
    return httpx.post(
        f"http://127.0.0.1:{port}/hooks",
        json=event,
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=timeout,
    )


def wait_closed(
    idle: list[socket.socket], slow: list[socket.socket], deadline: float
) -> dict[socket.socket, bytes]:
    """Until the server has closed every socket, or ``deadline``; a header line every half
    second on each of ``slow`` meanwhile. Returns what each closed socket received."""
    selector = selectors.DefaultSelector()
    received: dict[socket.socket, bytes] = {}
    for sock in idle + slow:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        received[sock] = b""
    closed: dict[socket.socket, bytes] = {}
    next_line = 0.0
    while len(closed) < len(received) and time.monotonic() < deadline:
        if time.monotonic() >= next_line:
            next_line = time.monotonic() + 0.5
            for sock in slow:
                if sock not in closed:
                    with contextlib.suppress(OSError):  # closed by the server meanwhile
                        sock.send(b"X-Slow: 1\r\n")
        for key, _ in selector.select(timeout=0.1):
            ready = key.fileobj
            assert isinstance(ready, socket.socket)
            try:
                data = ready.recv(4096)
            except ConnectionResetError:
                data = b""
            if data:
                received[ready] += data
            else:
                closed[ready] = received[ready]
                selector.unregister(ready)
    selector.close()
    return closed


def test_idle_and_slow_header_connections_are_closed_while_requests_are_answered() -> None:
    port = free_port()
    env = limits_env(HANDLER_KIT_KEEP_ALIVE_TIMEOUT="1", HANDLER_KIT_HEADER_TIMEOUT="2")
    with (
        serving(port, env),
        connections(port, IDLE) as idle,
        connections(port, SLOW) as slow,
    ):
        for sock in slow:
            sock.sendall(b"POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        # answered while every one of them is open
        assert answered(port).status_code == 200
        closed = wait_closed(idle, slow, time.monotonic() + DEADLINE)
        assert sum(sock in closed for sock in idle) == IDLE
        assert sum(sock in closed for sock in slow) == SLOW
        assert all(closed[sock] == b"" for sock in idle)  # nothing was asked, nothing said
        assert all(closed[sock].startswith(b"HTTP/1.1 408 ") for sock in slow)
        assert all(json_error(closed[sock]) == "request_timeout" for sock in slow)
        assert answered(port).status_code == 200


def test_a_request_head_over_the_size_limit_is_answered_431() -> None:
    port = free_port()
    with serving(port, limits_env(HANDLER_KIT_MAX_HEADER_BYTES="4KiB")):
        head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: %s\r\n\r\n"
        with connections(port, 2) as (within, over):
            within.sendall(head % (b"a" * 3000))
            assert within.recv(4096).startswith(b"HTTP/1.1 200 ")
            over.sendall(head % (b"a" * 5000))
            reply = b""
            while chunk := over.recv(4096):  # until the server closes the connection
                reply += chunk
            assert reply.startswith(b"HTTP/1.1 431 "), reply
            assert json_error(reply) == "request_header_fields_too_large"
        assert answered(port).status_code == 200


def test_a_head_left_unfinished_over_the_size_limit_is_answered_431_without_its_end() -> None:
    port = free_port()
    # the head timeout far away: the 431 must come from the size, at the end of the read
    env = limits_env(HANDLER_KIT_MAX_HEADER_BYTES="4KiB", HANDLER_KIT_HEADER_TIMEOUT="60")
    with serving(port, env), connections(port, 1) as (sock,):
        sock.sendall(
            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: %s\r\nX-Next: 1\r\n"
            % (b"a" * 5000)
        )
        reply = b""
        while chunk := sock.recv(4096):  # until the server closes the connection
            reply += chunk
        assert reply.startswith(b"HTTP/1.1 431 "), reply
        assert json_error(reply) == "request_header_fields_too_large"


def test_past_max_connections_a_request_is_answered_503() -> None:
    port = free_port()
    limit = 5
    env = limits_env(
        HANDLER_KIT_MAX_CONNECTIONS=str(limit),
        HANDLER_KIT_KEEP_ALIVE_TIMEOUT="30",
        # every connection here is 127.0.0.1's: its share must not refuse them first
        HANDLER_KIT_MAX_UNANSWERED_PER_ADDRESS=str(limit),
    )
    with serving(port, env):
        # uvicorn counts the asking connection too: limit - 1 others fill the worker
        with connections(port, limit - 1) as held:
            for sock in held:  # each answered, so each is open on the server's side
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert sock.recv(4096).startswith(b"HTTP/1.1 200 ")
            refused = answered(port)
            assert refused.status_code == 503, refused.text
            assert refused.headers["content-type"] == "application/json"
            assert refused.json()["error"] == "service_unavailable"
        # closed on the client's side: the server notices, and answers again
        deadline = time.monotonic() + DEADLINE
        while (status := answered(port).status_code) == 503 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert status == 200


def test_a_request_httptools_cannot_parse_is_answered_400_in_json() -> None:
    port = free_port()
    with serving(port, limits_env()), connections(port, 1) as (sock,):
        sock.sendall(b"POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: x\r\n\r\n")
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
        assert reply.startswith(b"HTTP/1.1 400 "), reply
        assert json_error(reply) == "bad_request"


def test_a_worker_at_its_descriptor_limit_serves_again_once_idle_connections_close() -> None:
    port = free_port()
    env = limits_env(HANDLER_KIT_KEEP_ALIVE_TIMEOUT="1")
    # a worker with 128 descriptors, and more idle connections than that
    argv = ["sh", "-c", 'ulimit -n 128 && exec "$0" "$@"', *serve_argv(APP, port)]
    with process(argv, env) as server:
        server.wait_healthy(f"http://127.0.0.1:{port}")
        with connections(port, 200):
            # at the limit a new connection is closed at once (uvloop's way of refusing it),
            # so call again, as a runtime would, until the idle ones are gone
            deadline = time.monotonic() + DEADLINE
            while True:
                try:
                    response = answered(port, timeout=5)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, server.output()[-2000:]
                    time.sleep(0.2)
            assert response.status_code == 200


FLOOD = "127.0.0.2"  # another loopback address: the flood's, apart from the good client's


def connect_from(address: str, port: int) -> socket.socket:
    return socket.create_connection(
        ("127.0.0.1", port), timeout=DEADLINE, source_address=(address, 0)
    )


def refund_gate_call(port: int) -> httpx.Response:
    """The refund gate's route, asked about a refund over its limit, from 127.0.0.1."""
    event = {
        "session_id": "s1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "hook_event_name": "PreToolUse",
        "tool_name": "issue_refund",
        "tool_input": {"order_id": "4821", "amount": 640},
        "tool_use_id": "toolu_flood_1",
    }
    return httpx.post(
        f"http://127.0.0.1:{port}/hooks/refund_gate",
        json=event,
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=DEADLINE,
    )


def closed_by_server(socks: list[socket.socket], expected: int) -> dict[socket.socket, bytes]:
    """The sockets the server has closed once ``expected`` of them are (or the deadline
    passed), with what each received."""
    closed: dict[socket.socket, bytes] = {}
    deadline = time.monotonic() + DEADLINE
    while len(closed) < expected and time.monotonic() < deadline:
        for sock in socks:
            if sock in closed or not selectors_ready(sock):
                continue
            reply = b""
            with contextlib.suppress(ConnectionResetError):
                while chunk := sock.recv(4096):
                    reply += chunk
            closed[sock] = reply
        time.sleep(0.05)
    return closed


def selectors_ready(sock: socket.socket) -> bool:
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_READ)
        return bool(selector.select(timeout=0))


DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "Refunds over $500 need a human approver.",
    }
}


def test_a_flood_from_one_address_leaves_the_gate_answering_other_addresses() -> None:
    """More connections than the worker takes, all from one address, each sending a byte and
    no token: past the per-address share (a 4th of 100 by default) each new one is answered
    429 and closed, and a client at another address gets its gate's deny, not a 503."""
    port = free_port()
    env = limits_env(
        HANDLER_KIT_MAX_CONNECTIONS="100",
        # neither timer closes a flood connection while the test runs
        HANDLER_KIT_KEEP_ALIVE_TIMEOUT="60",
        HANDLER_KIT_HEADER_TIMEOUT="60",
    )
    with serving(port, env):
        flood = [connect_from(FLOOD, port) for _ in range(105)]
        try:
            refused = closed_by_server(flood, expected=80)
            assert len(refused) == 80, len(refused)
            for reply in refused.values():
                assert reply.startswith(b"HTTP/1.1 429 "), reply
                assert json_error(reply) == "too_many_connections"
            held = [sock for sock in flood if sock not in refused]
            for sock in held:
                sock.sendall(b"P")
            response = refund_gate_call(port)
            assert response.status_code == 200, response.text
            assert response.json() == DENY
            # the 25 the server took are still open: only the surplus was refused
            time.sleep(0.5)
            assert not any(selectors_ready(sock) for sock in held)
        finally:
            for sock in flood:
                sock.close()


def test_only_connections_not_yet_answered_count_against_their_address() -> None:
    port = free_port()
    env = limits_env(
        HANDLER_KIT_MAX_UNANSWERED_PER_ADDRESS="3", HANDLER_KIT_KEEP_ALIVE_TIMEOUT="60"
    )
    with serving(port, env):
        opened: list[socket.socket] = []
        try:
            for _ in range(3):  # answered, and kept open: they no longer count
                sock = connect_from(FLOOD, port)
                opened.append(sock)
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert sock.recv(4096).startswith(b"HTTP/1.1 200 ")
            pending = [connect_from(FLOOD, port) for _ in range(3)]
            opened += pending
            for sock in pending:
                sock.sendall(b"GET /healthz HTTP/1.1\r\n")
            extra = connect_from(FLOOD, port)
            opened.append(extra)
            reply = b""
            while chunk := extra.recv(4096):
                reply += chunk
            assert reply.startswith(b"HTTP/1.1 429 "), reply
            assert json_error(reply) == "too_many_connections"
            assert answered(port).status_code == 200  # from 127.0.0.1
            # one of the three is answered: its address has a place again
            pending[0].sendall(b"Host: 127.0.0.1\r\n\r\n")
            assert pending[0].recv(4096).startswith(b"HTTP/1.1 200 ")
            again = connect_from(FLOOD, port)
            opened.append(again)
            again.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert again.recv(4096).startswith(b"HTTP/1.1 200 ")
        finally:
            for sock in opened:
                sock.close()


def test_an_ipv6_client_counts_by_its_64_and_a_mapped_ipv4_one_by_its_address() -> None:
    """One host is commonly given a whole IPv6 /64: counted per address, it could open its
    connections from as many addresses as it likes."""
    from handler_kit.server._httptools_protocol import _address_key

    assert _address_key("2001:db8:1:2::5") == _address_key("2001:db8:1:2:ffff::9")
    assert _address_key("2001:db8:1:2::5") != _address_key("2001:db8:1:3::5")
    assert _address_key("fe80::1%eth0") == _address_key("fe80::2")
    assert _address_key("::ffff:127.0.0.2") == "127.0.0.2"
    assert _address_key("127.0.0.2") == "127.0.0.2"
