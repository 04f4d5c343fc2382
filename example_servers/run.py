"""``make run``: serve an example app on HOST:PORT, with a token generated when none is set.

Prints a ready-to-paste curl command, then runs ``handler-kit serve``. A port it cannot listen
on is refused first, before anything is printed, in ``make``'s terms (``make run PORT=9000``):
serve's own refusal would come after the curl, and tell to pass ``--port``, which ``make run``
has no way to take. The curl carries the
token only when this script generated it: a token set in ``HANDLER_KIT_TOKENS`` is the
user's own, possibly a production one, and a container's log is no place for it, so the curl
shows a placeholder instead.
"""

from __future__ import annotations

import json
import os
import sys

from handler_kit.auth import generate_token
from handler_kit.cli.serve import port_problem
from handler_kit.config import ConfigError, parse_port

# short name -> (MODULE:ATTR, route and event of the curl printed at start)
EXAMPLES = {
    "refund_gate": (
        "example_servers.refund_gate:app",
        "/hooks",
        '{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"issue_refund",'
        '"tool_input":{"order_id":"4821","amount":640},"tool_use_id":"toolu_1"}',
    ),
    "context_loader": (
        "example_servers.context_loader:app",
        "/hooks/order_1",
        '{"hook_event_name":"UserPromptSubmit","channel_user_id":"U0123456789",'
        '"prompt":"Can I get a refund for order 4821?"}',
    ),
}
USER_TOKEN = "<your HANDLER_KIT_TOKENS token>"
CURL = """\
Serving {target} on http://{host}:{port}
Bearer token: {shown}

Try it:
  curl -s http://{host}:{port}{route} \\
    -H 'Authorization: Bearer {token}' \\
    -H 'Content-Type: application/json' \\
    -H 'X-Runbear-Hook-Event: {event_name}' \\
    -d '{event}'
"""


def listen_problem(host: str, raw_port: str) -> str | None:
    """Why ``handler-kit serve`` would refuse ``HOST`` and ``PORT``, said with ``make``'s
    variables; None when it can listen there."""
    try:
        port = parse_port("PORT", raw_port)
    except ConfigError as exc:
        return f"{exc}; choose one: make run PORT=9000"
    problem = port_problem(host, port)
    if problem is None:
        return None
    # serve's advice is its options; make passes HOST and PORT
    reason, _, advice = problem.partition("; pass ")
    other = 9001 if port == 9000 else 9000
    if "--host" in advice:
        return f"{reason}; choose another: make run HOST=127.0.0.1 PORT={other}"
    return f"{reason}; choose another: make run PORT={other}"


def main(argv: list[str]) -> int:
    name = argv[0] if argv else "refund_gate"
    if name not in EXAMPLES:
        known = ", ".join(EXAMPLES)
        print(f"unknown example {name!r}; APP is one of: {known}", file=sys.stderr)
        return 2
    target, route, event = EXAMPLES[name]
    host = os.environ.get("HOST", "127.0.0.1")
    port = os.environ.get("PORT", "8000")
    problem = listen_problem(host, port)
    if problem is not None:
        print(f"make run: {problem}", file=sys.stderr)
        return 2
    if os.environ.get("HANDLER_KIT_TOKENS", "").strip():
        token = shown = USER_TOKEN
    else:
        token = generate_token()
        os.environ["HANDLER_KIT_TOKENS"] = token
        shown = f"{token} (generated; set HANDLER_KIT_TOKENS to choose your own)"
    event_name = json.loads(event)["hook_event_name"]
    text = CURL.format(
        target=target,
        host=host,
        port=port,
        token=token,
        shown=shown,
        route=route,
        event=event,
        event_name=event_name,
    )
    print(text, flush=True)
    from handler_kit.cli import main as cli

    return cli(["serve", target, "--host", host, "--port", str(port)])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
