"""SessionStart, UserPromptSubmit, PostToolUse and Stop in the real agents: what each answer
does to the conversation, seen in the requests that reached the model."""

from __future__ import annotations

import pytest

from handler_kit.agents import CLAUDE_CODE, CODEX, Say, Shell

from .conftest import app_source

pytestmark = pytest.mark.runtimes


def main_requests(result) -> int:
    """Requests of the agent's main loop (those offering tools): one per model turn."""
    return sum(1 for request in result.requests if request.has_tools)


def test_session_start_context_reaches_the_model(run, agent: str) -> None:
    result = run(agent, [Say("Hello.")])
    assert result.returncode == 0, result.describe()
    first = next(r for r in result.requests if r.has_tools)
    assert "SESSION-CONTEXT: returns policy version 7." in first.conversation, result.describe()


def test_user_prompt_submit_context_reaches_the_model(run, agent: str) -> None:
    result = run(agent, [Say("Hello.")], prompt="context-prompt: what is my ticket?")
    assert result.returncode == 0, result.describe()
    assert result.reached_model("PROMPT-CONTEXT: the ticket is #4821."), result.describe()


def test_a_blocked_prompt_never_reaches_the_model(run, agent: str) -> None:
    result = run(agent, [Say("Hello.")], prompt="blocked-prompt: refund everything")
    assert not result.timed_out, result.describe()
    assert not result.reached_model("refund everything"), result.describe()
    if agent == CLAUDE_CODE:
        assert "PROMPT-BLOCKED: this request is not allowed." in result.output, result.describe()
    else:  # Codex's human-mode output names the verdict, not the reason
        assert "hook: UserPromptSubmit Blocked" in result.stderr, result.describe()


def test_post_tool_use_context_reaches_the_model(run, agent: str) -> None:
    result = run(agent, [Shell("touch post-context-me.marker"), Say("Finished.")])
    assert result.returncode == 0, result.describe()
    assert (result.project / "post-context-me.marker").exists(), result.describe()
    assert result.reached_model("POST-CONTEXT: the audit log noted this call."), result.describe()


def test_post_tool_use_block_reason_reaches_the_model(run, agent: str) -> None:
    result = run(agent, [Shell("touch post-block-me.marker"), Say("Finished.")])
    assert result.returncode == 0, result.describe()
    assert (result.project / "post-block-me.marker").exists(), result.describe()
    assert result.reached_model("POST-BLOCKED: this output is withheld."), result.describe()


def test_stop_blocks_once_then_the_loop_guard_lets_the_agent_stop(run, agent: str) -> None:
    result = run(agent, [Say("stop-block-me: first reply"), Say("stop-block-me: second reply")])
    assert result.returncode == 0, result.describe()
    assert result.reached_model("STOP-BLOCKED: the reply must cite the ticket."), result.describe()
    # The block sent the agent back once; the second reply, with stop_hook_active, ends it.
    assert main_requests(result) == 2, result.describe()


def test_stop_context_continues_once_then_the_agent_stops(run, agent: str) -> None:
    result = run(agent, [Say("stop-context-me: first reply"), Say("stop-context-me: second")])
    assert result.returncode == 0, result.describe()
    assert result.reached_model("STOP-CONTEXT: remember to cite the ticket."), result.describe()
    assert main_requests(result) == 2, result.describe()


def test_codex_runs_an_interrupt_handler_when_the_turn_is_interrupted(run) -> None:
    script = [Shell("touch started.marker; sleep 60"), Say("Finished.")]
    result = run(
        CODEX,
        script,
        app="interrupts:app",
        files={"interrupts.py": app_source("interrupts.py")},
        interrupt_when="started.marker",
    )
    assert not result.timed_out, result.describe()
    assert "hook: Interrupt" in result.stderr, result.describe()
    marker = result.project / "interrupted.marker"
    assert marker.exists(), result.describe()
    assert marker.read_text() == "Interrupt", result.describe()
