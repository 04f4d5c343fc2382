"""What a command hook loads at start-up: one process per tool call, so the settings (the
dataclasses and the table of every variable) are read only when a variable of the command's
own is set; otherwise the defaults are used, with TMPDIR and TRACEPARENT read as they are."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from handler_kit.config import COMMAND_VARIABLES, SETTINGS, command_config
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
