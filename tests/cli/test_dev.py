"""``handler-kit dev``: the development loop, as a real process on a user's project.

One run goes through the whole loop: the generated token and the printed curl answer, the
console shows one line per decision, the inspector is served, and an edit to the module is
served on the next call without a restart; an edit that does not parse is one message with
its line (the server waits), and the fix after it is served again.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.support.processes import HANDLER_KIT, Process, clean_env, free_port, process

START_TIMEOUT = 60.0  # bounded, and generous: a loaded 2-core machine imports slowly
RELOAD_TIMEOUT = 60.0

# longer than the console shows: the line ends with its first 57 characters and "..."
LONG_REASON = "Refunds over $500 need a human approver: ask in #refund-approvals with the order id."
GATE = """\
from handler_kit import HookApp, PreToolUse, deny

app = HookApp("dev-gate")


@app.pre_tool_use(matcher="issue_refund")
def refund_gate(event: PreToolUse):
    return deny({reason!r})
"""


def printed_curl(output: str) -> tuple[str, dict[str, str], str]:
    """(url, headers, body) of the curl command dev printed, continuation lines joined."""
    start = output.index("curl ")
    lines = []
    for line in output[start:].splitlines():
        lines.append(line.strip().removesuffix("\\").strip())
        if not line.rstrip().endswith("\\"):
            break
    words = shlex.split(" ".join(lines))
    headers = dict(w.split(": ", 1) for i, w in enumerate(words) if i and words[i - 1] == "-H")
    url = next(w for w in words if w.startswith("http"))
    return url, headers, words[words.index("-d") + 1]


def until(check: Callable[[], str | None], timeout: float, server: Process) -> str:
    """Poll ``check`` until it returns a value (bounded; fails with the server's output)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.proc.poll() is None, server.output()
        try:
            found = check()
        except httpx.TransportError:  # between two server processes of a reload
            found = None
        if found is not None:
            return found
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout} s:\n{server.output()}")


@pytest.mark.slow
def test_dev_serves_reloads_on_change_and_explains_a_broken_edit(tmp_path: Path) -> None:
    module = tmp_path / "gate.py"
    module.write_text(GATE.format(reason=LONG_REASON))
    port = free_port()
    # HANDLER_KIT_HOST is not read by dev: it listens on loopback only
    env = clean_env(HANDLER_KIT_HOST="0.0.0.0")
    argv = [str(HANDLER_KIT), "dev", "gate:app", "--port", str(port)]
    with process(argv, env, cwd=tmp_path) as server:
        server.wait_started(timeout=START_TIMEOUT)
        output = server.output()
        base = f"http://127.0.0.1:{port}"
        assert f"dev-gate: {base}" in output
        assert f"inspector: {base}/_inspector" in output
        assert f"Reloading on changes to .py files in {tmp_path}" in output
        token = re.search(r"Bearer token: (\S+) \(generated", output).group(1)
        url, headers, body = printed_curl(output)
        assert url == f"{base}/hooks" and headers["Authorization"] == f"Bearer {token}"

        def reason() -> str | None:
            response = httpx.post(url, content=body, headers=headers, timeout=10)
            if response.status_code != 200:
                return None
            return response.json()["hookSpecificOutput"]["permissionDecisionReason"]

        assert reason() == LONG_REASON
        line = until(
            lambda: next((x for x in server.output().splitlines() if "-> deny" in x), None),
            10,
            server,
        )
        shown = re.escape(f'"{LONG_REASON[:57]}..."')
        assert re.fullmatch(
            rf"PreToolUse +refund_gate +issue_refund +-> deny +\d+\.\d ms  {shown}", line
        ), line
        # the inspector is on: its page answers (a login page), it is not a 404
        assert httpx.get(f"{base}/_inspector", timeout=10).status_code != 404
        # the one-time login link: a session without pasting the token, once
        link = re.search(r"Inspector: (http\S+/_inspector/login\?code=\S+)", output).group(1)
        first = httpx.get(link, timeout=10)
        assert first.status_code in (302, 303, 307), first.text
        assert first.headers["location"] == "/_inspector"
        session = first.cookies
        page = httpx.get(f"{base}/_inspector", cookies=session, timeout=10)
        assert page.status_code == 200 and 'class="login"' not in page.text
        again = httpx.get(link, timeout=10)
        assert again.status_code == 401 and "expired or was used already" in again.text
        assert "hk_inspector" not in again.cookies

        module.write_text(GATE.format(reason="version two"))
        until(lambda: "ok" if reason() == "version two" else None, RELOAD_TIMEOUT, server)

        # a broken edit: the message with file, line and text; the server waits for a fix
        module.write_text(GATE.format(reason="version three").replace("three')", "three'"))
        message = until(
            lambda: next(
                (x for x in server.output().splitlines() if "SyntaxError" in x),
                None,
            ),
            RELOAD_TIMEOUT,
            server,
        )
        assert message.startswith("handler-kit dev: importing 'gate' failed: ")
        assert f"{module}, line 8: SyntaxError: " in message
        assert message.endswith(
            "return deny('version three'; waiting for a change (meanwhile the last good "
            "version's fail-closed gates answer with their safe decision, every other call a 503)"
        )

        module.write_text(GATE.format(reason="version three"))
        until(lambda: "ok" if reason() == "version three" else None, RELOAD_TIMEOUT, server)
        assert "Traceback" not in server.output()


