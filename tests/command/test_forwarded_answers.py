"""Server answers that a runtime reads differently from Claude Code, through ``handler-kit
forward``: the real console script in front of a socket server of a few lines that answers
exactly the bytes given.

- sandbox runtime, SessionStart: only stdout is used at session start (003_*), and a block is
  ignored there (000_*): an answer with a block and context is the context on stdout, exit 0;
- (an answer whose ``hookEventName`` names another event never reaches a dialect here: the
  forwarder refuses it as a failure, no answer or the safe decision with ``--fail-closed``;
  the Posit dialect's own reading of one is checked in test_dialects.py.)
"""

from __future__ import annotations

import json
from typing import Any

from tests.command.test_forward import event, fake_server, forward, http

POLICY = "Returns are accepted within 30 days."


def answer(data: dict[str, Any]) -> bytes:
    return http("200 OK", json.dumps(data).encode())


def test_sandbox_session_start_block_with_context_is_the_context() -> None:
    reply = {
        "decision": "block",
        "reason": "No new sessions.",
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": POLICY},
    }
    start = event(hook_event_name="SessionStart", source="startup")
    with fake_server(answer(reply)) as server:
        result = forward(server.url("/hooks/start"), "--runtime", "sandbox", stdin=start)
    assert (result.code, result.stdout) == (0, POLICY.encode()), result
    assert "a block is ignored at session start" in result.stderr
