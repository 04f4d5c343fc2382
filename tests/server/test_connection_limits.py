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


def test_past_max_connections_a_request_is_answered_503() -> None:
    port = free_port()
    limit = 5
    env = limits_env(HANDLER_KIT_MAX_CONNECTIONS=str(limit), HANDLER_KIT_KEEP_ALIVE_TIMEOUT="30")
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
