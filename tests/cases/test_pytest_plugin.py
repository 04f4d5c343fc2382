"""The pytest plugin: ``hookcases_*`` files collected as test items in a user's project (a
temporary one, run by ``pytester``), one item per case, failing with the same differences as
``handler-kit test``."""

from __future__ import annotations

import json

import pytest
import starlette.testclient

import example_servers.refund_gate
import handler_kit.cases.pytest_plugin
import handler_kit.cases.report
import handler_kit.cases.targets
import handler_kit.testing.client
import tests.support.apps.cases
from tests.cases.support import APP, EXAMPLE, EXAMPLE_CASES, FAILING, FAILING_DIFF, PASSING
from tests.support.processes import REPO

# pytester is pytest's own plugin for testing plugins; enabled here rather than in conftest.py,
# where pytest refuses pytest_plugins below the top level
pytest_plugins = ["pytester"]
# pytester takes away, after each inner run, the modules loaded during it: loaded here first,
# the server stack, the plugin and the apps are not imported again by every run
PRELOADED = (
    starlette.testclient,
    example_servers.refund_gate,
    handler_kit.cases.pytest_plugin,
    handler_kit.cases.report,
    handler_kit.cases.targets,
    handler_kit.testing.client,
    tests.support.apps.cases,
)
# hypothesis's plugin (when installed) imports its engine in every run's summary
OPTIONS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")


def project(pytester: pytest.Pytester, app: str | None = APP) -> None:
    """A project whose pytest configuration names the app (or does not), and finds the test
    apps of this repository."""
    ini = f"[pytest]\npythonpath = {REPO}\n"
    if app:
        ini += f"hookcases_app = {app}\n"
    pytester.makeini(ini)


def test_each_case_is_an_item_and_a_failure_shows_the_diff(pytester: pytest.Pytester) -> None:
    project(pytester)
    pytester.makefile(".json", hookcases_shell=json.dumps([*PASSING, FAILING]))
    pytester.makefile(".json", cases_not_collected=json.dumps([FAILING]))  # not hookcases_*
    result = pytester.runpytest("-v", *OPTIONS)
    result.assert_outcomes(passed=len(PASSING), failed=1)
    result.stdout.fnmatch_lines(
        [
            "*hookcases_shell.json::sudo asks PASSED*",
            "*hookcases_shell.json::rm -rf is allowed FAILED*",
            "case 'rm -rf is allowed' (PreToolUse): the answer differs",
            *(f"    {line}" for line in FAILING_DIFF),
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_file_names_its_own_app(pytester: pytest.Pytester) -> None:
    project(pytester, app=None)
    pytester.makefile(".yaml", hookcases_refund_gate=EXAMPLE.read_text(encoding="utf-8"))
    pytester.runpytest(*OPTIONS).assert_outcomes(passed=EXAMPLE_CASES)


def test_the_command_line_option_names_the_app(pytester: pytest.Pytester) -> None:
    project(pytester, app="no_such_module:app")
    pytester.makefile(".jsonl", hookcases_shell="\n".join(json.dumps(c) for c in PASSING))
    result = pytester.runpytest(*OPTIONS, f"--hookcases-app={APP}")
    result.assert_outcomes(passed=len(PASSING))


def test_no_app_or_a_bad_one_fails_each_case_with_one_line(pytester: pytest.Pytester) -> None:
    project(pytester, app=None)
    pytester.makefile(".json", hookcases_shell=json.dumps(PASSING[:1]))
    result = pytester.runpytest(*OPTIONS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["hookcases_shell.json: no app to run the cases against: *"])

    project(pytester, app="no_such_module:app")
    result = pytester.runpytest(*OPTIONS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["hookcases_shell.json: cannot import 'no_such_module'*"])
    assert "Traceback" not in result.stdout.str()


def test_a_malformed_file_is_a_collection_error_without_traceback(
    pytester: pytest.Pytester,
) -> None:
    project(pytester)
    pytester.makefile(
        ".yaml", hookcases_bad="- name: typo\n  event_name: Stop\n  expect: {decision: maybe}\n"
    )
    result = pytester.runpytest(*OPTIONS)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*hookcases_bad.yaml: case 1 ('typo'): expect.decision: *"])
    assert "Traceback" not in result.stdout.str()
