"""Hand-written command hook: the floor for a typed Python command hook.

Imports pydantic, defines one PreToolUse model (Claude Code fields + Runbear shared fields,
unknown fields kept), validates the hook input on stdin and prints the refund gate's decision.
``bench`` times this against ``handler-kit command example_servers.refund_gate:app``.
"""

import json
import sys
from typing import Any

from pydantic import BaseModel, ConfigDict


class PreToolUse(BaseModel):
    model_config = ConfigDict(extra="allow")

    session_id: str
    hook_event_name: str
    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    permission_mode: str | None = None
    agent_id: str | None = None
    agent_name: str | None = None
    org_id: str | None = None
    thread_id: str | None = None
    turn_id: str | None = None
    channel: str | None = None
    channel_id: str | None = None
    channel_user_id: str | None = None
    user_name: str | None = None
    user_email: str | None = None


def main() -> int:
    event = PreToolUse.model_validate_json(sys.stdin.buffer.read())
    if event.tool_name == "issue_refund" and event.tool_input.get("amount", 0) > 500:
        output = {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "Refunds over $500 need a human approver.",
            }
        }
        sys.stdout.write(json.dumps(output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