BROKEN_GATES = """\
from handler_kit import HookApp, PreToolUse, deny

app = HookApp("dev-gates")


@app.pre_tool_use(matcher="issue_refund", fail_closed=True)
def refund_gate(event: PreToolUse):
    return deny("over the limit")


@app.post_tool_use()
def note(event):
    return "noted"
"""


def test_a_broken_module_is_answered_at_once_and_virtualenvs_are_not_watched(
    tmp_path: Path,
) -> None:
    """While the module does not import, the last good version's fail-closed gate answers
    with its safe decision naming the error, every other call gets a JSON 503 naming the file
    and line, each at once (before, each call waited for the next edit); a change in a
    virtualenv, node_modules or an --ignore'd folder restarts nothing."""
    module = tmp_path / "gates.py"
    module.write_text(BROKEN_GATES)
    venv = tmp_path / "env-one"  # a virtualenv of any name: it holds pyvenv.cfg
    (venv / "lib").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "installed.py").write_text("x = 1\n")
    for folder in (".venv/lib", "node_modules/pkg", "scratch"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "mod.py").write_text("x = 1\n")
    port = free_port()
    token = "dev-broken-token-0123456789"
    env = clean_env(HANDLER_KIT_TOKENS=token)
    argv = [str(HANDLER_KIT), "dev", "gates:app", "--port", str(port), "--ignore", "scratch"]
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {token}"}
    with process(argv, env, cwd=tmp_path) as server:
        server.wait_started(timeout=START_TIMEOUT)
        until(
            lambda: "up" if httpx.get(f"{base}/healthz", timeout=5).status_code == 200 else None,
            START_TIMEOUT,
            server,
        )
        for path in (venv / "lib" / "installed.py", *(tmp_path.glob("*/*/mod.py"))):
            path.write_text("x = 2\n")
        (tmp_path / "scratch" / "mod.py").write_text("x = 2\n")

        module.write_text(BROKEN_GATES.replace('"noted"', '"noted"('))
        until(
            lambda: "ok" if "waiting for a change" in server.output() else None,
            RELOAD_TIMEOUT,
            server,
        )
        # the restart came from a look at the tree after every write above, so a watched
        # ignored file would be named by its line or by one of its own before it
        detected = [x for x in server.output().splitlines() if "detected changes" in x]
        assert detected, server.output()
        assert all(x.endswith("detected changes in 'gates.py'. Reloading...") for x in detected), (
            detected
        )
        # the process serving the broken module is up once its health check answers
        until(
            lambda: "up" if httpx.get(f"{base}/healthz", timeout=5).status_code == 200 else None,
            RELOAD_TIMEOUT,
            server,
        )
        gate_event = {
            "session_id": "s",
            "hook_event_name": "PreToolUse",
            "tool_name": "issue_refund",
            "tool_input": {"amount": 10},
        }
        started = time.monotonic()
        gate = httpx.post(f"{base}/hooks", json=gate_event, headers=auth, timeout=10)
        gate_seconds = time.monotonic() - started
        assert gate.status_code == 200, gate.text
        output = gate.json()["hookSpecificOutput"]
        assert output["permissionDecision"] == "deny"
        where = f"{module}, line 13: SyntaxError: "
        assert where in output["permissionDecisionReason"]
        named = httpx.post(f"{base}/hooks/refund_gate", json=gate_event, headers=auth, timeout=10)
        assert named.json()["hookSpecificOutput"]["permissionDecision"] == "deny"

        other_event = {"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "x"}
        started = time.monotonic()
        other = httpx.post(f"{base}/hooks", json=other_event, headers=auth, timeout=10)
        other_seconds = time.monotonic() - started
        assert other.status_code == 503
        assert other.headers["content-type"] == "application/json"
        assert where in other.json()["detail"]
        # a call for another tool is no gate's either
        bash = {**gate_event, "tool_name": "Bash"}
        assert httpx.post(f"{base}/hooks", json=bash, headers=auth, timeout=10).status_code == 503
        # and no one learns of the error without the token
        assert httpx.post(f"{base}/hooks", json=other_event, timeout=10).status_code == 401
        assert gate_seconds < 1.0 and other_seconds < 1.0, (gate_seconds, other_seconds)

        module.write_text(BROKEN_GATES)
        until(
            lambda: (
                "ok"
                if httpx.post(
                    f"{base}/hooks", json=other_event, headers=auth, timeout=10
                ).status_code
                == 200
                else None
            ),
            RELOAD_TIMEOUT,
            server,
        )
