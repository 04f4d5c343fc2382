"""The answer every transport gives, written out by hand, for every handler shape.

One table of (case, expected Claude Code JSON) runs over the webhook's two routes
(``/hooks/h`` and ``/hooks``), the MCP tool, the command hook and the forwarder, for a sync
handler, an async one that never suspends and an async one that does, each with and without
an observer (the audit trail) on the server. Nothing here compares one path with another: a
bug every path shares fails the row it breaks.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from handler_kit.config import OperationsConfig, ServerConfig
from handler_kit.core.vocabulary import INTERNAL_MESSAGE as INTERNAL
from handler_kit.testing import running_server
from tests.support.apps import expectations
from tests.support.apps.expectations import BEHAVIOURS, SHAPES
from tests.support.processes import HANDLER_KIT, PROCESSES_AT_ONCE, REPO, clean_env

TOKEN = "expectations-token-0123456789abcdef"


# a fail-closed handler's failure: the event's safe decision, with this reason
CLOSED = "Blocked by policy: the check 'h' failed, and it is configured to fail closed."


def _pre(**fields: Any) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", **fields}}


# case -> the exact body every transport carries ({} is "no opinion")
EXPECTED: dict[str, dict[str, Any]] = {
    "pre_deny": _pre(permissionDecision="deny", permissionDecisionReason="Not on this branch."),
    "pre_rewrite": _pre(permissionDecision="allow", updatedInput={"command": "ls -la"}),
    "pre_ask": _pre(permissionDecision="ask", permissionDecisionReason="Really run it?"),
    "pre_halt": {"continue": False, "stopReason": "Stopped by policy."},
    "pre_halt_bare": {"continue": False},
    "pre_nothing": {},
    "pre_raises_closed": _pre(permissionDecision="deny", permissionDecisionReason=CLOSED),
    "pre_raises_open": {},
    "prompt_context": {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": "The ticket is HK-1.",
        }
    },
    "prompt_block": {"decision": "block", "reason": "No secrets in prompts."},
    "post_block": {"decision": "block", "reason": "The output leaked a key."},
    "stop_block": {"decision": "block", "reason": "Cite the ticket."},
    # the Stop loop guard: a block while stop_hook_active would keep the agent going forever
    "stop_block_guarded": {},
    "stop_context": {
        "hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "Check the tests."}
    },
    # context on Stop continues the turn as a block does: the same guard
    "stop_context_guarded": {},
    "stop_halt": {"continue": False, "stopReason": "Out of budget."},
    # halting is not a block: the guard leaves it alone
    "stop_halt_guarded": {"continue": False, "stopReason": "Out of budget."},
    "prompt_raises_closed": {"decision": "block", "reason": CLOSED},
    "stop_raises": {},
}

BASE = {"session_id": "s-1", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp"}
INPUTS: dict[str, dict[str, Any]] = {
    "PreToolUse": {
        **BASE,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "git push"},
        "tool_use_id": "toolu_1",
    },
    "PostToolUse": {
        **BASE,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "cat .env"},
        "tool_response": {"stdout": "KEY=1"},
        "tool_use_id": "toolu_2",
    },
    "UserPromptSubmit": {**BASE, "hook_event_name": "UserPromptSubmit", "prompt": "hello"},
    "Stop": {**BASE, "hook_event_name": "Stop", "stop_hook_active": False},
}


def hook_input(case: str) -> dict[str, Any]:
    event = BEHAVIOURS[case][0]
    data = dict(INPUTS[event])
    if case.endswith("_guarded"):
        data["stop_hook_active"] = True
    return data


def test_every_case_has_an_expectation() -> None:
    assert set(EXPECTED) == set(BEHAVIOURS)


# a fail-open handler's crash: the command hook exits 1, a non-blocking error to the runtime
CRASHED_OPEN = {"pre_raises_open", "stop_raises"}


def command_expectation(case: str) -> tuple[int, dict[str, Any]]:
    """A command hook for Claude Code: exit 0, the JSON on stdout (nothing for no opinion)."""
    return (1 if case in CRASHED_OPEN else 0), EXPECTED[case]


ROWS = [(case, shape) for case in BEHAVIOURS for shape in SHAPES]


def _stdout_json(stdout: bytes) -> dict[str, Any]:
    text = stdout.decode().strip()
    return json.loads(text) if text else {}


# child processes at once: the command rows run behind the server rows, in this process
COMMAND_WORKERS = PROCESSES_AT_ONCE


def _command(case: str, shape: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [
            str(HANDLER_KIT),
            "command",
            f"tests.support.apps.expectations:app_{case}_{shape}",
            "--handler",
            "h",
        ],
        input=json.dumps(hook_input(case)).encode(),
        capture_output=True,
        cwd=REPO,
        env=clean_env(),
        timeout=60,
    )


def _mcp_call(url: str, case: str) -> tuple[bool, Any]:
    """``tools/call h`` over MCP Streamable HTTP: (isError, the JSON answer or the error text)."""
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    arguments = hook_input(case)
    request = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "h", "arguments": arguments},
    }
    response = httpx.post(f"{url}/mcp", json=request, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    text = response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        text = next(line[len("data:") :] for line in text.splitlines() if line.startswith("data:"))
    result = json.loads(text)["result"]
    answer = result["content"][0]["text"]
    if result.get("isError"):
        return True, answer
    return False, json.loads(answer)


@pytest.fixture(scope="module", params=["plain", "observed"])
def servers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[tuple[str, str], str]]:
    """Every app of the table served at once, with or without the audit trail observing."""
    operations = OperationsConfig()
    if request.param == "observed":
        trail = tmp_path_factory.mktemp("trail") / "audit.jsonl"
        operations = OperationsConfig(audit=(f"jsonl:{trail}",), audit_process=False)
    config = ServerConfig(tokens=[TOKEN], operations=operations)
    with contextlib.ExitStack() as stack:
        urls = {}
        for case, shape in ROWS:
            app = getattr(expectations, f"app_{case}_{shape}")
            server = stack.enter_context(running_server(app, config=config))
            urls[case, shape] = server.url
        yield urls


@pytest.mark.parametrize(("case", "shape"), ROWS)
def test_server_transports(case: str, shape: str, servers: dict[tuple[str, str], str]) -> None:
    url = servers[case, shape]
    headers = {"Authorization": f"Bearer {TOKEN}"}
    data = hook_input(case)
    answers = {
        "/hooks/h": httpx.post(f"{url}/hooks/h", json=data, headers=headers, timeout=30),
        "/hooks": httpx.post(f"{url}/hooks", json=data, headers=headers, timeout=30),
    }
    got = {route: (r.status_code, r.json()) for route, r in answers.items()}
    got["mcp"] = _mcp_call(url, case)
    if case in CRASHED_OPEN:
        failed = {"error": "handler_failed", "message": "the handler failed; see the server log"}
        want = (500, failed)
        mcp = (True, "The handler 'h' failed; see the server log.")
    else:
        want = (200, EXPECTED[case])
        mcp = (False, EXPECTED[case])
    assert got == {"/hooks/h": want, "/hooks": want, "mcp": mcp}


@pytest.mark.parametrize("gate", ["closed", "open"])
def test_an_error_around_the_handlers_is_answered_by_their_policy_on_every_transport(
    gate: str,
) -> None:
    """Not a handler's failure but one around it (here a committer that raises; a bug of
    handler-kit's would be the same): the handler's failure policy answers, so a fail-closed
    gate denies on every transport; a fail-open handler's answer has failed, as when it
    raises itself. Never the runtime's "go ahead" of a bare 500 or an unexplained error."""
    app_name = f"tests.support.apps.expectations:app_internal_error_{gate}"
    app = getattr(expectations, f"app_internal_error_{gate}")
    data = INPUTS["PreToolUse"]
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with running_server(app, config=ServerConfig(tokens=[TOKEN])) as server:
        answers = {
            route: httpx.post(f"{server.url}{route}", json=data, headers=headers, timeout=30)
            for route in ("/hooks/h", "/hooks")
        }
        got: dict[str, Any] = {route: (r.status_code, r.json()) for route, r in answers.items()}
        got["mcp"] = _mcp_call(server.url, "pre_nothing")  # the same PreToolUse input
    command = subprocess.run(
        [str(HANDLER_KIT), "command", app_name, "--handler", "h"],
        input=json.dumps(data).encode(),
        capture_output=True,
        cwd=REPO,
        env=clean_env(),
        timeout=60,
    )
    got["command"] = (command.returncode, _stdout_json(command.stdout))
    if gate == "closed":
        denied = EXPECTED["pre_raises_closed"]
        assert got == {
            "/hooks/h": (200, denied),
            "/hooks": (200, denied),
            "mcp": (False, denied),
            "command": (0, denied),
        }
    else:
        failed = {"error": "handler_failed", "message": "the handler failed; see the server log"}
        assert got == {
            "/hooks/h": (500, failed),
            "/hooks": (500, failed),
            "mcp": (True, "The handler 'h' failed; see the server log."),
            "command": (1, {}),
        }


