"""Properties of handlers' answers: the strict reading of a handler's value (``normalize``,
``parse_handler_output``), the lenient reader (``parse_output``) and rendering.

Whatever a handler returns is an :class:`Output` its event can carry, or an ``OutputError``
saying why not, never another exception; what is rendered from a handler's dict is accepted
again by the strict reader and renders the same (rendering is a fixed point).
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from handler_kit.core.outputs import (
    Output,
    OutputError,
    normalize,
    parse_handler_output,
    parse_output,
)
from tests.fuzz.support import EVENTS, handler_answers, json_values, output_dicts

events = st.sampled_from(EVENTS)


@given(data=st.data(), event=events)
def test_normalize_gives_a_carriable_output_or_an_output_error(data: Any, event: str) -> None:
    value = data.draw(handler_answers(event), label="value")
    try:
        out = normalize(event, value)
    except OutputError:
        return
    assert isinstance(out, Output)
    out.check(event)  # what normalize accepts, the event carries
    rendered = out.render(event)
    assert isinstance(rendered, dict)


@given(data=st.data(), event=events)
# a permission reason without a decision: nothing a runtime reads, and not rendered
@example(data={"hookSpecificOutput": {"permissionDecisionReason": ""}}, event="PreToolUse")
def test_rendering_a_handler_dict_is_a_fixed_point(data: Any, event: str) -> None:
    value = data if isinstance(data, dict) else data.draw(output_dicts(event), label="output")
    try:
        out = parse_handler_output(event, value)
    except OutputError:
        return
    rendered = out.render(event)
    again = parse_handler_output(event, rendered)
    assert again.render(event) == rendered
    # what the runtime reads from it is what the handler said (a reason goes with a decision)
    assert (again.decision, again.updated_input) == (out.decision, out.updated_input)
    if out.decision is not None:
        assert again.reason == out.reason


@given(data=st.data(), event=events)
@example(data={"hookSpecificOutput": {"decision": "allow"}}, event="PermissionRequest")
def test_a_permission_verdict_is_read_or_refused(data: Any, event: str) -> None:
    """PermissionRequest's ``decision`` object is the verdict: a handler's verdict is read as
    a decision or refused, never passed through unread (the runtime would ask the user)."""
    value = data if isinstance(data, dict) else data.draw(output_dicts(event), label="output")
    hso = value.get("hookSpecificOutput")
    try:
        out = parse_handler_output(event, value)
    except OutputError:
        return
    if event == "PermissionRequest" and isinstance(hso, dict) and hso.get("decision") is not None:
        assert out.decision in ("allow", "deny"), out


@given(value=json_values() | output_dicts(), event=events)
def test_lenient_reader_raises_only_output_errors(value: Any, event: str) -> None:
    try:
        out = parse_output(event, value)
    except OutputError:
        return
    assert isinstance(value, dict)
    assert out.decision in (None, "allow", "deny", "ask", "defer", "block")
