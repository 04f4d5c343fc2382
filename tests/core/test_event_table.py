"""The one table of hook events (handler_kit.core._event_table.EVENTS): the files generated from it
are current, and the lists that cannot be generated (the models, the command dialects, the
Runbear document) agree with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from handler_kit.core import _generate
from handler_kit.core._event_table import EVENTS
from handler_kit.core.events import model_for
from handler_kit.core.names import MATCHERLESS_EVENTS
from handler_kit.core.outputs import SAFE_DECISIONS
from handler_kit.core.vocabulary import (
    DEFAULT_TIMEOUT,
    DEFAULT_TIMEOUTS,
    LOOP_GUARDED_EVENTS,
    MAX_TIMEOUTS,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", sorted(_generate.TARGETS))
def test_the_generated_files_are_current(path: str) -> None:
    text = (ROOT / path).read_text(encoding="utf-8")
    assert _generate.regenerate(path, text) == text, (
        f"{path} differs from what handler_kit.core._event_table.EVENTS makes of it: run "
        "`make generate` (python -m handler_kit.core._generate) and commit the result"
    )


def test_a_hand_edit_of_a_generated_part_is_undone() -> None:
    path = "handler_kit/core/_decorators.py"
    text = (ROOT / path).read_text(encoding="utf-8")
    edited = text.replace("fail_closed: bool = False,\n", "", 1)
    assert edited != text
    assert _generate.regenerate(path, edited) == text
    with pytest.raises(ValueError, match="expected one pair of markers"):
        _generate.regenerate(path, text.replace("# </generated: decorators>", ""))


def test_the_check_says_which_files_are_stale(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _generate.main(["--check"]) == 0
    monkeypatch.setattr(_generate, "docs_table", lambda: ["| stale |"])
    monkeypatch.setitem(_generate.TARGETS, "docs/handlers.md", {"events": _generate.docs_table})
    assert _generate.main(["--check"]) == 1
    assert capsys.readouterr().err == "docs/handlers.md is stale: run `make generate`\n"


def test_each_event_has_the_decorator_options_the_table_gives() -> None:
    options = {e.decorator: _generate._options(e) for e in EVENTS}
    assert options["pre_tool_use"] == [
        "matcher: str | None = None",
        "name: str | None = None",
        "timeout: float | None = None",
        "fail_closed: bool = False",
        "idempotent: bool = False",
    ]
    assert options["stop"] == [
        "name: str | None = None",
        "timeout: float | None = None",
        "stop_loop_guard: bool = True",
        "idempotent: bool = False",
    ]


def test_the_lists_derived_from_the_table() -> None:
    assert list(SAFE_DECISIONS.items()) == [
        ("PreToolUse", "deny"),
        ("PermissionRequest", "deny"),
        ("UserPromptSubmit", "block"),
        ("UserPromptExpansion", "block"),
    ]
    assert frozenset({"Stop", "SubagentStop"}) == LOOP_GUARDED_EVENTS
    assert DEFAULT_TIMEOUTS == {"SessionStart": 5.0, "Interrupt": 1.0}
    assert MAX_TIMEOUTS == {"Interrupt": 2.0}


def test_the_models_agree_with_the_table() -> None:
    for event in EVENTS:
        model = model_for(event.name)
        assert model.__name__ == event.name
        assert model.__module__ == f"handler_kit.core.{event.module}", event.name
        assert model.matcher_field == event.matcher_field, event.name


def test_the_runtimes_agree_with_the_command_dialects_and_runbear() -> None:
    from handler_kit.command import dialects
    from handler_kit.dispatcher import core as dispatcher
    from handler_kit.runbear import document

    def sent_by(runtime: str) -> set[str]:
        return {e.name for e in EVENTS if runtime in e.runtimes}

    assert sent_by("codex") == dialects._CODEX_EVENTS
    assert sent_by("posit") == dialects._POSIT_EVENTS
    assert dialects.SAFE_EVENTS == SAFE_DECISIONS
    assert dialects._STOP_EVENTS == LOOP_GUARDED_EVENTS
    assert sent_by("runbear") & MATCHERLESS_EVENTS == dispatcher.UNMATCHED_EVENTS
    runbear_timeouts = {e: DEFAULT_TIMEOUTS.get(e, DEFAULT_TIMEOUT) for e in sent_by("runbear")}
    assert runbear_timeouts == document.DEFAULT_TIMEOUTS
    assert set(document.FAIL_CLOSED_EVENTS) == sent_by("runbear") & set(SAFE_DECISIONS)
