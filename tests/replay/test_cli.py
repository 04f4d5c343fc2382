"""``handler-kit replay`` over decision records of the refund gate made in process (schema 2,
the whole input): the exact report, the exit status, the formats, the decisions reported
apart, side effects, filters, the cases it writes and the progress bar."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from example_servers.refund_gate import app as old_app
from handler_kit.cli import main
from tests.replay import apps
from tests.replay.support import (
    CANDIDATE,
    OLD,
    PER_HANDLER,
    TRAFFIC,
    decision_record,
    write_jsonl,
)
from tests.support.processes import HANDLER_KIT, REPO, clean_env

TOTALS = "decisions: 12 replayed: 7 unchanged, 1 tightened, 1 loosened, 3 changed"


@pytest.fixture
def log(tmp_path: Path) -> Path:
    records = [
        decision_record(old_app, hook_input, n) for n, (_, hook_input, _) in enumerate(TRAFFIC)
    ]
    return write_jsonl(tmp_path / "audit.jsonl", records)


def replay(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["replay", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_report_names_every_change_and_a_loosening_fails(
    log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = replay(capsys, str(log), "--app", CANDIDATE)
    assert code == 1, err
    lines = out.splitlines()
    assert lines[-1] == TOTALS
    for name, (total, unchanged, tightened, loosened, changed) in PER_HANDLER.items():
        assert (
            f"{name}: {total} replayed: {unchanged} unchanged, {tightened} tightened, "
            f"{loosened} loosened, {changed} changed"
        ) in lines
    # the examples, each a header and its differences, as `handler-kit test` shows a failure
    at = lines.index(
        "  LOOSENED  evt_00000000000000000000000000000000 2026-05-09T07:00:00.000Z PreToolUse "
        'issue_refund {"amount": 640, "order_id": "A-1001"}'
    )
    assert lines[at + 1 : at + 3] == [
        "            decision: was deny, now none",
        '            reason: was "Refunds over $500 need a human approver.", now none',
    ]
    at = lines.index(
        "  TIGHTENED evt_00000000000000000000000000000003 2026-05-09T07:00:03.000Z PreToolUse "
        'issue-refund {"amount": 2000, "order_id": "A-1004"}'
    )
    assert lines[at + 1] == "            decision: was none, now deny"
    assert (
        '            reason: was "Refunds over $500 need a human approver.", '
        'now "Refunds over $1,000 need a human approver."'
    ) in lines
    # a long text is shown from a little before where it changes
    assert (
        '            context: was ..."ess days; refunds over $500 need a human approver.", '
        'now ..."ess days; refunds over $1,000 need a human approver."'
    ) in lines
    assert "not replayed" not in out


def test_allow_loosening_exits_0(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = replay(capsys, str(log), "--app", CANDIDATE, "--allow-loosening")
    assert code == 0
    assert out.splitlines()[-1] == TOTALS


def test_the_same_app_changes_nothing(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = replay(capsys, str(log), "--app", OLD)
    assert code == 0
    assert out.splitlines()[-1] == (
        "decisions: 12 replayed: 12 unchanged, 0 tightened, 0 loosened, 0 changed"
    )


def test_json_lists_every_changed_decision(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = replay(capsys, str(log), "--app", CANDIDATE, "--format", "json")
    assert code == 1
    data = json.loads(out)
    assert {k: data[k] for k in ("replayed", "unchanged", "tightened", "loosened", "changed")} == {
        "replayed": 12,
        "unchanged": 7,
        "tightened": 1,
        "loosened": 1,
        "changed": 3,
    }
    expected = {
        f"evt_{n:032x}": verdict
        for n, (_, _, verdict) in enumerate(TRAFFIC)
        if verdict != "unchanged"
    }
    assert {d["event_id"]: d["verdict"] for d in data["decisions"]} == expected
    assert data["handlers"]["refund_gate"] == {
        "unchanged": 3,
        "tightened": 1,
        "loosened": 1,
        "changed": 1,
    }
    loosened = next(d for d in data["decisions"] if d["verdict"] == "loosened")
    assert loosened["differences"][0] == {"field": "decision", "was": "deny", "now": "none"}


def test_junit_fails_the_loosened_decision(
    log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "replay.xml"
    code, out, _ = replay(
        capsys, str(log), "--app", CANDIDATE, "--format", "junit", "--output", str(report)
    )
    assert code == 1
    assert out.splitlines()[-1] == TOTALS  # the text report still on the terminal
    root = ET.parse(report).getroot()
    assert root.get("failures") == "1"
    failure = root.find(".//failure")
    assert failure is not None and "decision: was deny, now none" in (failure.text or "")


def test_records_whose_input_is_not_whole_are_reported_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refund = TRAFFIC[0][1]
    secret = {**refund, "tool_input": {**refund["tool_input"], "api_key": "[REDACTED]"}}
    long = {**refund, "tool_input": {**refund["tool_input"], "note": "x...[truncated 99 chars]"}}
    v1 = {
        "schema_version": 1,
        "kind": "answer",
        "event_id": "evt_v1",
        "event": "PreToolUse",
        "tool_name": "issue_refund",
        "ts": 1.0,
        "input": {"tool_input": refund["tool_input"]},
        "output": decision_record(old_app, refund, 0)["output"],
        "handlers": ["refund_gate"],
    }
    records = [
        decision_record(old_app, refund, 1, input_complete=False),
        decision_record(old_app, refund, 2) | {"input": secret},
        decision_record(old_app, refund, 3) | {"input": long},
        v1,
        decision_record(old_app, TRAFFIC[1][1], 4),
    ]
    code, out, _ = replay(
        capsys, str(write_jsonl(tmp_path / "a.jsonl", records)), "--app", CANDIDATE
    )
    # the four that would loosen are not replayed, so nothing loosened: none counted unchanged
    assert code == 0
    lines = out.splitlines()
    assert lines[-1] == (
        "decisions: 1 replayed: 1 unchanged, 0 tightened, 0 loosened, 0 changed; "
        "not replayed: 4 input incomplete"
    )
    assert "  1 input incomplete: a value of the input was redacted" in lines
    assert "  1 input incomplete: a value of the input was truncated" in lines
    assert any(line.startswith("  1 input incomplete: a version-1 record keeps") for line in lines)
    assert any(line.startswith("  1 input incomplete: the record does not hold") for line in lines)


def test_side_effects_are_skipped_unless_named(
    log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    apps.RUNS.clear()
    code, out, _ = replay(capsys, str(log), "--app", "tests.replay.apps:app")
    assert apps.RUNS == []
    # this candidate has no refund_gate: the orders refund and the Stop gate loosen
    assert code == 1
    assert out.splitlines()[-1] == (
        "decisions: 9 replayed: 5 unchanged, 0 tightened, 2 loosened, 2 changed; "
        "not replayed: 3 skipped (side effects)"
    )
    assert "  3 skipped (side effects): file_ticket has side effects (idempotent=True); " in out
    code, out, _ = replay(
        capsys, str(log), "--app", "tests.replay.apps:app", "--run-side-effects", "file_ticket"
    )
    assert sorted(apps.RUNS) == ["t1", "t2", "t6"]
    assert "skipped" not in out
    assert out.splitlines()[-1] == (
        "decisions: 12 replayed: 6 unchanged, 0 tightened, 2 loosened, 4 changed"
    )
    code, _, err = replay(
        capsys, str(log), "--app", "tests.replay.apps:app", "--run-side-effects", "nope"
    )
    assert code == 2
    assert "--run-side-effects nope: not an idempotent handler" in err


@pytest.mark.parametrize(
    ("options", "totals"),
    [
        (
            ("--event", "SessionStart"),
            "1 replayed: 0 unchanged, 0 tightened, 0 loosened, 1 changed",
        ),
        (
            ("--handler", "cite_ticket"),
            "2 replayed: 2 unchanged, 0 tightened, 0 loosened, 0 changed",
        ),
        (("--limit", "2"), "2 replayed: 1 unchanged, 0 tightened, 1 loosened, 0 changed"),
        (
            ("--since", "2026-05-09T07:00:03Z", "--until", "2026-05-09T07:00:06"),
            "3 replayed: 2 unchanged, 1 tightened, 0 loosened, 0 changed",
        ),
    ],
)
def test_filters(
    log: Path, capsys: pytest.CaptureFixture[str], options: tuple[str, ...], totals: str
) -> None:
    _, out, _ = replay(capsys, str(log), "--app", CANDIDATE, *options)
    assert out.splitlines()[-1] == f"decisions: {totals}"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("missing.jsonl",), "missing.jsonl: no such file"),
        (("sqlite:missing.db",), "sqlite:missing.db: no such file"),
        (("LOG", "--since", "yesterday"), "--since 'yesterday': expected an ISO 8601 time"),
        (("LOG", "--write-cases", "cases.txt"), "cases.txt: a case file ends with .json"),
    ],
)
def test_usage_problems_exit_2(
    log: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    argv = tuple(str(log) if a == "LOG" else a for a in argv)
    code, _, err = replay(capsys, argv[0], "--app", CANDIDATE, *argv[1:])
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_written_cases_pass_against_the_candidate_and_fail_against_the_old_gate(
    log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = tmp_path / "hookcases_refund_changes.yaml"
    code, _, err = replay(capsys, str(log), "--app", CANDIDATE, "--write-cases", str(cases))
    assert code == 1
    assert f"wrote 5 cases to {cases}" in err
    env = clean_env()
    run = [str(HANDLER_KIT), "test", str(cases)]
    passed = subprocess.run(run, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert passed.stdout.splitlines()[-1] == "5 passed, 0 failed (5 cases in 1 file)"
    failed = subprocess.run(
        [*run, "--app", OLD], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert failed.returncode == 1
    assert failed.stdout.splitlines()[-1] == "0 passed, 5 failed (5 cases in 1 file)"
    assert "decision: expected none, got deny" in failed.stdout
    # pytest collects the file, as it does every hookcases_* file
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(cases)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert "5 passed" in collected.stdout


def _run_on_terminal(argv: list[str]) -> tuple[int, str]:
    """``argv`` with its stderr on a pseudo-terminal: (exit status, what the terminal got)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        argv, cwd=REPO, env=clean_env(), stdout=subprocess.DEVNULL, stderr=follower
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal is gone: the process has ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


