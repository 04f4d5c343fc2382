"""Every handler of a HookApp as an MCP tool: its schema, its description, and one call.

Runbear's ``mcp_tool`` handlers (and Claude Code's ``mcp_tool`` hooks) call a tool with an input
rendered from the hook input; this module makes each handler such a tool, so one deployment
serves both handler types. The decision is never made here: a tool call builds the event and
hands it to :meth:`HookApp.answer`, the one code path the webhook uses too (matchers, deadline,
fail-closed, stop-loop guard, merge), and the tool's text result is exactly :attr:`Answer.body`,
the bytes the webhook would send. The SDK's tool handler and the fast path both answer through
:func:`run_tool`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as mt
from pydantic import ValidationError

from handler_kit.core.app import HookApp
from handler_kit.core.events import HookEvent, python_validator
from handler_kit.core.matchers import is_match_all
from handler_kit.core.vocabulary import INPUT_ID_FIELDS, Answer, Handler, load_json

__all__ = [
    "FAILED_MESSAGE",
    "TIMED_OUT_MESSAGE",
    "UNRECORDED_MESSAGE",
    "ToolOutcome",
    "ToolSpec",
    "answer_tool",
    "build_tools",
    "call_context",
    "outcome_of",
    "run_tool",
    "structured_fields",
    "tool_description",
    "tool_input_schema",
]

logger = logging.getLogger("handler_kit.mcp")

# A generic, safe message: a handler's exception text may hold secrets or internals, and the
# model reads isError text. The detail is in the server log (HookApp logs it with a traceback).
FAILED_MESSAGE = "The handler {name!r} failed; see the server log."
TIMED_OUT_MESSAGE = "The handler {name!r} did not answer in time."
UNRECORDED_MESSAGE = (
    "The answer of {name!r} could not be recorded in the audit trail in time; retry later."
)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One handler as a tool: its MCP ``Tool`` object and what a call needs, looked up once
    (the event model's validator, whether the matcher can refuse anything)."""

    handler: Handler
    tool: mt.Tool
    validate: Callable[[Any], HookEvent] = field(init=False, repr=False, compare=False)
    # None when the matcher matches every value: no test to make
    matches: Callable[[str | None], bool] | None = field(init=False, repr=False, compare=False)
    # the fields whose value may come as JSON text (see structured_fields)
    json_fields: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "validate", python_validator(self.handler.model))
        matches = None if is_match_all(self.handler.matcher) else self.handler.matches
        object.__setattr__(self, "matches", matches)
        object.__setattr__(self, "json_fields", structured_fields(self.handler.model))

    @property
    def name(self) -> str:
        return self.handler.name

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.tool.input_schema


def tool_input_schema(event: str, model: type[HookEvent]) -> dict[str, Any]:
    """The input schema of a tool for ``event``: the event model's fields, flat, all optional.

    Runbear drops template keys a tool does not declare, so every field is declared, each with
    its description; nothing is required (a runtime omits what it cannot supply, and
    ``hook_event_name`` is implied by the tool); ``additionalProperties`` stays open so fields
    runtimes add later still reach the handler, as they do on the webhook. The pydantic
    ``anyOf [T, null]`` spelling is folded into ``type: [T, "null"]`` and titles dropped: the
    schema is read by models and template editors, and the short form is easier on both. A
    field holding an object or an array admits a string too, its JSON text
    (:func:`structured_fields`), so a client or SDK checking arguments against the schema
    lets Claude Code's rendering through.
    """
    raw = model.model_json_schema()
    properties: dict[str, Any] = {}
    for field_name, prop in raw.get("properties", {}).items():
        compact = _compact(prop)
        properties[field_name] = _or_text(compact) if _structured(compact) else compact
    properties["hook_event_name"] = {
        "type": "string",
        "description": f"Name of the event; optional, this tool always handles {event}.",
        "default": event,
    }
    # hook_event_name first: the order models and humans read the schema in.
    ordered = {"hook_event_name": properties.pop("hook_event_name"), **properties}
    schema: dict[str, Any] = {"type": "object", "properties": ordered, "additionalProperties": True}
    if "$defs" in raw:
        schema["$defs"] = raw["$defs"]
    return schema


# Keys of a schema that may be folded with null into ``type: [T, "null"]`` without loss.
_FOLDABLE = frozenset({"type", "additionalProperties", "items"})


def _compact(prop: dict[str, Any]) -> dict[str, Any]:
    """One property of a pydantic schema, without titles and null defaults, nullables folded."""
    out = {k: v for k, v in prop.items() if k != "title"}
    if "default" in out and out["default"] is None:
        del out["default"]
    any_of = out.get("anyOf")
    if isinstance(any_of, list) and len(any_of) == 2 and {"type": "null"} in any_of:
        other = any_of[0] if any_of[1] == {"type": "null"} else any_of[1]
        if isinstance(other.get("type"), str) and set(other) <= _FOLDABLE:
            del out["anyOf"]
            out = {**other, "type": [other["type"], "null"], **out}
    return out


