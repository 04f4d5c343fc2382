"""``make run``: serve an example app on HOST:PORT, with a token generated when none is set.

Prints the token and a ready-to-paste curl command, then runs ``handler-kit serve``.
"""

from __future__ import annotations

import os
import secrets
import sys

EXAMPLES = {
    "refund_gate": "example_servers.refund_gate:app",
    "context_loader": "example_servers.context_loader:app",
}
CURL = """\
Serving {target} on http://{host}:{port}
Bearer token: {token}

Try it:
  curl -s http://{host}:{port}/hooks \\
    -H 'Authorization: Bearer {token}' \\
    -H 'Content-Type: application/json' \\
    -H 'X-Runbear-Hook-Event: PreToolUse' \\
    -d '{event}'
"""
EVENT = (
    '{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"issue_refund",'
    '"tool_input":{"order_id":"4821","amount":640},"tool_use_id":"toolu_1"}'
)


def main(argv: list[str]) -> int:
    name = argv[0] if argv else "refund_gate"
    target = EXAMPLES.get(name, name)
    host = os.environ.get("HOST", "127.0.0.1")
    port = os.environ.get("PORT", "8000")
    tokens = os.environ.get("HANDLER_KIT_TOKENS", "")
    if not tokens.strip():
        tokens = secrets.token_urlsafe(24)
        os.environ["HANDLER_KIT_TOKENS"] = tokens
    token = tokens.split(",")[0].strip()
    print(CURL.format(target=target, host=host, port=port, token=token, event=EVENT), flush=True)
    from handler_kit.cli import main as cli

    return cli(["serve", target, "--host", host, "--port", str(port)])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
