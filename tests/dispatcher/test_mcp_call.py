"""mcp_tool handlers, rule by rule, against a real MCP server (mcp 2.3 MCPServer, Streamable
HTTP, stateless + JSON) mounted on Starlette and served by uvicorn over TLS on 127.0.0.1."""

from __future__ import annotations

import logging

import pytest

from handler_kit.core.merge import RUNBEAR_FAIL_CLOSED_NOTICE
from handler_kit.dispatcher import Dispatcher, DocumentError, Thread
from tests.support.dispatch import McpRecorder, block, context, document, http, mcp_tool, permission

SLACK = {
    "thread_id": "t1",
    "turn_id": "1.1",
    "channel": "slack",
    "channel_user_id": "U0123456789",
    "user_name": "Dana",
    "prompt": "Can I get a refund for order 4821?",
}
START = {"hook_event_name": "SessionStart", **SLACK}
PROMPT = {"hook_event_name": "UserPromptSubmit", **SLACK}
PRE = {
    "hook_event_name": "PreToolUse",
    **SLACK,
    "tool_name": "issue_refund",
    "tool_input": {"order_id": "4821", "amount": 640},
}
POST = {**PRE, "hook_event_name": "PostToolUse", "tool_response": "ok"}
STOP = {"hook_event_name": "Stop", **SLACK, "last_assistant_message": "Refund issued."}
EVENTS = {
    "SessionStart": START,
    "UserPromptSubmit": PROMPT,
    "PreToolUse": PRE,
    "PostToolUse": POST,
    "Stop": STOP,
}


def plain(text: str, **fields: object) -> dict[str, object]:
    return mcp_tool("plain", input={"text": text}, **fields)


def test_tool_text_that_looks_like_a_json_object_is_a_claude_code_output(
    dispatcher_for, mcp_test_server: McpRecorder
) -> None:
    data = document("PreToolUse", mcp_tool("policy", input={"amount": "${tool_input.amount}"}))
    outcome = dispatcher_for(data).dispatch_sync(PRE)
    assert outcome.statuses == ["ok"]
    assert outcome.decision == "deny"
    assert outcome.reason == "Refunds over $500 need a human approver."
    canned = mcp_tool("canned", input={"name": "json_context"})  # starts with blanks
    outcome = dispatcher_for(document("UserPromptSubmit", canned)).dispatch_sync(PROMPT)
    assert outcome.additional_context == ["from JSON"]


def test_plain_text_is_context_on_session_start_user_prompt_submit_and_post_tool_use(
    dispatcher_for,
) -> None:
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse"):
        outcome = dispatcher_for(document(event, plain("Dana is on ${channel}."))).dispatch_sync(
            EVENTS[event]
        )
        assert outcome.statuses == ["ok"]
        assert outcome.additional_context == ["Dana is on slack."], event


def test_plain_text_carries_nothing_on_pre_tool_use_and_stop(dispatcher_for) -> None:
    for event in ("PreToolUse", "Stop"):
        outcome = dispatcher_for(document(event, plain("deny this please"))).dispatch_sync(
            EVENTS[event]
        )
        assert outcome.statuses == ["ok"], event
        assert (outcome.decision, outcome.additional_context) == (None, []), event


def test_text_starting_with_a_brace_that_is_not_json_is_plain_text(dispatcher_for) -> None:
    data = document("UserPromptSubmit", mcp_tool("canned", input={"name": "curly"}))
    outcome = dispatcher_for(data).dispatch_sync(PROMPT)
    assert outcome.additional_context == ["{curly but not JSON"]


def test_a_json_object_that_is_not_a_valid_output_is_a_failure(dispatcher_for) -> None:
    data = document("PreToolUse", mcp_tool("canned", input={"name": "bad_decision"}))
    outcome = dispatcher_for(data).dispatch_sync(PRE)
    assert outcome.statuses == ["failed"]
    assert outcome.handlers[0].error.startswith("unreadable output")
    assert "maybe" in outcome.handlers[0].error


def test_an_empty_tool_result_is_a_noop(dispatcher_for) -> None:
    outcome = dispatcher_for(
        document("PreToolUse", mcp_tool("policy", input={"amount": 5}))
    ).dispatch_sync(PRE)
    assert outcome.statuses == ["ok"] and outcome.decision is None


def test_a_tool_result_flagged_is_error_is_a_failure(dispatcher_for) -> None:
    outcome = dispatcher_for(document("UserPromptSubmit", mcp_tool("broken"))).dispatch_sync(PROMPT)
    assert outcome.statuses == ["failed"]
    assert "isError" in outcome.handlers[0].error
    assert "the context store is down" in outcome.handlers[0].error
    assert outcome.decision is None  # fails open
    gate = document("PreToolUse", mcp_tool("broken", failClosed=True))
    outcome = dispatcher_for(gate).dispatch_sync(PRE)
    assert (outcome.decision, outcome.reason) == ("deny", RUNBEAR_FAIL_CLOSED_NOTICE)


