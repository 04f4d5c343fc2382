"""``event.project_dir``: the folder the runtime names to a command hook
(``CLAUDE_PROJECT_DIR``, Posit's ``PA_PROJECT_DIR``), else the session's ``cwd``; each through
a real ``handler-kit command`` process, as a runtime starts it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from handler_kit import PreToolUse
from tests.support.processes import HANDLER_KIT, clean_env

APP = """\
from handler_kit import HookApp, PreToolUse, context

app = HookApp("where")


@app.pre_tool_use
def where(event: PreToolUse):
    return context(f"project={event.project_dir}")
"""


def _project_seen(folder: Path, event: dict[str, object], **env: str) -> str:
    environment = clean_env(**env)
    for name in ("CLAUDE_PROJECT_DIR", "PA_PROJECT_DIR"):
        if name not in env:
            environment.pop(name, None)
    done = subprocess.run(
        [str(HANDLER_KIT), "command", "where:app"],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        cwd=folder,
        env=environment,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])


def test_a_command_hook_sees_the_runtimes_project_folder(tmp_path: Path) -> None:
    (tmp_path / "where.py").write_text(APP)
    event = {
        "hook_event_name": "PreToolUse",
        "session_id": "s",
        "cwd": "/work/project/subfolder",
        "tool_name": "Bash",
        # an input cannot name the project: the runtime's variable is not the caller's
        "project_dir": "/somewhere/else",
    }
    claude = _project_seen(tmp_path, event, CLAUDE_PROJECT_DIR="/work/project")
    assert claude == "project=/work/project"
    posit = _project_seen(tmp_path, event, PA_PROJECT_DIR="/work/posit")
    assert posit == "project=/work/posit"
    # Codex names none: the session's folder
    assert _project_seen(tmp_path, event) == "project=/work/project/subfolder"


def test_in_process_it_is_the_sessions_folder() -> None:
    assert PreToolUse(cwd="/a/b", tool_name="Bash").project_dir == "/a/b"
    assert PreToolUse(tool_name="Bash").project_dir is None
