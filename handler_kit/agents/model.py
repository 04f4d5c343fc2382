"""A scripted model server: the model end of a real agent, on 127.0.0.1.

It speaks the two wire protocols the pinned agents use, both streamed as server-sent events:
Anthropic's Messages API (Claude Code: ``POST /v1/messages``) and OpenAI's Responses API (Codex:
``POST /v1/responses``). Each request that offers tools (the agent's main loop) is answered by
the next turn of a script: call a tool, or say a text and end the turn. Requests without tools
(an agent's side requests, such as a title) get a short text and consume no turn. Every request
is recorded, so a check can see what reached the model: a deny reason in a tool result, a hook's
context in the prompt.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# What a script says once it has run out, and to side requests.
DONE_TEXT = "Done."
MODEL_NAME = "handler-kit-scripted"


@dataclass(frozen=True)
class Shell:
    """Run ``command`` with the agent's shell tool (Claude Code's ``Bash``, Codex's
    ``exec_command``; hooks see ``tool_name: "Bash"`` with ``{"command": ...}`` from both)."""

    command: str


@dataclass(frozen=True)
class ToolCall:
    """Call the tool ``name`` (as the agent names it, e.g. ``mcp__orders__refund``) with
    ``input``."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Say:
    """Answer ``text`` and end the turn."""

    text: str


Turn = Shell | ToolCall | Say


@dataclass(frozen=True)
class ModelRequest:
    """One request the model server received: its path and JSON body."""

    path: str
    body: Mapping[str, Any]

    @property
    def text(self) -> str:
        """The whole body as JSON text, to look for a string anywhere in it."""
        return json.dumps(self.body, ensure_ascii=False)

    @property
    def conversation(self) -> str:
        """The messages (Messages API: ``system`` and ``messages``; Responses API:
        ``instructions`` and ``input``) as JSON text, without the tool definitions."""
        keys = ("system", "messages", "instructions", "input")
        return json.dumps({k: self.body[k] for k in keys if k in self.body}, ensure_ascii=False)

    @property
    def has_tools(self) -> bool:
        return bool(self.body.get("tools"))

    def tool_results(self) -> list[str]:
        """The text of every tool result the request carries (both protocols), in order."""
        results: list[str] = []
        for message in self.body.get("messages") or []:  # Messages API
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    results.append(_flatten(block.get("content")))
        for item in self.body.get("input") or []:  # Responses API
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                results.append(_flatten(item.get("output")))
        return results


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return json.dumps(content)


class ScriptedModel:
    """The model server: ``with ScriptedModel(script) as model:`` serves on ``model.url``."""

    def __init__(self, script: Sequence[Turn]) -> None:
        self.script = tuple(script)
        self._next = 0
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._requests: list[ModelRequest] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        # a short poll: shutdown() waits for the serving loop's next look
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, the base URL to give the agent."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def requests(self) -> tuple[ModelRequest, ...]:
        with self._lock:
            return tuple(self._requests)

    @property
    def turns_used(self) -> int:
        with self._lock:
            return self._next

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, path: str, body: Mapping[str, Any]) -> tuple[Turn, int]:
        """Record a request; the turn that answers it and a fresh id number."""
        request = ModelRequest(path, body)
        with self._lock:
            self._requests.append(request)
            turn: Turn = Say(DONE_TEXT)
            if request.has_tools and self._next < len(self.script):
                turn = self.script[self._next]
                self._next += 1
            elif request.has_tools:
                self._next += 1  # counted, so a check sees the agent asked again
            return turn, next(self._ids)