def test_an_mcp_tool_that_does_not_answer_in_time_times_out(dispatcher_for) -> None:
    data = document("UserPromptSubmit", mcp_tool("slow", timeout=1), plain("fast"))
    outcome = dispatcher_for(data).dispatch_sync(PROMPT)
    assert outcome.statuses == ["timeout", "ok"]
    assert outcome.additional_context == ["fast"]


def test_an_unknown_tool_is_a_failure(dispatcher_for) -> None:
    outcome = dispatcher_for(document("Stop", mcp_tool("no_such_tool"))).dispatch_sync(STOP)
    assert outcome.statuses == ["failed"]
    assert "not found" in outcome.handlers[0].error


def test_an_unreachable_mcp_server_is_a_failure(dispatcher_for, dispatch_tls) -> None:
    data = document("UserPromptSubmit", plain("x"))
    dispatcher = dispatcher_for(data, mcp_servers={"ctx": "https://127.0.0.1:9/mcp"})
    outcome = dispatcher.dispatch_sync(PROMPT)
    assert outcome.statuses == ["failed"]


def test_template_whole_value_placeholders_keep_their_json_type(
    dispatcher_for, mcp_test_server: McpRecorder
) -> None:
    data = document(
        "Stop",
        mcp_tool(
            "echo",
            input={
                "whole": "${tool_input}",
                "flag": "${stop_hook_active}",
                "amount": "${tool_input.amount}",
                "order": "${tool_input.order_id}",
            },
        ),
    )
    event = {**STOP, "tool_input": {"order_id": "4821", "amount": 640}}
    dispatcher_for(data).dispatch_sync(event)
    (arguments,) = mcp_test_server.named("echo")
    assert arguments == {
        "whole": {"order_id": "4821", "amount": 640},
        "flag": False,  # the dispatcher sets stop_hook_active on every Stop it sends
        "amount": 640,
        "order": "4821",
    }


def test_template_embedded_placeholders_interpolate_as_text(
    dispatcher_for, mcp_test_server: McpRecorder
) -> None:
    label = "refund of ${tool_input.amount} for ${user_name} on ${channel}"
    dispatcher_for(document("PreToolUse", mcp_tool("echo", input={"label": label}))).dispatch_sync(
        PRE
    )
    assert mcp_test_server.named("echo") == [{"label": "refund of 640 for Dana on slack"}]


def test_template_with_a_missing_optional_field_drops_the_key(
    dispatcher_for, mcp_test_server: McpRecorder
) -> None:
    # Slack supplies no user_email: the key is omitted, not sent as null, and the call happens.
    data = document(
        "SessionStart",
        mcp_tool(
            "load_user_context",
            input={
                "slack_user_id": "${channel_user_id}",
                "first_user_message": "${prompt}",
                "user_email": "${user_email}",
                "source": "runbear",
            },
        ),
    )
    outcome = dispatcher_for(data).dispatch_sync(START)
    assert outcome.statuses == ["ok"]
    assert outcome.handlers[0].arguments == {
        "slack_user_id": "U0123456789",
        "first_user_message": "Can I get a refund for order 4821?",
        "source": "runbear",
    }
    assert outcome.additional_context == ["User U0123456789 is on the Enterprise plan."]
    (arguments,) = mcp_test_server.named("load_user_context")
    assert "user_email" not in arguments


