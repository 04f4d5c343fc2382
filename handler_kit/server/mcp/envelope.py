"""What a JSON-RPC ``tools/call`` request says of itself: read from its parsed envelope
(:func:`tools_call`), or scanned from the start of a body that does not parse as a whole
(:func:`scan_envelope`), so that a fail-closed tool can still answer the call it was sent.

Plain JSON reading, no SDK: the MCP transport's guard (``_fast_path.FastPath.guard``) reads with
it what the SDK would refuse, and the fast path reads a well-formed call with :func:`tools_call`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["BodyRead", "over_cap_call", "scan_envelope", "tools_call", "valid_id"]

# JSON-RPC ids a client can round-trip exactly: integers within a double's exact range
_MAX_SAFE_ID = 2**53


def valid_id(value: Any) -> bool:
    if type(value) is int:
        return -_MAX_SAFE_ID < value < _MAX_SAFE_ID
    return type(value) is str


def tools_call(decoded: Any) -> tuple[int | str, str, Any] | None:
    """(id, tool name, arguments) of a parsed JSON-RPC ``tools/call`` request, else None."""
    if type(decoded) is not dict or decoded.get("jsonrpc") != "2.0":
        return None
    if decoded.get("method") != "tools/call" or not valid_id(decoded.get("id")):
        return None
    params = decoded.get("params")
    if type(params) is not dict or type(params.get("name")) is not str:
        return None
    return decoded["id"], params["name"], params.get("arguments")


# A JSON text cut into its tokens, whatever comes after a bad one: a string, one of the
# structural characters, or a run of anything else (a number, a literal, or garbage). A string
# cut short by the end of the text is no token.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+', re.DOTALL)
_ENVELOPE_FOUND = frozenset({"id", "method", "name"})


def scan_envelope(data: bytes) -> tuple[int | str, str] | None:
    """The ``id`` and ``params.name`` of a JSON-RPC ``tools/call`` read from the start of a
    body that does not parse as a whole (invalid inside its arguments, nested too deep, or
    cut at the body cap), or None when they (and the method) are not all there, whole.

    Values of other members (``arguments``, ``_meta``) are skipped by their brackets and
    strings, never parsed: what is wrong with the body is inside them. A value at the very end
    of ``data`` is not taken (a number cut by the cap would be another id).
    """
    return _envelope(_scan(data))


def _envelope(found: dict[str, Any]) -> tuple[int | str, str] | None:
    if not found.keys() >= _ENVELOPE_FOUND or found["method"] != "tools/call":
        return None
    if found.get("jsonrpc", "2.0") != "2.0" or not valid_id(found["id"]):
        return None
    name = found["name"]
    return (found["id"], name) if type(name) is str else None


# The last member of a body (or the one before a last ``"jsonrpc": "2.0"``) when it is the
# id: at the very end of the text, it is the top-level object's, whatever the arguments hold.
_LAST_ID = re.compile(
    rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?}\s*\Z'
)
_TAIL = 4096  # what is kept of the end of a body over the cap: room for its last members


# what a body over the cap was read in so far: its ASGI messages, and the receive of the rest
BodyRead = tuple[list[MutableMapping[str, Any]], Callable[[], Awaitable[MutableMapping[str, Any]]]]


async def over_cap_call(
    data: bytes,
    cap: int,
    read: BodyRead,
    tools: Mapping[str, Any],
    bound: int,
) -> tuple[int | str, str] | None:
    """The ``id`` and ``params.name`` of a ``tools/call`` whose body is over ``cap``: ``data``
    is what was read of it, ``read`` the ASGI messages it came in and the ``receive`` of the
    rest. Read from the first ``cap`` bytes as :func:`scan_envelope` reads them; a call of a
    fail-closed tool (of ``tools``, by name) whose ``id`` is not there is read on to the
    body's end, keeping only its last bytes: the TypeScript SDK, Claude Code's client, writes
    the id after ``params``. Nothing is read past ``bound`` bytes (None then). The SDK, handed
    the messages again, has all it needs to refuse the body (it stops reading at the cap)."""
    found = _scan(data[:cap])
    name = found.get("name") if found.get("method") == "tools/call" else None
    spec = tools.get(name) if type(name) is str else None
    if "id" in found or spec is None or not spec.handler.fail_closed:
        return _envelope(found)
    messages, receive = read
    rest = receive if messages[-1].get("more_body", False) else None
    tail, size = data[-_TAIL:], len(data)
    while rest is not None:
        message = await rest()
        chunk = message.get("body", b"") if message["type"] == "http.request" else None
        if chunk is None or size + len(chunk) > bound:
            return None
        tail, size = (tail + chunk)[-_TAIL:], size + len(chunk)
        if not message.get("more_body", False):
            rest = None
    last = _LAST_ID.search(tail)
    try:
        found["id"] = json.loads(last.group(1)) if last is not None else None
    except ValueError:  # a string id with a bad escape
        return None
    return _envelope(found)


def _scan(data: bytes) -> dict[str, Any]:
    """The members of the envelope :func:`scan_envelope` looks for, as far as ``data`` says."""
    text = data.decode("utf-8", "replace")
    tokens = (match.group() for match in _TOKENS.finditer(text))
    found: dict[str, Any] = {}

    def skip(first: str) -> None:
        if first not in ("{", "["):
            return
        depth = 1
        for token in tokens:
            if token in ("{", "["):
                depth += 1
            elif token in ("}", "]"):
                depth -= 1
                if depth == 0:
                    return

    def scalar(token: str) -> Any:
        try:
            return json.loads(token)
        except ValueError:
            return None

    def members(names: frozenset[str], into: str | None) -> bool:
        """Read an object's members (its ``{`` read): the scalars named, and ``params``'
        members when ``into`` names it. False when the text ends first."""
        while True:
            key = next(tokens, None)
            if key is None:
                return False
            if key == "}":
                return True
            if key == ",":
                continue
            if next(tokens, None) != ":":
                return False
            first = next(tokens, None)
            if first is None:
                return False
            name = scalar(key) if key.startswith('"') else None
            if name == into and first == "{":
                if not members(frozenset({"name"}), None):
                    return False
            elif name in names and first not in ("{", "["):
                after = next(tokens, None)
                if after is None:  # the value may be cut short: not taken
                    return False
                found[name] = scalar(first)
                if after == "}":
                    return True
            else:
                skip(first)
            if found.keys() >= _ENVELOPE_FOUND:
                return True

    if next(tokens, None) != "{":
        return found
    members(frozenset({"jsonrpc", "id", "method"}), "params")
    return found
