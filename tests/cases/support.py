"""What the policy case tests share: the ``handler-kit test`` command run as a user runs it,
the cases they write, and the targets they name."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.support.processes import HANDLER_KIT, REPO, clean_env

APP = "tests.support.apps.cases:app"  # tests/support/apps/cases.py
GATE = "example_servers.refund_gate:app"
EXAMPLE = REPO / "example_servers" / "hookcases_refund_gate.yaml"
EXAMPLE_CASES = 13

BASH_LS = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}

# Every field an expectation has, each met by the cases app's answer
PASSING: list[dict[str, Any]] = [
    {
        "name": "a shell command is sandboxed",
        "event": BASH_LS,
        "expect": {
            "decision": "allow",
            "context_contains": "logged",
            "updated_input": {"sandbox": True, "limits": {"cpu": 1}},
        },
    },
    {
        "name": "the note handler alone rewrites nothing",
        "handler": "shell_note",
        "event": BASH_LS,
        "expect": {"decision": "none", "updated_input": None, "context_contains": ["logged"]},
    },
    {
        "name": "sudo asks",
        "event_name": "PreToolUse",
        "event": {"tool_name": "Bash", "tool_input": {"command": "sudo ls"}},
        "expect": {"decision": "ask", "reason": "^sudo needs"},
    },
    {
        "name": "the prompt gets the user",
        "event": {"hook_event_name": "UserPromptSubmit", "prompt": "hi", "user_name": "dana"},
        "expect": {
            "context_contains": ["dana"],
            "context_excludes": ["password"],
            "system_message": "checked",
        },
    },
]

# One case, wrong in every field the comparison reads
FAILING: dict[str, Any] = {
    "name": "rm -rf is allowed",
    "event": {**BASH_LS, "tool_input": {"command": "rm -rf /"}},
    "expect": {
        "decision": "allow",
        "reason": "^approved",
        "context_contains": ["audited"],
        "context_excludes": ["logged"],
        "updated_input": {"sandbox": True},
    },
}
# The lines of its difference, as both the CLI and pytest print them
FAILING_DIFF = [
    "decision: expected allow, got deny",
    'reason: expected to match /^approved/, got "Destructive command: rm -rf is not allowed."',
    "context: expected to contain 'audited', got \"Shell commands are logged.\"",
    "context: expected not to contain 'logged', got \"Shell commands are logged.\"",
    'updated_input: expected {"sandbox": true}, got none',
]

RAISES: dict[str, Any] = {
    "name": "the handler raises",
    "event": {
        "hook_event_name": "PostToolUse",
        "tool_name": "boom",
        "tool_input": {},
        "tool_response": {},
    },
    "expect": {"decision": "none"},
}


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def run_test(
    *args: str | Path, env: dict[str, str] | None = None, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    """``handler-kit test ARGS`` in a subprocess, from the repository (so the apps import)."""
    return subprocess.run(
        [str(HANDLER_KIT), "test", *map(str, args)],
        cwd=cwd,
        env=env if env is not None else clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