def test_a_progress_bar_only_on_a_terminal(tmp_path: Path) -> None:
    # a log long enough to outlast the bar's first redraw
    records = [
        decision_record(old_app, TRAFFIC[n % 2][1] | {"tool_use_id": f"t{n}"}, n)
        for n in range(3000)
    ]
    log = write_jsonl(tmp_path / "long.jsonl", records)
    argv = [str(HANDLER_KIT), "replay", str(log), "--app", OLD]
    code, terminal = _run_on_terminal(argv)
    assert code == 0
    assert "replaying [" in terminal and "/3000" in terminal
    piped = subprocess.run(
        argv, cwd=REPO, env=clean_env(), capture_output=True, text=True, timeout=60
    )
    assert piped.returncode == 0
    assert piped.stderr == ""
    assert piped.stdout.splitlines()[-1] == (
        "decisions: 3000 replayed: 3000 unchanged, 0 tightened, 0 loosened, 0 changed"
    )


def test_a_candidate_that_crashes_is_shown_failing(
    log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = replay(capsys, str(log), "--app", "tests.replay.apps:crashing", "--limit", "2")
    # $640 was denied and still is (fail closed), $20 ran and is now denied: both say why
    assert code == 0  # nothing loosened
    lines = out.splitlines()
    assert lines[-1] == "decisions: 2 replayed: 0 unchanged, 1 tightened, 0 loosened, 1 changed"
    assert "refund_gate: 2 replayed: 0 unchanged, 1 tightened, 0 loosened, 1 changed" in lines
    assert '            status: was none, now "fail_closed"' in lines
    assert any(
        line.startswith('            error: was none, now "RuntimeError: the limit service is down')
        for line in lines
    )


def test_each_crash_is_logged_once_and_counted(tmp_path: Path) -> None:
    refunds = [
        decision_record(old_app, TRAFFIC[0][1] | {"tool_input": {"amount": 640 + n}}, n)
        if n % 3
        else decision_record(old_app, TRAFFIC[1][1] | {"tool_use_id": f"t{n}"}, n)
        for n in range(300)
    ]
    log = write_jsonl(tmp_path / "crashes.jsonl", refunds)
    lines = Path(apps.__file__).read_text().splitlines()
    raised = "tests/replay/apps.py:{}".format
    runtime_at = raised(
        next(n for n, line in enumerate(lines, 1) if "raise RuntimeError(f" in line)
    )
    key_at = raised(next(n for n, line in enumerate(lines, 1) if '["limit"]' in line))
    argv = [str(HANDLER_KIT), "replay", str(log), "--app", "tests.replay.apps:crashing_two_ways"]
    report = tmp_path / "replay.json"
    for options in ((), ("--format", "json", "--output", str(report))):
        done = subprocess.run(
            [*argv, *options],
            cwd=REPO,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr  # the failure policy denies: nothing loosened
        # one traceback per crash, not one per decision
        assert done.stderr.count("Traceback (most recent call last)") == 2, done.stderr
        assert (
            done.stderr.count(
                "handler refund_gate failed on PreToolUse (logged once in a replay: the report "
                "counts the decisions)"
            )
            == 2
        )
        assert "RuntimeError: the limit service is down (refund of 641)" in done.stderr
        assert "KeyError: 'limit'" in done.stderr
        out = done.stdout.splitlines()
        at = out.index("crashed (each traceback logged once; the failure policy answered):")
        assert out[at + 1 : at + 3] == [
            f"  refund_gate: RuntimeError at {runtime_at} on 200 decisions: "
            "the limit service is down (refund of 641)",
            f"  refund_gate: KeyError at {key_at} on 100 decisions: 'limit'",
        ]
        # the crashed answers are the failure policy's, counted as verdicts as before
        assert out[-1] == (
            "decisions: 300 replayed: 0 unchanged, 100 tightened, 0 loosened, 200 changed"
        )
    crashes = json.loads(report.read_text())["crashes"]
    assert crashes == [
        {
            "handler": "refund_gate",
            "exception": "RuntimeError",
            "location": runtime_at,
            "message": "the limit service is down (refund of 641)",
            "decisions": 200,
        },
        {
            "handler": "refund_gate",
            "exception": "KeyError",
            "location": key_at,
            "message": "'limit'",
            "decisions": 100,
        },
    ]
    junit = tmp_path / "replay.xml"
    done = subprocess.run(
        [*argv, "--format", "junit", "--output", str(junit)],
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stderr.count("Traceback (most recent call last)") == 2
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    system_err = suite.find("system-err")
    assert system_err is not None
    assert (system_err.text or "").splitlines() == [
        "crashed (each traceback logged once):",
        f"refund_gate: RuntimeError at {runtime_at} on 200 decisions: "
        "the limit service is down (refund of 641)",
        f"refund_gate: KeyError at {key_at} on 100 decisions: 'limit'",
    ]


def _incomplete_records() -> list[dict[str, object]]:
    """Three refunds recorded without their whole input: not complete, redacted, version 1."""
    refund = TRAFFIC[0][1]
    secret = {**refund, "tool_input": {**refund["tool_input"], "api_key": "[REDACTED]"}}
    v1 = {
        "schema_version": 1,
        "kind": "answer",
        "event_id": "evt_v1",
        "event": "PreToolUse",
        "tool_name": "issue_refund",
        "ts": 1.0,
        "input": {"tool_input": refund["tool_input"]},
        "output": decision_record(old_app, refund, 0)["output"],
        "handlers": ["refund_gate"],
    }
    return [
        decision_record(old_app, refund, 1, input_complete=False),
        decision_record(old_app, refund, 2) | {"input": secret},
        v1,
    ]


@pytest.mark.parametrize(
    ("records", "options", "why"),
    [
        ("empty", (), "LOG holds no decisions"),
        ("incomplete", (), "3 decisions in LOG, 3 input incomplete"),
        ("traffic", ("--event", "Notification"), "12 decisions in LOG, 12 left out by --event"),
        (
            "both",
            ("--event", "PreToolUse", "--until", "2100-01-01"),
            "5 decisions in LOG, 3 input incomplete, 2 left out by --until, --event",
        ),
        (
            "traffic",
            ("--app", "tests.replay.apps:app", "--handler", "orders_refund", "--limit", "1"),
            "12 decisions in LOG, 12 left out by --handler, --limit",
        ),
    ],
)
def test_nothing_replayed_exits_3_saying_why(
    tmp_path: Path, records: str, options: tuple[str, ...], why: str
) -> None:
    traffic = [
        decision_record(old_app, hook_input, n) for n, (_, hook_input, _) in enumerate(TRAFFIC)
    ]
    chosen = {
        "incomplete": _incomplete_records(),
        "traffic": traffic,
        # and two decisions of other events
        "both": _incomplete_records() + [r for r in traffic if r["event"] != "PreToolUse"][:2],
        "empty": [],
    }[records]
    log = write_jsonl(tmp_path / "nothing.jsonl", chosen)
    app = () if "--app" in options else ("--app", CANDIDATE)
    done = subprocess.run(
        [str(HANDLER_KIT), "replay", str(log), *app, *options],
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "handler-kit: nothing was replayed, so nothing was checked: " + why.replace("LOG", str(log))
    ]
    assert done.stdout.splitlines()[-1].startswith(
        "decisions: 0 replayed: 0 unchanged, 0 tightened, 0 loosened, 0 changed"
    )


def test_nothing_replayed_fails_the_json_and_junit_reports_too(tmp_path: Path) -> None:
    log = write_jsonl(tmp_path / "incomplete.jsonl", _incomplete_records())
    why = f"nothing was replayed, so nothing was checked: 3 decisions in {log}, 3 input incomplete"
    argv = [str(HANDLER_KIT), "replay", str(log), "--app", CANDIDATE, "--allow-loosening"]
    run = {"cwd": REPO, "env": clean_env(), "capture_output": True, "text": True, "timeout": 120}
    done = subprocess.run([*argv, "--format", "json"], check=False, **run)
    assert done.returncode == 3
    data = json.loads(done.stdout)
    assert (data["replayed"], data["nothing_replayed"]) == (0, why)
    report = tmp_path / "replay.xml"
    done = subprocess.run([*argv, "--format", "junit", "--output", str(report)], check=False, **run)
    assert done.returncode == 3
    root = ET.parse(report).getroot()
    assert root.get("failures") == "1"
    failure = root.find(".//testcase[@classname='nothing replayed']/failure")
    assert failure is not None and failure.get("message") == why
    # something replayed: no such field, no such case
    traffic = [decision_record(old_app, TRAFFIC[1][1], 0)]
    log = write_jsonl(tmp_path / "one.jsonl", traffic)
    done = subprocess.run(
        [str(HANDLER_KIT), "replay", str(log), "--app", CANDIDATE, "--format", "json"],
        check=False,
        **run,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["nothing_replayed"] is None
