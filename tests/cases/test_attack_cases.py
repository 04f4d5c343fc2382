"""Attacks on the policy case runner (``handler-kit test`` and pytest's collection of
``hookcases_*`` files): a case file cannot hang it or crash it (a YAML alias bomb, nesting
deeper than the parsers recurse, a reason pattern that backtracks for hours, under the CLI
and under pytest), a bad ``--url`` is a usage error, and the token and a password in the URL
never reach a report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from handler_kit.testing import RunningServer
from tests.cases.support import EXAMPLE, GATE, run_test
from tests.support.processes import REPO, clean_env

# nine aliases of nine aliases of...: 9**9 strings once written out as JSON
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
)
# nested quantifiers: on the gate's reason, every split of the text is tried before failing
CATASTROPHIC = "^(.+)+X$"
REFUND = {
    "hook_event_name": "PreToolUse",
    "tool_name": "issue_refund",
    "tool_input": {"order_id": "A-1", "amount": 640},
}
TOKEN = "case-runner-token-SECRET-0123456789"
PASSWORD = "url-password-SECRET-42"


def catastrophic_cases() -> str:
    return json.dumps(
        [
            {"name": "backtracks", "event": REFUND, "expect": {"reason": CATASTROPHIC}},
            {"name": "fine", "event": REFUND, "expect": {"reason": "human approver"}},
        ]
    )


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("hookcases_laughs.yaml", LAUGHS, "expands to more than"),
        ("hookcases_deep.yaml", "x: " + "[" * 50_000 + "]" * 50_000, "nested too deeply"),
        ("hookcases_deep.json", "[" * 50_000 + "]" * 50_000, "nested too deeply"),
        ("hookcases_deep.jsonl", '{"event": ' + "[" * 50_000 + "]" * 50_000 + "}", "too deeply"),
        ("hookcases_loop.yaml", "a: &a [*a]\n", "contains itself"),
    ],
)
def test_a_hostile_case_file_is_a_usage_error(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    done = run_test(path, "--app", GATE)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_a_catastrophic_pattern_fails_its_case_instead_of_hanging(tmp_path: Path) -> None:
    path = tmp_path / "hookcases_redos.json"
    path.write_text(catastrophic_cases(), encoding="utf-8")
    done = run_test(path, "--app", GATE)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the pattern did not finish" in done.stdout
    assert "1 passed, 1 failed" in done.stdout


def test_a_catastrophic_pattern_fails_its_pytest_item(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text(f"[pytest]\npythonpath = {REPO}\n")
    (tmp_path / "hookcases_redos.json").write_text(catastrophic_cases(), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hookcases-app", GATE],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert "1 failed, 1 passed" in output, output
    assert "the pattern did not finish" in output


@pytest.mark.parametrize(
    "url",
    [
        f"http://user:{PASSWORD}@[::1/hooks",
        f"http://user:{PASSWORD}@127.0.0.1:port/hooks",
        "ftp://127.0.0.1/hooks",
        "127.0.0.1:8000/hooks",
    ],
)
def test_a_bad_url_is_a_usage_error_without_its_password(url: str) -> None:
    done = run_test(EXAMPLE, "--url", url, "--token", TOKEN)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--url is not a server URL" in done.stderr
    output = done.stdout + done.stderr
    assert "Traceback" not in output
    assert PASSWORD not in output and TOKEN not in output


def test_the_token_and_the_url_password_never_reach_a_report(
    gate_server: RunningServer, tmp_path: Path
) -> None:
    # a wrong token: said once, up front, naming the variables, and no case is run
    url = gate_server.url.replace("://", f"://user:{PASSWORD}@", 1) + "/hooks"
    junit = tmp_path / "report.xml"
    done = run_test(EXAMPLE, "--url", url, "--token", TOKEN, "--format", "junit", "--output", junit)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "refused the bearer token" in done.stderr
    assert "HANDLER_KIT_TOKENS" in done.stderr
    reports = [done.stdout, done.stderr]
    if junit.exists():
        reports.append(junit.read_text())
    for text in reports:
        assert TOKEN not in text and PASSWORD not in text
