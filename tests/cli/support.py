"""What the CLI tests share with their fixtures (tests/cli/conftest.py): the token, target and
process record of the ``handler-kit serve`` servers, and the app of the ``handler-kit install``
project."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.support.processes import Process

# -- handler-kit serve (test_serve.py) ---------------------------------------------------------

SERVE_TOKEN = "serve-cli-token-0123456789abcdef"
TARGET = "example_servers.refund_gate:app"


@dataclass
class Served:
    proc: Process
    port: int
    extra: dict[str, Any]


# -- handler-kit install (test_install.py) -----------------------------------------------------

REFUND_DENY = "Refunds over $500 need a human approver."
# the project's myhooks.py: a fail-closed refund gate and an audit note
GATE_APP = f"""\
from handler_kit import HookApp, PostToolUse, PreToolUse, deny

app = HookApp("refunds")


@app.pre_tool_use(matcher="orders__refund", fail_closed=True)
async def refund_gate(event: PreToolUse):
    if (event.tool_input or {{}}).get("amount", 0) > 500:
        return deny({REFUND_DENY!r})


@app.post_tool_use()
def audit_note(event: PostToolUse) -> str:
    return "audited"
"""
