"""The scripted model server, without an agent: the exact event streams each protocol gets,
the script consumed turn by turn by the agent's main-loop requests, and every request recorded.
(The real agents read these streams in tests/runtimes, `make test-runtimes`.)"""

from __future__ import annotations

import json

import httpx

from handler_kit.agents import Say, ScriptedModel, Shell, ToolCall
from handler_kit.agents.model import DONE_TEXT

TOOLS = [{"name": "Bash"}]


def events(body: str) -> list[tuple[str, dict[str, object]]]:
    out = []
    for chunk in body.strip().split("\n\n"):
        name, data = chunk.split("\n")
        assert name.startswith("event: ") and data.startswith("data: ")
        payload = json.loads(data[len("data: ") :])
        assert payload["type"] == name[len("event: ") :]
        out.append((payload["type"], payload))
    return out


def test_messages_api_streams_a_tool_use_then_text_then_done() -> None:
    script = [Shell("touch x"), Say("All done.")]
    with ScriptedModel(script) as model:
        url = f"{model.url}/v1/messages?beta=true"
        first = httpx.post(url, json={"stream": True, "tools": TOOLS, "messages": []})
        side = httpx.post(url, json={"stream": True, "messages": [{"role": "user"}]})
        second = httpx.post(url, json={"stream": True, "tools": TOOLS, "messages": []})
        third = httpx.post(url, json={"stream": True, "tools": TOOLS, "messages": []})
        recorded = model.requests
    assert first.headers["content-type"] == "text/event-stream"
    kinds = [kind for kind, _ in events(first.text)]
    assert kinds == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    stream = dict(events(first.text))
    assert stream["content_block_start"]["content_block"] == {
        "type": "tool_use",
        "id": "toolu_0001",
        "name": "Bash",
        "input": {},
    }
    assert stream["content_block_delta"]["delta"] == {
        "type": "input_json_delta",
        "partial_json": '{"command": "touch x"}',
    }
    assert stream["message_delta"]["delta"]["stop_reason"] == "tool_use"
    # a request without tools (a side request) gets the done text and consumes no turn
    assert dict(events(side.text))["content_block_delta"]["delta"]["text"] == DONE_TEXT
    assert dict(events(second.text))["content_block_delta"]["delta"] == {
        "type": "text_delta",
        "text": "All done.",
    }
    assert dict(events(second.text))["message_delta"]["delta"]["stop_reason"] == "end_turn"
    assert dict(events(third.text))["content_block_delta"]["delta"]["text"] == DONE_TEXT
    assert [r.path for r in recorded] == ["/v1/messages?beta=true"] * 4


def test_responses_api_streams_a_function_call_and_records_the_tool_output() -> None:
    script = [Shell("ls"), ToolCall("mcp__orders__refund", {"amount": 640}), Say("Fine.")]
    with ScriptedModel(script) as model:
        url = f"{model.url}/v1/responses"
        shell = httpx.post(url, json={"stream": True, "tools": TOOLS, "input": []})
        output = {"type": "function_call_output", "call_id": "call_0001", "output": "denied"}
        tool = httpx.post(url, json={"stream": True, "tools": TOOLS, "input": [output]})
        say = httpx.post(url, json={"stream": True, "tools": TOOLS, "input": [output]})
        recorded = model.requests
    kinds = [kind for kind, _ in events(shell.text)]
    assert kinds == [
        "response.created",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    ]
    assert dict(events(shell.text))["response.output_item.done"]["item"] == {
        "type": "function_call",
        "id": "fc_0001",
        "call_id": "call_0001",
        "name": "exec_command",
        "arguments": '{"cmd": "ls"}',
    }
    item = dict(events(tool.text))["response.output_item.done"]["item"]
    # Codex offers an MCP server's tools in a namespace, and a call names the two apart
    assert (item["namespace"], item["name"], item["arguments"]) == (
        "mcp__orders",
        "refund",
        '{"amount": 640}',
    )
    assert dict(events(say.text))["response.output_item.done"]["item"]["content"] == [
        {"type": "output_text", "text": "Fine."}
    ]
    assert recorded[1].tool_results() == ["denied"]
    assert model.turns_used == 3


def test_messages_api_tool_results_are_read_from_the_conversation() -> None:
    result = {"type": "tool_result", "tool_use_id": "toolu_0001", "content": "No, denied."}
    listed = {"type": "tool_result", "content": [{"type": "text", "text": "listed"}]}
    body = {"tools": TOOLS, "messages": [{"role": "user", "content": [result, listed]}]}
    with ScriptedModel([]) as model:
        httpx.post(f"{model.url}/v1/messages", json=body)
        (request,) = model.requests
    assert request.tool_results() == ["No, denied.", "listed"]
    assert "tools" not in request.conversation and "No, denied." in request.conversation
