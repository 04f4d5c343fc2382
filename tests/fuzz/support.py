"""What the property-based tests of tests/fuzz share: the strategies (JSON values, hook inputs,
byte strings, handler answers), the HookApps served to them, and the checks every answer of
the webhook must pass.

The apps' handlers never fail by themselves on any input, so a 500 from
:data:`inputs_app` is the framework's. :data:`outputs_app`'s handlers return whatever the
test put in :data:`RETURNS` for them: that answer must come back rendered, or as the handler's
failure policy (its safe decision when it fails closed, a JSON 500 otherwise).
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any

import httpx
from hypothesis import settings
from hypothesis import strategies as st

from handler_kit import HookApp, allow, block, context, deny, rewrite
from handler_kit.config import ServerConfig
from handler_kit.core.events import EVENT_NAMES
from handler_kit.core.outputs import (
    PERMISSION_DECISIONS,
    SPECIFIC_FIELDS,
    TOP_LEVEL_FIELDS,
    Output,
)
from handler_kit.core.vocabulary import MAX_INPUT_DEPTH

TOKEN = "fuzz-test-token-0123456789abcdef"
# A cap small enough that drawn bodies cross it; the bodies "within the cap" stay under it.
MAX_BODY = 16 * 1024
CONFIG = ServerConfig(tokens=[TOKEN], max_body_bytes=MAX_BODY, mcp=False)
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


def examples(share: float) -> int:
    """``share`` of the profile's examples per property, for the properties that cost more
    per example (a request through the app): at least 10."""
    return max(10, int(settings.default.max_examples * share))


# -- JSON values ---------------------------------------------------------------------------

# Text as runtimes send it: any code point, lone surrogates included (captured prompts carry
# "\udc8f"; the stdlib and Claude Code accept the escape).
any_text = st.text(st.characters(codec=None), max_size=40)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | any_text
)


@functools.cache
def json_values(max_leaves: int = 25) -> st.SearchStrategy[Any]:
    """Any JSON value (no NaN or infinity: they are not JSON). Cached: building a strategy
    inside a draw would cost more than drawing from it."""
    return st.recursive(
        json_scalars,
        lambda inner: st.lists(inner, max_size=5) | st.dictionaries(any_text, inner, max_size=5),
        max_leaves=max_leaves,
    )


@st.composite
def deep_values(draw: st.DrawFn) -> Any:
    """Arrays and objects nested around the depth limit, with a leaf the fast parser takes
    or one only the slow one does (a lone surrogate)."""
    depth = draw(st.integers(MAX_INPUT_DEPTH - 3, MAX_INPUT_DEPTH + 3))
    value: Any = draw(st.sampled_from(["x", "\udc8f", 1, [], {}]))
    for _ in range(depth):
        value = [value] if draw(st.booleans()) else {"k": value}
    return value


def depth_of(value: Any) -> int:
    """How many levels of objects and arrays ``value`` nests (a scalar: 0)."""
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


def encode(value: Any, ensure_ascii: bool = True) -> bytes:
    """JSON text of ``value`` as a runtime writes it (a lone surrogate needs the escapes)."""
    # with ensure_ascii=False a lone surrogate stays a character UTF-8 cannot hold: written as
    # its escape, which is where it can only be (in a string)
    return json.dumps(value, ensure_ascii=ensure_ascii).encode("utf-8", "backslashreplace")


# -- hook inputs ---------------------------------------------------------------------------

# Tool names the apps' matchers select, and a few they do not.
TOOL_NAMES = ["gate_tool", "issue_refund", "rewrite_tool", "crash_tool", "Bash", "mcp__x__y"]
EVENTS = [*EVENT_NAMES, "SomeFutureEvent", ""]
# Field values: the right type most of the time, anything some of the time.
_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "session_id": any_text,
    "cwd": any_text,
    "tool_name": st.sampled_from(TOOL_NAMES) | any_text,
    "tool_input": st.dictionaries(
        st.sampled_from(["amount", "command", "order_id"]) | any_text,
        st.integers(-1000, 1000) | json_scalars | json_values(8),
        max_size=4,
    ),
    "tool_response": json_values(10),
    "prompt": any_text,
    "source": st.sampled_from(["startup", "resume", "clear"]) | any_text,
    "stop_hook_active": st.booleans(),
    "last_assistant_message": any_text,
    "permission_suggestions": st.lists(json_values(4), max_size=3),
    "duration_ms": st.integers(-(2**40), 2**40),
    "effort": st.dictionaries(any_text, json_scalars, max_size=2),
}


_FIELD_NAMES = st.lists(st.sampled_from(sorted(_FIELDS)), max_size=6, unique=True)
_UNKNOWN_FIELDS = st.dictionaries(any_text, json_values(6), max_size=3)


@st.composite
def hook_inputs(draw: st.DrawFn) -> dict[str, Any]:
    """A hook input: a known (or unknown) event name, fields of the right type or not, and
    fields nobody knows."""
    data: dict[str, Any] = {}
    if draw(st.integers(0, 19)):  # now and then no event name at all
        data["hook_event_name"] = draw(st.sampled_from(EVENTS) | json_scalars)
    for name in draw(_FIELD_NAMES):
        right_type = draw(st.integers(0, 5))
        data[name] = draw(_FIELDS[name] if right_type else json_values(6))
    data.update(draw(_UNKNOWN_FIELDS))
    return data


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[bytes]) -> bytes:
    """``base`` bytes with a few bytes changed, cut, or inserted: near-valid JSON."""
    body = bytearray(draw(base))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(body)))
        what = draw(st.sampled_from(["set", "cut", "insert"]))
        if what == "insert" or not body:
            body[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif what == "cut":
            body[at : at + draw(st.integers(1, 8))] = b""
        else:
            body[min(at, len(body) - 1)] = draw(st.integers(0, 255))
    return bytes(body)


def input_bytes() -> st.SearchStrategy[bytes]:
    """Byte strings a webhook may receive, most of them under :data:`MAX_BODY`."""
    valid = st.builds(encode, hook_inputs(), st.booleans())
    return st.one_of(
        valid,
        mutated(valid),
        st.builds(encode, json_values(), st.booleans()),
        st.builds(
            lambda v: encode({"hook_event_name": "PreToolUse", "tool_input": v}), deep_values()
        ),
        st.binary(max_size=200),
        st.text(max_size=100).map(lambda t: t.encode("utf-8")),
    )


# Where a drawn request goes: the dispatch route, each handler's own route, and nowhere.
ROUTES = ["/hooks", "/hooks/", "/hooks/gate", "/hooks/prompt_gate", "/hooks/rewriter"]
ROUTES += ["/hooks/post_context", "/hooks/stop_check", "/hooks/permission", "/hooks/nobody"]
event_headers = st.none() | st.sampled_from(EVENTS) | st.text(st.characters(max_codepoint=255))


# -- handler answers -----------------------------------------------------------------------

_PERMISSION = st.sampled_from([*PERMISSION_DECISIONS, "block", "approve", "maybe"])


_VERDICTS = st.fixed_dictionaries(
    {"behavior": _PERMISSION},
    optional={
        "message": any_text,
        "updatedInput": json_values(6),
        "interrupt": st.booleans(),
        "typo": st.booleans(),
    },
) | json_values(4)


@functools.cache
def output_dicts(event: str | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """:func:`_output_dicts`, built once per event."""
    return _output_dicts(event)


@st.composite
def _output_dicts(draw: st.DrawFn, event: str | None = None) -> dict[str, Any]:
    """A Claude Code output object as a handler may write it: the event's keys (with values
    of the right type most of the time), misplaced and unknown keys now and then."""
    event = event or draw(st.sampled_from(EVENTS))
    specific_names = [*sorted(SPECIFIC_FIELDS.get(event, frozenset())), "hookEventName"]
    hso: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(specific_names), max_size=3, unique=True)):
        if name == "permissionDecision":
            hso[name] = draw(_PERMISSION)
        elif name in ("additionalContext", "permissionDecisionReason"):
            hso[name] = draw(any_text | json_scalars)
        elif name == "hookEventName":
            hso[name] = draw(st.just(event) | st.sampled_from(EVENTS))
        elif name == "decision":  # PermissionRequest's verdict
            hso[name] = draw(_VERDICTS)
        else:
            hso[name] = draw(json_values(6))
    data: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(sorted(TOP_LEVEL_FIELDS)), max_size=3, unique=True)):
        if name == "hookSpecificOutput":
            data[name] = hso if draw(st.integers(0, 9)) else draw(json_values(4))
        elif name == "decision":
            data[name] = draw(_PERMISSION | json_scalars)
        elif name in ("continue", "suppressOutput"):
            data[name] = draw(st.booleans() | json_scalars)
        else:
            data[name] = draw(any_text | json_scalars)
    if hso and "hookSpecificOutput" not in data and draw(st.integers(0, 3)):
        data["hookSpecificOutput"] = hso
    if not draw(st.integers(0, 9)):  # a key the schema does not have
        data[draw(any_text)] = draw(json_values(4))
    return data


# Leaves JSON cannot carry as they are: NaN and infinities, bytes, sets, objects.
_ODD_LEAVES = st.sampled_from(
    [math.nan, math.inf, -math.inf, b"raw", {1, 2}, (1, 2), object(), 2**70]
)
_ODD_VALUES = st.recursive(
    json_scalars | _ODD_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=6,
)


@functools.cache
def handler_answers(event: str) -> st.SearchStrategy[Any]:
    """Anything a handler may return for ``event``: nothing, text, a helper's output (with
    values JSON cannot carry now and then), an output dict, or a value of another type."""
    helper_outputs = st.builds(
        Output,
        decision=st.none() | _PERMISSION,
        reason=st.none() | any_text,
        context=st.none() | any_text,
        updated_input=st.none() | st.dictionaries(any_text, _ODD_VALUES, max_size=3),
        continue_=st.none() | st.booleans(),
        stop_reason=st.none() | any_text,
        specific=st.none() | st.dictionaries(any_text, _ODD_VALUES, max_size=2),
        extra=st.none() | st.dictionaries(any_text, _ODD_VALUES, max_size=2),
    )
    return st.one_of(
        st.none(),
        any_text,
        helper_outputs,
        output_dicts(event),
        st.dictionaries(any_text, _ODD_VALUES, max_size=3),
        _ODD_VALUES,
    )


# -- the apps ------------------------------------------------------------------------------


def _amount_over_limit(tool_input: Any) -> bool:
    amount = tool_input.get("amount") if isinstance(tool_input, dict) else None
    return isinstance(amount, int | float) and not isinstance(amount, bool) and amount > 500


inputs_app = HookApp("fuzz-inputs")


@inputs_app.pre_tool_use(matcher="gate_tool|issue_refund", fail_closed=True)
async def gate(event: Any) -> Any:
    return (
        deny("Refunds over $500 need a human approver.")
        if _amount_over_limit(event.tool_input)
        else allow()
    )


@inputs_app.pre_tool_use(matcher="rewrite_tool", fail_closed=True)
def rewriter(event: Any) -> Any:
    # echoes the input back: any JSON value the input held must come back as JSON
    return rewrite(event.tool_input or {}, reason=event.session_id)


@inputs_app.user_prompt_submit(fail_closed=True)
def prompt_gate(event: Any) -> Any:
    prompt = event.prompt or ""
    return block("not that") if "forbidden" in prompt else context(f"You said: {prompt}")


@inputs_app.post_tool_use()
async def post_context(event: Any) -> Any:
    return context(f"{event.tool_name} answered {type(event.tool_response).__name__}")


@inputs_app.stop()
def stop_check(event: Any) -> Any:
    message = event.last_assistant_message
    return block("add the ticket number") if message and "ticket" not in message else None


@inputs_app.permission_request()
def permission(event: Any) -> Any:
    return allow(updated_input=event.tool_input)


@inputs_app.session_start()
def greet(event: Any) -> Any:
    return context(f"session {event.session_id} from {event.source}")


# outputs_app: each handler answers what the test put in RETURNS under its name.
RETURNS: dict[str, Any] = {}
outputs_app = HookApp("fuzz-outputs")
# (handler name, event, fail closed): one route per pair the webhook treats differently.
OUTPUT_HANDLERS = [
    ("pre_closed", "PreToolUse", True),
    ("pre_open", "PreToolUse", False),
    ("permission_open", "PermissionRequest", False),
    ("prompt_closed", "UserPromptSubmit", True),
    ("post_open", "PostToolUse", False),
    ("stop_open", "Stop", False),
    ("start_open", "SessionStart", False),
    ("notify_open", "Notification", False),
]


def _returns(name: str) -> Any:
    def handler(event: Any) -> Any:
        return RETURNS.get(name)

    handler.__name__ = name
    return handler


for _name, _event, _closed in OUTPUT_HANDLERS:
    outputs_app.on(_event, fail_closed=_closed)(_returns(_name))


# -- what every answer must be -------------------------------------------------------------


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json(body: bytes) -> Any:
    """``body`` read as strict JSON: RFC 8259, no NaN or Infinity (a runtime's JSON.parse)."""
    return json.loads(body, parse_constant=_no_constants)


def check_answer(response: httpx.Response, *, allowed_5xx: bool = False) -> Any:
    """Assert ``response`` is a 200 with a JSON object, or a JSON error (4xx; a 500 only when
    ``allowed_5xx``, a handler's own failure), never a traceback; return its body."""
    status = response.status_code
    assert response.headers["content-type"] == "application/json", response.headers
    assert b"Traceback" not in response.content
    body = strict_json(response.content)
    assert isinstance(body, dict), body
    if status == 200:
        return body
    assert status in (400, 404, 405, 413) or (allowed_5xx and status == 500), (status, body)
    assert set(body) <= {"error", "message", "details"}, body
    assert isinstance(body["error"], str) and isinstance(body["message"], str), body
    return body


def asgi_client(app: Any) -> httpx.AsyncClient:
    """An httpx client of the ASGI ``app``, in process: an exception the app raises reaches
    the test (uvicorn would turn it into a bare 500 and a traceback in the log)."""
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://fuzz", headers=HEADERS
    )
