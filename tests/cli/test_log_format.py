"""``handler-kit serve --log-format text|json``: one line per decision, aligned for a person or
one JSON object for a collector; with ``json`` every line of the process is JSON, the 401s
are summed up per interval (never one line each, never the token), and ``--env-file`` supplies
the settings. Two real servers, started together."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.support import SERVE_TOKEN, TARGET
from tests.support.payloads import REFUND_DENY, REFUND_EVENT
from tests.support.processes import Process, clean_env, free_port, process, serve_argv

START_TIMEOUT = 60.0  # bounded, and generous: a loaded 2-core machine imports slowly
BAD_TOKEN = "not-the-token-SECRET-0123456789"
BASH_EVENT = {
    "session_id": "s1",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "ls"},
    "tool_use_id": "toolu_2",
}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[Process, str]]]:
    folder = tmp_path_factory.mktemp("log-format")
    env_file = folder / "serve.env"
    # the settings of the json server come from its file: the token among them
    env_file.write_text(
        "# the production settings\n"
        f"export HANDLER_KIT_TOKENS='{SERVE_TOKEN}'\n"
        "HANDLER_KIT_AUTH_FAILURE_WINDOW=1\n"
        "HANDLER_KIT_AUTH_FAILURE_LIMIT=1000\n"
    )
    ports = {"json": free_port(), "text": free_port()}
    plans = {
        "json": (
            serve_argv(TARGET, ports["json"], "--log-format", "json", "--env-file", str(env_file)),
            clean_env(),
        ),
        "text": (
            serve_argv(TARGET, ports["text"]),
            clean_env(HANDLER_KIT_TOKENS=SERVE_TOKEN, HANDLER_KIT_LOG_FORMAT="text"),
        ),
    }
    with ExitStack() as stack:
        started = {
            name: (stack.enter_context(process(argv, env)), f"http://127.0.0.1:{ports[name]}")
            for name, (argv, env) in plans.items()
        }
        yield started


def ask(url: str, event: dict[str, Any], token: str = SERVE_TOKEN) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.post(f"{url}/hooks", json=event, headers=headers, timeout=10)


def wait_for(proc: Process, found: Any, timeout: float = 20.0) -> str:
    """The output once ``found(output)`` holds (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        output = proc.output()
        if found(output):
            return output
        time.sleep(0.1)
    raise AssertionError(f"not logged within {timeout} s:\n{proc.output()}")


def test_json_every_line_an_object_decisions_and_401_summaries(servers) -> None:
    proc, url = servers["json"]
    proc.wait_healthy(url, timeout=START_TIMEOUT)
    assert ask(url, REFUND_EVENT).json() == REFUND_DENY
    for _ in range(30):
        assert ask(url, REFUND_EVENT, token=BAD_TOKEN).status_code == 401

    def refused(output: str) -> int:
        """Failed authentications the log has accounted for so far."""
        total = 0
        for line in output.splitlines():
            if '"handler_kit.auth"' in line:
                message = json.loads(line)["message"]
                more = re.match(r"(\d+) more refused", message)
                total += int(more.group(1)) if more else 1
        return total

    output = wait_for(proc, lambda out: refused(out) >= 30)
    records = [json.loads(line) for line in output.splitlines() if line.strip()]
    assert all(isinstance(r, dict) and {"time", "level", "logger"} <= set(r) for r in records)
    decisions = [r for r in records if r["logger"] == "handler_kit.decisions"]
    assert len(decisions) == 1, decisions
    decision = decisions[0]
    assert decision["level"] == "INFO"
    assert decision["event"] == "PreToolUse"
    assert decision["handlers"] == ["refund_gate"]
    assert decision["tool"] == "issue_refund"
    assert decision["decision"] == "deny"
    assert decision["reason"] == "Refunds over $500 need a human approver."
    assert decision["status"] == "ok"
    assert decision["transport"] == "webhook"
    assert decision["principal"] == "token#0"
    assert isinstance(decision["duration_ms"], float)
    assert "tool_input" not in decision and "4821" not in json.dumps(decision)
    # thirty refusals, a handful of lines: the first at once, then sums per interval
    auth_lines = [r for r in records if r["logger"] == "handler_kit.auth"]
    assert 1 <= len(auth_lines) <= 5, auth_lines
    assert refused(output) == 30
    assert BAD_TOKEN not in output and SERVE_TOKEN not in output
    # the banner is a log record too, so a collector reads every line
    assert any(r.get("message", "").startswith("refund-gate: http://") for r in records)


def test_text_one_aligned_line_per_decision(servers) -> None:
    proc, url = servers["text"]
    proc.wait_healthy(url, timeout=START_TIMEOUT)
    assert ask(url, REFUND_EVENT).json() == REFUND_DENY
    assert ask(url, BASH_EVENT).json() == {}
    output = wait_for(proc, lambda out: "-> none" in out)
    lines = [line for line in output.splitlines() if line.startswith("PreToolUse ")]
    assert len(lines) == 2, output
    deny, none = lines
    assert re.fullmatch(
        r'PreToolUse +refund_gate +issue_refund +-> deny +\d+\.\d ms  "Refunds over \$500 '
        r'need a human approver\."',
        deny,
    ), deny
    assert re.fullmatch(r"PreToolUse +- +Bash +-> none +\d+\.\d ms", none), none
    # the columns line up
    assert deny.index("->") == none.index("->")
    assert deny.index(" ms") == none.index(" ms")
    assert "Traceback" not in output


def test_env_file_lines_and_the_environment_wins(tmp_path: Path, monkeypatch) -> None:
    """In-process: the file's rules (comments, ``export``, quotes), and a variable already
    set in the environment keeps its value."""
    from handler_kit.cli.serve import load_env_file, read_env_file
    from handler_kit.config import environment

    env_file = tmp_path / "x.env"
    env_file.write_text("# c\n\nexport HK_T_A='1 2'\nHK_T_B=\"x=y\"\nHK_T_C = plain \n")
    assert read_env_file(str(env_file)) == {"HK_T_A": "1 2", "HK_T_B": "x=y", "HK_T_C": "plain"}
    monkeypatch.setenv("HK_T_A", "from the environment")
    for name in ("HK_T_B", "HK_T_C"):
        monkeypatch.delenv(name, raising=False)  # and removed again after the test
    load_env_file(str(env_file))
    env = environment()
    assert (env["HK_T_A"], env["HK_T_B"], env["HK_T_C"]) == ("from the environment", "x=y", "plain")
