"""Generating Runbear hooks documents from a HookApp (``handler-kit document``).

Every generated document is checked with Runbear's own validation rules
(``handler_kit.runbear.document.validate_document``), and the two transports are run end to end
through the reference dispatcher against a real server: the http and the mcp_tool documents must
reach the same decisions.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from example_servers import context_loader, refund_gate
from handler_kit import HookApp, PreToolUse, Stop
from handler_kit.cli import main as cli_main
from handler_kit.dispatcher import Dispatcher
from handler_kit.runbear.document import parse_document, validate_document
from handler_kit.runbear.generate import (
    AUTHORIZATION_PLACEHOLDER,
    GenerateError,
    runbear_document,
    timeout_seconds,
    tool_input_fields,
)
from handler_kit.server.mcp.tools import tool_input_schema
from handler_kit.testing import RunningServer
from tests.support.processes import REPO

BASE = "https://hooks.example.com"
MATCHER = refund_gate.REFUND_TOOLS


def http_entry(name: str, timeout: int, fail_closed: bool = False) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "type": "http",
        "url": f"{BASE}/hooks/{name}",
        "headers": {"Authorization": "Bearer ${HANDLER_KIT_TOKEN}"},
        "timeout": timeout,
    }
    if fail_closed:
        entry["failClosed"] = True
    return entry


def test_http_document_for_the_refund_gate() -> None:
    generated = runbear_document(refund_gate.app, transport="http", base_url=BASE + "/")
    assert generated.warnings == []
    assert generated.document == {
        "hooks": {
            "SessionStart": [{"hooks": [http_entry("returns_policy", 5)]}],
            "PreToolUse": [
                {"matcher": MATCHER, "hooks": [http_entry("refund_gate", 3, fail_closed=True)]}
            ],
            "PostToolUse": [{"matcher": MATCHER, "hooks": [http_entry("refund_audit_note", 3)]}],
            "Stop": [{"hooks": [http_entry("cite_ticket", 3)]}],
        }
    }
    assert validate_document(generated.document).ok


def test_mcp_document_maps_every_declared_field() -> None:
    generated = runbear_document(refund_gate.app, transport="mcp", mcp_server="refund-gate")
    document = generated.document
    assert validate_document(document, known_mcp_servers=["refund-gate"]).ok
    for handler in refund_gate.app.handlers:
        (group,) = document["hooks"][handler.event]
        (entry,) = group["hooks"]
        assert entry["type"] == "mcp_tool"
        assert entry["server"] == "refund-gate"
        assert entry["tool"] == handler.name
        declared = list(tool_input_schema(handler.event, handler.model)["properties"])
        assert tool_input_fields(handler) == declared
        assert entry["input"] == {name: f"${{{name}}}" for name in declared}
        assert entry["timeout"] == timeout_seconds(handler)
        assert entry.get("failClosed", False) == (handler.event == "PreToolUse")
        assert group.get("matcher") == (None if handler.event == "Stop" else handler.matcher)


def test_context_loader_documents_validate() -> None:
    app = context_loader.create_app("sqlite:///:memory:")
    for transport in ("http", "mcp"):
        generated = runbear_document(
            app, transport=transport, base_url=BASE, mcp_server="context-server"
        )
        result = validate_document(generated.document, known_mcp_servers=["context-server"])
        assert result.ok, result.error
        prompt_groups = generated.document["hooks"]["UserPromptSubmit"]
        assert [g["hooks"][0].get("tool", g["hooks"][0].get("url")) for g in prompt_groups] == [
            (f"{BASE}/hooks/{h.name}" if transport == "http" else h.name)
            for h in app.handlers
            if h.event == "UserPromptSubmit"
        ]
        assert all("matcher" not in g for g in prompt_groups)


def test_timeouts_round_up_matchers_and_fail_closed_per_event(mixed_app: HookApp) -> None:
    generated = runbear_document(mixed_app, base_url=BASE)
    hooks = generated.document["hooks"]
    assert hooks["SessionStart"] == [{"matcher": "startup", "hooks": [http_entry("hello", 3)]}]
    assert hooks["UserPromptSubmit"] == [{"hooks": [http_entry("screen", 1, fail_closed=True)]}]
    assert hooks["PostToolUse"] == [{"hooks": [http_entry("note", 3)]}]
    assert hooks["Stop"] == [{"hooks": [http_entry("check", 10)]}]
    for event in ("SessionStart", "PostToolUse", "Stop"):
        assert all("failClosed" not in h for g in hooks[event] for h in g["hooks"])
    assert validate_document(generated.document).ok


def test_events_runbear_does_not_run_are_skipped_or_refused(mixed_app: HookApp) -> None:
    generated = runbear_document(mixed_app, base_url=BASE)
    assert "PermissionRequest" not in generated.document["hooks"]
    assert len(generated.warnings) == 1
    assert "'permissions'" in generated.warnings[0]
    assert "PermissionRequest" in generated.warnings[0]
    with pytest.raises(GenerateError, match="PermissionRequest"):
        runbear_document(mixed_app, base_url=BASE, strict=True)


def test_more_than_eight_handlers_on_an_event_is_refused() -> None:
    hooks = HookApp("crowded")
    for i in range(9):

        def handler(event: PreToolUse) -> None:
            return None

        hooks.pre_tool_use(name=f"gate_{i}")(handler)
    with pytest.raises(GenerateError) as caught:
        runbear_document(hooks, base_url=BASE)
    assert "PreToolUse has 9 handlers" in str(caught.value)
    assert "at most 8" in str(caught.value)


def test_timeout_over_ten_seconds_is_refused() -> None:
    hooks = HookApp("slow")

    @hooks.pre_tool_use(timeout=12)
    def slow(event: PreToolUse) -> None:
        return None

    @hooks.stop(timeout=30)
    def slower(event: Stop) -> None:
        return None

    with pytest.raises(GenerateError) as caught:
        runbear_document(hooks, transport="mcp", mcp_server="x")
    assert caught.value.problems == [
        "handler 'slow' has timeout=12 s; Runbear allows at most 10 s (lower it in the decorator)",
        "handler 'slower' has timeout=30 s; Runbear allows at most 10 s (lower it in the "
        "decorator)",
    ]


def test_required_options() -> None:
    with pytest.raises(GenerateError, match="--base-url"):
        runbear_document(refund_gate.app, transport="http")
    with pytest.raises(GenerateError, match="--mcp-server"):
        runbear_document(refund_gate.app, transport="mcp")


# -- the command ------------------------------------------------------------------------------


def test_cli_prints_the_document(capsys: pytest.CaptureFixture[str]) -> None:
    target = "example_servers.refund_gate:app"
    assert cli_main(["document", target, "--base-url", BASE]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == runbear_document(refund_gate.app, base_url=BASE).document
    assert "HANDLER_KIT_TOKEN" in err

    argv = ["document", target, "--transport", "mcp", "--mcp-server", "refund-gate"]
    assert cli_main([*argv, "--base-url", BASE]) == 0
    out, err = capsys.readouterr()
    expected = runbear_document(refund_gate.app, transport="mcp", mcp_server="refund-gate")
    assert json.loads(out) == expected.document
    assert f"{BASE}/mcp" in err


def test_cli_refuses_with_a_clear_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["document", "example_servers.refund_gate:app", "--transport", "mcp"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "--mcp-server is required" in err
    assert cli_main(["document", "no_such_module:app", "--base-url", BASE]) == 1
    assert "no_such_module" in capsys.readouterr().err


def test_cli_claude_code_format_delegates(capsys: pytest.CaptureFixture[str]) -> None:
    from handler_kit.claude_code.settings import claude_code_hooks

    target = "example_servers.refund_gate:app"
    assert cli_main(["document", target, "--format", "claude-code", "--base-url", BASE]) == 0
    out, _ = capsys.readouterr()
    expected = claude_code_hooks(refund_gate.app, target, base_url=BASE, warn=lambda _: None)
    assert json.loads(out) == expected
    assert cli_main(["document", target, "--format", "claude-code", "--command"]) == 0
    out, _ = capsys.readouterr()
    assert json.loads(out) == claude_code_hooks(refund_gate.app, target, command=True)


# -- end to end through the reference dispatcher --------------------------------------------

COMMON = {
    "session_id": "t-1",
    "thread_id": "t-1",
    "agent_id": "a-1",
    "channel": "slack",
    "channel_user_id": "U0123456789",
    "user_name": "Dana",
}


def thread_events() -> list[dict[str, Any]]:
    refund = {"order_id": "4821"}
    return [
        {**COMMON, "hook_event_name": "SessionStart", "source": "startup", "turn_id": "1"},
        {
            **COMMON,
            "hook_event_name": "PreToolUse",
            "turn_id": "1",
            "tool_name": "issue_refund",
            "tool_input": {**refund, "amount": 640},
        },
        {
            **COMMON,
            "hook_event_name": "PreToolUse",
            "turn_id": "1",
            "tool_name": "issue_refund",
            "tool_input": {**refund, "amount": 40},
        },
        {
            **COMMON,
            "hook_event_name": "PostToolUse",
            "turn_id": "1",
            "tool_name": "issue_refund",
            "tool_input": {**refund, "amount": 40},
            "tool_response": {"ok": True},
            "tool_use_id": "toolu_1",
        },
        {
            **COMMON,
            "hook_event_name": "Stop",
            "turn_id": "1",
            "last_assistant_message": "Refunded.",
            "stop_hook_active": False,
        },
        {
            **COMMON,
            "hook_event_name": "Stop",
            "turn_id": "1",
            "last_assistant_message": "Refunded, still no ticket.",
            "stop_hook_active": True,
        },
    ]


def test_http_and_mcp_documents_decide_the_same_through_the_dispatcher(
    refund_server: RunningServer,
) -> None:
    async def outcomes(document: dict[str, Any], url: str, mcp_url: str) -> list[dict[str, Any]]:
        async with Dispatcher(
            document,
            mcp_servers={"refund-gate": mcp_url},
            mcp_headers={"refund-gate": {"Authorization": f"Bearer {refund_server.token}"}},
            allow_private=True,
        ) as dispatcher:
            results = []
            for event in thread_events():
                outcome = await dispatcher.dispatch(event)
                assert all(h.status in ("ok", "skipped") for h in outcome.handlers), outcome
                data = outcome.to_json()
                data["handlers"] = [h["status"] for h in data["handlers"]]
                results.append(data)
            return results

    http_doc = runbear_document(refund_gate.app, base_url=refund_server.url).document
    http_doc = json.loads(
        json.dumps(http_doc).replace(AUTHORIZATION_PLACEHOLDER, f"Bearer {refund_server.token}")
    )
    mcp_doc = runbear_document(refund_gate.app, transport="mcp", mcp_server="refund-gate").document
    via_http = asyncio.run(outcomes(http_doc, refund_server.url, refund_server.mcp_url))
    via_mcp = asyncio.run(outcomes(mcp_doc, refund_server.url, refund_server.mcp_url))
    assert via_http == via_mcp
    decisions = [(o["event"], o["decision"]) for o in via_mcp]
    assert decisions == [
        ("SessionStart", None),
        ("PreToolUse", "deny"),
        ("PreToolUse", None),
        ("PostToolUse", None),
        ("Stop", "block"),
        ("Stop", None),
    ]
    assert via_mcp[0]["additional_context"] == [refund_gate.RETURNS_POLICY]
    assert via_mcp[1]["reason"] == "Refunds over $500 need a human approver."
    assert via_mcp[3]["additional_context"][0].startswith("Refund of $40.00 on order 4821")


def test_docs_example_is_what_the_command_prints() -> None:
    """The docs' mcp_tool document is real output of the command: keep it that way."""
    example = "docs/examples/refund-gate-runbear-mcp.json"
    assert f'--8<-- "{example}"' in (REPO / "docs" / "runbear.md").read_text(encoding="utf-8")
    shown = json.loads((REPO / example).read_text(encoding="utf-8"))
    expected = runbear_document(
        refund_gate.app, transport="mcp", mcp_server="refund-gate", base_url=BASE
    ).document
    assert shown == expected
    assert validate_document(shown, known_mcp_servers=["refund-gate"]).ok


