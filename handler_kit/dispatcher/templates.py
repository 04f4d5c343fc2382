"""Rendering an ``mcp_tool`` handler's ``input`` template against the hook input.

Runbear's rules (000_*, "Templates for MCP tools"):

- a string value that is exactly one placeholder (``"${tool_input}"``) is replaced by the
  referenced value and keeps its JSON type (an object, a boolean, a number);
- a string that embeds placeholders (``"user ${user_name} on ${channel}"``) is interpolated as
  text;
- dot paths read nested values (``${tool_input.order_id}``);
- a key whose whole-value placeholder resolves to nothing (missing or null) is dropped rather than
  sent as null, so an optional field the channel cannot supply is simply omitted;
- keys the tool's input schema does not declare are dropped with a warning, so a template written
  for one tool version does not fail the call when a slot is renamed.

The spec states the drop rule for top-level keys; nested objects are rendered with the same rule
(their keys dropped too) so a nested template behaves like a top-level one. Inside an array a
placeholder that resolves to nothing becomes null, since dropping would shift the positions.
"""

from __future__ import annotations

import json
import re
from typing import Any

_PLACEHOLDER = re.compile(r"\$\{\s*([^{}\s]+)\s*\}")


class _Missing:
    """Marks a placeholder that resolves to nothing (distinct from a JSON null value)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


def resolve(source: Any, path: str) -> Any:
    """The value at dot path ``path`` in ``source``; :data:`MISSING` when absent or null.

    A numeric segment indexes an array (``${tool_input.items.0}``).
    """
    value = source
    for part in path.split("."):
        if isinstance(value, dict):
            if part not in value:
                return MISSING
            value = value[part]
        elif isinstance(value, list) and part.isdigit():
            index = int(part)
            if index >= len(value):
                return MISSING
            value = value[index]
        else:
            return MISSING
    return MISSING if value is None else value


def as_text(value: Any) -> str:
    """A value as it reads when embedded in a string: strings as they are, the rest as JSON."""
    if value is MISSING:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def render_value(template: Any, source: dict[str, Any]) -> Any:
    """Render one template value; :data:`MISSING` when a whole-value placeholder is empty."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole:
            return resolve(source, whole.group(1))
        if "${" not in template:
            return template
        return _PLACEHOLDER.sub(lambda m: as_text(resolve(source, m.group(1))), template)
    if isinstance(template, dict):
        rendered, _ = render_input(template, source)
        return rendered
    if isinstance(template, list):
        items = (render_value(item, source) for item in template)
        return [None if item is MISSING else item for item in items]
    return template


def render_input(
    template: dict[str, Any], source: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """Render an ``input`` template; returns the arguments and the keys dropped as empty."""
    arguments: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in template.items():
        rendered = render_value(value, source)
        if rendered is MISSING:
            dropped.append(key)
        else:
            arguments[key] = rendered
    return arguments, dropped


def declared_keys(schema: dict[str, Any] | None) -> set[str]:
    """The argument names an MCP tool's input schema declares (its ``properties``)."""
    if not isinstance(schema, dict):
        return set()
    properties = schema.get("properties")
    return set(properties) if isinstance(properties, dict) else set()


def keep_declared(
    arguments: dict[str, Any], schema: dict[str, Any] | None
) -> tuple[dict[str, Any], list[str]]:
    """Drop the arguments the tool's schema does not declare; returns (kept, dropped names)."""
    declared = declared_keys(schema)
    kept = {k: v for k, v in arguments.items() if k in declared}
    return kept, [k for k in arguments if k not in declared]
