"""Properties of the dispatcher's reading of another server's answer, as Runbear reads it.

Any body, JSON or not, is an answer or an ``OutputError`` (the runtime's "failure"), never
another exception; keys Runbear does not read never change what it reads.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from handler_kit.core.outputs import OutputError
from handler_kit.dispatcher.answers import read_answer
from handler_kit.dispatcher.http_call import read_body
from handler_kit.dispatcher.mcp_call import read_tool_text
from tests.fuzz.support import EVENTS, any_text, encode, json_values, mutated, output_dicts

events = st.sampled_from(EVENTS)
answer_bodies = st.one_of(
    st.builds(encode, output_dicts()),
    mutated(st.builds(encode, output_dicts())),
    st.builds(encode, json_values()),
    st.binary(max_size=200),
)
# Nested past any parser's recursion limit: the standard library raises RecursionError.
TOO_DEEP = b'{"decision": ' + b"[" * 5_000


@given(body=answer_bodies, event=events)
@example(body=TOO_DEEP, event="PreToolUse")
def test_http_answer_is_read_or_a_failure(body: bytes, event: str) -> None:
    with contextlib.suppress(OutputError):  # what Runbear counts as the handler's failure
        read_body(event, body)


@given(text=answer_bodies.map(lambda b: b.decode("utf-8", "replace")), event=events)
@example(text=TOO_DEEP.decode(), event="PreToolUse")
def test_mcp_tool_text_is_read_or_a_failure(text: str, event: str) -> None:
    with contextlib.suppress(OutputError):
        read_tool_text(event, text)


@given(
    value=output_dicts(),
    ignored=st.dictionaries(
        any_text.filter(lambda k: k not in ("decision", "reason", "hookSpecificOutput")),
        json_values(4),
        max_size=3,
    ),
    event=events,
)
def test_unread_keys_never_change_the_answer(
    value: dict[str, Any], ignored: dict[str, Any], event: str
) -> None:
    try:
        plain = read_answer(event, value)
    except OutputError:
        return
    noisy = read_answer(event, {**ignored, **value})
    assert (noisy.decision, noisy.reason, noisy.context, noisy.updated_input) == (
        plain.decision,
        plain.reason,
        plain.context,
        plain.updated_input,
    )
