"""``handler-kit document --format claude-code``: what it prints for each transport, and its
refusals, one line each."""

from __future__ import annotations

import json

import pytest

from handler_kit.cli import main as cli_main
from handler_kit.runbear.generate import tool_input_fields
from tests.support.apps import COMMAND_APP as TARGET
from tests.support.apps import command as command_app

BASE = "https://hooks.example.com"


def test_mcp_transport_writes_mcp_tool_hooks_and_their_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["document", TARGET, "--format", "claude-code", "--transport", "mcp"]
    assert cli_main([*argv, "--base-url", BASE, "--mcp-server", "refunds"]) == 0
    out, err = capsys.readouterr()
    printed = json.loads(out)
    assert printed["mcpServers"] == {
        "refunds": {
            "type": "http",
            "url": f"{BASE}/mcp",
            "headers": {"Authorization": "Bearer ${HANDLER_KIT_TOKEN}"},
        }
    }
    gate = command_app.app.by_name["refund_gate"]
    fields = tool_input_fields(gate)  # what the server's tool declares
    assert fields[:2] == ["hook_event_name", "session_id"]
    assert printed["hooks"]["PreToolUse"][0] == {
        "matcher": "issue_refund|orders__refund",
        "hooks": [
            {
                "type": "mcp_tool",
                "server": "refunds",
                "tool": "refund_gate",
                "input": {name: f"${{{name}}}" for name in fields},
                "timeout": 3,
            }
        ],
    }
    kinds = {
        event: {hook["type"] for group in groups for hook in group["hooks"]}
        for event, groups in printed["hooks"].items()
    }
    # SessionStart fires before MCP servers connect: it stays a command hook
    assert kinds.pop("SessionStart") == {"command"}
    assert all(types == {"mcp_tool"} for types in kinds.values()), kinds
    assert "SessionStart handler 'returns_policy': Claude Code does not call mcp_tool" in err
    assert '"mcpServers" into .mcp.json' in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--format", "claude-code", "--base-url", "hooks.example.com"],
            "base URL must be an http(s) URL like https://hooks.example.com, got "
            "'hooks.example.com'",
        ),
        (
            ["--base-url", "hooks.example.com"],
            "base URL must be an http(s) URL like https://hooks.example.com, got "
            "'hooks.example.com'",
        ),
        (
            ["--format", "claude-code", "--transport", "mcp", "--base-url", BASE],
            "--transport mcp needs --base-url",
        ),
        (
            ["--transport", "mcp", "--base-url", BASE],
            "the namespace of the agent's Custom MCP integration that points at the server's "
            "/mcp endpoint",
        ),
    ],
)
def test_refusals_are_one_clear_line(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert cli_main(["document", TARGET, *args]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert message in err and "{base_url}" not in err, err
    assert "a handler-kit bug" not in err
    if "Custom MCP" not in message:  # the Runbear generator lists its reasons, one a line
        assert err.count("\n") == 1, err
