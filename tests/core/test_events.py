"""Events: every captured input parses into its event's model, leniently but typed.

The corpus is ``tests/data/hook-payloads/<Event>/*.json`` (outputs/ excluded), vendored with
its sources. Each file is parsed in-process and also posted to a real server, so the webhook's
own one-pass validation is proven on the same inputs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from handler_kit import EVENT_MODELS, HookEvent, parse_event
from handler_kit.config import ServerConfig
from handler_kit.core.events import (
    RUNBEAR_EVENTS,
    PostToolUse,
    PreToolUse,
    SessionStart,
    Stop,
    UserPromptSubmit,
    model_for,
)
from handler_kit.testing import running_server
from tests.support.payloads import PAYLOADS, input_files, load

INPUTS = input_files()
CORPUS = [pytest.param(path, id=f"{path.parent.name}/{path.name}") for path in INPUTS]

RUNBEAR_SHARED = (
    "session_id",
    "agent_id",
    "agent_name",
    "org_id",
    "thread_id",
    "turn_id",
    "channel",
    "channel_id",
    "channel_user_id",
    "user_name",
    "user_email",
    "prompt",
)


@pytest.mark.parametrize("path", CORPUS)
def test_corpus_input_parses_into_its_events_model(path):
    data = load(path)
    event_name = path.parent.name
    assert data["hook_event_name"] == event_name
    event = parse_event(data)
    assert type(event) is EVENT_MODELS[event_name]
    # every field of the file is reachable, unchanged, as an attribute
    for key, value in data.items():
        assert getattr(event, key) == value, key
    # and the JSON text form parses the same
    assert parse_event(path.read_bytes()) == event


def test_corpus_covers_only_known_events():
    assert INPUTS, f"no payload corpus at {PAYLOADS}"
    assert {path.parent.name for path in INPUTS} <= set(EVENT_MODELS)


def test_corpus_inputs_accepted_by_the_real_webhook(hooks):
    """Every corpus input, posted to a real server with a handler on every event, reaches
    its handler as the right model (body bytes exactly as captured)."""
    assert INPUTS, f"no payload corpus at {PAYLOADS}"
    seen: list[tuple[str, type]] = []
    for event_name in sorted({path.parent.name for path in INPUTS}):

        @hooks.on(event_name, name=f"record_{event_name}")
        async def record(event: HookEvent) -> None:
            seen.append((event.hook_event_name, type(event)))

    # no /mcp: 32 MCP tools' schemas are start-up work this test is not about
    config = ServerConfig(tokens=["corpus-token-0123456789abcdef"], mcp=False)
    with running_server(hooks, config=config) as server, server.http() as http:
        for path in INPUTS:
            name = path.parent.name
            for headers in ({"X-Runbear-Hook-Event": name}, {}):
                response = http.post("/hooks", content=path.read_bytes(), headers=headers)
                assert response.status_code == 200, (path.name, response.text)
                assert response.json() == {}
                assert seen.pop() == (name, EVENT_MODELS[name])


def test_runbear_five_and_shared_fields():
    assert set(RUNBEAR_EVENTS) == {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
    }
    data: dict[str, Any] = {"hook_event_name": "UserPromptSubmit"}
    data.update({field: f"value of {field}" for field in RUNBEAR_SHARED})
    for name in RUNBEAR_EVENTS:
        event = parse_event({**data, "hook_event_name": name})
        for field in RUNBEAR_SHARED:
            assert field in type(event).model_fields, (name, field)
            assert getattr(event, field) == f"value of {field}"
        assert event.model_extra == {}


def test_claude_code_fields_are_declared():
    expected = {
        PreToolUse: {"transcript_path", "cwd", "permission_mode", "tool_name", "tool_input"},
        PostToolUse: {"tool_use_id", "tool_response", "duration_ms"},
        Stop: {"stop_hook_active", "last_assistant_message", "background_tasks"},
        SessionStart: {"source", "model"},
        UserPromptSubmit: {"prompt", "session_title"},
    }
    for model, fields in expected.items():
        assert fields <= set(model.model_fields), model


def test_unknown_fields_are_kept_and_reachable():
    data = {
        "hook_event_name": "PreToolUse",
        "tool_name": "mcp__coop__lookup",
        "tool_input": {},
        "mcp_server": {"name": "coop", "source": "dynamic"},
        "brand_new_flag": True,
    }
    event = parse_event(data)
    assert isinstance(event, PreToolUse)
    assert event.mcp_server == {"name": "coop", "source": "dynamic"}
    assert event.brand_new_flag is True
    assert event.model_extra == {"mcp_server": data["mcp_server"], "brand_new_flag": True}
    # and they survive a dump, so a proxy or the test client sends them on
    assert event.model_dump(exclude_none=True) == data


@pytest.mark.parametrize("name", sorted(EVENT_MODELS))
def test_optional_fields_missing_or_null(name):
    bare = parse_event({"hook_event_name": name})
    assert type(bare) is EVENT_MODELS[name]
    fields = [field for field in type(bare).model_fields if field != "hook_event_name"]
    assert all(getattr(bare, field) is None for field in fields)
    nulls = parse_event({"hook_event_name": name, **dict.fromkeys(fields)})
    assert nulls == bare


@pytest.mark.parametrize(
    "response",
    [
        {"stdout": "ok", "stderr": "", "interrupted": False},
        [{"type": "text", "text": "MCP content block"}],
        "plain string",
        42,
        3.5,
        True,
        None,
        [],
        {"nested": [{"deep": [1, None, "x"]}]},
    ],
)
def test_tool_response_is_any_json(response):
    data = {"hook_event_name": "PostToolUse", "tool_name": "x", "tool_response": response}
    event = parse_event(json.dumps(data))
    assert isinstance(event, PostToolUse)
    assert event.tool_response == response
    assert type(event.tool_response) is type(response)


def test_unknown_event_name_parses_into_generic_event():
    data = {"hook_event_name": "SomeFutureEvent", "session_id": "s", "whatever": [1, 2]}
    event = parse_event(data)
    assert type(event) is HookEvent
    assert model_for("SomeFutureEvent") is HookEvent
    assert event.hook_event_name == "SomeFutureEvent"
    assert event.session_id == "s"
    assert event.whatever == [1, 2]
    assert event.matcher_value() is None


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"hook_event_name": "PreToolUse", "tool_name": 5}, "tool_name"),
        ({"hook_event_name": "PreToolUse", "tool_input": "rm -rf /"}, "tool_input"),
        ({"hook_event_name": "PreToolUse", "tool_input": [1, 2]}, "tool_input"),
        ({"hook_event_name": "Stop", "stop_hook_active": "maybe"}, "stop_hook_active"),
        ({"hook_event_name": "Stop", "last_assistant_message": {"a": 1}}, "last_assistant_message"),
        ({"hook_event_name": "PostToolUse", "duration_ms": "slow"}, "duration_ms"),
        ({"hook_event_name": "SessionStart", "source": ["startup"]}, "source"),
        ({"hook_event_name": "UserPromptSubmit", "session_id": 12}, "session_id"),
        ({"hook_event_name": "UserPromptSubmit", "prompt": False}, "prompt"),
        ({"session_id": "s"}, "hook_event_name"),
        ({"hook_event_name": None}, "hook_event_name"),
        ({"hook_event_name": 7}, "hook_event_name"),
    ],
)
def test_wrong_types_are_rejected(data, field):
    with pytest.raises(ValidationError) as info:
        parse_event(data)
    assert field in {str(err["loc"][0]) for err in info.value.errors()}


@pytest.mark.parametrize("text", ["[1, 2]", '"PreToolUse"', "42", "null"])
def test_json_text_that_is_not_an_object_is_rejected(text):
    with pytest.raises(ValueError, match="JSON object"):
        parse_event(text)


def test_matcher_value_per_event():
    assert parse_event({"hook_event_name": "PreToolUse", "tool_name": "Bash"}).matcher_value() == (
        "Bash"
    )
    assert parse_event({"hook_event_name": "SessionStart", "source": "clear"}).matcher_value() == (
        "clear"
    )
    assert parse_event({"hook_event_name": "UserPromptSubmit", "prompt": "x"}).matcher_value() is (
        None
    )
    assert parse_event({"hook_event_name": "PreToolUse"}).matcher_value() is None


def test_every_public_name_resolves_and_every_event_is_exported() -> None:
    """``handler_kit.__all__`` is the public API: each name must load (several lazily), and
    each event model must be reachable as ``handler_kit.<EventName>``."""
    import handler_kit
    from handler_kit.core.events import EVENT_MODELS

    for name in handler_kit.__all__:
        assert getattr(handler_kit, name) is not None, name
    for name in EVENT_MODELS:
        assert name in handler_kit.__all__, name
        assert getattr(handler_kit, name) is EVENT_MODELS[name]


@pytest.mark.parametrize("name", [*EVENT_MODELS, "HookEvent"])
def test_no_event_model_has_a_model_typed_field(name: str) -> None:
    """The webhook tells a body that is not a JSON object by its ``model_type`` error at the
    root (``server/webhook.py``, ``parse_hook_input``: a ``model_type`` error without a
    ``loc``). That holds while no event model has a field typed by a model, whose own
    ``model_type`` error would carry the field's ``loc``: a model that gains one must change
    that test first (and tests/mutation/equivalent.txt's argument for it)."""
    model = HookEvent if name == "HookEvent" else model_for(name)
    assert "$defs" not in model.model_json_schema()  # a nested model would be defined there
    nested = []
    for field in model.model_fields:
        try:
            model.model_validate_json(json.dumps({"hook_event_name": name, field: 1}))
        except ValidationError as exc:
            nested += [e["loc"] for e in exc.errors() if e["type"] == "model_type"]
    assert nested == []
