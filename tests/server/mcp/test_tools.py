"""Each handler as a tool: its input schema and its description, as built and as listed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from example_servers import refund_gate
from handler_kit.core.events import PostToolUse, Stop
from handler_kit.server.mcp import build_tools, tool_input_schema
from handler_kit.testing import RunningServer
from tests.server.mcp.support import MODES, run, with_client


@pytest.mark.parametrize("mode", MODES)
def test_tools_list_shows_every_handler_with_its_schema(gate: RunningServer, mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.list_tools()

    listed = run(with_client(gate, mode, body))
    tools = {tool.name: tool for tool in listed.tools}
    assert list(tools) == [h.name for h in refund_gate.app.handlers]
    for handler in refund_gate.app.handlers:
        tool = tools[handler.name]
        schema = tool.input_schema
        assert schema == tool_input_schema(handler.event, handler.model)
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is True
        assert "required" not in schema  # all optional: the runtime omits what it lacks
        declared = set(schema["properties"])
        assert declared == {"hook_event_name", *handler.model.model_fields}
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{handler.name}.{name} has no description"
        assert handler.event in tool.description
        assert handler.description.splitlines()[0] in tool.description
        assert tool.output_schema is None


def test_tool_schema_is_flat_and_typed() -> None:
    stop = tool_input_schema("Stop", Stop)["properties"]
    assert stop["stop_hook_active"]["type"] == ["boolean", "null"]
    assert stop["hook_event_name"] == {
        "type": "string",
        "description": "Name of the event; optional, this tool always handles Stop.",
        "default": "Stop",
    }
    post = tool_input_schema("PostToolUse", PostToolUse)["properties"]
    assert post["tool_input"]["type"] == ["object", "string", "null"]  # or its JSON text
    assert "type" not in post["tool_response"]  # any JSON value
    assert all("$ref" not in json.dumps(p) for p in post.values())


def test_description_names_event_matcher_and_fail_closed() -> None:
    tools = build_tools(refund_gate.app)
    text = tools["refund_gate"].tool.description or ""
    assert "PreToolUse" in text and refund_gate.REFUND_TOOLS in text
    assert "Fails closed" in text
    assert "Fails closed" not in (tools["cite_ticket"].tool.description or "")
