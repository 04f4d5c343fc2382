"""``handler-kit validate``, ``dispatch`` and ``send`` (DESIGN.md section 6)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from handler_kit.cli import main
from tests.support.dispatch import (
    McpRecorder,
    ScriptServer,
    block,
    context,
    http,
    mcp_tool,
    permission,
)


def handler_kit_command() -> list[str]:
    """The installed console script, as a user runs it."""
    script = Path(sys.executable).with_name("handler-kit")
    return [str(script)] if script.exists() else [sys.executable, "-m", "handler_kit.cli"]


def write(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_validate_reports_all_5_violations_in_one_run(tmp_path: Path) -> None:
    data = {
        "hooks": {
            "PreToolUses": [],  # 1. unknown event
            "PreToolUse": [
                {
                    "hooks": [
                        {"type": "command", "command": "./gate.sh"},  # 2. handler type
                        {
                            "type": "http",
                            "url": "http://hooks.example.com/gate",  # 3. not https
                            "timeout": 15,  # 4. over 10 s
                        },
                    ]
                }
            ],
            "Stop": [
                {
                    "hooks": [
                        {
                            "type": "http",
                            "url": "https://hooks.example.com/stop",
                            "headers": {"Content-Type": "text/plain"},  # 5. reserved header
                        }
                    ]
                }
            ],
        }
    }
    document = write(tmp_path / "hooks.json", data)
    result = subprocess.run(
        [*handler_kit_command(), "validate", document], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1, result.stderr
    printed = json.loads(result.stdout)
    assert printed["error"] == "invalid_hooks"
    assert [i["path"] for i in printed["issues"]] == [
        "hooks.PreToolUses",
        "hooks.PreToolUse[0].hooks[0].type",
        "hooks.PreToolUse[0].hooks[1].url",
        "hooks.PreToolUse[0].hooks[1].timeout",
        "hooks.Stop[0].hooks[0].headers.Content-Type",
    ]
    assert all(i["message"] for i in printed["issues"])


def test_validate_prints_ok_and_exits_0_for_a_valid_document(tmp_path, capsys) -> None:
    data = {"hooks": {"Stop": [{"hooks": [{"type": "http", "url": "https://h.example.com/"}]}]}}
    code, out, _ = run_cli(capsys, "validate", write(tmp_path / "hooks.json", data))
    assert (code, out) == (0, '{"ok": true}\n')


def test_validate_with_known_mcp_servers_reports_an_unknown_one(tmp_path, capsys) -> None:
    data = {"hooks": {"Stop": [{"hooks": [{"type": "mcp_tool", "server": "crm", "tool": "t"}]}]}}
    path = write(tmp_path / "hooks.json", data)
    code, out, _ = run_cli(capsys, "validate", path, "--known-mcp-server", "context-server")
    assert code == 1
    assert json.loads(out)["error"] == "unknown_mcp_server"
    code, out, _ = run_cli(capsys, "validate", path, "--known-mcp-server", "crm")
    assert code == 0


def test_validate_a_file_that_is_not_json(tmp_path, capsys) -> None:
    path = tmp_path / "hooks.json"
    path.write_text("{not json")
    code, out, _ = run_cli(capsys, "validate", str(path))
    assert code == 1
    assert json.loads(out)["error"] == "invalid_hooks"


def test_dispatch_prints_one_outcome_per_event_as_json_lines(
    tmp_path: Path,
    scripted: ScriptServer,
    mcp_test_server: McpRecorder,
    dispatch_tls,
    capsys,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HANDLER_KIT_TOKEN", "hook-secret")
    monkeypatch.setenv("MCP_TOKEN", "mcp-secret")
    auth = {"Authorization": "Bearer $HANDLER_KIT_TOKEN"}
    data = {
        "hooks": {
            "SessionStart": [
                {
                    "hooks": [
                        mcp_tool("load_user_context", input={"slack_user_id": "${channel_user_id}"})
                    ]
                }
            ],
            "UserPromptSubmit": [
                {
                    "hooks": [
                        http(
                            scripted.url("ctx", body=context("UserPromptSubmit", "A")), headers=auth
                        )
                    ]
                }
            ],
            "PreToolUse": [
                {
                    "matcher": "issue_refund",
                    "hooks": [
                        http(
                            scripted.url("gate", body=permission("deny", "Too much.")), headers=auth
                        )
                    ],
                }
            ],
            "Stop": [{"hooks": [http(scripted.url("stop", body=block("Cite it.")), headers=auth)]}],
        }
    }
    common = {"thread_id": "T", "turn_id": "1", "channel_user_id": "U1"}
    events = [
        {"hook_event_name": "SessionStart", **common},
        {"hook_event_name": "UserPromptSubmit", **common, "prompt": "refund?"},
        {"hook_event_name": "PreToolUse", **common, "tool_name": "issue_refund", "tool_input": {}},
        {"hook_event_name": "PreToolUse", **common, "tool_name": "lookup", "tool_input": {}},
        {"hook_event_name": "Stop", **common, "last_assistant_message": "Done."},
        {"hook_event_name": "Stop", **common, "last_assistant_message": "Done, #4821."},
        {"hook_event_name": "UserPromptSubmit", **common, "turn_id": "2", "prompt": "again"},
    ]
    events_path = tmp_path / "events.jsonl"
    events_path.write_text("\n".join(json.dumps(e) for e in events) + "\n\n")
    code, out, err = run_cli(
        capsys,
        "dispatch",
        "--document",
        write(tmp_path / "hooks.json", data),
        "--events",
        str(events_path),
        "--mcp-server",
        f"ctx={mcp_test_server.url}",
        "--mcp-header",
        "ctx=Authorization: Bearer $MCP_TOKEN",
        "--allow-private",
        "--ca-file",
        dispatch_tls.ca_file,
    )
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(o["event"], o["decision"]) for o in lines] == [
        ("SessionStart", None),
        ("UserPromptSubmit", None),
        ("PreToolUse", "deny"),
        ("PreToolUse", None),
        ("Stop", "block"),
        ("Stop", None),  # the continuation: block ignored
        ("UserPromptSubmit", None),
    ]
    assert lines[0]["additional_context"] == ["User U1 is on the Enterprise plan."]
    assert lines[1]["additional_context"] == ["A"]
    assert lines[6]["additional_context"] == []  # already injected in this thread
    assert lines[3]["handlers"][0]["status"] == "skipped"
    assert {r.headers["authorization"] for r in scripted.requests} == {"Bearer hook-secret"}
    assert set(mcp_test_server.authorizations) == {"Bearer mcp-secret"}
    assert [r.body["stop_hook_active"] for r in scripted.named("stop")] == [False, True]


def test_dispatch_refuses_loopback_without_allow_private(
    tmp_path, scripted, dispatch_tls, capsys
) -> None:
    data = {"hooks": {"Stop": [{"hooks": [http(scripted.url("stop", body=block("x")))]}]}}
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps({"hook_event_name": "Stop"}) + "\n")
    code, out, _ = run_cli(
        capsys,
        "dispatch",
        "--document",
        write(tmp_path / "h.json", data),
        "--events",
        str(events),
        "--ca-file",
        dispatch_tls.ca_file,
    )
    assert code == 0
    (line,) = [json.loads(x) for x in out.splitlines()]
    assert line["decision"] is None
    assert line["handlers"][0]["status"] == "failed" and "loopback" in line["handlers"][0]["error"]


def test_dispatch_invalid_document_prints_invalid_hooks(tmp_path, capsys) -> None:
    data = {
        "hooks": {
            "Stop": [
                {"hooks": [{"type": "http", "url": "https://h.example.com", "failClosed": True}]}
            ]
        }
    }
    events = tmp_path / "events.jsonl"
    events.write_text("")
    code, out, _ = run_cli(
        capsys, "dispatch", "--document", write(tmp_path / "h.json", data), "--events", str(events)
    )
    assert code == 1
    assert json.loads(out)["issues"][0]["path"] == "hooks.Stop[0].hooks[0].failClosed"


def test_dispatch_unset_environment_variable_is_an_error(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    headers = {"Authorization": "Bearer ${NOT_SET_ANYWHERE}"}
    data = {
        "hooks": {
            "Stop": [
                {"hooks": [{"type": "http", "url": "https://h.example.com", "headers": headers}]}
            ]
        }
    }
    events = tmp_path / "events.jsonl"
    events.write_text("")
    code, _, err = run_cli(
        capsys, "dispatch", "--document", write(tmp_path / "h.json", data), "--events", str(events)
    )
    assert code == 2
    assert "NOT_SET_ANYWHERE" in err


def test_dispatch_bad_event_line_is_an_error(tmp_path, capsys) -> None:
    data = {"hooks": {}}
    events = tmp_path / "events.jsonl"
    events.write_text('{"hook_event_name": "Stop"}\n[1]\n')
    code, out, err = run_cli(
        capsys, "dispatch", "--document", write(tmp_path / "h.json", data), "--events", str(events)
    )
    assert code == 2 and out == ""
    assert "events.jsonl:2" in err


def test_send_prints_the_response_and_how_a_runtime_reads_it(
    tmp_path, scripted: ScriptServer, dispatch_tls, capsys
) -> None:
    answer = permission("ask", "Confirm with the user.", updatedInput={"amount": 1})
    event = {
        "hook_event_name": "PreToolUse",
        "tool_name": "issue_refund",
        "tool_input": {"amount": 640},
    }
    code, out, _ = run_cli(
        capsys,
        "send",
        scripted.url("gate", body=answer),
        "--event",
        write(tmp_path / "event.json", event),
        "--token",
        "t0k",
        "--ca-file",
        dispatch_tls.ca_file,
    )
    assert code == 0
    printed = json.loads(out)
    assert printed["response"] == {"status": 200, "body": answer}
    assert printed["runtime"]["status"] == "ok"
    assert printed["runtime"]["reading"]["decision"] == "deny"
    assert printed["runtime"]["reading"]["reason"] == "Confirm with the user."
    assert printed["runtime"]["reading"]["updated_input"] is None
    notes = " ".join(printed["runtime"]["notes"])
    assert "ask is treated as deny" in notes
    assert "refuse this address" in notes  # 127.0.0.1: fine locally, refused by Runbear
    (request,) = scripted.named("gate")
    assert request.headers["authorization"] == "Bearer t0k"
    assert request.headers["x-runbear-hook-event"] == "PreToolUse"


def test_send_reports_a_failure_with_exit_1(tmp_path, scripted, dispatch_tls, capsys) -> None:
    event = {"hook_event_name": "Stop", "last_assistant_message": "hi"}
    code, out, _ = run_cli(
        capsys,
        "send",
        scripted.url("moved", status=302, location="https://elsewhere.example/"),
        "--event",
        write(tmp_path / "event.json", event),
        "--ca-file",
        dispatch_tls.ca_file,
    )
    assert code == 1
    printed = json.loads(out)
    assert printed["runtime"]["status"] == "failed"
    assert "redirect" in printed["runtime"]["error"]
    assert printed["response"]["status"] == 302


def test_dispatch_reads_a_deny_beside_fields_runbear_ignores_whatever_their_type(
    tmp_path: Path, scripted: ScriptServer, dispatch_tls
) -> None:
    ignored = {"suppressOutput": "yes", "systemMessage": 5, "continue": "no"}
    gate = http(scripted.url("gate", body={**permission("deny", "Too much."), **ignored}))
    unreadable = http(scripted.url("bad", body=permission(5)))
    data = {"hooks": {"PreToolUse": [{"hooks": [gate, unreadable]}]}}
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps({"hook_event_name": "PreToolUse", "tool_name": "x"}) + "\n")
    argv = ["--allow-private", "--ca-file", dispatch_tls.ca_file]
    document = write(tmp_path / "hooks.json", data)
    result = subprocess.run(
        [
            *handler_kit_command(),
            "dispatch",
            "--document",
            document,
            "--events",
            str(events),
            *argv,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    line = json.loads(result.stdout)
    assert (line["decision"], line["reason"]) == ("deny", "Too much.")
    # what Runbear reads, ill-typed, stays a failure
    assert [h["status"] for h in line["handlers"]] == ["ok", "failed"]
    assert "permissionDecision" in line["handlers"][1]["error"]

    event = write(tmp_path / "event.json", {"hook_event_name": "PreToolUse", "tool_name": "x"})
    result = subprocess.run(
        [*handler_kit_command(), "send", gate["url"], "--event", event, *argv[1:]],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    runtime = json.loads(result.stdout)["runtime"]
    assert runtime["reading"]["decision"] == "deny"
    notes = " ".join(runtime["notes"])
    assert (
        "Accepted and ignored (Runbear does not read them): suppressOutput, systemMessage, continue"
        in notes
    )


def test_validate_rejects_failclosed_false_included_on_events_that_always_fail_open(
    tmp_path: Path,
) -> None:
    def handler(fail_closed: bool) -> dict[str, Any]:
        return {"type": "http", "url": "https://h.example.com/", "failClosed": fail_closed}

    events = ("SessionStart", "PostToolUse", "Stop")
    data = {"hooks": {e: [{"hooks": [handler(False), handler(True)]}] for e in events}}
    result = subprocess.run(
        [*handler_kit_command(), "validate", write(tmp_path / "hooks.json", data)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1, result.stderr
    printed = json.loads(result.stdout)
    assert printed["error"] == "invalid_hooks"
    assert [i["path"] for i in printed["issues"]] == [
        f"hooks.{e}[0].hooks[{h}].failClosed" for e in events for h in (0, 1)
    ]


def test_validate_as_get_prints_the_document_with_every_header_value_redacted(
    tmp_path: Path,
) -> None:
    gate = {
        "type": "http",
        "url": "https://hooks.example.com/runbear/tool-policy",
        "headers": {"Authorization": "Bearer s3cret", "X-Tenant": "acme"},
        "failClosed": True,
    }
    review = {"type": "mcp_tool", "server": "context-server", "tool": "review_reply"}
    data = {
        "hooks": {
            "PreToolUse": [{"matcher": "issue_refund|delete_record", "hooks": [gate]}],
            "Stop": [{"hooks": [review]}],
        }
    }
    result = subprocess.run(
        [*handler_kit_command(), "validate", write(tmp_path / "hooks.json", data), "--as-get"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "s3cret" not in result.stdout
    shown = json.loads(result.stdout)
    redacted = {"Authorization": "<redacted>", "X-Tenant": "<redacted>"}
    assert shown == {
        "hooks": {
            "PreToolUse": [
                {"matcher": "issue_refund|delete_record", "hooks": [{**gate, "headers": redacted}]}
            ],
            "Stop": [{"hooks": [{**review, "input": {}}]}],  # no failClosed where none was set
        }
    }


@pytest.mark.parametrize(
    ("matcher", "problem"),
    [
        ("(?<srv>mcp__crm__)\\w+", None),  # valid JavaScript: a named group
        ("(?i)refund", "inline flags like (?i) are not JavaScript"),
        ("(?P<srv>mcp__crm__)\\w+", "(?P<name>...) and (?P=name) are Python's spelling"),
        ("refund\\Z", "\\Z is a literal 'Z' in JavaScript"),
        ("refund.*+", "a possessive quantifier (*+, ++, ?+) is Python-only"),
    ],
)
def test_validate_reads_matchers_as_javascript_regular_expressions(
    tmp_path: Path, matcher: str, problem: str | None
) -> None:
    gate = {"type": "http", "url": "https://hooks.example.com/gate", "failClosed": True}
    data = {"hooks": {"PreToolUse": [{"matcher": matcher, "hooks": [gate]}]}}
    result = subprocess.run(
        [*handler_kit_command(), "validate", write(tmp_path / "hooks.json", data)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if problem is None:
        assert (result.returncode, result.stdout) == (0, '{"ok": true}\n'), result.stdout
        return
    assert result.returncode == 1, result.stderr
    printed = json.loads(result.stdout)
    assert printed["error"] == "invalid_hooks"
    (issue,) = printed["issues"]
    assert issue["path"] == "hooks.PreToolUse[0].matcher"
    assert issue["message"].startswith(f"invalid matcher regular expression '{matcher}': ")
    assert problem in issue["message"]


def test_send_to_an_untrusted_certificate_suggests_ca_file(
    tmp_path, scripted: ScriptServer, capsys
) -> None:
    event = {"hook_event_name": "Stop", "last_assistant_message": "hi"}
    code, out, _ = run_cli(
        capsys,
        "send",
        scripted.url("gate", body={}),
        "--event",
        write(tmp_path / "event.json", event),
        "--token",
        "t0k",
    )
    assert code == 1
    printed = json.loads(out)
    assert "CERTIFICATE_VERIFY_FAILED" in printed["runtime"]["error"]
    assert printed["runtime"]["notes"][0] == (
        "The server's certificate is not one this machine trusts: for a test or development "
        "certificate, pass its CA with --ca-file PEM (serve --dev-tls prints where its CA is)."
    )
