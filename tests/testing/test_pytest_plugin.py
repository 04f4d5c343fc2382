"""The docs' contract-test example, run as written (docs/dispatcher.md quotes the block between
the markers below, and a test here checks that it still does)."""

from __future__ import annotations

import re
from pathlib import Path

# --- docs example: start
from example_servers.refund_gate import app


def test_refunds_over_500_are_denied(hook_dispatcher):
    dispatcher = hook_dispatcher(app)  # the app on a real HTTPS port, behind Runbear's rules
    event = {"hook_event_name": "PreToolUse", "tool_name": "issue_refund"}
    outcome = dispatcher.dispatch_sync({**event, "tool_input": {"amount": 640}})
    assert outcome.decision == "deny"
    assert outcome.reason == "Refunds over $500 need a human approver."
    assert dispatcher.dispatch_sync({**event, "tool_input": {"amount": 20}}).decision is None


# --- docs example: end


def test_the_docs_quote_this_example() -> None:
    source = Path(__file__).read_text(encoding="utf-8")
    example = source.split("# --- docs example: start\n")[1].split("# --- docs example: end")[0]
    docs = Path(__file__).resolve().parents[2] / "docs"
    page = (docs / "dispatcher.md").read_text(encoding="utf-8")
    section = re.search(r"<!-- section:dispatcher -->(.*?)<!-- /section:dispatcher -->", page, re.S)
    assert section, "docs/dispatcher.md has no dispatcher section"
    blocks = re.findall(r"```python\n(.*?)```", section.group(1), re.S)
    assert example.strip() in [b.strip() for b in blocks]
