"""What a run of the agent showed, compared with a case: the diff lines ``handler-kit test
--runtime`` prints, from recorded model requests and stub calls (no agent runs here)."""

from __future__ import annotations

from typing import Any

from handler_kit.agents.model import ModelRequest
from handler_kit.agents.versions import CLAUDE_CODE, CODEX
from handler_kit.cases import Case
from handler_kit.playback import Play, plan
from handler_kit.playback.judge import Seen, judge, offered

TOOLS = [{"name": "mcp__orders__refund", "input_schema": {"type": "object"}}]
REFUND = {
    "hook_event_name": "PreToolUse",
    "tool_name": "mcp__orders__refund",
    "tool_input": {"order_id": "A-1", "amount": 640},
}


def case(event: dict[str, Any], **expect: Any) -> Case:
    return Case.model_validate({"name": "c", "event": event, "expect": expect})


def messages(*results: str, text: str = "") -> ModelRequest:
    """A Messages API request carrying these tool results (and a user text)."""
    content: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": f"t{i}", "content": r} for i, r in enumerate(results)
    ]
    if text:
        content.append({"type": "text", "text": text})
    return ModelRequest(
        "/v1/messages", {"tools": TOOLS, "messages": [{"role": "user", "content": content}]}
    )


def played(c: Case, agent: str = CLAUDE_CODE) -> Play:
    p = plan(c, agent)
    assert isinstance(p, Play)
    return p


def test_a_deny_holds_when_the_tool_did_not_run_and_the_reason_reached_the_model() -> None:
    c = case(REFUND, decision="deny", reason=r"over \$500")
    seen = Seen((messages(), messages("ready", "Refunds over $500 need a human approver.")), (), "")
    assert judge(c, played(c), seen) == []


def test_a_deny_whose_tool_ran_gives_the_diff() -> None:
    c = case(REFUND, decision="deny", reason="approver")
    seen = Seen((messages(), messages("ready", "STUB-TOOL-RAN: refund")), ({"amount": 640},), "")
    assert [str(m) for m in judge(c, played(c), seen)] == [
        'decision: expected deny (the tool does not run), got the tool ran with {"amount": 640}',
        "reason: expected to match /approver/ in what reached the model, got "
        '"STUB-TOOL-RAN: refund"',
    ]


def test_codex_has_no_wait_call_so_the_first_result_is_the_calls() -> None:
    c = case(REFUND, decision="deny", reason="approver")
    seen = Seen((messages(), messages("blocked: a human approver must")), (), "")
    assert judge(c, played(c, CODEX), seen) == []


def test_a_run_expected_to_run_that_did_not() -> None:
    c = case(REFUND, decision="none")
    seen = Seen((messages(), messages("ready", "denied")), (), "")
    assert [str(m) for m in judge(c, played(c), seen)] == [
        'decision: expected none (the tool runs), got the tool did not run; the model got "denied"'
    ]


def test_updated_input_is_what_the_stub_was_called_with() -> None:
    c = case(REFUND, updated_input={"amount": 500})
    seen = Seen((messages(),), ({"order_id": "A-1", "amount": 640},), "")
    assert [str(m) for m in judge(c, played(c), seen)] == [
        "updated_input.amount: expected 500, got 640"
    ]
    unchanged = case(REFUND, updated_input=None)
    assert judge(unchanged, played(unchanged), seen) == []


def test_a_blocked_prompt_must_never_reach_the_model() -> None:
    c = case({"hook_event_name": "UserPromptSubmit", "prompt": "refund A-1"}, decision="block")
    asked = Seen((messages(text="refund A-1"),), (), "")
    assert [str(m) for m in judge(c, played(c), asked)] == [
        "decision: expected block (the model is never asked), got the model got the prompt"
    ]
    assert judge(c, played(c), Seen((), (), "")) == []


def test_a_stop_block_must_keep_the_agent_going_with_the_reason() -> None:
    event = {"hook_event_name": "Stop", "last_assistant_message": "On its way."}
    c = case(event, decision="block", reason="ticket number")
    stopped = Seen((messages(text="go"),), (), "")
    assert [str(m) for m in judge(c, played(c), stopped)] == [
        "decision: expected block (the agent goes on), got the agent stopped",
        "reason: expected to match /ticket number/ in what reached the model, got none",
    ]
    went_on = Seen(
        (messages(text="go"), messages(text="The reply does not cite the ticket number.")), (), ""
    )
    assert judge(c, played(c), went_on) == []


def test_context_must_reach_the_model_and_excluded_text_must_not() -> None:
    c = case(
        {"hook_event_name": "SessionStart", "source": "startup"},
        context_contains="30 days",
        context_excludes="approved",
    )
    seen = Seen((messages(text="refund approved"),), (), "")
    assert [str(m) for m in judge(c, played(c), seen)] == [
        "context: expected '30 days' to reach the model, got a conversation without it",
        "context: expected 'approved' not to reach the model, got a conversation with it",
    ]


def test_a_tool_is_offered_by_name_or_in_codexs_namespace() -> None:
    claude = ModelRequest("/v1/messages", {"tools": TOOLS})
    codex = ModelRequest(
        "/v1/responses",
        {"tools": [{"type": "namespace", "name": "mcp__orders", "tools": [{"name": "refund"}]}]},
    )
    assert offered([claude], "mcp__orders__refund")
    assert offered([codex], "mcp__orders__refund")
    assert not offered([codex], "mcp__orders__refunds")
    assert not offered([ModelRequest("/v1/messages", {"tools": []})], "mcp__orders__refund")
