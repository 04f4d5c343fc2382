"""``handler-kit forward``: the real console script in front of a real ``handler-kit serve``,
and in front of the faults a server can have: nothing listening, no answer, an error status, a
body that is not an answer.

A fault is injected with a socket server of a few lines (:class:`FakeServer`): it accepts,
reads the request, and answers what the test says, or nothing. Every process is started the
way a runtime starts a command hook, one per input.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.command.support import TOKEN
from tests.support.apps import COMMAND_APP
from tests.support.apps import command as hook_app
from tests.support.processes import REPO, clean_env, free_port, make_tls, serve

HANDLER_KIT = Path(sys.executable).parent / "handler-kit"
PYCACHE = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"handler-kit-test-pycache-{os.getuid()}")
HEAVY = ("pydantic", "pydantic_core", "starlette", "uvicorn", "httpx", "mcp", "anyio")

pytestmark = pytest.mark.skipif(
    not HANDLER_KIT.exists(), reason=f"no handler-kit console script next to {sys.executable}"
)


class Run(NamedTuple):
    code: int
    stdout: bytes
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def forward(
    *args: str,
    stdin: bytes,
    token: str | None = TOKEN,
    program: list[str] | None = None,
    **env: str,
) -> Run:
    """One ``handler-kit forward`` process, as a runtime starts a command hook."""
    environ = clean_env(PYTHONPYCACHEPREFIX=PYCACHE, **env)
    environ.pop("PYTHONDONTWRITEBYTECODE", None)
    if token is not None:
        environ["HANDLER_KIT_TOKEN"] = token
    done = subprocess.run(
        [*(program or [str(HANDLER_KIT)]), "forward", *args],
        input=stdin,
        capture_output=True,
        cwd=REPO,
        env=environ,
        timeout=60,
    )
    return Run(done.returncode, done.stdout, done.stderr.decode("utf-8", "replace"))


def event(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


REFUND = event(hook_event_name="PreToolUse", tool_name="orders__refund", tool_input={"amount": 640})
PROMPT = event(hook_event_name="UserPromptSubmit", prompt="hello")
STOP = event(hook_event_name="Stop", stop_hook_active=False, last_assistant_message="done")
MCP_POST = event(
    hook_event_name="PostToolUse", tool_name="mcp__crm__lookup", tool_input={}, tool_response={}
)


def deny(reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def outage_reason(what: str) -> str:
    return (
        f"Blocked by policy: the hook server did not answer ({what}), and this check is "
        "configured to fail closed."
    )


def one_line(result: Run, *fragments: str) -> None:
    """stderr is one line holding every fragment."""
    assert result.stderr.count("\n") == 1 and result.stderr.endswith("\n"), result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


# -- a real server ----------------------------------------------------------------------------


def test_forwards_the_answer_in_each_runtime(server: str) -> None:
    gate = f"{server}/hooks/refund_gate"
    claude = forward(gate, stdin=REFUND)
    assert claude == Run(0, claude.stdout, "")
    assert claude.json() == deny(hook_app.REFUND_DENY)
    by_handler = forward(server, "--handler", "refund_gate", stdin=REFUND)
    assert by_handler == claude
    sandbox = forward(gate, "--runtime", "sandbox", stdin=REFUND)
    assert sandbox == Run(2, b"", hook_app.REFUND_DENY + "\n")
    assert forward(gate, "--exit-codes", stdin=REFUND) == sandbox
    for runtime in ("codex", "posit"):
        assert forward(gate, "--runtime", runtime, stdin=REFUND).json() == claude.json()
    # a context answer on PostToolUse: JSON for Claude Code, feedback for the sandbox
    note = forward(f"{server}/hooks/post_audit", stdin=MCP_POST)
    assert note.json()["hookSpecificOutput"]["additionalContext"] == "Audited mcp__crm__lookup."
    feedback = forward(f"{server}/hooks/post_audit", "--runtime", "sandbox", stdin=MCP_POST)
    assert feedback == Run(2, b"", "Audited mcp__crm__lookup.\n")
    # under the limit: the server's no opinion, passed on
    under = event(hook_event_name="PreToolUse", tool_name="issue_refund", tool_input={"amount": 5})
    assert forward(gate, "--fail-closed", stdin=under) == Run(0, b"{}\n", "")


def test_a_rejected_token_is_a_failure(server: str) -> None:
    gate = f"{server}/hooks/refund_gate"
    wrong = forward(gate, "--fail-closed", stdin=REFUND, token="not-the-token-0123456789")
    assert wrong.code == 0
    assert "HTTP 401" in wrong.json()["hookSpecificOutput"]["permissionDecisionReason"]
    one_line(
        wrong,
        "HTTP 401",
        "the server did not accept $HANDLER_KIT_TOKEN (check it against the server's "
        "HANDLER_KIT_TOKENS",
        "answered the fail-closed deny",
    )
    missing = forward(gate, stdin=REFUND, token=None)
    assert (missing.code, missing.stdout) == (0, b"")
    one_line(missing, "HTTP 401", "$HANDLER_KIT_TOKEN is not set", "no answer given")
    other = forward(
        gate, "--token-env", "REFUNDS_TOKEN", stdin=REFUND, token=None, REFUNDS_TOKEN=TOKEN
    )
    assert other.json() == deny(hook_app.REFUND_DENY)


def test_https_with_the_servers_ca() -> None:
    with make_tls() as tls:
        port = free_port()
        options = ("--tls-cert", tls.cert_file, "--tls-key", tls.key_file)
        with serve(
            COMMAND_APP, port=port, env=clean_env(HANDLER_KIT_TOKENS=TOKEN), options=options
        ):
            gate = f"https://localhost:{port}/hooks/refund_gate"
            trusted = forward(gate, stdin=REFUND, SSL_CERT_FILE=tls.ca_file)
            assert trusted == Run(0, trusted.stdout, "")
            assert trusted.json() == deny(hook_app.REFUND_DENY)
            # a certificate the forwarder cannot verify is a failure like any other
            untrusted = forward(gate, "--fail-closed", stdin=REFUND)
            assert untrusted.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
            one_line(untrusted, "CERTIFICATE_VERIFY_FAILED", "answered the fail-closed deny")


# -- outages ----------------------------------------------------------------------------------


def test_refused_connection_fails_closed_in_each_runtime(nothing_listening: str) -> None:
    reason = outage_reason("connection refused")
    closed = forward(nothing_listening, "--fail-closed", stdin=REFUND)
    assert closed.code == 0 and closed.json() == deny(reason)
    one_line(closed, nothing_listening, "connection refused", "answered the fail-closed deny")
    for runtime in ("codex", "posit"):
        assert forward(
            nothing_listening, "--fail-closed", "--runtime", runtime, stdin=REFUND
        ).json() == deny(reason)
    sandbox = forward(nothing_listening, "--fail-closed", "--runtime", "sandbox", stdin=REFUND)
    assert sandbox == Run(2, b"", reason + "\n")  # the reason alone: the model reads it
    prompt = forward(nothing_listening, "--fail-closed", stdin=PROMPT)
    assert prompt.json() == {"decision": "block", "reason": reason}


def test_without_fail_closed_an_outage_is_no_answer(nothing_listening: str) -> None:
    open_ = forward(nothing_listening, stdin=REFUND)
    assert (open_.code, open_.stdout) == (0, b"")
    one_line(open_, "connection refused", "no answer given")
    # Codex reads an empty stdout on Stop as a broken answer: no opinion is {}
    stop = forward(nothing_listening, "--runtime", "codex", stdin=STOP)
    assert (stop.code, stop.stdout) == (0, b"{}\n")
    # an event with no safe decision: --fail-closed has nothing to fail to
    post = forward(nothing_listening, "--fail-closed", stdin=MCP_POST)
    assert (post.code, post.stdout) == (0, b"")
    one_line(post, "PostToolUse has no safe decision")


def test_an_input_with_no_event_fails_closed_with_exit_2(nothing_listening: str) -> None:
    """Without an event name there is no JSON decision to give; exit 2 blocks in every
    runtime's exit-code rules."""
    result = forward(nothing_listening, "--fail-closed", stdin=b"not json")
    assert result == Run(2, b"", outage_reason("connection refused") + "\n")


