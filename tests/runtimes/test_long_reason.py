"""A deny whose reason is far over the 10,000 characters Claude Code caps context and plain
stdout at (a gate quoting a long tool input back), in the real agents: neither cuts the hook's
whole answer before parsing it, which would turn the deny into plain text and run the call.
Claude Code hands the model the whole reason; Codex cuts the middle of the tool result it
sends the model, keeping its first and last lines.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path

import pytest

from handler_kit.agents import CLAUDE_CODE, CODEX, Say, Shell, install_hooks, run_agent

from .conftest import TOKEN, app_source, served

pytestmark = pytest.mark.runtimes

APP = "long_reason:app"
LENGTH = 30_000
MARKER = f"long-reason-{LENGTH}.marker"
# the reason's first and last lines (apps/long_reason.py)
FIRST_LINE = "LONG-REASON-START: this command is not allowed.\n"
LAST_LINE = "\nLONG-REASON-END"


@pytest.mark.parametrize(
    ("agent", "hook"), [(CLAUDE_CODE, "command"), (CODEX, "command"), (CLAUDE_CODE, "http")]
)
def test_a_deny_with_a_long_reason_stops_the_call(
    agents_dir: Path, runs_dir: Path, agent: str, hook: str
) -> None:
    project = Path(tempfile.mkdtemp(dir=runs_dir)) / "project"
    project.mkdir()
    (project / "long_reason.py").write_text(app_source("long_reason.py"), encoding="utf-8")
    server = served(project, APP) if hook == "http" else contextlib.nullcontext("")
    with server as url:
        args = ["--base-url", url] if url else []
        message = install_hooks(agent, APP, project, install_args=args, python=sys.executable)
        result = run_agent(
            agent,
            project,
            [Shell(f"touch {MARKER}"), Say("Finished.")],
            agents_dir=agents_dir,
            home=project.parent / "home",
            env={"HANDLER_KIT_TOKEN": TOKEN},
            install_message=message,
        )
    assert result.returncode == 0, result.describe()
    assert not (result.project / MARKER).exists(), result.describe()
    reasons = [r for r in result.tool_results() if FIRST_LINE in r]
    assert reasons and LAST_LINE in reasons[0], result.describe()
    if agent == CLAUDE_CODE:  # the whole reason, as the tool result
        assert reasons[0].startswith(FIRST_LINE) and len(reasons[0]) == LENGTH, result.describe()
    else:  # about 12,000 characters, the middle cut out
        assert "tokens truncated" in reasons[0], result.describe()
