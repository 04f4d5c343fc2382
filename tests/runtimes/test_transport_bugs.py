"""A bug of handler-kit's own outside ``HookApp.answer`` (reading the input, writing the answer
out), injected on purpose (``apps/transport_bug.py``), in the real agents: the fail-closed
gate's deny holds through the webhook (Claude Code's http hook), the forwarder and a command
hook entry written by hand. A bare HTTP 500 or an exit 1, what such a bug used to give, is
"go ahead" to both agents; the gate there has no objection, so only the bug can stop the call.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest

from handler_kit.agents import CLAUDE_CODE, CODEX, AgentRun, Say, Shell, install_hooks, run_agent
from handler_kit.agents.runner import SETTINGS

from .conftest import TOKEN, app_source, served

pytestmark = pytest.mark.runtimes

APP = "transport_bug:app"
FILES = {"transport_bug.py": app_source("transport_bug.py")}
BUG_VARIABLE = "INJECTED_BUG"
MARKER = "transport-bug.marker"
SCRIPT = [Shell(f"touch {MARKER}"), Say("Done.")]
# The gate's own safe decision (its failure policy answering), not the forwarder's
# "the hook server did not answer" nor install's "could not run" fallback.
GATE_FAILED = "Blocked by policy: the check 'gate' failed, and it is configured to fail closed."
# Where the webhook fails: writing the answer out, for every request
WEBHOOK_BUG = {BUG_VARIABLE: "handler_kit.server.webhook:_body"}
# `install` ends a gate's command entry with this exit 2 fallback for a handler-kit that
# cannot run (exit 1 included): the entries below are written without it, as by hand
FALLBACK = " || {"


def new_project(runs_dir: Path) -> Path:
    project = Path(tempfile.mkdtemp(dir=runs_dir)) / "project"
    project.mkdir()
    for name, text in FILES.items():
        (project / name).write_text(text, encoding="utf-8")
    return project


def denied(result: AgentRun, log: str = "") -> None:
    report = result.describe() + (f"\n--- server log\n{log}" if log else "")
    assert result.returncode == 0, report
    assert not (result.project / MARKER).exists(), report
    assert any(GATE_FAILED in r for r in result.tool_results()), report


@pytest.mark.parametrize(
    ("agent", "how"),
    [
        pytest.param(CLAUDE_CODE, "--base-url", id="claude-code-http-hook"),
        # the forwarder of a fail-closed gate denies a bare 500 too, with its own reason; the
        # server's answer is the gate's deny, which it passes on
        pytest.param(CLAUDE_CODE, "--via", id="claude-code-forwarder"),
        pytest.param(CODEX, "--via", id="codex-forwarder"),
    ],
)
def test_a_bug_in_the_webhook_keeps_the_gate_closed(
    agents_dir, runs_dir, agent: str, how: str
) -> None:
    project = new_project(runs_dir)
    with served(project, APP, env=WEBHOOK_BUG) as url:
        message = install_hooks(agent, APP, project, install_args=[how, url], python=sys.executable)
        result = run_agent(
            agent,
            project,
            SCRIPT,
            agents_dir=agents_dir,
            home=project.parent / "home",
            env={"HANDLER_KIT_TOKEN": TOKEN},
            install_message=message,
        )
    log = (project / "server.log").read_text()
    denied(result, log)
    assert "the answer at /hooks/gate could not be made" in log, log


def without_the_fallback(agent: str, project: Path) -> None:
    """The installed command entries, less the exit 2 fallback ``install`` appends."""
    path = project / SETTINGS[agent][0]
    settings = json.loads(path.read_text(encoding="utf-8"))
    entries = [e for groups in settings["hooks"].values() for g in groups for e in g["hooks"]]
    assert entries and all(FALLBACK in e["command"] for e in entries), settings
    for entry in entries:
        entry["command"] = entry["command"].partition(FALLBACK)[0]
    path.write_text(json.dumps(settings, indent=2), encoding="utf-8")


# where the command hook fails -> the function of handler_kit.command.hook that raises; reading
# the input is answered by the gate's deny in the runtime's JSON, writing the answer (the deny
# too) by exit 2 with the reason on stderr
COMMAND_BUGS = {"reading the input": "_validate", "writing the answer": "_respond"}


@pytest.mark.parametrize("where", COMMAND_BUGS)
@pytest.mark.parametrize("agent", [CLAUDE_CODE, CODEX])
def test_a_bug_in_a_command_hook_written_by_hand_keeps_its_gate_closed(
    agents_dir, runs_dir, agent: str, where: str
) -> None:
    project = new_project(runs_dir)
    message = install_hooks(agent, APP, project, python=sys.executable)
    without_the_fallback(agent, project)
    result = run_agent(
        agent,
        project,
        SCRIPT,
        agents_dir=agents_dir,
        home=project.parent / "home",
        env={BUG_VARIABLE: f"handler_kit.command.hook:{COMMAND_BUGS[where]}"},
        install_message=message,
    )
    denied(result)