# -- faults a listening server can have ---------------------------------------------------------


class FakeServer:
    """Accepts connections on 127.0.0.1, keeps each request, and answers ``reply`` (raw HTTP
    bytes), or nothing at all when ``reply`` is None, holding the connection open."""

    def __init__(self, reply: bytes | None) -> None:
        self.reply = reply
        self.requests: list[bytes] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.1)  # so that close() is noticed: it does not wake accept()
        self.port = self.sock.getsockname()[1]
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def url(self, path: str = "/hooks/refund_gate") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _serve(self) -> None:
        while not self.done.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                request = b""
                with contextlib.suppress(OSError):
                    while b"\r\n\r\n" not in request:
                        request += conn.recv(65536)
                    head, _, body = request.partition(b"\r\n\r\n")
                    length = next(
                        int(line.split(b":", 1)[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    )
                    while len(body) < length:
                        body += conn.recv(65536)
                    self.requests.append(head + b"\r\n\r\n" + body)
                    if self.reply is None:
                        self.done.wait(30)  # never answers
                    else:
                        conn.sendall(self.reply)

    def close(self) -> None:
        self.done.set()
        self.sock.close()
        self.thread.join(timeout=10)


@contextlib.contextmanager
def fake_server(reply: bytes | None) -> Iterator[FakeServer]:
    server = FakeServer(reply)
    try:
        yield server
    finally:
        server.close()


def http(status: str, body: bytes, content_type: str = "application/json") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"Connection: close\r\n\r\n" + body


def test_no_answer_within_the_timeout_fails_closed() -> None:
    with fake_server(None) as hung:
        closed = forward(hung.url(), "--fail-closed", "--timeout", "0.5", stdin=REFUND)
        assert closed.json() == deny(outage_reason("no answer within 0.5 s"))
        one_line(closed, "no answer within 0.5 s")
        open_ = forward(hung.url(), "--timeout=0.5", stdin=REFUND)
        assert (open_.code, open_.stdout) == (0, b"")
        one_line(open_, "no answer within 0.5 s", "no answer given")


@pytest.mark.parametrize(
    ("reply", "what"),
    [
        (http("502 Bad Gateway", b"<html>bad gateway</html>", "text/html"), "HTTP 502"),
        (
            http("500 Internal Server Error", b'{"error":"handler_failed","message":"boom"}'),
            "HTTP 500 (boom)",
        ),
        (http("200 OK", b"OK", "text/plain"), "HTTP 200 with a body that is not JSON"),
        (http("200 OK", b"[1, 2]"), "HTTP 200 with JSON that is not an object"),
        (
            # Python reads NaN; Claude Code's parser refuses the whole answer passed on
            http("200 OK", json.dumps({**deny("over the limit"), "score": float("nan")}).encode()),
            "HTTP 200 with a body that is not JSON",
        ),
        (
            http("200 OK", json.dumps({"hookSpecificOutput": {"hookEventName": "Stop"}}).encode()),
            "the answer is for Stop, not PreToolUse",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{", "the answer was cut short"),
        (b"SSH-2.0-OpenSSH_9.6\r\n", "the answer is not HTTP"),
        (b"", "the server closed the connection without an answer"),
        # numbers of thousands of digits, which Python refuses to convert (a crash: exit 1)
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n{}",
            "the answer was cut short",
        ),
        (
            b"HTTP/1.1 " + b"2" * 5000 + b" OK\r\nContent-Length: 2\r\n\r\n{}",
            "the answer is not HTTP",
        ),
    ],
    ids=[
        "502",
        "500",
        "not JSON",
        "array",
        "NaN",
        "other event",
        "cut short",
        "not HTTP",
        "closed",
        "huge length",
        "huge status",
    ],
)
def test_an_answer_that_is_not_one_fails_closed(reply: bytes, what: str) -> None:
    with fake_server(reply) as bad:
        closed = forward(bad.url(), "--fail-closed", stdin=REFUND)
        assert closed.code == 0 and closed.json() == deny(outage_reason(what)), closed
        one_line(closed, what, "answered the fail-closed deny")
        sandbox = forward(bad.url(), "--fail-closed", "--runtime", "sandbox", stdin=PROMPT)
        reason = outage_reason(what.replace("PreToolUse", "UserPromptSubmit"))
        assert sandbox == Run(2, b"", reason + "\n")


def test_an_answer_that_cannot_be_passed_on_fails_closed() -> None:
    """JSON Python reads but the forwarder cannot write again: nested nearly as deep as the
    interpreter allows (a few depths read and do not write: each is tried), or a lone surrogate
    in context the sandbox dialect prints as bytes. A crash would exit 1, let through."""
    for depth in range(960, 1000):
        nested = b"[" * depth + b"]" * depth
        body = json.dumps(deny("over the limit"))[:-1].encode() + b', "n": ' + nested + b"}"
        with fake_server(http("200 OK", body)) as deep:
            closed = forward(deep.url(), "--fail-closed", stdin=REFUND)
        # passed on whole or failed closed; read as text: too deep for this test's own stack
        assert closed.code == 0, (depth, closed.stderr)
        assert b'"permissionDecision":"deny"' in closed.stdout, (depth, closed.stderr)
    context = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit"}}
    context["hookSpecificOutput"]["additionalContext"] = "echoed: \udc8f"
    with fake_server(http("200 OK", json.dumps(context).encode())) as odd:
        sandbox = forward(odd.url(), "--fail-closed", "--runtime", "sandbox", stdin=PROMPT)
        assert sandbox == Run(
            2, b"", outage_reason("the answer could not be passed on (UnicodeEncodeError)") + "\n"
        )
        open_ = forward(odd.url(), "--runtime", "sandbox", stdin=PROMPT)
        assert (open_.code, open_.stdout) == (0, b"")
        one_line(open_, "the answer could not be passed on", "no answer given")


def test_what_is_sent_and_how_answers_are_read() -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
        b"1c\r\n" + b'{"hookSpecificOutput":{"perm' + b"\r\n"
        b"38\r\n" + b'issionDecision":"deny","permissionDecisionReason":"no"}}' + b"\r\n0\r\n\r\n"
    )
    with fake_server(chunked) as fake:
        base = f"http://127.0.0.1:{fake.port}/prefix/"
        result = forward(
            base,
            "--handler",
            "refund_gate",
            "--app",
            COMMAND_APP,
            "--runtime",
            "posit",
            stdin=REFUND,
        )
        # Posit ignores a hookSpecificOutput without the right hookEventName: it is set
        assert result == Run(0, result.stdout, "")
        assert result.json() == deny("no")
        (request,) = fake.requests
    head, _, body = request.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /prefix/hooks/refund_gate HTTP/1.1"
    headers = dict(line.split(": ", 1) for line in lines[1:])
    assert headers["Host"] == f"127.0.0.1:{fake.port}"
    assert headers["Authorization"] == f"Bearer {TOKEN}"
    assert headers["X-Handler-Kit-App"] == COMMAND_APP
    assert headers["X-Runbear-Hook-Event"] == "PreToolUse"
    assert headers["Content-Type"] == "application/json"
    assert body == REFUND
    with fake_server(http("204 No Content", b"")) as empty:
        assert forward(empty.url(), "--fail-closed", stdin=REFUND) == Run(0, b"{}\n", "")


# -- usage and start-up ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ftp://example.com"], "expected an http(s) URL"),
        (["http://user:pw@example.com/hooks/x"], "no credentials in the URL"),
        (["http://127.0.0.1:99999/x"], "bad port"),
        (["http://127.0.0.1:1/x", "--runtime", "claude"], "invalid choice: 'claude'"),
        (["http://127.0.0.1:1/x", "--exit-codes", "--runtime", "posit"], "contradicts posit"),
        (["http://127.0.0.1:1/x", "--timeout", "0"], "--timeout must be positive"),
        ([], "the following arguments are required: URL"),
    ],
)
def test_usage_errors_are_one_line_and_exit_1(args: list[str], message: str) -> None:
    result = forward(*args, stdin=REFUND)
    assert (result.code, result.stdout) == (1, b"")
    one_line(result, message)


