"""A malformed setting of the refund gate fails closed, in the processes a runtime starts.

``REFUND_LIMIT=abc`` or a ``TICKET_PATTERN`` that is no regular expression once broke the
module's import: every command hook then exited 1, a non-blocking error, and on the sandbox
runtime (which reads only exit codes) a $9,999 refund went through. Now the module imports;
``handler-kit serve`` refuses to start, naming the variable, before it says it serves; the
refund gate denies every refund (exit 2 in the exit-code dialect, with the reason); a handler
that needs the broken setting fails with exit 1 (a Stop hook's exit 2 would send the agent
back to work, and Codex sets no cap on that). Each case is a real subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from example_servers import refund_gate
from example_servers import refund_gate_candidate as candidate
from tests.support.processes import REPO, clean_env, free_port, serve_argv

TARGET = "example_servers.refund_gate:app"
BAD_LIMIT = (
    "The refund gate is misconfigured (REFUND_LIMIT='abc' is not an amount of US dollars "
    "(write it like 500 or 1,000.00)); a human approver must check every refund."
)
BAD_PATTERN = "TICKET_PATTERN='#(' is not a regular expression: missing ), unterminated subpattern"


def refund(amount: object) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "tool_name": "issue_refund",
        "tool_input": {"order_id": "4821", "amount": amount},
    }


def command(
    event: dict[str, Any], handler: str, *options: str, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handler_kit", "command", TARGET, "--handler", handler, *options],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env=clean_env(**env),
        cwd=REPO,
        timeout=60,
    )


@pytest.mark.parametrize("amount", [9999, 40, "$12.50"])
def test_a_malformed_limit_denies_every_refund_on_the_sandbox_runtime(amount):
    done = command(refund(amount), "refund_gate", "--runtime", "sandbox", REFUND_LIMIT="abc")
    assert (done.returncode, done.stdout, done.stderr.strip()) == (2, "", BAD_LIMIT)


def test_a_malformed_limit_denies_in_claude_codes_json_too():
    done = command(refund(9999), "refund_gate", REFUND_LIMIT="1.000,50")
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    assert "REFUND_LIMIT='1.000,50' is not an amount" in output["permissionDecisionReason"]


def test_the_policy_that_states_the_malformed_limit_fails_without_blocking():
    done = command({"hook_event_name": "SessionStart"}, "returns_policy", REFUND_LIMIT="abc")
    assert (done.returncode, done.stdout) == (1, "")
    assert "REFUND_LIMIT='abc' is not an amount" in done.stderr
    # a policy text of its own does not state the limit: it is served
    done = command(
        {"hook_event_name": "SessionStart"},
        "returns_policy",
        REFUND_LIMIT="abc",
        RETURNS_POLICY="Refunds need a receipt.",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] == (
        "Refunds need a receipt."
    )


def test_a_broken_ticket_pattern_leaves_the_gate_working():
    over = command(refund(9999), "refund_gate", "--runtime", "sandbox", TICKET_PATTERN="#(")
    assert (over.returncode, over.stderr.strip()) == (2, "Refunds over $500 need a human approver.")
    under = command(refund(40), "refund_gate", "--runtime", "sandbox", TICKET_PATTERN="#(")
    assert (under.returncode, under.stdout, under.stderr) == (0, "", "")


@pytest.mark.parametrize("runtime", ["claude-code", "codex", "sandbox"])
def test_a_broken_ticket_pattern_fails_the_stop_hook_with_exit_1(runtime):
    stop = {"hook_event_name": "Stop", "last_assistant_message": "Your refund is on its way."}
    done = command(stop, "cite_ticket", "--runtime", runtime, TICKET_PATTERN="#(")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines()[0] == (
        "handler-kit: every handler failed on Stop "
        f"(cite_ticket: RefundGateConfigError: {BAD_PATTERN} at position 1)"
    )


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"REFUND_LIMIT": "abc"}, "REFUND_LIMIT='abc' is not an amount of US dollars"),
        ({"REFUND_LIMIT": "-5"}, "REFUND_LIMIT='-5' is not an amount of US dollars"),
        ({"TICKET_PATTERN": "#("}, BAD_PATTERN),
    ],
)
def test_serve_refuses_to_start_naming_the_variable(env, named):
    port = free_port()
    done = subprocess.run(
        serve_argv(TARGET, port, "--no-mcp"),
        capture_output=True,
        text=True,
        env=clean_env(HANDLER_KIT_TOKENS="refund-config-token-0123456789", **env),
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""  # nothing said it was serving
    assert done.stderr.startswith("handler-kit serve: app 'refund-gate' is misconfigured: ")
    assert named in done.stderr and len(done.stderr.splitlines()) == 1


def test_the_candidate_derives_its_settings_with_the_gates_helper(monkeypatch):
    assert candidate.DENY_REASON == "Refunds over $1,000 need a human approver."
    assert refund_gate.limit_settings("1000") == (
        candidate.REFUND_LIMIT,
        candidate.LIMIT_ERROR,
        candidate.RETURNS_POLICY,
        candidate.DENY_REASON,
        candidate.CONFIG_ERRORS,
    )
    assert candidate.RETURNS_POLICY is not None and "over $1,000 need" in candidate.RETURNS_POLICY
    monkeypatch.setenv("REFUND_LIMIT", "abc")
    broken = refund_gate.limit_settings("1000")
    assert (broken.limit, broken.returns_policy, broken.deny_reason) == (None, None, BAD_LIMIT)
    assert broken.config_errors == (broken.limit_error,)
    monkeypatch.setenv("REFUND_LIMIT", "750")
    monkeypatch.setenv("RETURNS_POLICY", "Refunds need a receipt.")
    assert refund_gate.limit_settings("1000") == (
        750,
        None,
        "Refunds need a receipt.",
        "Refunds over $750 need a human approver.",
        (),
    )
