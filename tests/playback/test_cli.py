"""``handler-kit test --runtime``'s command line, in a subprocess as a user runs it, where no
agent is needed: its option errors, the message when the agent is not installed, and the report
of cases that are not played (text, JUnit, ``--strict``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.cases.support import EXAMPLE, run_test, write_json
from tests.support.processes import clean_env

BASH_CASE = {
    "name": "rm is denied",
    "event": {
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf /"},
    },
    "expect": {"decision": "deny"},
}
BASH_WHY = (
    "      not played: Bash is the agent's own tool: played, it would act on this machine (only "
    "tools a stub MCP server can offer are played)"
)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--binary", "claude"], "handler-kit: --binary applies to --runtime\n"),
        (["--strict"], "handler-kit: --strict applies to --runtime\n"),
        (
            ["--runtime", "codex", "--url", "http://127.0.0.1:9"],
            "handler-kit: --runtime plays cases with an app's hooks: use --app, not --url\n",
        ),
        (
            ["--runtime", "codex", "--document", "hooks.json"],
            "handler-kit: --runtime plays cases with an app's hooks: use --app, not --document\n",
        ),
    ],
)
def test_option_errors_exit_2_with_one_line(args: list[str], message: str) -> None:
    done = run_test(EXAMPLE, *args)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", message)


def test_an_unknown_runtime_is_refused_by_the_parser() -> None:
    done = run_test(EXAMPLE, "--runtime", "posit")
    assert done.returncode == 2
    # the quoting of the choices differs between Python versions
    assert "handler-kit test: argument --runtime: invalid choice: 'posit'" in done.stderr
    assert "claude-code" in done.stderr.splitlines()[-1]


@pytest.mark.parametrize(
    ("runtime", "command", "package"),
    [
        ("claude-code", "claude", "@anthropic-ai/claude-code@2.1.197"),
        ("codex", "codex", "@openai/codex@0.171.0"),
    ],
)
def test_a_missing_agent_names_where_to_get_it(
    tmp_path: Path, runtime: str, command: str, package: str
) -> None:
    env = clean_env(PATH=str(tmp_path))  # an empty folder: no agent on PATH
    done = run_test(EXAMPLE, "--runtime", runtime, env=env)
    cached = (
        f"~/.cache/handler-kit/agents/claude-code-2.1.197_codex-0.171.0/node_modules/.bin/{command}"
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == (
        f"handler-kit: {command} ({runtime}) is not on PATH: give --binary PATH, e.g. the one "
        f"`make test-runtimes` installs ({cached}), or install it with `npm install -g {package}`\n"
    )


def test_a_binary_that_is_not_there_is_named(tmp_path: Path) -> None:
    done = run_test(EXAMPLE, "--runtime", "codex", "--binary", tmp_path / "codex")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"handler-kit: --binary {tmp_path / 'codex'}: no such file\n"


def test_cases_not_played_are_reported_and_fail_only_a_strict_run(tmp_path: Path) -> None:
    # every case is not played, so the agent (any file will do) never runs
    agent = tmp_path / "claude"
    agent.write_text("#!/bin/sh\nexit 9\n")
    cases = write_json(tmp_path / "bash.json", BASH_CASE)
    args = (cases, "--app", "example_servers.refund_gate:app", "--runtime", "claude-code")
    done = run_test(*args, "--binary", agent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"NOT PLAYED {cases}::rm is denied",
        BASH_WHY,
        "",
        "0 passed, 0 failed, 1 not played (1 case in 1 file)",
    ]
    strict = run_test(*args, "--binary", agent, "--strict")
    assert (strict.returncode, strict.stdout) == (1, done.stdout)
    report = tmp_path / "report.xml"
    junit = run_test(*args, "--binary", agent, "--format", "junit", "--output", report)
    assert junit.returncode == 0, junit.stderr
    root = ET.parse(report).getroot()
    assert (root.get("tests"), root.get("skipped"), root.get("failures")) == ("1", "1", "0")
    skipped = root.find("testsuite/testcase/skipped")
    assert skipped is not None
    assert skipped.get("message") == BASH_WHY.strip()


DENY_CASE = {
    "name": "a large refund is denied",
    "event": {
        "hook_event_name": "PreToolUse",
        "tool_name": "mcp__orders__refund",
        "tool_input": {"amount": 640},
    },
    "expect": {"decision": "deny"},
}


def fake_agent(tmp_path: Path, body: str) -> Path:
    agent = tmp_path / "bin" / "claude"
    agent.parent.mkdir()
    agent.write_text(f"#!/bin/sh\n{body}\n")
    agent.chmod(0o755)
    return agent


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            "echo 'cannot reach the model' >&2; exit 3",
            "claude-code exited 3; stderr: cannot reach the model",
        ),
        # an agent that never offered the tool did not run it either: not a deny
        (
            "exit 0",
            "claude-code never offered the model mcp__orders__refund: the stub MCP "
            "server did not connect",
        ),
    ],
)
def test_an_agent_that_shows_nothing_is_an_error_never_a_pass(
    tmp_path: Path, body: str, error: str
) -> None:
    cases = write_json(tmp_path / "deny.json", DENY_CASE)
    agent = fake_agent(tmp_path, body)
    home = tmp_path / "home"  # the runs' work folders go under ~/.cache
    done = run_test(
        cases,
        "--app",
        "example_servers.refund_gate:app",
        "--runtime",
        "claude-code",
        "--binary",
        agent,
        env=clean_env(HOME=str(home)),
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        f"ERROR {cases}::a large refund is denied",
        f"      no answer to compare: {error}",
        "",
        "0 passed, 0 failed, 1 error (1 case in 1 file)",
    ]
    assert list((home / ".cache" / "handler-kit" / "runs").iterdir()) == []  # removed