def imported(importtime_stderr: str) -> set[str]:
    return {
        line.rsplit("|", 1)[1].strip()
        for line in importtime_stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_forward_imports_only_the_standard_library(nothing_listening: str) -> None:
    """Nothing of the server stack, pydantic, the core (but its import-free loop guard) or the
    user's app; no argparse, and no
    ssl or http.client for an http URL; not even typing, dataclasses or logging (the
    settings are not loaded: the token is read by the config package's front)."""
    program = [str(Path(sys.executable).parent / "python"), "-X", "importtime", str(HANDLER_KIT)]
    traced = forward(
        nothing_listening, "--fail-closed", "--timeout", "1", stdin=REFUND, program=program
    )
    assert traced.stdout.startswith(b'{"hookSpecificOutput"')
    modules = imported(traced.stderr)
    assert "handler_kit.command.forward" in modules and "handler_kit.config" in modules
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []
    # of the core, only the stop-loop guard's test (no import of its own), the one the
    # dialects share with the core's answer
    loaded = sorted(m for m in modules if m.startswith(("handler_kit.core", "tests")))
    assert loaded == ["handler_kit.core", "handler_kit.core.loop_guard"]
    assert {
        "handler_kit.command.hook",
        "handler_kit.config._settings",
        "typing",
        "dataclasses",
        "logging",
        "argparse",
        "ssl",
        "http.client",
        "email",
    } & modules == set()
    with fake_server(b"") as plain:  # a TLS handshake with it fails after ssl is imported
        https = forward(
            plain.url().replace("http://", "https://"),
            "--fail-closed",
            stdin=REFUND,
            program=program,
        )
    assert b"permissionDecision" in https.stdout
    assert "ssl" in imported(https.stderr)  # imported for https, and only then


def test_python_m_handler_kit_forward(nothing_listening: str) -> None:
    """The form install writes: the interpreter's absolute path, -I -m handler_kit."""
    result = forward(
        nothing_listening,
        "--fail-closed",
        stdin=REFUND,
        program=[sys.executable, "-I", "-m", "handler_kit"],
    )
    assert result.json() == deny(outage_reason("connection refused"))


def test_a_base_url_without_the_hook_route_says_what_is_missing(server: str) -> None:
    """The server's base URL answers 404: the forwarder says the URL needs its hook route,
    and a fail-closed gate still answers its safe decision."""
    hint = "is not a hook route: give the server's URL with /hooks (every handler) or /hooks/NAME"
    open_ = forward(server, stdin=REFUND)
    assert (open_.code, open_.stdout) == (0, b"")
    one_line(open_, "HTTP 404", hint, "no answer given")
    closed = forward(f"{server}/", "--fail-closed", stdin=REFUND)
    assert closed.code == 0
    what = closed.json()["hookSpecificOutput"]["permissionDecisionReason"]
    assert what.startswith("Blocked by policy: the hook server did not answer (HTTP 404")
    assert hint in what
    one_line(closed, "answered the fail-closed deny")
    every = forward(f"{server}/hooks", "--fail-closed", stdin=REFUND)
    assert every.json() == deny(hook_app.REFUND_DENY)


def test_a_closed_stdin_is_the_gates_unreadable_input(server: str) -> None:
    """No stdin at all (fd 0 closed, so ``sys.stdin`` is None): sent as an empty input, which
    the gate's route answers with its safe decision; a crash would exit 1, which runtimes let
    through."""
    done = subprocess.run(
        f"{HANDLER_KIT} forward {server}/hooks/refund_gate --fail-closed <&-",
        shell=True,
        capture_output=True,
        cwd=REPO,
        env=clean_env(PYTHONPYCACHEPREFIX=PYCACHE, HANDLER_KIT_TOKEN=TOKEN),
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    assert json.loads(done.stdout) == deny(
        "Blocked by policy: the check 'refund_gate' could not read the hook input, and it is "
        "configured to fail closed."
    )
