"""The hooks document's validation, one test per rule of 000_*/001_* (what PUT answers)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from handler_kit.runbear.document import (
    DocumentError,
    HooksDocument,
    HttpHandler,
    MatcherGroup,
    McpToolHandler,
    parse_document,
    timeout_for,
    validate_document,
)

URL = "https://hooks.example.com/runbear"


def http(**fields: Any) -> dict[str, Any]:
    return {"type": "http", "url": URL, **fields}


def mcp(**fields: Any) -> dict[str, Any]:
    return {"type": "mcp_tool", "server": "context-server", "tool": "lookup", **fields}


def doc(event: str, *handlers: dict[str, Any], matcher: str | None = None) -> dict[str, Any]:
    group: dict[str, Any] = {"hooks": list(handlers)}
    if matcher is not None:
        group["matcher"] = matcher
    return {"hooks": {event: [group]}}


def issues(data: Any, **options: Any) -> list[dict[str, str]]:
    result = validate_document(data, **options)
    assert result.error is not None, "expected the document to be refused"
    assert result.error["error"] == "invalid_hooks"
    return result.error["issues"]


def paths(data: Any, **options: Any) -> list[str]:
    return [i["path"] for i in issues(data, **options)]


def test_documents_from_the_spec_are_valid(spec_document: dict[str, Any]) -> None:
    first = spec_document
    second = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "issue_refund|delete_record",
                    "hooks": [
                        {
                            "type": "http",
                            "url": "https://hooks.example.com/runbear/tool-policy",
                            "headers": {"Authorization": "Bearer …"},
                            "failClosed": True,
                        }
                    ],
                }
            ],
            "Stop": [
                {
                    "hooks": [
                        {
                            "type": "mcp_tool",
                            "server": "context-server",
                            "tool": "review_reply",
                            "input": {
                                "reply": "${last_assistant_message}",
                                "already_continued": "${stop_hook_active}",
                            },
                        }
                    ]
                }
            ],
        }
    }
    for data in (first, second):
        result = validate_document(data, known_mcp_servers=["context-server"])
        assert result.ok, result.error
        assert isinstance(result.document, HooksDocument)
    document = parse_document(second)
    ((_, gate),) = document.handlers("PreToolUse")
    assert isinstance(gate, HttpHandler) and gate.fail_closed
    ((_, review),) = document.handlers("Stop")
    assert isinstance(review, McpToolHandler) and review.tool == "review_reply"


def test_an_agent_without_hooks_has_an_empty_document() -> None:
    assert validate_document({"hooks": {}}).ok
    # GET for an agent without hooks, in the reference's words
    assert HooksDocument().to_json(redacted=True) == {"hooks": {}}


def test_only_the_five_events_are_accepted() -> None:
    for event in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"):
        assert validate_document(doc(event, http())).ok
    assert paths(doc("SubagentStop", http())) == ["hooks.SubagentStop"]


def test_unknown_events_are_rejected_rather_than_ignored() -> None:
    (issue,) = issues(doc("PreToolUs", http()))
    assert issue["path"] == "hooks.PreToolUs"
    assert "unknown event" in issue["message"]


def test_at_most_8_handlers_per_event_across_all_groups() -> None:
    eight = {"hooks": {"PreToolUse": [{"hooks": [http()] * 5}, {"hooks": [http()] * 3}]}}
    assert validate_document(eight).ok
    nine = {"hooks": {"PreToolUse": [{"hooks": [http()] * 5}, {"hooks": [mcp()] * 4}]}}
    (issue,) = issues(nine)
    assert issue["path"] == "hooks.PreToolUse"
    assert "at most 8" in issue["message"] and "9" in issue["message"]
    # The limit is per event: 8 on each of two events is fine.
    both = {"hooks": {"PreToolUse": [{"hooks": [http()] * 8}], "Stop": [{"hooks": [http()] * 8}]}}
    assert validate_document(both).ok


def test_handler_types_are_http_and_mcp_tool_only() -> None:
    command = {"type": "command", "command": "echo hi"}
    (issue,) = issues(doc("Stop", http(), command))
    assert issue["path"] == "hooks.Stop[0].hooks[1].type"
    assert "http and mcp_tool" in issue["message"]
    assert paths(doc("Stop", {"url": URL})) == ["hooks.Stop[0].hooks[0].type"]


def test_unknown_handler_fields_are_rejected() -> None:
    assert paths(doc("PreToolUse", http(failclosed=True))) == [
        "hooks.PreToolUse[0].hooks[0].failclosed"
    ]
    assert paths(doc("Stop", mcp(headers={"a": "b"}))) == ["hooks.Stop[0].hooks[0].headers"]


def test_unknown_fields_are_rejected_at_every_level() -> None:
    data = {"hooks": {"Stop": [{"hooks": [http()], "matchers": "x"}]}, "version": 1}
    assert sorted(paths(data)) == ["hooks.Stop[0].matchers", "version"]


def test_timeout_is_an_integer_of_seconds_between_1_and_10() -> None:
    for good in (1, 3, 10, 4.0):
        assert validate_document(doc("Stop", http(timeout=good))).ok, good
    for bad in (0, 11, 2.5, "3", True, -1):
        assert paths(doc("Stop", http(timeout=bad))) == ["hooks.Stop[0].hooks[0].timeout"], bad


def test_default_timeouts_are_5s_on_session_start_and_3s_elsewhere_at_most_10() -> None:
    handler = HttpHandler(url=URL)
    assert timeout_for("SessionStart", handler) == 5
    for event in ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"):
        assert timeout_for(event, handler) == 3
    assert timeout_for("Stop", HttpHandler(url=URL, timeout=10)) == 10
    assert timeout_for("Stop", HttpHandler(url=URL, timeout=99)) == 10  # the 10 s ceiling


def test_failclosed_is_rejected_on_session_start_post_tool_use_and_stop_false_included() -> None:
    events = ("SessionStart", "PostToolUse", "Stop")
    data = {
        "hooks": {
            event: [{"hooks": [http(failClosed=True), mcp(failClosed=False), http()]}]
            for event in events
        }
    }
    found = issues(data)  # every violation at once: true and false, on each of the three
    assert [i["path"] for i in found] == [
        f"hooks.{event}[0].hooks[{h}].failClosed" for event in events for h in (0, 1)
    ]
    for issue in found:
        assert "cannot fail closed" in issue["message"] and "false included" in issue["message"]


def test_failclosed_is_accepted_on_user_prompt_submit_and_pre_tool_use() -> None:
    for event in ("UserPromptSubmit", "PreToolUse"):
        assert validate_document(doc(event, http(failClosed=True), mcp(failClosed=True))).ok
    assert paths(doc("PreToolUse", http(failClosed="yes"))) == [
        "hooks.PreToolUse[0].hooks[0].failClosed"
    ]


def test_http_url_must_be_https() -> None:
    (issue,) = issues(doc("Stop", http(url="http://hooks.example.com/x")))
    assert issue["path"] == "hooks.Stop[0].hooks[0].url"
    assert "https" in issue["message"]


def test_http_url_must_be_a_valid_url() -> None:
    for bad in ("hooks.example.com/x", "https://", "https://exa mple.com/", "https://h:99999/", 3):
        assert paths(doc("Stop", http(url=bad))) == ["hooks.Stop[0].hooks[0].url"], bad
    assert paths(doc("Stop", {"type": "http"})) == ["hooks.Stop[0].hooks[0].url"]


def test_http_handler_headers_at_most_16() -> None:
    sixteen = {f"X-H{i}": "v" for i in range(16)}
    assert validate_document(doc("Stop", http(headers=sixteen))).ok
    seventeen = {**sixteen, "X-H16": "v"}
    (issue,) = issues(doc("Stop", http(headers=seventeen)))
    assert issue["path"] == "hooks.Stop[0].hooks[0].headers"
    assert "16" in issue["message"]


def test_content_type_content_length_host_and_event_header_cannot_be_overridden() -> None:
    headers = {
        "Content-Type": "text/plain",
        "content-length": "3",
        "HOST": "evil.example",
        "X-Runbear-Hook-Event": "Stop",
        "Authorization": "Bearer t",
    }
    found = paths(doc("Stop", http(headers=headers)))
    assert found == [
        "hooks.Stop[0].hooks[0].headers.Content-Type",
        "hooks.Stop[0].hooks[0].headers.content-length",
        "hooks.Stop[0].hooks[0].headers.HOST",
        "hooks.Stop[0].hooks[0].headers.X-Runbear-Hook-Event",
    ]


def test_redacted_header_keeps_the_value_stored_for_the_same_url_and_header_name() -> None:
    stored = {(URL, "authorization"): "Bearer kept"}
    data = doc("Stop", http(headers={"AUTHORIZATION": "<redacted>", "X-Team": "support"}))
    document = parse_document(data, stored_headers=stored)
    ((_, handler),) = document.handlers("Stop")
    assert handler.headers == {"AUTHORIZATION": "Bearer kept", "X-Team": "support"}


def test_redacted_header_with_nothing_stored_is_rejected() -> None:
    data = doc("Stop", http(headers={"Authorization": "<redacted>"}))
    (issue,) = issues(data)
    assert issue["path"] == "hooks.Stop[0].hooks[0].headers.Authorization"
    assert "<redacted>" in issue["message"]
    # A value stored for another URL or another header does not count.
    other = {("https://other.example.com/", "authorization"): "x", (URL, "x-key"): "y"}
    assert len(issues(data, stored_headers=other)) == 1


def test_mcp_tool_naming_a_server_not_on_the_agent_is_unknown_mcp_server() -> None:
    data = doc("SessionStart", mcp(server="crm"))
    result = validate_document(data, known_mcp_servers=["context-server"])
    assert result.error is not None
    assert result.error["error"] == "unknown_mcp_server"
    assert result.error["servers"] == ["crm"]
    assert result.error["issues"][0]["path"] == "hooks.SessionStart[0].hooks[0].server"
    assert validate_document(data, known_mcp_servers=["crm"]).ok
    assert validate_document(data).ok  # no server list given: not checked


def test_mcp_tool_needs_server_and_tool_and_an_object_input() -> None:
    data = doc("Stop", {"type": "mcp_tool", "input": "x"})
    assert sorted(paths(data)) == [
        "hooks.Stop[0].hooks[0].input",
        "hooks.Stop[0].hooks[0].server",
        "hooks.Stop[0].hooks[0].tool",
    ]


def test_matcher_on_user_prompt_submit_and_stop_is_accepted_and_ignored() -> None:
    assert validate_document(doc("UserPromptSubmit", http(), matcher="(unbalanced")).ok
    assert validate_document(doc("Stop", http(), matcher="anything")).ok
    assert paths(doc("PreToolUse", http(), matcher="(unbalanced")) == [
        "hooks.PreToolUse[0].matcher"
    ]


def test_every_violation_is_reported_at_once() -> None:
    data = {
        "hooks": {
            "Notification": [],
            "PreToolUse": [
                {
                    "hooks": [
                        http(timeout=30),
                        {"type": "command", "command": "x"},
                        http(url="http://insecure.example.com", headers={"Host": "x"}),
                    ]
                }
            ],
            "Stop": [{"hooks": [mcp(failClosed=True, extra=1)]}],
        }
    }
    assert paths(data) == [
        "hooks.Notification",
        "hooks.PreToolUse[0].hooks[0].timeout",
        "hooks.PreToolUse[0].hooks[1].type",
        "hooks.PreToolUse[0].hooks[2].url",
        "hooks.PreToolUse[0].hooks[2].headers.Host",
        "hooks.Stop[0].hooks[0].extra",
        "hooks.Stop[0].hooks[0].failClosed",
    ]


def test_invalid_hooks_comes_before_unknown_mcp_server() -> None:
    data = {"hooks": {"Stop": [{"hooks": [mcp(server="crm", timeout=0)]}]}}
    result = validate_document(data, known_mcp_servers=[])
    assert result.error is not None and result.error["error"] == "invalid_hooks"


def test_parse_document_raises_with_puts_error_body() -> None:
    with pytest.raises(DocumentError) as caught:
        parse_document({"hooks": {"Stop": "nope"}})
    assert caught.value.error == {
        "error": "invalid_hooks",
        "issues": [
            {"path": "hooks.Stop", "message": "must be an array of matcher groups, not a string"}
        ],
    }


def test_document_that_is_not_an_object_is_refused() -> None:
    assert paths([]) == [""]
    assert paths({}) == ["hooks"]
    assert paths({"hooks": []}) == ["hooks"]


# -- writing a document back --------------------------------------------------------------


def test_to_json_writes_failclosed_only_where_it_was_set() -> None:
    data = doc("Stop", http(), mcp())
    assert parse_document(data).to_json() == {
        "hooks": {"Stop": [{"hooks": [{**http(), "headers": {}}, {**mcp(), "input": {}}]}]}
    }
    document = HooksDocument(hooks={"Stop": [MatcherGroup(hooks=[HttpHandler(url=URL)])]})
    assert validate_document(document.to_json()).ok
    kept = parse_document(doc("PreToolUse", http(failClosed=False), mcp(failClosed=True)))
    ((_, off), (_, on)) = kept.handlers("PreToolUse")
    assert (off.fail_closed, on.fail_closed) == (False, True)
    assert [h.get("failClosed") for h in kept.to_json()["hooks"]["PreToolUse"][0]["hooks"]] == [
        False,
        True,
    ]


def test_get_shows_every_header_value_as_redacted(spec_document: dict[str, Any]) -> None:
    document = parse_document(spec_document)
    shown = document.to_json(redacted=True)
    expected = json.loads(json.dumps(spec_document))
    (handler,) = expected["hooks"]["UserPromptSubmit"][0]["hooks"]
    handler["headers"] = {"Authorization": "<redacted>"}
    assert shown == expected
    assert "Bearer" not in json.dumps(shown)
    assert document.to_json() == spec_document  # the document itself keeps its values
    # Sent back on PUT, each <redacted> keeps the value stored for that URL and header name.
    stored = document.stored_headers()
    assert stored == {("https://hooks.example.com/runbear", "authorization"): "Bearer …"}
    assert parse_document(shown, stored_headers=stored) == document
    assert issues(shown)[0]["path"] == "hooks.UserPromptSubmit[0].hooks[0].headers.Authorization"