def test_a_generated_document_round_trips_through_hooks_document_into_the_dispatcher(
    refund_server: RunningServer,
) -> None:
    """A generated document, held as a HooksDocument, is what the dispatcher runs: no
    ``failClosed`` where Runbear rejects it, whatever the model's defaults."""
    generated = runbear_document(refund_gate.app, base_url=refund_server.url).document
    generated = json.loads(
        json.dumps(generated).replace(AUTHORIZATION_PLACEHOLDER, f"Bearer {refund_server.token}")
    )
    document = parse_document(generated, allow_http=True)
    written = document.to_json()
    assert written == generated
    for event in ("SessionStart", "PostToolUse", "Stop"):
        assert all("failClosed" not in h for g in written["hooks"][event] for h in g["hooks"])
    dispatcher = Dispatcher(document, allow_private=True)
    outcomes = [dispatcher.dispatch_sync(event) for event in thread_events()]
    assert [(o.event, o.decision) for o in outcomes] == [
        ("SessionStart", None),
        ("PreToolUse", "deny"),
        ("PreToolUse", None),
        ("PostToolUse", None),
        ("Stop", "block"),
        ("Stop", None),
    ]
    assert all(o.statuses == ["ok"] for o in outcomes)
    # what GET shows of it: the token never comes back
    shown = document.to_json(redacted=True)
    assert {
        h["headers"]["Authorization"] for g in shown["hooks"].values() for h in g[0]["hooks"]
    } == {"<redacted>"}
