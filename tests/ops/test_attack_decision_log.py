"""Attacks on the decision log lines (``serve --log-format text|json``) through the caller's
text: a tool name (and a reason quoting it) with a newline, terminal escape sequences, C1
controls or bidirectional overrides cannot forge a line or reach the terminal, and one huge
tool name neither makes a huge line nor widens every later one. Real servers, one per
format."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from tests.support.processes import Process, clean_env, free_port, process, serve_argv

TOKEN = "decision-log-attack-token-0123"
TARGET = "tests.support.apps.echoing:app"
FORGED = "issue_refund\nINFO handler_kit.decisions: forged line"
HOSTILE = [
    FORGED,
    "Bash\x1b[2J\x1b[31mred\x1b[0m",
    "Bash\x9b31m\x7f\u2028\u202egnp.exe",
    "x" * 20_000,
    "Read",
]


@pytest.fixture(scope="module")
def outputs() -> Iterator[dict[str, str]]:
    ports = {"text": free_port(), "json": free_port()}
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN)
    with ExitStack() as stack:
        procs: dict[str, Process] = {
            name: stack.enter_context(process(serve_argv(TARGET, port, "--log-format", name), env))
            for name, port in ports.items()
        }
        found: dict[str, str] = {}
        for name, proc in procs.items():
            url = f"http://127.0.0.1:{ports[name]}"
            proc.wait_healthy(url, timeout=60)
            for tool in HOSTILE:
                event = {"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": {}}
                answer = httpx.post(
                    f"{url}/hooks",
                    json=event,
                    headers={"Authorization": f"Bearer {TOKEN}"},
                    timeout=30,
                )
                assert answer.status_code == 200, answer.text
            mark = "-> deny" if name == "text" else '"decision": "deny"'
            found[name] = wait_for(proc, lambda out, m=mark: out.count(m) >= len(HOSTILE))
        yield found


def wait_for(proc: Process, done: Any, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        output = proc.output()
        if done(output):
            return output
        time.sleep(0.1)
    raise AssertionError(f"not logged within {timeout} s:\n{proc.output()[-3000:]}")


def test_text_lines_escape_control_characters_and_stay_narrow(outputs: dict[str, str]) -> None:
    output = outputs["text"]
    lines = [line for line in output.splitlines() if "-> deny" in line]
    assert len(lines) == len(HOSTILE), output[-3000:]
    # nothing forged: the injected text is inside its decision's line, escaped
    assert not any(
        line.startswith("INFO handler_kit.decisions: forged") for line in output.splitlines()
    )
    assert "\\u000a" in lines[0]
    for control in ("\x1b", "\x9b", "\x7f", "\u2028", "\u202e"):
        assert control not in output
    assert "\\u001b[2J" in lines[1]
    # the huge name is cut, and the line after it is as narrow as the first
    assert all(len(line) < 300 for line in lines), max(map(len, lines))
    assert lines[-1].index("->") == lines[0].index("->")


def test_json_lines_stay_one_object_and_bounded(outputs: dict[str, str]) -> None:
    records = [
        json.loads(line)
        for line in outputs["json"].splitlines()
        if line.startswith("{") and '"decision"' in line
    ]
    assert [r["decision"] for r in records] == ["deny"] * len(HOSTILE)
    assert records[0]["tool"] == FORGED
    assert records[2]["tool"] == HOSTILE[2]  # escaped on the line, whole once read
    for control in ("\x1b", "\x9b", "\x7f", "\u2028", "\u202e"):
        assert control not in outputs["json"]
    assert all(len(json.dumps(r)) < 3000 for r in records)
    assert records[3]["tool"].startswith("xxx") and len(records[3]["tool"]) <= 200
