"""``GET /openapi.json``: an OpenAPI 3.1 document of a HookApp's webhook routes.

The document is made from the registered handlers, so the tools people use on a FastAPI
service work on a hook server too: Swagger UI or Redoc pointed at it, client generators, and a
schema diff in CI that notices when a handler's event or an event model changes.

``POST /hooks/{name}`` takes its handler's event and ``POST /hooks`` any of the app's events,
picked by ``hook_event_name`` (a discriminator). Each event's schema is its pydantic model's,
with ``hook_event_name`` pinned to the event: without that every event schema, all of whose
other fields are optional, would accept every payload and ``oneOf`` could never hold. The
answer is the Claude Code output of that event. The outputs are plain objects, not models, so
their schema is written here from the same tables :mod:`handler_kit.core.outputs` checks
against. Nothing here runs per request: the server builds the document once.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from pydantic.json_schema import models_json_schema

from handler_kit._version import __version__
from handler_kit.core.app import HookApp
from handler_kit.core.events import model_for
from handler_kit.core.outputs import BLOCK_EVENTS, PERMISSION_DECISIONS, SPECIFIC_FIELDS

__all__ = ["openapi_document"]

OPENAPI_VERSION = "3.1.0"
_REF = "#/components/schemas/{model}"
EVENT_HEADER_NAME = "X-Runbear-Hook-Event"

# The JSON type of each hookSpecificOutput field whose type is known; any other field is
# described without a type rather than with a guess.
_SPECIFIC_TYPES: dict[str, dict[str, Any]] = {
    "additionalContext": {"type": "string", "description": "Context added for the model."},
    "permissionDecision": {"type": "string", "enum": list(PERMISSION_DECISIONS)},
    "permissionDecisionReason": {"type": "string"},
    "updatedInput": {"type": "object", "description": "Arguments the tool runs with instead."},
    "sessionTitle": {"type": "string"},
    "initialUserMessage": {"type": "string"},
    "suppressOriginalPrompt": {"type": "boolean"},
    "reloadSkills": {"type": "boolean"},
    "watchPaths": {"type": "array", "items": {"type": "string"}},
    "retry": {"type": "boolean"},
    "worktreePath": {"type": "string"},
    "displayContent": {"type": "string"},
    "decision": {
        "type": "object",
        "properties": {
            "behavior": {"type": "string", "enum": ["allow", "deny"]},
            "message": {"type": "string"},
            "updatedInput": {"type": "object"},
            "updatedPermissions": {"type": "array"},
            "interrupt": {"type": "boolean"},
        },
    },
}
# The fields any event's output may carry.
_UNIVERSAL_OUTPUT: dict[str, Any] = {
    "continue": {"type": "boolean", "description": "false stops the agent altogether."},
    "stopReason": {"type": "string", "description": "Shown when continue is false."},
    "suppressOutput": {"type": "boolean"},
    "systemMessage": {"type": "string", "description": "A message shown to the user."},
}

_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Every error answer: a stable code, a message, and for a hook input that "
    "failed validation the fields at fault (never their values).",
    "properties": {
        "error": {"type": "string", "examples": ["invalid_event"]},
        "message": {"type": "string"},
        "details": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "message": {"type": "string"}},
                "required": ["path", "message"],
            },
        },
    },
    "required": ["error", "message"],
}
# The error answers every webhook route may give (authentication included).
_ERRORS = {
    "400": "The body is not a hook input this route takes (malformed JSON, not an object, "
    "failed validation, event header mismatch).",
    "401": "No valid bearer token.",
    "405": "Use POST.",
    "413": "The body is over the server's size limit.",
    "429": "Too many failed authentications from this address.",
    "500": "Every handler failed, or none answered in time, and none fails closed.",
}


def openapi_document(
    hook_app: HookApp,
    *,
    bearer: bool = True,
    require_event_header: bool = False,
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``hook_app``'s webhook routes.

    ``bearer``: the routes take a bearer token (false only for a server run without
    authentication). ``require_event_header``: the ``X-Runbear-Hook-Event`` header is
    required rather than optional.
    """
    handlers = hook_app.handlers
    # events in registration order, each once: the order the document lists them in
    events = list(dict.fromkeys(h.event for h in handlers))
    schemas = _event_schemas(events)
    for event in events:
        schemas[f"{event}Output"] = _output_schema(event)
    schemas["HookOutput"] = _output_schema(None)
    schemas["Error"] = copy.deepcopy(_ERROR_SCHEMA)

    paths: dict[str, Any] = {}
    if events:
        paths["/hooks"] = {
            "post": _operation(
                operation_id="post_hooks",
                summary="Answer a hook input with every matching handler",
                description=(
                    "Runs every handler registered for the input's event whose matcher matches, "
                    "and merges their answers the way Claude Code does. An input of an event "
                    "this app has no handler for is answered {}."
                ),
                body={
                    "oneOf": [{"$ref": _REF.format(model=event)} for event in events],
                    "discriminator": {
                        "propertyName": "hook_event_name",
                        "mapping": {event: _REF.format(model=event) for event in events},
                    },
                },
                output={"$ref": _REF.format(model="HookOutput")},
                header_events=events,
                require_event_header=require_event_header,
            )
        }
    for handler in handlers:
        description = handler.description.strip() if handler.description else ""
        when = f"Handles {handler.event}"
        if handler.matcher and handler.matcher.strip() not in ("", "*"):
            when += f" when the matcher {handler.matcher!r} matches (otherwise answers {{}})"
        when += "."
        if handler.fail_closed:
            when += (
                " Fails closed: an error, a late answer or an input it cannot read is answered "
                "200 with the safe decision."
            )
        paths[f"/hooks/{handler.name}"] = {
            "post": _operation(
                operation_id=f"post_hooks_{handler.name}",
                summary=f"{handler.name} ({handler.event})",
                description="\n\n".join(part for part in (description, when) if part),
                body={"$ref": _REF.format(model=handler.event)},
                output={"$ref": _REF.format(model=f"{handler.event}Output")},
                header_events=[handler.event],
                require_event_header=require_event_header,
            )
        }
    paths["/healthz"] = {
        "get": {
            "operationId": "get_healthz",
            "summary": "Liveness, and the handlers served (no token needed)",
            "security": [],
            "responses": {
                "200": {
                    "description": "The app's name and handlers.",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                }
            },
        }
    }
    paths["/readyz"] = {
        "get": {
            "operationId": "get_readyz",
            "summary": "Readiness: whether to send this replica traffic (no token needed)",
            "security": [],
            "responses": {
                "200": {
                    "description": "Ready.",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                "503": {
                    "description": (
                        "Not ready: draining, or (durable audit mode) the decision log cannot "
                        "commit."
                    ),
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
            },
        }
    }
    document: dict[str, Any] = {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": hook_app.name,
            "version": __version__,
            "description": (hook_app.description or "").strip()
            or "Hook handlers served by handler-kit.",
        },
        "paths": paths,
        "components": {"schemas": schemas},
    }
    if bearer:
        document["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        document["security"] = [{"bearer": []}]
    return document


def _event_schemas(events: Iterable[str]) -> dict[str, Any]:
    """The events' JSON schemas under their names, with every nested definition beside them
    (one namespace, as pydantic names them), ``hook_event_name`` pinned to each event."""
    models = [(model_for(event), "validation") for event in events]
    if not models:
        return {}
    _, top = models_json_schema(models, ref_template=_REF)  # type: ignore[arg-type]
    schemas: dict[str, Any] = dict(top.get("$defs", {}))
    for event in events:
        schema = schemas[model_for(event).__name__]
        if model_for(event).__name__ != event:
            # a runtime's own event, on the generic model: a copy of its own, listed by event
            schema = schemas[event] = copy.deepcopy(schema)
        prop = schema.get("properties", {}).get("hook_event_name", {})
        schema["properties"]["hook_event_name"] = {
            **{k: v for k, v in prop.items() if k not in ("type", "title")},
            "type": "string",
            "const": event,
        }
        required = schema.setdefault("required", [])
        if "hook_event_name" not in required:
            required.insert(0, "hook_event_name")
    return schemas


def _output_schema(event: str | None) -> dict[str, Any]:
    """The Claude Code output ``event`` is answered with (any event's, for None). Open to
    more fields: a handler may pass further keys through, and ``{}`` means no opinion."""
    properties: dict[str, Any] = dict(copy.deepcopy(_UNIVERSAL_OUTPUT))
    if event is None or event in BLOCK_EVENTS:
        properties["decision"] = {"type": "string", "enum": ["block"]}
        properties["reason"] = {"type": "string", "description": "Why it blocks."}
    if event is None:
        specific: dict[str, Any] = {
            "type": "object",
            "properties": {"hookEventName": {"type": "string"}},
            "required": ["hookEventName"],
        }
        description = "A hook output: the Claude Code JSON ({} means no opinion)."
    else:
        fields = {
            name: copy.deepcopy(_SPECIFIC_TYPES.get(name, {}))
            for name in sorted(SPECIFIC_FIELDS.get(event, ()))
        }
        specific = {
            "type": "object",
            "properties": {"hookEventName": {"type": "string", "const": event}, **fields},
            "required": ["hookEventName"],
        }
        description = f"The Claude Code output of a {event} hook ({{}} means no opinion)."
    properties["hookSpecificOutput"] = specific
    return {"type": "object", "description": description, "properties": properties}


def _operation(
    *,
    operation_id: str,
    summary: str,
    description: str,
    body: dict[str, Any],
    output: dict[str, Any],
    header_events: list[str],
    require_event_header: bool,
) -> dict[str, Any]:
    header_schema: dict[str, Any] = (
        {"type": "string", "const": header_events[0]}
        if len(header_events) == 1
        else {"type": "string", "enum": header_events}
    )
    responses: dict[str, Any] = {
        "200": {
            "description": "The hook output.",
            "content": {"application/json": {"schema": output}},
        }
    }
    for status, text in _ERRORS.items():
        responses[status] = {
            "description": text,
            "content": {"application/json": {"schema": {"$ref": _REF.format(model="Error")}}},
        }
    return {
        "operationId": operation_id,
        "summary": summary,
        "description": description,
        "parameters": [
            {
                "name": EVENT_HEADER_NAME,
                "in": "header",
                "required": require_event_header,
                "description": "The event of the body, as Runbear sends it; when present it "
                "must equal hook_event_name.",
                "schema": header_schema,
            }
        ],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": body}},
        },
        "responses": responses,
    }
