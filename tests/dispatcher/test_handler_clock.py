"""A handler's time counts from its own call: nothing another handler needs is paid from it.

The MCP client stack takes seconds to import, synchronously, holding the event loop. Imported
inside an ``mcp_tool`` handler's call, it spent that handler's timeout and its siblings': an
http deny with ``timeout: 1`` beside it timed out and the call ran. ``handler-kit dispatch``
runs in a fresh process here (so nothing of ``mcp`` is imported yet), against a real HTTPS
endpoint and a real MCP server on 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.dispatch import McpRecorder, ScriptServer, document, http, mcp_tool, permission
from tests.support.processes import Tls

REASON = "Refunds over $500 need a human approver."
PRE = {
    "hook_event_name": "PreToolUse",
    "thread_id": "c1",
    "turn_id": "1.1",
    "tool_name": "issue_refund",
    "tool_input": {"order_id": "4821", "amount": 640},
}


def handler_kit() -> list[str]:
    script = Path(sys.executable).with_name("handler-kit")
    return [str(script)] if script.exists() else [sys.executable, "-m", "handler_kit.cli"]


def test_an_mcp_tool_handler_does_not_spend_an_http_deny_s_timeout(
    scripted: ScriptServer, mcp_test_server: McpRecorder, dispatch_tls: Tls, tmp_path: Path
) -> None:
    data = document(
        "PreToolUse",
        http(scripted.url("gate", body=permission("deny", REASON)), timeout=1),
        # plain text on PreToolUse carries no decision: the deny can only be the http one's
        mcp_tool("plain", input={"text": "no opinion"}),
    )
    doc = tmp_path / "hooks.json"
    doc.write_text(json.dumps(data))
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(PRE) + "\n")
    done = subprocess.run(
        [
            *handler_kit(),
            "dispatch",
            "--document",
            str(doc),
            "--events",
            str(events),
            "--mcp-server",
            f"ctx={mcp_test_server.url}",
            "--allow-private",
            "--ca-file",
            dispatch_tls.ca_file,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.splitlines()[0])
    assert [h["status"] for h in outcome["handlers"]] == ["ok", "ok"], outcome
    assert (outcome["decision"], outcome["reason"]) == ("deny", REASON)
