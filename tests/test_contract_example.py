"""The README's contract-test example, run as written (the dispatcher section quotes the block
between the markers below, and a test here checks that it still does)."""

from __future__ import annotations

import re
from pathlib import Path

# --- README example: start
from example_servers.refund_gate import app


def test_refunds_over_500_are_denied(hook_dispatcher):
    dispatcher = hook_dispatcher(app)  # the app on a real HTTPS port, behind Runbear's rules
    event = {"hook_event_name": "PreToolUse", "tool_name": "issue_refund"}
    outcome = dispatcher.dispatch_sync({**event, "tool_input": {"amount": 640}})
    assert outcome.decision == "deny"
    assert outcome.reason == "Refunds over $500 need a human approver."
    assert dispatcher.dispatch_sync({**event, "tool_input": {"amount": 20}}).decision is None


# --- README example: end


def test_the_readme_quotes_this_example() -> None:
    source = Path(__file__).read_text(encoding="utf-8")
    example = source.split("# --- README example: start\n")[1].split("# --- README example: end")[0]
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = re.search(
        r"<!-- section:dispatcher -->(.*?)<!-- /section:dispatcher -->", readme, re.S
    )
    assert section, "README has no dispatcher section"
    blocks = re.findall(r"```python\n(.*?)```", section.group(1), re.S)
    assert example.strip() in [b.strip() for b in blocks]
