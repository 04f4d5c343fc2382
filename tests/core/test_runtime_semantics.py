"""The core's reading of the runtimes, through the real webhook (uvicorn on a free port): a
SessionStart without ``source`` is a startup, and a handler's dict with a key its event's
output schema does not have is answered by the handler's failure policy, never sent."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.support.apps.runtime_semantics import POLICY
from tests.support.http import error_body

NOTICE = "configured to fail closed"


def tool_event(event: str, tool: str, answer: dict[str, Any]) -> dict[str, Any]:
    return {
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": {"answer": answer},
        "tool_use_id": "toolu_1",
    }


# -- SessionStart without source --------------------------------------------------------------


def test_session_start_without_source_runs_the_startup_handler(http):
    """Runbear's SessionStart carries no source ("always startup")."""
    expected = {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": POLICY}
    }
    for path in ("/hooks", "/hooks/returns_policy"):
        response = http.post(path, json={"hook_event_name": "SessionStart", "session_id": "t1"})
        assert (response.status_code, response.json()) == (200, expected)
    # a source that is not startup still is not one
    resumed = {"hook_event_name": "SessionStart", "source": "resume"}
    assert http.post("/hooks", json=resumed).json() == {}


# -- a handler's dict is checked -------------------------------------------------------------

# A dict a handler returns on PreToolUse, and the key the log line names.
BAD_PRE_TOOL_USE = [
    ({"permissionDecision": "deny"}, "'permissionDecision' belongs in hookSpecificOutput"),
    (
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecison": "deny"}},
        "no field 'permissionDecison'",
    ),
    ({"additionalContext": "env: prod"}, "'additionalContext' belongs in hookSpecificOutput"),
]


@pytest.mark.parametrize(("answer", "logged"), BAD_PRE_TOOL_USE)
def test_a_fail_closed_gate_returning_a_bad_dict_denies(http, caplog, answer, logged):
    with caplog.at_level(logging.ERROR, logger="handler_kit"):
        response = http.post("/hooks", json=tool_event("PreToolUse", "closed_gate", answer))
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"hookSpecificOutput"}
    out = body["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "'closed_gate' failed" in out["permissionDecisionReason"]
    assert NOTICE in out["permissionDecisionReason"]
    assert any("closed_gate" in r.getMessage() and logged in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(("answer", "logged"), BAD_PRE_TOOL_USE)
def test_a_fail_open_handler_returning_a_bad_dict_sends_no_answer(http, caplog, answer, logged):
    with caplog.at_level(logging.ERROR, logger="handler_kit"):
        response = http.post("/hooks", json=tool_event("PreToolUse", "open_gate", answer))
    error_body(response, 500, "handler_failed")
    assert "permissionDecision" not in response.text
    assert any("open_gate" in r.getMessage() and logged in r.getMessage() for r in caplog.records)


def test_context_outside_hook_specific_output_is_not_sent(http):
    # PostToolUse, no failure policy: no answer at all
    event = tool_event("PostToolUse", "open_note", {"additionalContext": "audited"})
    error_body(http.post("/hooks", json=event), 500, "handler_failed")
    # UserPromptSubmit, fail closed: the gate blocks
    response = http.post("/hooks", json={"hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    body = response.json()
    assert body["decision"] == "block" and NOTICE in body["reason"]
    assert "additionalContext" not in response.text


def test_a_valid_dict_is_still_sent(http):
    answer = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no",
        },
        "systemMessage": "denied by the gate",
    }
    response = http.post("/hooks", json=tool_event("PreToolUse", "closed_gate", answer))
    assert (response.status_code, response.json()) == (200, answer)
