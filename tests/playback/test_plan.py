"""A case to a run of the real agent (``handler-kit test --runtime``): the model's script, the
prompt and the stub's tool for each event the agents can be driven to, and why every other case
is not played. Pure: no agent runs here."""

from __future__ import annotations

from typing import Any

import pytest

from handler_kit.agents.model import Say, ToolCall
from handler_kit.agents.versions import CLAUDE_CODE, CODEX
from handler_kit.cases import Case
from handler_kit.playback import NotPlayed, Play, plan
from handler_kit.playback.plan import WAIT_FOR_MCP


def case(event: dict[str, Any], **expect: Any) -> Case:
    return Case.model_validate(
        {"name": "c", "event": event, "expect": expect or {"decision": "none"}}
    )


REFUND = {
    "hook_event_name": "PreToolUse",
    "tool_name": "mcp__orders__refund",
    "tool_input": {"order_id": "A-1", "amount": 640},
}


def test_an_mcp_tool_call_on_claude_code_waits_for_the_stub_then_calls_it() -> None:
    assert plan(case(REFUND, decision="deny"), CLAUDE_CODE) == Play(
        prompt="Do the task.",
        script=(
            ToolCall("WaitForMcpServers", {}),
            ToolCall("mcp__orders__refund", {"order_id": "A-1", "amount": 640}),
            Say("Done."),
        ),
        server="orders",
        tool="refund",
    )


def test_an_mcp_tool_call_on_codex_calls_it_at_once() -> None:
    played = plan(case({**REFUND, "hook_event_name": "PostToolUse"}, context_contains="x"), CODEX)
    assert played == Play(
        prompt="Do the task.",
        script=(ToolCall("mcp__orders__refund", {"order_id": "A-1", "amount": 640}), Say("Done.")),
        server="orders",
        tool="refund",
    )
    assert isinstance(played, Play) and played.tool_name == "mcp__orders__refund"
    assert WAIT_FOR_MCP not in played.script


@pytest.mark.parametrize("agent", [CLAUDE_CODE, CODEX])
def test_a_prompt_is_the_agents_prompt_and_the_model_only_answers(agent: str) -> None:
    event = {"hook_event_name": "UserPromptSubmit", "prompt": "Refund order A-1."}
    assert plan(case(event, decision="block"), agent) == Play("Refund order A-1.", (Say("Done."),))


def test_a_stop_case_has_the_model_say_its_last_message() -> None:
    event = {"hook_event_name": "Stop", "last_assistant_message": "Ticket #1: done."}
    assert plan(case(event, decision="block"), CODEX) == Play(
        "Do the task.", (Say("Ticket #1: done."),)
    )


def test_a_session_start_case_runs_a_session_that_only_answers() -> None:
    event = {"hook_event_name": "SessionStart", "source": "startup"}
    assert plan(case(event, context_contains="policy"), CLAUDE_CODE) == Play(
        "Do the task.", (Say("Done."),)
    )


@pytest.mark.parametrize(
    ("event", "expect", "agent", "why"),
    [
        (
            {
                "hook_event_name": "PreToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "rm -rf /"},
            },
            {"decision": "deny"},
            CLAUDE_CODE,
            "Bash is the agent's own tool: played, it would act on this machine (only tools a "
            "stub MCP server can offer are played)",
        ),
        (
            {"hook_event_name": "PreToolUse", "tool_name": "issue_refund", "tool_input": {}},
            {"decision": "deny"},
            CODEX,
            "the agent has no tool named 'issue_refund': a tool it does not build in is named "
            "mcp__SERVER__TOOL, so its hooks would see another tool_name",
        ),
        (
            {**REFUND, "session_id": "s-1"},
            {"decision": "deny"},
            CLAUDE_CODE,
            "the agent fills 'session_id' itself; the case's value of it cannot be played",
        ),
        (
            {"hook_event_name": "Stop", "cwd": "/srv", "last_assistant_message": "Hi"},
            {"decision": "none"},
            CODEX,
            "the agent fills 'cwd' itself; the case's value of it cannot be played",
        ),
        (
            {"hook_event_name": "SessionEnd", "reason": "logout"},
            {"decision": "none"},
            CLAUDE_CODE,
            "the scripted model cannot drive the agent to SessionEnd",
        ),
        (
            {"hook_event_name": "PermissionRequest", "tool_name": "mcp__a__b"},
            {"decision": "deny"},
            CLAUDE_CODE,
            "the scripted model cannot drive the agent to PermissionRequest",
        ),
        (
            {"hook_event_name": "SessionStart", "source": "resume"},
            {"context_contains": "x"},
            CLAUDE_CODE,
            "a headless run starts a new session: source 'resume'",
        ),
        (
            REFUND,
            {"decision": "deny", "system_message": "x"},
            CLAUDE_CODE,
            "a system message is shown to the user, not to the model",
        ),
        (
            REFUND,
            {"decision": "defer"},
            CLAUDE_CODE,
            "what the agent does with 'defer' depends on its permission mode",
        ),
        (
            REFUND,
            {"decision": "allow", "reason": "fine"},
            CLAUDE_CODE,
            "an allow's reason is shown to the user, not to the model",
        ),
        (
            {"hook_event_name": "UserPromptSubmit", "prompt": "p"},
            {"decision": "block", "reason": "no"},
            CODEX,
            "Codex does not show a blocked prompt's reason to anyone the run can read",
        ),
        (
            {"hook_event_name": "Stop", "last_assistant_message": "m"},
            {"updated_input": None},
            CLAUDE_CODE,
            "updated_input on Stop is not observed",
        ),
        (
            {"hook_event_name": "Stop"},
            {"decision": "block"},
            CLAUDE_CODE,
            "the case has no last_assistant_message for the model to say",
        ),
        (
            {**REFUND, "hook_event_name": "PostToolUse"},
            {"decision": "block"},
            CODEX,
            "a PostToolUse block is seen only by its reason reaching the model: give a reason",
        ),
        (
            {**REFUND, "hook_event_name": "PostToolUse"},
            {"decision": "none"},
            CLAUDE_CODE,
            "nothing the case expects of PostToolUse is seen from outside the agent",
        ),
        (
            {"hook_event_name": "SessionStart", "source": "startup"},
            {"decision": "none"},
            CODEX,
            "nothing the case expects of SessionStart is seen from outside the agent",
        ),
    ],
)
def test_a_case_the_agent_cannot_be_driven_to_is_not_played(
    event: dict[str, Any], expect: dict[str, Any], agent: str, why: str
) -> None:
    assert plan(case(event, **expect), agent) == NotPlayed(why)


def test_a_post_tool_use_block_with_its_reason_is_played() -> None:
    post = {**REFUND, "hook_event_name": "PostToolUse"}
    assert isinstance(plan(case(post, decision="block", reason="withheld"), CODEX), Play)


def test_a_case_for_one_handler_is_not_played() -> None:
    routed = Case.model_validate(
        {"event": REFUND, "handler": "gate", "expect": {"decision": "deny"}}
    )
    assert plan(routed, CLAUDE_CODE) == NotPlayed(
        "the case is sent to the handler 'gate' alone; the agent runs every handler of PreToolUse"
    )
