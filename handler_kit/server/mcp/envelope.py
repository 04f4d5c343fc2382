"""What a JSON-RPC ``tools/call`` request says of itself: read from its parsed envelope
(:func:`tools_call`), or scanned from the start of a body that does not parse as a whole
(:func:`scan_envelope`), so that a fail-closed tool can still answer the call it was sent.

Plain JSON reading, no SDK: the MCP transport's guard (``_fast_path.FastPath.guard``) reads with
it what the SDK would refuse, and the fast path reads a well-formed call with :func:`tools_call`.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["scan_envelope", "tools_call", "valid_id"]

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
        return None
    members(frozenset({"jsonrpc", "id", "method"}), "params")
    if not found.keys() >= _ENVELOPE_FOUND or found["method"] != "tools/call":
        return None
    if found.get("jsonrpc", "2.0") != "2.0" or not valid_id(found["id"]):
        return None
    name = found["name"]
    return (found["id"], name) if type(name) is str else None
