"""Idempotency keys: what makes two calls "the same call", for the idempotency store and the
audit trail alike (each record holds its key, so a replay can be traced to what it replayed).

``scope:event:handler:digest``: the scope (tool_use_id / turn_id / prompt_id / session_id)
names the call, the digest of the input as received makes a reused identifier with another
input another call. Plain functions of the hook input: the idempotency wrapper imports them
without the audit trail; :func:`body_input` is the audit writer process's (the same text,
from the webhook's body).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_json

from handler_kit.core.events import json_serializer, json_validator, model_for
from handler_kit.core.vocabulary import load_json

if TYPE_CHECKING:
    from handler_kit.core.events import HookEvent

SCOPE_FIELDS = ("tool_use_id", "turn_id", "prompt_id", "session_id")
_REPLACEMENT = "\ufffd".encode()
# Each event model's JSON validator and serializer, called directly (model_validate_json and
# to_json reach the same ones through a Python frame or a lookup per call): the audit writer
# process reads every webhook input again, of a few events.
_CODECS: dict[type[HookEvent], tuple[Callable[[bytes], HookEvent], Callable[..., bytes]]] = {}


def scope_of(values: dict[str, Any]) -> str:
    """The most specific identifier of a call: tool_use_id, then turn_id, prompt_id,
    session_id (``kind=value``), or ``-`` when the input has none."""
    for name in SCOPE_FIELDS:
        value = values.get(name)
        if isinstance(value, str) and value:
            return f"{name}={value}"
    return "-"


def make_key(scope: str, event: str, handler: str | None, digest: str) -> str:
    """``scope:event:handler:digest``; ``handler`` None (``*``) is the answer's key."""
    return f"{scope}:{event}:{handler or '*'}:{digest}"


def input_digest_of(input_json: str) -> str:
    """The digest of a hook input serialized as received (nulls dropped): the same body gives
    the same digest in every worker and replica. Key order counts, so an input whose keys come
    in another order is another call: the safe direction (an idempotent handler runs again)."""
    return hashlib.sha256(input_json.encode()).hexdigest()[:16]


def input_json(event: HookEvent, dump: Callable[..., bytes] = to_json) -> str:
    """The hook input as JSON, nulls dropped: what the audit trail records and digests.

    pydantic-core writes it, except what it refuses: a lone surrogate (``"\\ud800"``, which
    JSON can escape and UTF-8 cannot hold) or values nested deeper than it writes (an MCP
    argument is not held to the input depth limit). The standard library writes those, the
    surrogate as its escape, the nesting cut at
    :data:`~handler_kit.ops.audit.records.MAX_RECORD_DEPTH`: such an input is recorded too.
    ``dump``: the event's model's own serializer
    (:func:`~handler_kit.core.events.json_serializer`) when the caller has it: the same text.
    """
    try:
        # model_dump_json() without its frame: pydantic-core hands a model to its own
        # serializer, with the same defaults (by_alias: to_json's, which a model's own
        # serializer does not default to)
        data = dump(event, exclude_none=True, by_alias=True)
    except PydanticSerializationError:
        pass
    else:
        # pydantic-core writes a lone surrogate in a key as U+FFFDs, one per UTF-8 byte, where
        # in a value it refuses it: such an input is written as the others are (an ASCII
        # text, the usual one, holds none: isascii() reads it a word at a time)
        if data.isascii() or _REPLACEMENT not in data:
            return data.decode()
    from handler_kit.ops.audit.records import cut_deep

    # depth 0: the input around its values, which are level 1 as in the input limit
    value = cut_deep(event.model_dump(exclude_none=True), 0)
    return json.dumps(value, separators=(",", ":"))


def codec(model: type[HookEvent]) -> tuple[Callable[[bytes], HookEvent], Callable[..., bytes]]:
    """``model``'s JSON validator and serializer, as :func:`body_input` uses them, built on the
    first call for each model (the audit writer process builds its app's at start, so that no
    answer's record pays for it)."""
    found = _CODECS.get(model)
    if found is None:
        found = _CODECS[model] = (json_validator(model), json_serializer(model))
    return found


def body_input(event_name: str, body: bytes) -> tuple[str, dict[str, Any]]:
    """:func:`input_json` of the ``event_name`` input the webhook read from ``body``, and the
    input's values by field name (its model's fields, None where absent, then the fields the
    model does not know). The model validates the body as the webhook does (pydantic-core's
    JSON validation, else the standard library's reading of what pydantic-core refuses), so the
    text, and the digest of the idempotency keys, are the ones the answer path would have
    written. The audit writer process derives them: the server's process hands the body over."""
    model = model_for(event_name)
    validate_json, dump = codec(model)
    try:
        event = validate_json(body)
    except ValidationError:
        event = model.model_validate(load_json(body))
    extra = event.model_extra
    return input_json(event, dump), {**event.__dict__, **extra} if extra else event.__dict__


def input_digest(event: HookEvent) -> str:
    """A digest of the hook input as received, nulls dropped (see :func:`input_digest_of`)."""
    return input_digest_of(input_json(event))


def idempotency_key(event: HookEvent, handler: str | None, digest: str | None = None) -> str:
    """``scope:event:handler:digest`` of ``event`` (see the module docstring); ``handler``
    None is the answer's key."""
    scope = scope_of({name: getattr(event, name, None) for name in SCOPE_FIELDS})
    return make_key(scope, event.hook_event_name, handler, digest or input_digest(event))
