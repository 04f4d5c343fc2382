"""Hook payloads for the tests: the captured Claude Code / Codex corpus, the refund event every
transport test sends, and JSON-lines files read while they are being written."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.support.processes import REPO

# The captured Claude Code / Codex payloads, vendored with their sources (SOURCES.md there).
PAYLOADS = REPO / "tests" / "data" / "hook-payloads"

REFUND_EVENT = {
    "session_id": "s1",
    "hook_event_name": "PreToolUse",
    "tool_name": "issue_refund",
    "tool_input": {"order_id": "4821", "amount": 640},
    "tool_use_id": "toolu_1",
}
REFUND_DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "Refunds over $500 need a human approver.",
    }
}


def input_files() -> list[Path]:
    """Every hook input of the corpus (``<Event>/*.json``), outputs excluded."""
    if not PAYLOADS.is_dir():
        return []
    return sorted(
        path
        for path in PAYLOADS.glob("*/*.json")
        if path.parent.name != "outputs" and path.is_file()
    )


def output_files() -> list[Path]:
    """Every hook output of the corpus (``outputs/*.json``)."""
    folder = PAYLOADS / "outputs"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def pre_tool_use(tool_name: str, tool_use_id: str, **tool_input: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "sess-ops",
        "tool_name": tool_name,
        "tool_use_id": tool_use_id,
        "tool_input": tool_input,
    }


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a JSON-lines file that may be being written (a last line without
    its newline is not there yet)."""
    if not path.exists():
        return []
    complete = path.read_text(encoding="utf-8").split("\n")[:-1]
    return [json.loads(line) for line in complete if line]


def wait_for_jsonl(path: Path, count: int) -> list[dict[str, Any]]:
    """The records of a JSON-lines file once it holds ``count`` of them (a writer process
    writes them a batch at a time, after the answers), waiting up to 10 s."""
    for _ in range(200):
        found = read_jsonl(path)
        if len(found) >= count:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{len(read_jsonl(path))} records, {count} expected")
