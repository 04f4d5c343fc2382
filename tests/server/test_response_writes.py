"""How ``handler-kit serve`` writes its answers, against a real server: an answer's head and
body leave in one write (one send, one TCP segment), and a write with nothing after it in the
same pass of the event loop (a ``100 Continue``) still leaves before the server waits on the
network again."""

from __future__ import annotations

import json
import socket

from tests.support.processes import Process, clean_env, free_port, serve

APP = "example_servers.refund_gate:app"
TOKEN = "response-writes-token-0123456789"
# the refund gate is async and awaits nothing: answered on the event loop's thread, where a
# sync handler's thread would write to wake the loop (and, racing it, the loop's thread too)
EVENT = json.dumps(
    {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "tool_name": "issue_refund",
        "tool_input": {"order_id": "4821", "amount": 640},
    }
).encode()
DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "Refunds over $500 need a human approver.",
    }
}
TIMEOUT = 20.0


def request(extra: bytes = b"") -> bytes:
    return (
        b"POST /hooks/refund_gate HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
        b"Content-Type: application/json\r\n"
        b"Content-Length: %d\r\n" % len(EVENT) + extra + b"\r\n"
    )


def read_answer(sock: socket.socket) -> tuple[bytes, dict]:
    """One whole answer from ``sock``: its head and its JSON body."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536) or b""
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head, json.loads(body)


def writes_of(server: Process) -> int:
    """The write system calls the server's event loop (its main thread) has made so far."""
    pid = server.proc.pid
    with open(f"/proc/{pid}/task/{pid}/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("syscw:"))


def test_each_answer_is_written_in_one_write_call() -> None:
    port = free_port()
    with (
        serve(APP, port=port, env=clean_env(HANDLER_KIT_TOKENS=TOKEN)) as server,
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock,
    ):
        server.wait_healthy(f"http://127.0.0.1:{port}")
        sock.sendall(request() + EVENT)  # the first answer of a connection: nothing to count
        read_answer(sock)
        before = writes_of(server)
        for _ in range(20):
            sock.sendall(request() + EVENT)
            head, body = read_answer(sock)
            assert head.startswith(b"HTTP/1.1 200 "), head
            assert body == DENY
        assert writes_of(server) - before == 20


def test_a_100_continue_is_sent_before_the_body_it_asks_for() -> None:
    port = free_port()
    with (
        serve(APP, port=port, env=clean_env(HANDLER_KIT_TOKENS=TOKEN)) as server,
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock,
    ):
        server.wait_healthy(f"http://127.0.0.1:{port}")
        # the client waits for the go-ahead before it sends the body: a 100 Continue held
        # for a later write would never come, and this read would time out
        sock.sendall(request(b"Expect: 100-continue\r\n"))
        interim = b""
        while b"\r\n\r\n" not in interim:
            interim += sock.recv(65536) or b""
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(EVENT)
        head, body = read_answer(sock)
        assert head.startswith(b"HTTP/1.1 200 "), head
        assert body == DENY
