"""Every hook tool's input schema, as a real MCP client lists it from a real server: each field
of its event optional, each with its event model's description, which says what a template
author needs (what the field holds, which runtime sends it, what a matcher tests)."""

from __future__ import annotations

from typing import Any

from mcp import Client

from handler_kit.core.events import EVENT_MODELS
from handler_kit.core.names import EVENT_NAMES
from handler_kit.testing import RunningServer
from tests.server.mcp.support import run, with_client


def listed_schemas(server: RunningServer) -> dict[str, dict[str, Any]]:
    async def body(client: Client) -> Any:
        return await client.list_tools()

    listed = run(with_client(server, "auto", body))
    return {tool.name: tool.input_schema for tool in listed.tools}


def test_every_field_of_every_event_is_optional_and_described(every_event: RunningServer) -> None:
    schemas = listed_schemas(every_event)
    assert sorted(schemas) == sorted(f"on_{event}" for event in EVENT_NAMES)
    for event in EVENT_NAMES:
        schema = schemas[f"on_{event}"]
        model = EVENT_MODELS[event]
        assert "required" not in schema, event  # a template key that resolves to nothing is dropped
        properties = schema["properties"]
        assert set(properties) == set(model.model_fields)
        for name, field in model.model_fields.items():
            if name == "hook_event_name":
                continue  # the tool's own: implied by the tool
            assert field.description and len(field.description) > 15, (event, name)
            assert properties[name]["description"] == field.description, (event, name)


def test_descriptions_carry_what_the_runtimes_document(every_event: RunningServer) -> None:
    schemas = listed_schemas(every_event)

    def described(event: str, field: str) -> str:
        text: str = schemas[f"on_{event}"]["properties"][field]["description"]
        return text

    # what the matchers of each event test
    assert "matchers are tested against" in described("PreToolUse", "tool_name")
    assert "matchers are tested against" in described("SessionStart", "source")
    assert "means startup" in described("SessionStart", "source")
    # the Stop loop guard, said where a template author reads it
    assert "a further block is ignored" in described("Stop", "stop_hook_active")
    # Runbear's shared fields, with the examples of its docs
    assert "U0123456789" in described("UserPromptSubmit", "channel_user_id")
    assert "dropped" in described("UserPromptSubmit", "user_email")
    assert described("PostToolUse", "tool_response").startswith("Result of the tool, any JSON")