def _handler_for(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the recorded requests are the log

        def do_GET(self) -> None:
            # Codex lists models before its first turn; an empty list is an answer it accepts.
            self._send(200, "application/json", json.dumps({"data": [], "models": []}).encode())

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"unreadable": raw.decode("utf-8", "replace")}
            if not isinstance(body, dict):
                body = {"unreadable": body}
            path = self.path.split("?", 1)[0]
            turn, number = model.answer(self.path, body)
            if path.endswith("/messages"):
                events = anthropic_events(turn, number)
            elif path.endswith("/responses"):
                events = responses_events(turn, number)
            else:
                self._send(404, "application/json", b'{"error": "not a model endpoint"}')
                return
            if body.get("stream") is False and path.endswith("/messages"):
                self._send(
                    200, "application/json", json.dumps(anthropic_message(turn, number)).encode()
                )
                return
            self._send(200, "text/event-stream", sse(events))

        def _send(self, status: int, content_type: str, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


def sse(events: Sequence[Mapping[str, Any]]) -> bytes:
    """Server-sent events, one per JSON object, named by its ``type``."""
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _tool_of(turn: Turn, anthropic: bool) -> tuple[str, Mapping[str, Any]] | None:
    if isinstance(turn, Shell):
        return (
            ("Bash", {"command": turn.command})
            if anthropic
            else (
                "exec_command",
                {"cmd": turn.command},
            )
        )
    if isinstance(turn, ToolCall):
        return turn.name, turn.input
    return None


_USAGE = {"input_tokens": 10, "output_tokens": 5}


def anthropic_message(turn: Turn, number: int) -> dict[str, Any]:
    """A whole (not streamed) Messages API answer."""
    tool = _tool_of(turn, anthropic=True)
    if tool is None:
        content: list[dict[str, Any]] = [{"type": "text", "text": _say_text(turn)}]
    else:
        content = [
            {
                "type": "tool_use",
                "id": f"toolu_{number:04d}",
                "name": tool[0],
                "input": dict(tool[1]),
            }
        ]
    return {
        "id": f"msg_{number:04d}",
        "type": "message",
        "role": "assistant",
        "model": MODEL_NAME,
        "content": content,
        "stop_reason": "end_turn" if tool is None else "tool_use",
        "stop_sequence": None,
        "usage": _USAGE,
    }


def _say_text(turn: Turn) -> str:
    return turn.text if isinstance(turn, Say) else DONE_TEXT


def anthropic_events(turn: Turn, number: int) -> list[dict[str, Any]]:
    """The Messages API stream of one answer."""
    tool = _tool_of(turn, anthropic=True)
    start = {**anthropic_message(turn, number), "content": [], "stop_reason": None}
    if tool is None:
        block: dict[str, Any] = {"type": "text", "text": ""}
        delta: dict[str, Any] = {"type": "text_delta", "text": _say_text(turn)}
    else:
        block = {"type": "tool_use", "id": f"toolu_{number:04d}", "name": tool[0], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(dict(tool[1]))}
    return [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": "end_turn" if tool is None else "tool_use",
                "stop_sequence": None,
            },
            "usage": {"output_tokens": 5},
        },
        {"type": "message_stop"},
    ]


def responses_events(turn: Turn, number: int) -> list[dict[str, Any]]:
    """The Responses API stream of one answer."""
    response_id = f"resp_{number:04d}"
    tool = _tool_of(turn, anthropic=False)
    if tool is None:
        item: dict[str, Any] = {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{number:04d}",
            "content": [{"type": "output_text", "text": _say_text(turn)}],
        }
    else:
        item = {
            "type": "function_call",
            "id": f"fc_{number:04d}",
            "call_id": f"call_{number:04d}",
            "name": tool[0],
            "arguments": json.dumps(dict(tool[1])),
        }
        server, sep, name = tool[0].removeprefix("mcp__").partition("__")
        if tool[0].startswith("mcp__") and sep and server and name:
            # Codex offers an MCP server's tools in a namespace (``mcp__SERVER``), and a call
            # names the namespace and the tool apart
            item |= {"namespace": f"mcp__{server}", "name": name}
    usage = {
        "input_tokens": 10,
        "input_tokens_details": None,
        "output_tokens": 5,
        "output_tokens_details": None,
        "total_tokens": 15,
    }
    return [
        {"type": "response.created", "response": {"id": response_id}},
        {"type": "response.output_item.added", "item": item},
        {"type": "response.output_item.done", "item": item},
        {"type": "response.completed", "response": {"id": response_id, "usage": usage}},
    ]
