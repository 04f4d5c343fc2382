"""``handler-kit command`` started with stdout closed (``>&-``) or a pipe nobody reads: no
traceback, nothing written anywhere it should not be, and the answer's exit code.

The app below is run as ``tests.command.test_stdout_closed:app``. Its gate opens a file, writes
to fd 1 (as C code printing does) and starts a child process that prints. With fd 1 closed and
left free, fd 1 is whatever the process opened next (the event loop's selector, that file), so
the gate's output goes into it and the child has no stdout; all of it must be caught instead.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from handler_kit import HookApp, PreToolUse, deny
from tests.support.processes import HANDLER_KIT, REPO, clean_env

app = HookApp("stdout-closed-test")

REASON = "No shell commands here."


@app.pre_tool_use(matcher="Bash")
def shell_gate(event: PreToolUse):
    with open(os.environ["GATE_NOTES"], "a", encoding="utf-8") as notes:
        os.write(1, b"chatter of the gate\n")  # as C code printing to stdout does
        subprocess.run(["echo", "chatter of a child"], check=False)
        notes.write("the gate's own note\n")
    return deny(REASON)


TARGET = "tests.command.test_stdout_closed:app"
INPUT = (
    b'{"hook_event_name": "PreToolUse", "session_id": "s-1", "transcript_path": "/tmp/t.jsonl",'
    b' "cwd": "/tmp", "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t-1"}'
)


def _run(stdout: str, notes: Path, *options: str) -> subprocess.CompletedProcess[bytes]:
    argv = [str(HANDLER_KIT), "command", *options, TARGET]
    env = clean_env(GATE_NOTES=str(notes))
    if stdout == "closed":
        # the shell closes fd 1 before handler-kit starts, as `handler-kit command app >&-`
        argv = ["sh", "-c", 'exec "$@" >&-', "sh", *argv]
        return subprocess.run(
            argv, input=INPUT, stderr=subprocess.PIPE, env=env, cwd=REPO, timeout=60
        )
    read, write = os.pipe()
    os.close(read)  # nobody will read the answer: writing it fails with EPIPE
    try:
        return subprocess.run(
            argv, input=INPUT, stdout=write, stderr=subprocess.PIPE, env=env, cwd=REPO, timeout=60
        )
    finally:
        os.close(write)


@pytest.mark.parametrize("stdout", ["closed", "broken pipe"])
def test_json_dialect(stdout: str, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    result = _run(stdout, notes)
    assert b"Traceback" not in result.stderr
    # the answer had nowhere to go; the exit code is the JSON dialect's for any answer
    assert result.returncode == 0, result.stderr
    # what the child printed was caught like any chatter, not written into the gate's file
    assert result.stderr == (
        b"handler-kit: stdout of the app: chatter of the gate\n"
        b"handler-kit: stdout of the app: chatter of a child\n"
    )
    assert notes.read_text() == "the gate's own note\n"


@pytest.mark.parametrize("stdout", ["closed", "broken pipe"])
def test_exit_code_dialect_still_blocks(stdout: str, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    result = _run(stdout, notes, "--exit-codes")
    # the exit code is the whole answer here: the deny is delivered
    assert result.returncode == 2, result.stderr
    assert result.stderr == f"{REASON}\n".encode()
    assert notes.read_text() == "the gate's own note\n"