def test_keys_the_tool_schema_does_not_declare_are_dropped_with_a_warning(
    dispatcher_for, mcp_test_server: McpRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    data = document("PreToolUse", mcp_tool("policy", input={"amount": 900, "amount_cents": 90000}))
    with caplog.at_level(logging.WARNING, logger="handler_kit.dispatcher"):
        outcome = dispatcher_for(data).dispatch_sync(PRE)
    assert outcome.statuses == ["ok"]  # the call does not fail
    assert outcome.decision == "deny"
    assert mcp_test_server.named("policy") == [{"amount": 900}]
    assert any("amount_cents" in w for w in outcome.handlers[0].warnings)
    assert any("amount_cents" in r.getMessage() for r in caplog.records)


def test_the_tool_schema_is_listed_once_per_server(dispatcher_for) -> None:
    data = document(
        "UserPromptSubmit", plain("a"), plain("b"), mcp_tool("echo", input={"label": "c"})
    )
    dispatcher = dispatcher_for(data)
    for turn in ("1", "2", "3"):
        outcome = dispatcher.dispatch_sync({**PROMPT, "turn_id": turn})
        assert outcome.statuses == ["ok", "ok", "ok"]
    assert dispatcher.mcp["ctx"].listings == 1
    assert set(dispatcher.mcp["ctx"].schemas) >= {"plain", "echo", "policy"}


def test_mcp_headers_are_sent_to_the_server(dispatcher_for, mcp_test_server: McpRecorder) -> None:
    dispatcher = dispatcher_for(
        document("UserPromptSubmit", plain("x")),
        mcp_servers={"ctx": mcp_test_server.url},
        mcp_headers={"ctx": {"Authorization": "Bearer mcp-token"}},
    )
    mcp_test_server.authorizations.clear()
    dispatcher.dispatch_sync(PROMPT)
    assert mcp_test_server.authorizations
    assert set(mcp_test_server.authorizations) == {"Bearer mcp-token"}


def test_an_mcp_tool_naming_a_server_not_given_is_unknown_mcp_server(mcp_test_server) -> None:
    with pytest.raises(DocumentError) as caught:
        Dispatcher(document("Stop", mcp_tool("plain")), mcp_servers={"other": mcp_test_server.url})
    assert caught.value.error["error"] == "unknown_mcp_server"


def test_stop_continuation_reaches_the_tool_through_its_template(
    dispatcher_for, mcp_test_server: McpRecorder
) -> None:
    # The spec's example: review_reply gets already_continued = ${stop_hook_active}.
    data = document(
        "Stop",
        mcp_tool(
            "review_reply",
            input={
                "reply": "${last_assistant_message}",
                "already_continued": "${stop_hook_active}",
            },
        ),
    )
    dispatcher = dispatcher_for(data)
    thread = Thread()
    first = dispatcher.dispatch_sync(STOP, thread)
    assert (first.decision, first.reason) == ("block", "Cite the ticket number.")
    second = dispatcher.dispatch_sync({**STOP, "last_assistant_message": "Refund issued."}, thread)
    assert second.decision is None
    assert [a["already_continued"] for a in mcp_test_server.named("review_reply")] == [False, True]


def test_http_and_mcp_tool_handlers_merge_in_document_order(scripted, dispatcher_for) -> None:
    data = {
        "hooks": {
            "UserPromptSubmit": [
                {"hooks": [plain("from mcp ${user_name}")]},
                {
                    "hooks": [
                        http(scripted.url("ctx", body=context("UserPromptSubmit", "from http"))),
                        mcp_tool("broken"),
                        http(scripted.url("gate", body=block("Billing questions only."))),
                    ]
                },
            ],
            "PreToolUse": [
                {
                    "matcher": "issue_refund",
                    "hooks": [
                        http(
                            scripted.url(
                                "allow", body=permission("allow", None, updatedInput={"amount": 1})
                            )
                        ),
                        mcp_tool("policy", input={"amount": "${tool_input.amount}"}),
                    ],
                }
            ],
        }
    }
    dispatcher = dispatcher_for(data)
    outcome = dispatcher.dispatch_sync(PROMPT)
    assert [h.type for h in outcome.handlers] == ["mcp_tool", "http", "mcp_tool", "http"]
    assert outcome.statuses == ["ok", "ok", "failed", "ok"]
    assert outcome.additional_context == ["from mcp Dana", "from http"]
    assert (outcome.decision, outcome.reason) == ("block", "Billing questions only.")
    outcome = dispatcher.dispatch_sync(PRE)
    assert (outcome.decision, outcome.updated_input) == ("deny", None)


# -- answers read as Runbear reads them -------------------------------------------------------


def answer(name: str, **fields: object) -> dict[str, object]:
    """An mcp_tool handler calling the ``answering_server`` fixture's tool, which answers the
    canned output ``name`` of its ANSWERS (conftest.py)."""
    return mcp_tool("answer", input={"name": name}, **fields)


def test_a_tool_answer_is_read_as_runbear_reads_it_ignoring_what_it_ignores(
    dispatcher_for, answering_server: str
) -> None:
    servers = {"ctx": answering_server}
    data = document("PreToolUse", answer("deny_beside_ignored"))
    outcome = dispatcher_for(data, mcp_servers=servers).dispatch_sync(PRE)
    assert outcome.statuses == ["ok"], outcome.handlers[0].error
    assert (outcome.decision, outcome.reason) == (
        "deny",
        "Refunds over $500 need a human approver.",
    )
    data = document("UserPromptSubmit", answer("block_beside_ignored"))
    outcome = dispatcher_for(data, mcp_servers=servers).dispatch_sync(PROMPT)
    assert outcome.statuses == ["ok"], outcome.handlers[0].error
    assert (outcome.decision, outcome.reason) == ("block", "Billing questions only.")


def test_a_tool_answer_with_an_ill_typed_field_runbear_reads_is_a_failure(
    dispatcher_for, answering_server: str
) -> None:
    data = document("PreToolUse", answer("ill_typed_decision", failClosed=True))
    outcome = dispatcher_for(data, mcp_servers={"ctx": answering_server}).dispatch_sync(PRE)
    assert outcome.statuses == ["failed"]
    assert "permissionDecision" in outcome.handlers[0].error
    assert (outcome.decision, outcome.reason) == ("deny", RUNBEAR_FAIL_CLOSED_NOTICE)
