"""What a command hook loads at start-up: one process per tool call, so the settings (the
dataclasses and the table of every variable) are read only when a variable of the command's
own is set; otherwise the defaults are used, with TMPDIR and TRACEPARENT read as they are.
Nor does it load logging unless something logs, define models the app does not name, or have
the cyclic collector walk its own imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from handler_kit.config import COMMAND_VARIABLES, SETTINGS, command_config
from tests.command.support import Run, run
from tests.support.processes import REPO, clean_env

APP = "example_servers.refund_gate:app"
EVENT = json.dumps(
    {
        "session_id": "s",
        "hook_event_name": "PreToolUse",
        "tool_name": "issue_refund",
        "tool_input": {"order_id": "4821", "amount": 640},
    }
).encode()


def imported(env: dict[str, str]) -> tuple[str, list[str]]:
    """(stdout, the modules imported) of one ``handler-kit command`` on a PreToolUse."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "handler_kit", "command", APP],
        input=EVENT,
        cwd=REPO,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    modules = [
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.decode(errors="replace").splitlines()
        if line.startswith("import time:")
    ]
    return done.stdout.decode(), modules


def test_the_command_hook_does_not_load_the_settings_when_none_is_set() -> None:
    out, modules = imported(clean_env(TMPDIR="/tmp", TRACEPARENT="00-" + "1" * 32 + "-2" * 8))
    assert "handler_kit.config._settings" not in modules
    assert '"permissionDecision"' in out


def test_a_command_setting_loads_them() -> None:
    _, modules = imported(clean_env(HANDLER_KIT_DEBUG="0"))
    assert "handler_kit.config._settings" in modules


