"""The uvicorn versions the connection limits are tested with: declared in pyproject.toml, checked
at start-up. A real ``handler-kit serve`` on a uvicorn outside the range answers on uvicorn's
own protocol, with one warning naming the version and what is lost; inside it, on ours (a
request head over ``--max-header-bytes`` is answered 431 only by ours)."""

from __future__ import annotations

import socket
import subprocess
import sys
import tomllib

import httpx
import uvicorn

from handler_kit.server import _protocols
from tests.support.processes import REPO, clean_env, free_port, process

TOKEN = "uvicorn-range-token-0123456789"
APP = "example_servers.refund_gate:app"
DENIED = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "Refunds over $500 need a human approver.",
    }
}
WARNING = "is not a version handler-kit is tested with"
# the serve command, in a Python whose known range can be replaced first
SERVE = """
import sys
from handler_kit.server import _protocols
if sys.argv[1] != "-":
    _protocols.TESTED_UVICORN = ((0, 1), (0, 2))
from handler_kit.cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_pyproject_declares_the_tested_range() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    (requirement,) = [d for d in project["dependencies"] if d.startswith("uvicorn")]
    assert requirement == "uvicorn[standard]>=0.54,<0.55"
    assert _protocols.TESTED_UVICORN == ((0, 54), (0, 55))
    assert _protocols.uvicorn_is_tested(uvicorn.__version__)


def test_versions_outside_the_range_are_unknown() -> None:
    assert _protocols.uvicorn_is_tested("0.54.0")
    assert _protocols.uvicorn_is_tested("0.54.7")
    assert not _protocols.uvicorn_is_tested("0.53.9")
    assert not _protocols.uvicorn_is_tested("0.55.0rc1")
    assert not _protocols.uvicorn_is_tested("1.0.0")
    assert not _protocols.uvicorn_is_tested("dev")


def serve_argv(port: int, *, unknown: bool) -> list[str]:
    return [
        sys.executable,
        "-c",
        SERVE,
        "unknown" if unknown else "-",
        "serve",
        APP,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "info",
    ]


def head_over_the_limit(port: int) -> bytes:
    """The raw answer to a ``GET /healthz`` whose head is over the 4 KiB limit."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        filler = b"a" * 5000
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: %s\r\n" % filler)
        sock.sendall(b"Connection: close\r\n\r\n")
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
    return reply


def serve_and_ask(unknown: bool) -> tuple[httpx.Response, bytes, str]:
    port = free_port()
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN, HANDLER_KIT_MAX_HEADER_BYTES="4KiB")
    with process(serve_argv(port, unknown=unknown), env, cwd=REPO) as server:
        server.wait_healthy(f"http://127.0.0.1:{port}")
        event = {
            "hook_event_name": "PreToolUse",
            "session_id": "s1",
            "tool_name": "issue_refund",
            "tool_input": {"amount": 5000},
        }
        answer = httpx.post(
            f"http://127.0.0.1:{port}/hooks/refund_gate",
            json=event,
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=20,
        )
        reply = head_over_the_limit(port)
        return answer, reply, server.output()


def test_an_unknown_uvicorn_serves_on_its_own_protocol_with_one_warning() -> None:
    answer, reply, output = serve_and_ask(unknown=True)
    assert answer.status_code == 200
    assert answer.json() == DENIED
    # uvicorn's own protocol has no head size limit: the request is answered
    assert reply.startswith(b"HTTP/1.1 200 "), reply
    assert output.count(WARNING) == 1, output
    (line,) = [line for line in output.splitlines() if WARNING in line]
    assert f"uvicorn {uvicorn.__version__} is not a version" in line
    assert "(>=0.1,<0.2)" in line
    assert "--max-header-bytes" in line and "per-address limit" in line


def test_a_tested_uvicorn_serves_on_the_subclass() -> None:
    answer, reply, output = serve_and_ask(unknown=False)
    assert answer.status_code == 200
    assert answer.json() == DENIED
    assert reply.startswith(b"HTTP/1.1 431 "), reply
    assert WARNING not in output


def test_the_subclass_module_is_not_imported_on_an_unknown_uvicorn() -> None:
    # its module-level lookups of uvicorn's private methods would fail first on a uvicorn that
    # renamed one: the check must come before them
    code = (
        "import sys\n"
        "from handler_kit.server import _protocols\n"
        "_protocols.TESTED_UVICORN = ((0, 1), (0, 2))\n"
        "http = _protocols.protocol_class(keep_alive=5, head_timeout=5, max_head_bytes=8192,"
        " max_unanswered=8)\n"
        "assert http == 'auto', http\n"
        "assert 'handler_kit.server._httptools_protocol' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count(WARNING) == 1, done.stderr