def structured_fields(model: type[HookEvent]) -> tuple[str, ...]:
    """The fields of ``model`` that hold an object or an array and never a string, which a
    tool call may also pass as JSON text: Claude Code renders an ``mcp_tool`` hook's
    whole-value placeholder (``"${tool_input}"``) as text, where Runbear keeps the JSON type.
    A field that takes any value (``tool_response``) or a string keeps a string as it is."""
    raw = model.model_json_schema()
    return tuple(
        name for name, prop in raw.get("properties", {}).items() if _structured(_compact(prop))
    )


def _kinds(schema: dict[str, Any]) -> set[str]:
    kinds: set[str] = set()
    for option in (schema, *schema.get("anyOf", ())):
        types = option.get("type")
        kinds.update([types] if isinstance(types, str) else types or ())
        if "$ref" in option:
            kinds.add("object")
    return kinds


def _structured(prop: dict[str, Any]) -> bool:
    """Whether a (compact) property holds an object or an array and never a string."""
    kinds = _kinds(prop)
    return bool(kinds & {"object", "array"}) and "string" not in kinds


def _or_text(prop: dict[str, Any]) -> dict[str, Any]:
    """``prop`` admitting its value as JSON text too (see :func:`structured_fields`), so that
    a client or SDK checking arguments against the schema lets the text through."""
    out = dict(prop)
    types = out.get("type")
    if isinstance(types, list):
        out["type"] = [types[0], "string", *types[1:]]
    elif isinstance(types, str):
        out["type"] = [types, "string"]
    else:  # an anyOf (or a $ref): one more option
        options = out.pop("anyOf", None) or [
            {k: v for k, v in out.items() if k not in ("description", "default")}
        ]
        out = {k: v for k, v in out.items() if k in ("description", "default")}
        out["anyOf"] = [*options, {"type": "string"}]
    return out


def tool_description(handler: Handler) -> str:
    """What a model or a template author needs to know to call the tool.

    The handler's docstring says what it checks; the event and matcher say when it applies (a
    call that does not match the matcher is answered ``{}``, as on the webhook's
    ``/hooks/{name}``); the last line says what the result is.
    """
    parts = []
    if handler.description:
        parts.append(handler.description.strip())
    when = f"Hook handler for {handler.event} events"
    if handler.matcher and handler.matcher.strip() not in ("", "*"):
        when += f" (matcher: {handler.matcher})"
    when += "."
    if handler.fail_closed:
        when += " Fails closed: on an error or a late answer the result is the safe decision."
    parts.append(when)
    parts.append(
        "Pass the hook input's fields as arguments. The result is the Claude Code hook output "
        "JSON as text ({} means no opinion)."
    )
    return "\n\n".join(parts)


def build_tools(hook_app: HookApp) -> dict[str, ToolSpec]:
    """One tool per handler, named like its webhook route, in registration order."""
    tools: dict[str, ToolSpec] = {}
    for handler in hook_app.handlers:
        tool = mt.Tool(
            name=handler.name,
            description=tool_description(handler),
            input_schema=tool_input_schema(handler.event, handler.model),
        )
        tools[handler.name] = ToolSpec(handler=handler, tool=tool)
    return tools


