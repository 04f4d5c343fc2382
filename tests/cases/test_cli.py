"""``handler-kit test``: case files run against an app in process, a server at a URL and a hooks
document through the reference dispatcher, each in a subprocess as a user runs it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from handler_kit.cli import main
from handler_kit.testing import RunningServer
from tests.cases.support import (
    APP,
    EXAMPLE,
    EXAMPLE_CASES,
    FAILING,
    FAILING_DIFF,
    PASSING,
    RAISES,
    run_test,
    write_json,
)
from tests.support.processes import clean_env


def test_the_example_file_names_its_app_and_passes() -> None:
    done = run_test(EXAMPLE)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert sum(line.startswith("PASS  ") for line in lines) == EXAMPLE_CASES
    assert lines[-1] == f"{EXAMPLE_CASES} passed, 0 failed ({EXAMPLE_CASES} cases in 1 file)"


def test_every_expectation_field_passes_against_an_app(tmp_path: Path) -> None:
    cases = write_json(tmp_path / "shell.json", PASSING)
    done = run_test(cases, "--app", APP)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"PASS  {cases}::the note handler alone rewrites nothing" in done.stdout
    assert done.stdout.endswith("4 passed, 0 failed (4 cases in 1 file)\n")


def test_a_failing_case_exits_1_with_a_diff_per_field(tmp_path: Path) -> None:
    cases = write_json(tmp_path / "shell.json", [*PASSING, FAILING])
    done = run_test(cases, "--app", APP)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    at = lines.index(f"FAIL  {cases}::rm -rf is allowed")
    assert lines[at + 1 : at + 1 + len(FAILING_DIFF)] == [f"      {d}" for d in FAILING_DIFF]
    assert lines[-1] == "4 passed, 1 failed (5 cases in 1 file)"
    assert done.stderr == ""


def test_junit_report_has_the_counts_and_the_diff(tmp_path: Path) -> None:
    shell = write_json(tmp_path / "shell.json", [*PASSING, FAILING])
    boom = write_json(tmp_path / "boom.json", RAISES)
    report = tmp_path / "report.xml"
    done = run_test(shell, boom, "--app", APP, "--format", "junit", "--output", report)
    assert done.returncode == 1, done.stderr
    # the text report is still on screen; a crash is an error, never the "none" the case expects
    assert f"ERROR {boom}::the handler raises" in done.stdout
    assert "no answer to compare: the handler raised RuntimeError: boom in the handler" in (
        done.stdout
    )
    assert "4 passed, 1 failed, 1 error (6 cases in 2 files)" in done.stdout
    root = ET.parse(report).getroot()
    assert root.tag == "testsuites"
    assert {k: root.get(k) for k in ("tests", "failures", "errors")} == {
        "tests": "6",
        "failures": "1",
        "errors": "1",
    }
    shell_suite, boom_suite = root.findall("testsuite")
    assert shell_suite.get("name") == str(shell) and shell_suite.get("tests") == "5"
    assert len(shell_suite.findall("testcase")) == 5
    (failure,) = shell_suite.iter("failure")
    assert failure.get("message") == FAILING_DIFF[0]
    assert failure.text == "\n".join(FAILING_DIFF)
    (error,) = boom_suite.iter("error")
    assert "RuntimeError" in (error.text or "")


def test_against_a_url_with_the_client_token(cases_server: RunningServer, tmp_path: Path) -> None:
    cases = write_json(tmp_path / "shell.json", [*PASSING, RAISES])
    env = clean_env(HANDLER_KIT_TOKEN=cases_server.token)
    done = run_test(cases, "--url", cases_server.url, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    # over HTTP a crash is the server's 500, reported as one
    assert 'no answer to compare: HTTP 500: {"error": "handler_failed"' in done.stdout
    assert done.stdout.endswith("4 passed, 0 failed, 1 error (5 cases in 1 file)\n")


def test_against_a_document_through_the_dispatcher(
    gate_server: RunningServer, tmp_path: Path
) -> None:
    from example_servers.refund_gate import app
    from handler_kit.runbear.generate import runbear_document

    # as `handler-kit document` writes it: the token as ${HANDLER_KIT_TOKEN}, expanded on use
    document = runbear_document(app, base_url=gate_server.url).document
    assert "${HANDLER_KIT_TOKEN}" in json.dumps(document)
    hooks = write_json(tmp_path / "hooks.json", document)
    env = clean_env(HANDLER_KIT_TOKEN=gate_server.token)
    done = run_test(EXAMPLE, "--document", hooks, "--allow-private", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.endswith(f"({EXAMPLE_CASES} cases in 1 file)\n")

    # a handler that fails is an error, not the "no opinion" the runtime fails open to
    wrong = clean_env(HANDLER_KIT_TOKEN="not-the-token")
    down = run_test(EXAMPLE, "--document", hooks, "--allow-private", env=wrong)
    assert down.returncode == 1
    assert "no answer to compare: handler 0 (http) failed: " in down.stdout
    assert f"1 passed, 0 failed, {EXAMPLE_CASES - 1} errors" in down.stdout  # an ungated tool


# -- in process: the command's own checks, without a process per call --------------------------


def handler_kit_test(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main(["test", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_jsonl_files_and_folders(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = tmp_path / "hookcases_shell.jsonl"
    cases.write_text("\n".join(json.dumps(c) for c in PASSING) + "\n\n", encoding="utf-8")
    write_json(tmp_path / "notes.json", {"not": "a case"})  # not hookcases_*: not read
    code, out, _ = handler_kit_test(capsys, tmp_path, "--app", APP)
    assert code == 0, out
    assert out.endswith("4 passed, 0 failed (4 cases in 1 file)\n")


def test_a_malformed_case_is_exit_2_naming_file_and_case(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    typo = {"name": "typo", "event": PASSING[0]["event"], "expect": {"desicion": "deny"}}
    other = {"name": "other", "evnt": {}, "expect": {"decision": "deny"}}
    bad = write_json(tmp_path / "bad.json", [PASSING[0], typo, other])
    code, out, err = handler_kit_test(capsys, bad, "--app", APP)
    assert (code, out) == (2, "")
    # every bad case, one line each, a misspelt key with the key it is close to
    assert err.splitlines() == [
        f"handler-kit: {bad}: case 2 ('typo'): expect.desicion: no such key (did you mean "
        "'decision'?)",
        f"{bad}: case 3 ('other'): evnt: no such key (did you mean 'event'?)",
    ]


def test_junit_to_stdout(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = write_json(tmp_path / "shell.json", [*PASSING, FAILING])
    code, out, _ = handler_kit_test(capsys, cases, "--app", APP, "--format", "junit")
    assert code == 1
    root = ET.fromstring(out)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "1", "0")


def test_url_token_from_the_environment_or_the_option(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    cases_server: RunningServer,
    tmp_path: Path,
) -> None:
    cases = write_json(tmp_path / "shell.json", PASSING)
    monkeypatch.delenv("HANDLER_KIT_TOKEN", raising=False)
    # no token: said once, up front, naming the client's variable and the server's
    code, out, err = handler_kit_test(capsys, cases, "--url", cases_server.url)
    assert (code, out) == (2, "")
    assert err == (
        "handler-kit: the server wants a bearer token and none was given: pass --token or set "
        "HANDLER_KIT_TOKEN (to one of the tokens in the server's HANDLER_KIT_TOKENS)\n"
    )
    code, out, _ = handler_kit_test(
        capsys, cases, "--url", cases_server.url, "--token", cases_server.token
    )
    assert code == 0, out
    # a wrong token: said once too
    code, out, err = handler_kit_test(
        capsys, cases, "--url", cases_server.url, "--token", "not-the-token-0123456789"
    )
    assert (code, out) == (2, "")
    assert err == (
        "handler-kit: the server refused the bearer token: --token or HANDLER_KIT_TOKEN must "
        "hold one of the tokens in the server's HANDLER_KIT_TOKENS\n"
    )
    monkeypatch.setenv("HANDLER_KIT_TOKEN", cases_server.token)
    code, out, _ = handler_kit_test(capsys, cases, "--url", cases_server.url)
    assert code == 0, out


def test_usage_errors_are_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = write_json(tmp_path / "shell.json", PASSING)
    hooks = write_json(tmp_path / "hooks.json", {"hooks": {}})
    for args, message in [
        ((cases,), "no target for"),
        ((cases, "--app", "no_such_module:app"), "cannot import 'no_such_module'"),
        ((tmp_path / "missing.yaml", "--app", APP), "cannot read"),
        ((cases, "--document", hooks), "names a 'handler'"),
        ((tmp_path,), "no case files in"),
    ]:
        code, out, err = handler_kit_test(capsys, *args)
        assert (code, out) == (2, ""), args
        assert err.startswith("handler-kit: ") and message in err, err
        assert len(err.splitlines()) == 1


def test_yaml_without_pyyaml_names_the_extra(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker" / "yaml"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('PyYAML is not installed')\n")
    env = clean_env(PYTHONPATH=str(tmp_path / "blocker"))
    done = run_test(EXAMPLE, env=env)
    assert done.returncode == 2
    assert done.stderr == (
        f"handler-kit: {EXAMPLE}: reading YAML case files needs PyYAML: "
        "pip install 'handler-kit[yaml]'\n"
    )


def test_the_docs_quote_the_diff_as_printed() -> None:
    from tests.docs.pages import blocks, page

    # the first text block is the CLI's diff, the last pytest's (between them: --runtime runs)
    texts = blocks(page("policy-tests.md"), "text")
    cli_block, pytest_block = texts[0], texts[-1]
    quoted = [line.strip() for line in cli_block.splitlines() if line.startswith("      ")]
    quoted += [line.strip() for line in pytest_block.splitlines() if line.startswith("    ")]
    assert len(quoted) == 6
    assert set(quoted) <= set(FAILING_DIFF)
