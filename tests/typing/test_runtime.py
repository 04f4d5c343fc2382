"""The run-time side of what the types promise: every correct use registers as it reads, the
typed options of each decorator are the ones its event can use, a misspelt option is a clear
``TypeError`` too, and an event built in code names itself while an input must still name it."""

from __future__ import annotations

import inspect
import re
from typing import Any, get_overloads

import pydantic
import pytest

from handler_kit import HookApp, HookEvent, PreToolUse, Stop, SubagentStop
from handler_kit.core._decorators import ON_OPTIONS
from handler_kit.core.events import EVENT_MODELS, MATCHERLESS_EVENTS, parse_event
from handler_kit.core.names import EVENT_NAMES
from handler_kit.core.outputs import SAFE_DECISIONS
from handler_kit.core.vocabulary import LOOP_GUARDED_EVENTS


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def test_the_correct_uses_register_as_they_read() -> None:
    from tests.typing import pass_cases

    by_name = pass_cases.app.by_name
    for event in EVENT_NAMES:
        bare = by_name[f"{snake(event)}_bare"]
        assert (bare.event, bare.matcher, bare.fail_closed, bare.is_async) == (
            event,
            None,
            False,
            False,
        )
        with_options = by_name[f"{snake(event)}_options"]
        assert with_options.event == event and with_options.is_async
        assert (with_options.timeout, with_options.idempotent) == (2.0, True)
        assert with_options.fail_closed == (event in SAFE_DECISIONS)
        assert with_options.stop_loop_guard == (event not in LOOP_GUARDED_EVENTS)
    assert by_name["refund_gate"].matcher == "issue_refund"
    assert by_name["stop_handler_on_subagent_stop"].event == "SubagentStop"
    assert [event.hook_event_name for event in pass_cases.EVENTS] == list(EVENT_NAMES)
    assert pass_cases.pre.hook_event_name == "PreToolUse"


def test_each_decorator_types_the_options_its_event_can_use() -> None:
    """What the checker offers on each decorator is what ``on`` accepts for its event."""
    on_options = [
        p.name
        for p in inspect.signature(HookApp.on).parameters.values()
        if p.kind is p.KEYWORD_ONLY
    ]
    assert list(ON_OPTIONS) == on_options
    for event in EVENT_NAMES:
        decorator = getattr(HookApp, snake(event))
        bare, with_options = get_overloads(decorator)
        assert list(inspect.signature(bare).parameters) == ["self", "func"]
        offered = set(inspect.signature(with_options).parameters) - {"self"}
        usable = {"name", "timeout", "idempotent"}
        if event not in MATCHERLESS_EVENTS:
            usable.add("matcher")
        if event in SAFE_DECISIONS:
            usable.add("fail_closed")
        if event in LOOP_GUARDED_EVENTS:
            usable.add("stop_loop_guard")
        assert offered == usable, event
        assert decorator.__name__ == snake(event)


def test_a_misspelt_option_is_a_clear_type_error() -> None:
    app = HookApp("misspelt")
    with pytest.raises(TypeError, match=r"pre_tool_use\(\) got an unexpected option 'matchr' "):
        app.pre_tool_use(matchr="Bash")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"did you mean 'fail_closed'"):
        app.user_prompt_submit(failclosed=True)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"stop\(\) takes the handler function \(@app.stop\)"):
        app.stop("cite_ticket")  # type: ignore[call-overload]
    assert app.handlers == []


def test_the_bare_form_registers_and_returns_the_function() -> None:
    app = HookApp("bare")

    @app.stop
    async def cite_ticket(event: Stop) -> None:
        """Checks the reply."""

    handler = app.by_name["cite_ticket"]
    assert (handler.event, handler.is_async, handler.description) == (
        "Stop",
        True,
        "Checks the reply.",
    )
    assert inspect.iscoroutinefunction(cite_ticket) and cite_ticket.__name__ == "cite_ticket"


def test_every_option_on_accepts_is_still_accepted_at_run_time() -> None:
    """The types offer what each event can use; the run time takes what it always took."""
    app = HookApp("lenient")
    options: dict[str, Any] = {"matcher": "*", "fail_closed": False, "allow_unknown_event": True}
    app.stop(name="matcher_all_on_stop", **options)(lambda event: None)
    assert [h.event for h in app.handlers] == ["Stop"]
    # refused at run time too: the loop guard of an event without a stop loop
    with pytest.raises(ValueError, match="stop_loop_guard is not possible on PreToolUse"):
        app.pre_tool_use(name="loop_guard", stop_loop_guard=False)
    with pytest.raises(ValueError, match="fail_closed is not possible on Stop"):
        app.stop(fail_closed=True)


def test_an_event_built_in_code_names_itself() -> None:
    assert PreToolUse(tool_name="Bash").hook_event_name == "PreToolUse"
    assert SubagentStop().hook_event_name == "SubagentStop"  # not its base's, Stop
    assert PreToolUse(hook_event_name="PreToolUse", tool_name="Bash") == PreToolUse(
        tool_name="Bash"
    )
    for name, model in EVENT_MODELS.items():
        assert model().hook_event_name == name

    class Audited(PreToolUse):
        """A user's subclass is still of its event."""

    assert Audited().hook_event_name == "PreToolUse"
    with pytest.raises(pydantic.ValidationError, match="hook_event_name"):
        HookEvent(session_id="s")  # the generic model has no event of its own


@pytest.mark.parametrize("read", ["model_validate", "model_validate_json", "parse_event"])
def test_an_input_must_still_name_its_event(read: str) -> None:
    """Reading an input never fills the name in: a runtime that omits it sent a bad input."""
    data = {"tool_name": "Bash"}
    with pytest.raises(pydantic.ValidationError, match="hook_event_name"):
        if read == "model_validate":
            PreToolUse.model_validate(data)
        elif read == "model_validate_json":
            PreToolUse.model_validate_json('{"tool_name": "Bash"}')
        else:
            parse_event(data)
    assert PreToolUse.__pydantic_custom_init__ is False  # validation stays in pydantic-core
