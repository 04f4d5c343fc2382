"""``handler-kit test CASES --runtime AGENT``, the command a user runs, in a subprocess against
the real agents: the refund gate's case files pass (the cases an agent cannot be driven to
reported as not played, with why), and wrong expectations fail with the readable diff."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from handler_kit.agents.versions import CLAUDE_CODE, executable

pytestmark = pytest.mark.runtimes

ROOT = Path(__file__).parents[2]
GATE = "example_servers/hookcases_refund_gate.yaml"
MCP = "tests/runtimes/data/hookcases_refund_gate_mcp.yaml"
PROMPTS = "tests/runtimes/data/hookcases_prompts.yaml"
WRONG = "tests/runtimes/data/hookcases_refund_gate_wrong.yaml"


def handler_kit_test(agents_dir: Path, agent: str, *files: str) -> subprocess.CompletedProcess[str]:
    binary = str(executable(agents_dir, agent))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "handler_kit",
            "test",
            *files,
            "--runtime",
            agent,
            "--binary",
            binary,
        ],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,
    )


def no_tool(name: str) -> str:
    return (
        f"      not played: the agent has no tool named {name!r}: a tool it does not build in "
        "is named mcp__SERVER__TOOL, so its hooks would see another tool_name"
    )


def test_the_refund_gates_cases_pass_through_the_agent(agents_dir: Path, agent: str) -> None:
    done = handler_kit_test(agents_dir, agent, GATE, MCP, PROMPTS)
    gate = f"{GATE}::"
    blocked_prompt = (
        [f"PASS  {PROMPTS}::a blocked prompt never reaches the model"]
        if agent == CLAUDE_CODE
        else [
            f"NOT PLAYED {PROMPTS}::a blocked prompt never reaches the model",
            "      not played: Codex does not show a blocked prompt's reason to anyone the run "
            "can read",
        ]
    )
    expected = [
        f"NOT PLAYED {gate}a refund over the limit is denied",
        no_tool("issue_refund"),
        f"NOT PLAYED {gate}a refund under the limit runs",
        no_tool("issue_refund"),
        f"NOT PLAYED {gate}the limit itself runs",
        no_tool("issue_refund"),
        f"PASS  {gate}the orders server's refund tool is gated too",
        f"NOT PLAYED {gate}a negative refund is denied",
        no_tool("issue_refund"),
        f"NOT PLAYED {gate}an unreadable amount is denied",
        no_tool("issue_refund"),
        f"PASS  {gate}a claude code plugin's orders server is gated too",
        f"NOT PLAYED {gate}an amount written the European way is unreadable, not 1.0005",
        no_tool("issue_refund"),
        f"NOT PLAYED {gate}a refund in another currency is denied",
        no_tool("issue_refund"),
        f"NOT PLAYED {gate}other tools are not gated",
        no_tool("lookup_order"),
        f"PASS  {gate}the returns policy is in context",
        f"PASS  {gate}a reply without the ticket number is sent back",
        f"PASS  {gate}a reply citing the ticket is let through",
        f"PASS  {MCP}::a large refund is denied and the model is told why",
        f"PASS  {MCP}::a small refund runs as asked",
        f"PASS  {MCP}::a refund's result carries the audit note",
        *blocked_prompt,
        f"PASS  {PROMPTS}::a prompt gets the ticket as context",
        "",
        "10 passed, 0 failed, 8 not played (18 cases in 3 files)"
        if agent == CLAUDE_CODE
        else "9 passed, 0 failed, 9 not played (18 cases in 3 files)",
    ]
    assert done.stdout.splitlines() == expected, done.stdout + done.stderr
    assert done.returncode == 0, done.stderr


def test_wrong_expectations_fail_with_the_diff(agents_dir: Path, agent: str) -> None:
    done = handler_kit_test(agents_dir, agent, WRONG)
    # what reached the model is the agent's own wording of a deny, and of a tool's result
    denied = (
        '"Refunds over $500 need a human approver."'
        if agent == CLAUDE_CODE
        else '"Tool call blocked by PreToolUse hook: Refunds over $500 need a human approver.. '
        'Tool: mcp__orders__refund"'
    )
    lines = done.stdout.splitlines()
    expected = [
        f"FAIL  {WRONG}::a large refund runs",
        "      decision: expected none (the tool runs), got the tool did not run; the model got "
        + denied,
        f"FAIL  {WRONG}::a small refund is denied",
        "      decision: expected deny (the tool does not run), got the tool ran with "
        '{"amount": 20, "order_id": "A-1002"}',
        "      reason: expected to match /need a human approver/ in what reached the model, got "
        "<the stub's result>",
        f"FAIL  {WRONG}::a reply citing the ticket is sent back",
        "      decision: expected block (the agent goes on), got the agent stopped",
        f"FAIL  {WRONG}::the policy gives 60 days",
        "      context: expected '60 days' to reach the model, got a conversation without it",
        "",
        "0 passed, 4 failed (4 cases in 1 file)",
    ]
    # Codex prefixes a tool's result with its wall time, which varies
    assert re.search(r'got ".*STUB-TOOL-RAN: refund"$', lines[4]), done.stdout
    lines[4] = lines[4][: lines[4].index(", got ") + 6] + "<the stub's result>"
    assert lines == expected, done.stdout + done.stderr
    assert done.returncode == 1, done.stderr