# -- one tool call: shared by the SDK's tool handler and the fast path ------------------------


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool call answers: one text and whether it is an ``isError`` result."""

    text: str
    is_error: bool = False

    def result(self) -> mt.CallToolResult:
        return mt.CallToolResult(
            content=[mt.TextContent(type="text", text=self.text)], is_error=self.is_error
        )


async def run_tool(
    hook_app: HookApp,
    spec: ToolSpec,
    arguments: Mapping[str, Any] | None,
    context: dict[str, Any] | None = None,
    *,
    owned: bool = False,
) -> ToolOutcome:
    """Answer one call of ``spec``'s tool with ``arguments``: the single decision path.

    The arguments are the hook input; a missing ``hook_event_name`` is the tool's event, another
    one is a caller error. The handler runs only when its matcher matches (otherwise the answer
    is ``{}``, like ``/hooks/{name}``), through :meth:`HookApp.answer` with ``transport="mcp"``.
    A failed answer (every handler failed, no fail-closed policy) is an ``isError`` result with
    a generic message; a fail-closed failure is already the safe decision inside the answer,
    and so are arguments a fail-closed handler cannot read.

    ``owned``: ``arguments`` is a dict the caller made for this call alone (the fast path's
    freshly parsed body), so it is completed in place instead of copied.
    """
    answered = await answer_tool(hook_app, spec, arguments, context, owned=owned)
    if isinstance(answered, ToolOutcome):
        return answered
    return outcome_of(spec.handler, answered)


async def answer_tool(
    hook_app: HookApp,
    spec: ToolSpec,
    arguments: Mapping[str, Any] | None,
    context: dict[str, Any] | None = None,
    *,
    owned: bool = False,
) -> Answer | ToolOutcome:
    """:func:`run_tool` short of its result: the :class:`Answer` when there is one (its
    :func:`outcome_of` is the result), or the error result of a call no handler could answer.
    The fast path takes the answer's body from here without a :class:`ToolOutcome`."""
    handler = spec.handler
    if arguments:
        data = arguments if owned and type(arguments) is dict else dict(arguments)
    else:
        data = {}
    for name in spec.json_fields:
        value = data.get(name)
        if type(value) is str:
            data[name] = _from_text(value)
    given = data.get("hook_event_name")
    if given is None:
        data["hook_event_name"] = handler.event
    elif type(given) is not str or not given:
        # no event named at all, which the webhook route reads as an input it cannot read
        refused = _unreadable(
            hook_app, handler, data, context, "invalid arguments: hook_event_name"
        )
        if refused is not None:
            return refused
        message = f"hook_event_name must be omitted or {handler.event!r}"
        return ToolOutcome(f"Invalid hook input for tool {handler.name!r}: {message}", True)
    elif given != handler.event:
        return ToolOutcome(
            f"Tool {handler.name!r} handles {handler.event} events; "
            f"hook_event_name was {given!r}. Omit it or pass {handler.event!r}.",
            is_error=True,
        )
    try:
        event = spec.validate(data)
    except ValidationError as exc:
        refused = _unreadable(
            hook_app, handler, data, context, f"invalid arguments: {_invalid_fields(exc)}"
        )
        if refused is not None:
            return refused
        return ToolOutcome(_invalid_input_message(handler, exc), is_error=True)
    matches = spec.matches
    handlers = [handler] if matches is None or matches(event.matcher_value()) else []
    try:
        answer = await hook_app.answer(event, handlers, transport="mcp", context=context)
    except Exception:
        # HookApp.answer answers every failure it can itself, a wrapper's or a committer's
        # included; reaching this is a bug in that answer of last resort. Say so generically:
        # the SDK's legacy path would put str(exc) on the wire.
        logger.exception("answering %s over MCP failed", handler.name)
        return ToolOutcome(FAILED_MESSAGE.format(name=handler.name), is_error=True)
    return answer


def _unreadable(
    hook_app: HookApp,
    handler: Handler,
    data: dict[str, Any],
    context: dict[str, Any] | None,
    why: str,
) -> Answer | None:
    """A runtime proceeds on an error result: a fail-closed gate that cannot read its
    arguments answers its safe decision instead, as on its webhook route (None for a handler
    that does not fail closed)."""
    return hook_app.answer_unreadable(
        handler.event,
        [handler],
        why,
        transport="mcp",
        context=context,
        known={key: data[key] for key in INPUT_ID_FIELDS if isinstance(data.get(key), str)},
    )


def _from_text(value: str) -> Any:
    """The JSON value ``value`` holds (validated as usual next), or ``value`` itself when it
    holds none (or is nested too deep), for validation to refuse: a fail-closed gate then
    answers its safe decision."""
    try:
        return load_json(value)
    except ValueError:
        return value


def outcome_of(handler: Handler, answer: Answer) -> ToolOutcome:
    """The tool result for ``answer``: its exact body, or a generic error when it failed."""
    if answer.failed:
        if answer.unrecorded:
            template = UNRECORDED_MESSAGE
        elif answer.timed_out:
            template = TIMED_OUT_MESSAGE
        else:
            template = FAILED_MESSAGE
        return ToolOutcome(template.format(name=handler.name), is_error=True)
    return ToolOutcome(answer.body.decode())


def _invalid_input_message(handler: Handler, exc: ValidationError) -> str:
    # Field paths and pydantic's messages only: never the offending values, which may be large
    # or sensitive, and never anything from the handler.
    problems = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in error.get("loc", ())) or "(input)"
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    return f"Invalid hook input for tool {handler.name!r} ({handler.event}): " + "; ".join(problems)


def _invalid_fields(exc: ValidationError) -> str:
    return ", ".join(
        ".".join(str(p) for p in error.get("loc", ())) or "(input)"
        for error in exc.errors(include_url=False, include_input=False)
    )


def call_context(
    spec: ToolSpec, scope: Mapping[str, Any] | None, request_id: Any, served_by: str
) -> dict[str, Any]:
    """The context observers (audit, metrics, tracing) receive with an MCP answer.

    The same keys as the webhook's (``principal`` set by the server's auth layer,
    ``traceparent`` from the HTTP request), plus the tool name, the JSON-RPC request id and
    ``mcp_path``: ``"fast"`` or ``"sdk"``, which code answered (for metrics and debugging), or
    ``"guard"`` for a call the SDK would have refused with an error (a body it cannot read,
    over the cap, or arguments that are not an object: see ``FastPath.guard``)."""
    context: dict[str, Any] = {
        "principal": None,
        "tool": spec.name,
        "request_id": request_id,
        "mcp_path": served_by,
    }
    if scope:
        context["principal"] = scope.get("handler_kit.principal")
        for key, value in scope.get("headers", ()):
            if key == b"traceparent":
                context["traceparent"] = value.decode("latin-1")
                break
    return context