# The transport's own code failing around HookApp.answer (a bug of handler-kit's, injected):
# where it fails -> what the webhook module's function that fails is
WEBHOOK_BUGS = {"reading the input": "_event", "writing the answer": "_body"}
FAILED = {"error": "handler_failed", "message": "the handler failed; see the server log"}


@pytest.mark.parametrize("where", WEBHOOK_BUGS)
@pytest.mark.parametrize("gate", ["closed", "open"])
def test_a_bug_in_the_webhook_around_the_answer_is_answered_by_the_handlers_policy(
    gate: str, where: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A fail-closed gate denies with 200 (a bare 500 is the runtime's "go ahead"); a
    fail-open handler's answer has failed, in JSON. The handlers are the route's: its own on
    ``/hooks/{name}``; on ``POST /hooks`` every handler of the event, whatever its matcher,
    the event named by the body read, else by the header. Observers see the answer sent."""
    from handler_kit.server import webhook

    def broken(*args: Any) -> Any:
        raise RuntimeError("a bug of handler-kit's")

    if where == "reading the input":
        monkeypatch.setattr(webhook.Webhook, "_event", broken)
    else:
        monkeypatch.setattr(webhook, "_body", broken)
    seen: list[tuple[str, dict[str, Any], list[str], str | None]] = []

    def observer(answer: Any, transport: str, context: dict[str, Any]) -> None:
        names = [i.handler.name for i in answer.invocations]
        seen.append((transport, dict(context), names, answer.event.session_id))

    app = getattr(expectations, f"app_transport_bug_{gate}").extended(observers=[observer])
    headers = {"Authorization": f"Bearer {TOKEN}"}
    named = {**headers, "X-Runbear-Hook-Event": "PreToolUse"}
    data = INPUTS["PreToolUse"]
    answers = {}
    observed = {}
    with running_server(app, config=ServerConfig(tokens=[TOKEN])) as server:
        for route in ("/hooks/h", "/hooks"):
            for header in (True, False):
                seen.clear()
                response = httpx.post(
                    f"{server.url}{route}",
                    json=data,
                    headers=named if header else headers,
                    timeout=30,
                )
                answers[route, header] = (response.status_code, response.json())
                observed[route, header] = seen[-1] if seen else None
    want = (200, EXPECTED["pre_raises_closed"]) if gate == "closed" else (500, FAILED)
    # POST /hooks with neither the body read nor the header: whose policy cannot be told
    unknown = (500, {"error": "internal_error", "message": INTERNAL})
    reading = where == "reading the input"
    assert answers == {
        ("/hooks/h", True): want,
        ("/hooks/h", False): want,
        ("/hooks", True): want,
        ("/hooks", False): unknown if reading else want,
    }
    # the event read, or only its name (no ids) when reading it failed
    session = None if reading else "s-1"
    context = {"principal": "token#0"}
    assert observed == {
        ("/hooks/h", True): ("webhook", context, ["h"], session),
        ("/hooks/h", False): ("webhook", context, ["h"], session),
        ("/hooks", True): ("webhook", context, ["h", "other"], session),
        ("/hooks", False): None if reading else ("webhook", context, ["h", "other"], session),
    }
    logged = [r for r in caplog.records if r.getMessage().startswith("the answer at")]
    assert [(r.name, r.levelname, r.getMessage()) for r in logged] == [
        ("handler_kit", "ERROR", "the answer at /hooks/h could not be made"),
        ("handler_kit", "ERROR", "the answer at /hooks/h could not be made"),
        ("handler_kit", "ERROR", "the answer at /hooks could not be made"),
        ("handler_kit", "ERROR", "the answer at /hooks could not be made"),
    ]
    assert all(r.exc_info for r in logged)


# in a child process: the command hook with one of its own functions broken, then run as the
# runtime runs it
BREAK_AND_RUN = """
import sys
from handler_kit.command import hook
def broken(*args, **options):
    raise RuntimeError("a bug of handler-kit's")
setattr(hook, sys.argv[1], broken)
from handler_kit.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _command_with_a_bug(function: str, app: str, data: dict[str, Any]) -> tuple[int, Any, str]:
    done = subprocess.run(
        [sys.executable, "-c", BREAK_AND_RUN, function, "command", app, "--handler", "h"],
        input=json.dumps(data).encode(),
        capture_output=True,
        cwd=REPO,
        env=clean_env(),
        timeout=60,
    )
    first = done.stderr.decode().splitlines()[0] if done.stderr else ""
    return done.returncode, _stdout_json(done.stdout), first


def test_a_bug_in_the_command_hook_around_the_answer_is_answered_by_the_handlers_policy() -> None:
    """Reading the input failing: the gate's safe decision in the runtime's JSON; writing the
    answer failing (so writing the safe decision fails too): the exit 2 block every runtime
    reads, its reason on stderr. Without a fail-closed gate, the bug's one line and exit 1."""
    module = "tests.support.apps.expectations"
    pre = INPUTS["PreToolUse"]
    runs = {
        "closed, reading": ("_validate", "app_transport_bug_closed", pre),
        "closed, writing": ("_respond", "app_transport_bug_closed", pre),
        "open, reading": ("_validate", "app_transport_bug_open", pre),
        "open, writing": ("_respond", "app_transport_bug_open", pre),
    }
    with ThreadPoolExecutor(max_workers=COMMAND_WORKERS) as pool:
        futures = {
            name: pool.submit(_command_with_a_bug, function, f"{module}:{app}", data)
            for name, (function, app, data) in runs.items()
        }
        got = {name: future.result() for name, future in futures.items()}
    bug = "handler-kit: internal error: RuntimeError: a bug of handler-kit's"
    logged = (
        "handler-kit: error: the answer could not be made (RuntimeError: a bug of handler-kit's)"
    )
    assert got == {
        # stderr: the log line (stdout is the answer)
        "closed, reading": (0, EXPECTED["pre_raises_closed"], logged),
        "closed, writing": (2, {}, CLOSED),
        "open, reading": (1, {}, bug),
        "open, writing": (1, {}, bug),
    }


def _forward(url: str, case: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(HANDLER_KIT), "forward", f"{url}/hooks/h", "--timeout", "10"],
        input=json.dumps(hook_input(case)).encode(),
        capture_output=True,
        cwd=REPO,
        env=clean_env(HANDLER_KIT_TOKEN=TOKEN),
        timeout=60,
    )


@pytest.fixture(scope="module")
def forwarder_runs(
    servers: dict[tuple[str, str], str],
) -> dict[str, subprocess.CompletedProcess[bytes]]:
    """Every case through the forwarder to its server, a few processes at a time."""
    with ThreadPoolExecutor(max_workers=COMMAND_WORKERS) as pool:
        futures = {
            case: pool.submit(_forward, servers[case, "async_await"], case) for case in BEHAVIOURS
        }
        return {case: future.result() for case, future in futures.items()}


@pytest.mark.parametrize("case", list(BEHAVIOURS))
def test_forwarder(
    case: str, forwarder_runs: dict[str, subprocess.CompletedProcess[bytes]]
) -> None:
    """The forwarder prints what the server answered, as a command hook would."""
    proc = forwarder_runs[case]
    # a server's 500 gives no answer: the forwarder exits 0 with nothing, as a fail-open check
    # that failed (only a fail-closed route answers its safe decision when the server cannot)
    assert (proc.returncode, _stdout_json(proc.stdout)) == (0, EXPECTED[case]), proc.stderr.decode()


def test_observed_server_recorded(tmp_path: Path) -> None:
    """The observed variant really observes: its trail has a record per answer."""
    trail = tmp_path / "audit.jsonl"
    config = ServerConfig(
        tokens=[TOKEN], operations=OperationsConfig(audit=(f"jsonl:{trail}",), audit_process=False)
    )
    app = expectations.app_stop_block_guarded_async_await  # type: ignore[attr-defined]
    with running_server(app, config=config) as server:
        r = httpx.post(
            f"{server.url}/hooks/h",
            json=hook_input("stop_block_guarded"),
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert r.json() == {}
    lines = [json.loads(line) for line in trail.read_text().splitlines()]
    assert lines, "the audit trail recorded nothing"


@pytest.fixture(scope="module", autouse=True)
def command_runs(
    request: pytest.FixtureRequest,
) -> Iterator[dict[tuple[str, str], Future[subprocess.CompletedProcess[bytes]]]]:
    """Every selected row as a command hook, a few processes at a time (each is a Python
    start-up), started with the module's first test: they run while the server rows (in this
    process) are checked, and each command row waits for its own process."""
    selected = [
        (item.callspec.params["case"], item.callspec.params["shape"])
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.module is request.module
        and item.originalname == "test_command_hook"
    ]
    with ThreadPoolExecutor(max_workers=COMMAND_WORKERS) as pool:
        futures = {row: pool.submit(_command, *row) for row in selected}
        yield futures
        for future in futures.values():
            future.cancel()


# the command rows come last in the module, so their processes run behind the server rows
@pytest.mark.parametrize(("case", "shape"), ROWS)
def test_command_hook(
    case: str,
    shape: str,
    command_runs: dict[tuple[str, str], Future[subprocess.CompletedProcess[bytes]]],
) -> None:
    proc = command_runs[case, shape].result()
    code, body = command_expectation(case)
    assert (proc.returncode, _stdout_json(proc.stdout)) == (code, body), proc.stderr.decode()
