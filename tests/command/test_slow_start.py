"""A command hook's deadline counts from when the runtime spawned it, not from when the app
had imported: the runtime's timeout started with the process."""

from __future__ import annotations

import json
import subprocess
import time

from tests.support.processes import HANDLER_KIT, REPO, clean_env

# what `handler-kit install` writes for the gate's timeout=2: the runtime kills the process, and
# lets the call through, this long after it spawned it. Counted from the import instead, the
# deadline (1.8 s) would land after it: IMPORT_SECONDS + 1.8 + the interpreter's start.
RUNTIME_TIMEOUT = 2 + 1


def test_a_slow_start_still_denies_before_the_runtime_gives_up() -> None:
    hook_input = {
        "session_id": "s",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "git push"},
    }
    started = time.monotonic()
    proc = subprocess.run(
        [str(HANDLER_KIT), "command", "tests.support.apps.slow_start:app", "--handler", "gate"],
        input=json.dumps(hook_input).encode(),
        capture_output=True,
        cwd=REPO,
        env=clean_env(),
        timeout=60,
    )
    elapsed = time.monotonic() - started
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert (proc.returncode, out["permissionDecision"]) == (0, "deny"), proc.stderr.decode()
    assert "did not answer in time" in out["permissionDecisionReason"]
    assert elapsed < RUNTIME_TIMEOUT, f"answered {elapsed:.2f} s after the spawn"
