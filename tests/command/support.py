"""What the command-hook tests share with their fixtures (tests/command/conftest.py): the
``handler-kit`` console script run as a runtime runs it (one process per hook input), the
inputs the fixtures run through it, and the token of the forward tests' server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.apps import COMMAND_APP, CRASHY_APP
from tests.support.payloads import PAYLOADS
from tests.support.processes import PROCESSES_AT_ONCE, REPO

EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart")
BIN = Path(sys.executable).parent
HANDLER_KIT = BIN / "handler-kit"
APP = COMMAND_APP
PYCACHE = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"handler-kit-test-pycache-{os.getuid()}")
CRASHY = CRASHY_APP
# the bearer token of the ``handler-kit serve`` the forward tests forward to
TOKEN = "forward-test-token-0123456789"


@dataclass(frozen=True)
class Run:
    code: int
    stdout: bytes
    stderr: str


def run(
    args: list[str], stdin: bytes, *, cwd: Path = REPO, program: list[str] | None = None
) -> Run:
    """One ``handler-kit`` process, started the way a hook runtime starts it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDLER_KIT_")}
    # Let the children cache bytecode (outside the repo), as an installed package has it:
    # compiling handler-kit's sources in every one of these processes would dominate their time.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = PYCACHE
    proc = subprocess.run(
        [*(program or [str(HANDLER_KIT)]), *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=60,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace"))


def run_many(jobs: dict[Any, tuple[list[str], bytes]]) -> dict[Any, Run]:
    with ThreadPoolExecutor(max_workers=PROCESSES_AT_ONCE) as pool:
        futures = {key: pool.submit(run, args, stdin) for key, (args, stdin) in jobs.items()}
        return {key: future.result() for key, future in futures.items()}


def event_json(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


def payload_files() -> list[Path]:
    return sorted(p for event in EVENTS for p in (PAYLOADS / event).glob("*.json"))


PAYLOAD_FILES = payload_files()

# name -> (stdin, a fragment of the one-line error it gets)
BAD_INPUTS = {
    "not JSON": (b"refund please", "not JSON"),
    "empty": (b"", "no hook input"),
    "not UTF-8": (b'{"prompt": "\xff"}', "not UTF-8 JSON"),
    "array": (b"[1, 2]", "must be a JSON object, not an array"),
    "no event name": (b'{"tool_name": "Bash"}', "no hook_event_name"),
    "event name not a string": (b'{"hook_event_name": 7}', "no hook_event_name"),
    # (on PreToolUse, the app's fail-closed gate answers its deny instead: see the inputs a gate
    # cannot read, in test_hook.py)
    "tool_name a number": (
        b'{"hook_event_name": "PostToolUse", "tool_name": 5}',
        "invalid PostToolUse input: tool_name",
    ),
    "tool_input a string": (
        b'{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": "ls"}',
        "invalid PostToolUse input: tool_input",
    ),
    "stop_hook_active a list": (
        b'{"hook_event_name": "Stop", "stop_hook_active": []}',
        "invalid Stop input: stop_hook_active",
    ),
    "event without handlers": (b'{"hook_event_name": "SessionEnd"}', "no handlers for SessionEnd"),
}

EXIT_CODE_BAD_INPUTS = ("not JSON", "tool_name a number")
