"""Codex's Interrupt event, end to end: the model and decorator, ``handler-kit command
--runtime codex`` on a real input, and the timeout ``handler-kit install --runtime codex``
writes (Codex waits at most 3 s on Interrupt).

Codex reads only ``systemMessage`` of an Interrupt answer, and plain text is invalid there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from handler_kit import HookApp, Interrupt
from handler_kit.core.events import EVENT_MODELS, RUNBEAR_EVENTS, parse_event
from tests.command.support import Run, run

NOTICE = "The turn was interrupted; nothing was refunded."
APP = f"""
from handler_kit import HookApp

app = HookApp("interrupts")


@app.interrupt
def note(event):
    return {{"systemMessage": {NOTICE!r}, "continue": False, "stopReason": "interrupted"}}


@app.interrupt(name="plain", timeout=2)
def plain(event):
    return "Interrupted."  # plain text: Codex refuses it on Interrupt
"""
INPUT = {
    "hook_event_name": "Interrupt",
    "session_id": "s1",
    "turn_id": "t-7",
    "permission_mode": "default",
    "model": "gpt-5",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("interrupt")
    (folder / "interrupts.py").write_text(APP)
    return folder


def command(project: Path, handler: str) -> Run:
    argv = ["command", "interrupts:app", "--runtime", "codex", "--handler", handler]
    return run(argv, json.dumps(INPUT).encode(), cwd=project)


def test_the_model_and_the_decorator() -> None:
    event = parse_event(INPUT)
    assert isinstance(event, Interrupt) and EVENT_MODELS["Interrupt"] is Interrupt
    assert (event.turn_id, event.permission_mode, event.matcher_value()) == ("t-7", "default", None)
    assert "Interrupt" not in RUNBEAR_EVENTS  # Codex's own: Runbear never sends it
    app = HookApp("interrupts")

    @app.interrupt
    def note(event: Interrupt) -> None:
        return None

    assert (app.by_name["note"].event, app.by_name["note"].timeout) == ("Interrupt", 1.0)
    with pytest.raises(ValueError, match="too long for Interrupt: the runtime waits at most 3 s"):
        app.interrupt(timeout=2.5)
    with pytest.raises(ValueError, match="Interrupt has no matcher"):
        app.interrupt(matcher="Bash")  # type: ignore[call-overload]


def test_codex_reads_only_the_system_message(project: Path) -> None:
    result = command(project, "note")
    assert result.code == 0, result
    assert json.loads(result.stdout) == {"systemMessage": NOTICE}
    assert "Codex ignores continue:false here; dropped" in result.stderr


def test_plain_text_is_the_handler_s_failure(project: Path) -> None:
    result = command(project, "plain")
    assert (result.code, result.stdout) == (1, b""), result
    assert "every handler failed on Interrupt" in result.stderr


def test_install_keeps_within_codex_s_3_seconds(project: Path) -> None:
    settings = project / ".codex" / "hooks.json"
    result = run(
        ["install", "interrupts:app", "--runtime", "codex", "--settings", str(settings)],
        b"",
        cwd=project,
    )
    assert result.code == 0, result
    groups = json.loads(settings.read_text())["hooks"]["Interrupt"]
    timeouts = [hook["timeout"] for group in groups for hook in group["hooks"]]
    # one entry for both: the longer handler's 2 s with a second for start-up
    assert timeouts == [3]
