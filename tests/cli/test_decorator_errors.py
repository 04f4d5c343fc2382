"""A mistake in a decorator, as a person meets it through ``handler-kit serve`` and
``handler-kit command``: one line naming the user's file, the decorator's line and the
handler, and no line of handler-kit's own code (the user cannot change it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_messages import run_all
from tests.support.processes import clean_env

HEADER = "from handler_kit import HookApp\n\napp = HookApp('mistakes')\n\n\n"

# name -> (the decorated handler, from its decorator line; what the message says)
MISTAKES: dict[str, tuple[str, str]] = {
    "fail_closed_on_stop": (
        "@app.stop(fail_closed=True)\ndef finish(event):\n    return None\n",
        "handler 'finish': fail_closed is not possible on Stop",
    ),
    "matcher_on_stop": (
        "@app.stop(matcher='Bash')\nasync def finish(event):\n    return None\n",
        "handler 'finish': Stop has no matcher",
    ),
    "misspelt_option": (
        "@app.pre_tool_use(\n    matchr='Bash',\n)\ndef gate(event):\n    return None\n",
        "handler 'gate': pre_tool_use() got an unexpected option 'matchr' "
        "(did you mean 'matcher'?)",
    ),
    "loop_guard_on_pre_tool_use": (
        "@app.pre_tool_use(stop_loop_guard=False)\ndef gate(event):\n    return None\n",
        "handler 'gate': stop_loop_guard is not possible on PreToolUse: only Stop, "
        "SubagentStop have a stop loop to guard",
    ),
}
DUPLICATE = (
    "@app.pre_tool_use(matcher='Bash')\ndef gate(event):\n    return None\n\n\n"
    "@app.stop(name='gate')\ndef finish(event):\n    return None\n"
)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("mistakes")
    for name, (code, _) in MISTAKES.items():
        (folder / f"{name}.py").write_text(HEADER + code)
    (folder / "duplicate.py").write_text(HEADER + DUPLICATE)
    return folder


def _runs(project: Path) -> dict[str, object]:
    cases = {}
    for name in (*MISTAKES, "duplicate"):
        cases[f"serve {name}"] = (["serve", f"{name}:app", "--port", "0"], clean_env())
        cases[f"command {name}"] = (["command", f"{name}:app"], clean_env())
    return run_all(cases, cwd=project, stdin="{}")


def test_each_mistake_names_the_users_file_line_and_handler(project: Path) -> None:
    results = _runs(project)
    expected = {
        name: f"{project / name}.py, line 6: {message}" for name, (_, message) in MISTAKES.items()
    }
    expected["duplicate"] = (
        f"{project / 'duplicate'}.py, line 11: handler 'gate': a handler named 'gate' is "
        f"already registered (at {project / 'duplicate'}.py, line 6); pass name=... to tell "
        "them apart"
    )
    for name, message in expected.items():
        for command, prefix in (("serve", "handler-kit serve: "), ("command", "handler-kit: ")):
            result = results[f"{command} {name}"]
            assert result.returncode != 0, (name, command)  # type: ignore[attr-defined]
            stderr = result.stderr  # type: ignore[attr-defined]
            assert stderr.startswith(f"{prefix}importing '{name}' failed: {message}"), stderr
            assert "handler_kit" not in stderr and "Traceback" not in stderr, stderr