def test_the_command_variables_are_the_settings_of_a_command() -> None:
    names = set()
    for setting in SETTINGS:
        if setting.section in ("command", "operations"):
            names.add(setting.env)
            if setting.old_name is not None:
                names.add(setting.old_name)
    assert set(COMMAND_VARIABLES) | {"TMPDIR", "TRACEPARENT"} == names


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"TMPDIR": " /var/tmp "},
        {"TRACEPARENT": "00-" + "a" * 32 + "-" + "b" * 16 + "-01"},
    ],
)
def test_the_defaults_are_what_the_settings_read(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from handler_kit.config import CommandConfig

    for name in (*COMMAND_VARIABLES, "TMPDIR", "TRACEPARENT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    light = command_config()
    full = CommandConfig.from_env()
    assert (light.debug, light.tmpdir, light.traceparent) == (
        full.debug,
        full.tmpdir,
        full.traceparent,
    )
    assert (light.operations.auditing, light.operations.tracing) == (
        full.operations.auditing,
        full.operations.tracing,
    )


# -- what a command that logs nothing, and its models, leave out ------------------------------


def test_a_command_that_logs_nothing_does_not_load_logging() -> None:
    """logging is imported when something logs (see the next test): the refund gate logs
    nothing, so neither it nor traceback is loaded."""
    out, modules = imported(clean_env())
    assert '"permissionDecision"' in out
    assert "logging" not in modules
    assert "traceback" not in modules


LOGGING_APP = """
import logging

from handler_kit import HookApp

logging.getLogger("app").warning("loaded at import")
app = HookApp("logs")


@app.pre_tool_use(fail_closed=True)
def gate(event):
    logging.getLogger("app").warning("checked %s", event.tool_name)
    logging.getLogger("app").info("not shown: below the root's WARNING")
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": "No."}}
"""
LATE_LOGGING_APP = """
from handler_kit import HookApp

app = HookApp("late")


@app.user_prompt_submit
def gate(event):
    import logging

    logging.getLogger("app").error("first import in a handler")
    return "context"
"""


def command(tmp_path: Path, app: str, event: dict[str, str], *options: str) -> Run:
    return run(["command", app, *options], json.dumps(event).encode(), cwd=tmp_path)


def test_records_are_held_however_late_logging_is_first_imported(tmp_path: Path) -> None:
    """An app importing logging itself, at import or in a handler: its records are held and
    written after the answer, one line each, as when logging was loaded up front; never
    written directly to stderr (logging's last resort) before it."""
    (tmp_path / "logs_app.py").write_text(LOGGING_APP)
    (tmp_path / "late_app.py").write_text(LATE_LOGGING_APP)
    refund = {"hook_event_name": "PreToolUse", "tool_name": "issue_refund"}
    held = command(tmp_path, "logs_app:app", refund)
    assert held.code == 0, held.stderr
    assert json.loads(held.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert held.stderr.splitlines() == [
        "handler-kit: warning: loaded at import",
        "handler-kit: warning: checked issue_refund",
    ]
    # the exit-code dialect blocks: stderr is the reason, and nothing else
    blocked = command(tmp_path, "logs_app:app", refund, "--runtime", "sandbox")
    assert (blocked.code, blocked.stdout, blocked.stderr) == (2, b"", "No.\n")
    late = command(tmp_path, "late_app:app", {"hook_event_name": "UserPromptSubmit"})
    assert late.code == 0, late.stderr
    assert late.stderr.splitlines() == ["handler-kit: error: first import in a handler"]


GC_APP = """
import gc

from handler_kit import HookApp

app = HookApp("gc")
AT_IMPORT = gc.isenabled()


@app.user_prompt_submit
def report(event):
    return f"import {AT_IMPORT} handler {gc.isenabled()} frozen {gc.get_freeze_count() > 0}"
"""


def test_the_start_up_is_frozen_and_the_app_runs_with_the_collector_on(tmp_path: Path) -> None:
    """The cyclic collector is paused for handler-kit's own imports, which are then frozen:
    the app is imported, and its handlers run, with it on."""
    (tmp_path / "gc_app.py").write_text(GC_APP)
    result = command(tmp_path, "gc_app:app", {"hook_event_name": "UserPromptSubmit"})
    assert result.code == 0, result.stderr
    text = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert text == "import True handler True frozen True"


MODELS_PROBE = """
import dataclasses, json, sys
from handler_kit.cli import main
code = main(["command", %r])
from handler_kit.core.events import HookEvent
def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub.__name__
        yield from subclasses(sub)
ours = ("handler_kit.core", "handler_kit.command")
core = [m for name, m in sys.modules.items() if name.startswith(ours)]
report = {
    "code": code,
    "models": sorted(subclasses(HookEvent)),
    "dataclasses": sorted(
        f"{m.__name__}.{name}" for m in core for name, value in vars(m).items()
        if isinstance(value, type) and dataclasses.is_dataclass(value)
        and value.__module__ == m.__name__
    ),
}
sys.stderr.write("REPORT " + json.dumps(report) + "\\n")
"""


def probe_report(code: str) -> dict[str, Any]:
    """Run ``code`` (a probe answering the refund event) in a fresh interpreter; the report it
    writes to stderr as ``REPORT <json>``."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=EVENT,
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        timeout=120,
    )
    line = next(x for x in done.stderr.decode().splitlines() if x.startswith("REPORT "))
    report: dict[str, Any] = json.loads(line.removeprefix("REPORT "))
    return report


def test_the_refund_gate_defines_only_the_models_it_names() -> None:
    """The models of the events the app imports by name (and their bases), no other; and no
    dataclass in the core or the command (their generated methods are compiled at import)."""
    report = probe_report(MODELS_PROBE % APP)
    assert report == {
        "code": 0,
        "models": ["PostToolUse", "PreToolUse", "SessionStart", "Stop", "_ToolEvent"],
        "dataclasses": [],
    }


RAISING_APP = """
from handler_kit import HookApp

app = HookApp("raising")


class Abort(BaseException):
    pass


@app.pre_tool_use(fail_closed=True)
async def gate(event):
    # no await: driven without an event loop, the command hook's lean path
    if event.tool_name == "cancelled":
        import asyncio  # imported by the handler, after the path was chosen

        raise asyncio.CancelledError
    if event.tool_name == "exit":
        raise SystemExit(0)
    if event.tool_name == "generator_exit":
        raise GeneratorExit
    raise Abort
"""


def test_a_gate_raising_a_base_exception_still_denies(tmp_path: Path) -> None:
    """A fail-closed gate that raises what is not an Exception (a CancelledError of its own,
    sys.exit(), GeneratorExit, a BaseException of the app's) has failed: its deny, exit 0,
    the failure on stderr; not a traceback and a non-blocking exit, nor an exit 0 with no
    answer, on which the runtime lets the call through."""
    (tmp_path / "raising_app.py").write_text(RAISING_APP)
    jobs = {
        tool: (
            ["command", "raising_app:app"],
            json.dumps({"hook_event_name": "PreToolUse", "tool_name": tool}).encode(),
        )
        for tool in ("cancelled", "exit", "generator_exit", "abort")
    }
    for tool, (args, stdin) in jobs.items():
        result = run(args, stdin, cwd=tmp_path)
        assert result.code == 0, (tool, result.stderr)
        answer = json.loads(result.stdout)["hookSpecificOutput"]
        assert answer["permissionDecision"] == "deny", tool
        assert "fail closed" in answer["permissionDecisionReason"], tool
        assert result.stderr.startswith("handler-kit: error: handler gate failed"), result.stderr


# -- what a command hook loads: the packages and handler-kit's own modules --------------------

LOADED_PROBE = """
import json, sys
before = set(sys.modules)
from handler_kit.cli import main
code = main(["command", %r])
new = set(sys.modules) - before
report = {
    "code": code,
    "packages": sorted(
        {name.split(".")[0] for name in new} - set(sys.stdlib_module_names)
        - {name for name in new if name.startswith("_sysconfigdata_")}
    ),
    "handler_kit": sorted(name for name in new if name.split(".")[0] == "handler_kit"),
    "standard_library_left_out": sorted(
        name for name in ("argparse", "asyncio", "logging", "traceback", "sqlite3", "ssl",
                          "http", "concurrent", "subprocess", "tomllib")
        if name not in sys.modules
    ),
}
sys.stderr.write("REPORT " + json.dumps(report) + "\\n")
"""


def test_a_command_hook_loads_only_pydantic_the_core_and_the_app() -> None:
    """Every package and every handler-kit module a command hook answering the refund gate
    loads, as an expected list: nothing of the server stack (starlette, uvicorn, httpx, mcp,
    jwt, anyio), of the operations (audit, metrics, tracing), the settings or the other
    transports; and none of the standard library's larger modules that only they, an event
    loop or a failure need. (``importlib.metadata`` and ``email`` are loaded by pydantic, to
    find its plugins, when the event's model is first built.)"""
    report = probe_report(LOADED_PROBE % APP)
    assert report == {
        "code": 0,
        "packages": [
            "annotated_types",
            "example_servers",
            "handler_kit",
            "pydantic",
            "pydantic_core",
            "typing_extensions",
            "typing_inspection",
        ],
        "handler_kit": [
            "handler_kit",
            "handler_kit._compat",
            "handler_kit._version",
            "handler_kit.cli",
            "handler_kit.command",
            "handler_kit.command._clock",
            "handler_kit.command._options",
            "handler_kit.command._stdin",
            "handler_kit.command.hook",
            "handler_kit.config",
            "handler_kit.core",
            "handler_kit.core._base_events",
            "handler_kit.core._coroutines",
            "handler_kit.core._decorators",
            "handler_kit.core._fast_coroutines",
            "handler_kit.core._js_regex",
            "handler_kit.core._log",
            "handler_kit.core.app",
            "handler_kit.core.events",
            "handler_kit.core.loader",
            "handler_kit.core.loop_guard",
            "handler_kit.core.matchers",
            "handler_kit.core.merge",
            "handler_kit.core.names",
            "handler_kit.core.outputs",
            "handler_kit.core.vocabulary",
        ],
        "standard_library_left_out": [
            "argparse",
            "asyncio",
            "concurrent",
            "http",
            "logging",
            "sqlite3",
            "ssl",
            "subprocess",
            "tomllib",
            "traceback",
        ],
    }
