"""PreToolUse in the real agents: deny, allow, rewrite, ask, and fail-closed gates that raise
or hang. Each check looks from outside: the marker file the command creates, the tool result
the model received, what the agent printed."""

from __future__ import annotations

import pytest

from handler_kit.agents import CLAUDE_CODE, CODEX, Say, Shell

pytestmark = pytest.mark.runtimes


def test_deny_stops_the_call_and_the_reason_reaches_the_model(run, agent: str) -> None:
    result = run(agent, [Shell("touch deny-me.marker"), Say("Finished.")])
    assert result.returncode == 0, result.describe()
    assert not (result.project / "deny-me.marker").exists(), result.describe()
    assert any(
        "DENIED-BY-GATE: deny-me commands are not allowed." in r for r in result.tool_results()
    ), result.describe()


def test_no_opinion_lets_the_call_run(run, agent: str) -> None:
    result = run(agent, [Shell("touch plain.marker"), Say("Finished.")])
    assert result.returncode == 0, result.describe()
    assert (result.project / "plain.marker").exists(), result.describe()


def test_allow_runs_a_call_the_agent_would_not_run_itself(run) -> None:
    # Claude Code headless, with no tool allowed up front, refuses Bash unless a hook allows it.
    control = run(CLAUDE_CODE, [Shell("touch plain.marker"), Say("Finished.")], allowed_tools=())
    assert not (control.project / "plain.marker").exists(), control.describe()
    result = run(CLAUDE_CODE, [Shell("touch allow-me.marker"), Say("Finished.")], allowed_tools=())
    assert result.returncode == 0, result.describe()
    assert (result.project / "allow-me.marker").exists(), result.describe()


def test_allow_runs_the_call_on_codex(run) -> None:
    result = run(CODEX, [Shell("touch allow-me.marker"), Say("Finished.")])
    assert result.returncode == 0, result.describe()
    assert (result.project / "allow-me.marker").exists(), result.describe()


def test_rewrite_runs_the_rewritten_command(run, agent: str) -> None:
    result = run(agent, [Shell("touch rewrite-me.marker"), Say("Finished.")])
    assert result.returncode == 0, result.describe()
    assert (result.project / "rewritten.marker").exists(), result.describe()
    assert not (result.project / "rewrite-me.marker").exists(), result.describe()


def test_ask_headless_does_not_run_the_call(run, agent: str) -> None:
    result = run(agent, [Shell("touch ask-me.marker"), Say("Finished.")])
    assert result.returncode == 0, result.describe()
    assert not (result.project / "ask-me.marker").exists(), result.describe()
    assert any("ASKED-BY-GATE" in r for r in result.tool_results()), result.describe()


def test_a_fail_closed_gate_that_raises_denies(run, agent: str) -> None:
    result = run(agent, [Shell("touch raise-me.marker"), Say("Finished.")])
    assert result.returncode == 0, result.describe()
    assert not (result.project / "raise-me.marker").exists(), result.describe()
    assert any("the check 'gate'" in r for r in result.tool_results()), result.describe()


def test_a_fail_closed_gate_that_hangs_denies_by_its_deadline(run, agent: str) -> None:
    result = run(agent, [Shell("touch hang-me.marker"), Say("Finished.")])
    assert result.returncode == 0, result.describe()
    assert not (result.project / "hang-me.marker").exists(), result.describe()
    assert any("the check 'gate'" in r for r in result.tool_results()), result.describe()
    assert result.seconds < 30, result.describe()


def test_an_app_that_no_longer_imports_keeps_its_fail_closed_gate_closed(run, agent: str) -> None:
    broken = "raise ImportError('scenarios is broken on purpose')\n"
    result = run(
        agent,
        [Shell("touch after-break.marker"), Say("Finished.")],
        after_install={"scenarios.py": broken},
    )
    assert result.returncode == 0, result.describe()
    assert not (result.project / "after-break.marker").exists(), result.describe()
    assert result.tool_results(), result.describe()
