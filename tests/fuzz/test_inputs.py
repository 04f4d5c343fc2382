"""Properties of reading hook inputs: the webhook's parser, ``parse_event`` and ``load_json``.

Any byte string is an event or a 400 with a stable code, never another exception; the depth
limit holds on the fast path (pydantic-core) and the slow one (the stdlib, for lone
surrogates) alike; a JSON value within the limit reads back as itself.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from handler_kit.core.events import HookEvent, parse_event
from handler_kit.core.vocabulary import MAX_INPUT_DEPTH, InputTooDeep, load_json
from handler_kit.server.webhook import HTTPError, parse_hook_input
from tests.fuzz.support import (
    EVENTS,
    deep_values,
    depth_of,
    encode,
    hook_inputs,
    input_bytes,
    json_values,
)

CODES = {"malformed_json", "too_deep", "not_an_object", "invalid_event"}


@given(body=input_bytes(), event=st.none() | st.sampled_from(EVENTS))
@example(body=b'{"hook_event_name": "PreToolUse", "x": "\\udc8f"}', event="PreToolUse")
@example(body=b"[" * 100_000, event=None)
@example(body=b"", event="Stop")
def test_webhook_parser_answers_an_event_or_a_400(body: bytes, event: str | None) -> None:
    try:
        parsed = parse_hook_input(body, event or None)
    except HTTPError as error:
        assert error.status == 400 and error.code in CODES, (error.status, error.code)
        return
    assert isinstance(parsed, HookEvent)
    assert isinstance(parsed.hook_event_name, str)
    if event:
        assert type(parsed).__name__ in (event, "HookEvent")


@given(data=hook_inputs())
def test_parse_event_raises_only_its_documented_errors(data: dict[str, Any]) -> None:
    try:
        parsed = parse_event(data)
    except ValidationError:
        return
    assert parsed.hook_event_name == data["hook_event_name"]
    # unknown fields are kept, as given
    for key, value in (parsed.model_extra or {}).items():
        assert data[key] == value


@given(value=deep_values(), ascii_only=st.booleans())
def test_depth_limit_is_the_same_on_both_parsers(value: Any, ascii_only: bool) -> None:
    """A value nested ``MAX_INPUT_DEPTH`` levels is read, one level more is refused, whether
    pydantic-core reads the body or (for a lone surrogate) the standard library does."""
    body = b'{"tool_input": ' + encode(value, ascii_only) + b"}"
    if depth_of(value) <= MAX_INPUT_DEPTH:
        assert load_json(body) == {"tool_input": value}
    else:
        with pytest.raises(InputTooDeep):
            load_json(body)


@given(value=json_values(), ascii_only=st.booleans())
def test_load_json_reads_back_any_json_value(value: Any, ascii_only: bool) -> None:
    assert load_json(encode(value, ascii_only)) == value
