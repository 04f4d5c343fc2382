"""The words every layer shares: a registered :class:`Handler`, what one handler run did
(:class:`Invocation`, with its :class:`Status`), the merged :class:`Answer`, and the one JSON
encoding of answers.

Operations (audit, metrics, tracing, idempotency) and the transports speak of these; they
import this module, never :mod:`handler_kit.core.app`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Collection
from typing import Any, TypeAlias, TypeVar

from pydantic_core import PydanticSerializationError, from_json, to_json

from handler_kit.core._fast_coroutines import never_suspends
from handler_kit.core.events import HookEvent, model_for
from handler_kit.core.matchers import compile_matcher
from handler_kit.core.names import DEFAULT_TIMEOUTS as DEFAULT_TIMEOUTS
from handler_kit.core.names import LOOP_GUARDED_EVENTS as LOOP_GUARDED_EVENTS
from handler_kit.core.names import MAX_TIMEOUTS as MAX_TIMEOUTS
from handler_kit.core.names import Status
from handler_kit.core.outputs import Output

# A handler's timeout on an event the table of events (handler_kit.core._event_table.EVENTS) gives
# none for, or on a runtime's own event; DEFAULT_TIMEOUTS, MAX_TIMEOUTS and LOOP_GUARDED_EVENTS
# are derived from that table.
DEFAULT_TIMEOUT = 3.0
# A command hook starts a new process before the handler's deadline starts to run: an installed
# entry gives the runtime's timeout this much more, so a fail-closed gate's own deny arrives
# first. A forwarder waits for the server half of it: past the server's own deadline, before
# the runtime's.
COMMAND_STARTUP_ALLOWANCE = 1.0
TIMEOUT_MESSAGE = "handler did not answer in time"
UNREADABLE_MESSAGE = "the hook input could not be read"
# The error of every handler of an answer that was not sent because its audit record could not
# be committed by the deadline (the durable audit trail): its failure policy answered instead.
UNRECORDED_MESSAGE = "the answer's audit record could not be committed in time"
# The error of every handler of an answer that could not be made for a reason of no handler's
# own (an error in handler-kit, or in a wrapper or committer put around the answer path): each
# handler's failure policy answers, so a fail-closed gate still gives its safe decision.
INTERNAL_MESSAGE = "the answer could not be made: an internal error (see the server log)"
# How deeply a value of a hook input (``tool_input``, ``tool_response``...) may nest objects
# and arrays, the value itself being level 1 and the input around it not counted. Real values
# nest a few levels, a dozen at most. It is the depth pydantic-core reads by itself when it
# validates an input, so the hot path checks it for nothing; the standard library's parser,
# used where pydantic-core refuses a body (lone surrogates), is held to the same limit, so an
# input is readable on every path or on none.
MAX_INPUT_DEPTH = 200
# Sync handlers run on handler-kit's own threads: this many at most, and at most this many at
# once for any one handler, so a handler stuck in a call holds a quarter of the pool, no more.
DEFAULT_THREADS = 64
DEFAULT_CALLS_PER_HANDLER = 16

__all__ = [
    "MAX_INPUT_DEPTH",
    "Answer",
    "AnswerCommitter",
    "AnswerObserver",
    "EventHandler",
    "Handler",
    "HandlerResult",
    "HandlerWrapper",
    "InputTooDeep",
    "Invocation",
    "Status",
    "dump_json",
    "fail_closed_notice",
    "load_json",
    "one_line",
    "server_deadline",
]

HandlerFunc = Callable[[Any], Any] | Callable[[Any], Awaitable[Any]]

# What a handler may return: None (no opinion), a str (context), a dict (Claude Code JSON) or an
# Output (allow, deny, block... of handler_kit.core.outputs). The decorators hold handlers to it
# for type checkers; at run time outputs.normalize checks the value against the event.
HandlerResult: TypeAlias = Output | str | dict[str, Any] | None
_Event = TypeVar("_Event", bound=HookEvent)
# Statuses read per answer, as names of this module: an enum member read from its class goes
# through the enum's metaclass (``Status.ERROR`` costs several times a global's read).
_ERROR = Status.ERROR
_TIMEOUT = Status.TIMEOUT
# A handler of the event ``_Event``, sync or async: ``EventHandler[PreToolUse]``.
EventHandler: TypeAlias = Callable[[_Event], HandlerResult | Awaitable[HandlerResult]]


def server_deadline(timeout: float) -> float:
    """How long the server lets a handler run: a little under what the runtime allows, so a
    fail-closed gate's own deny reaches the runtime before the runtime gives up on it."""
    return max(timeout - min(0.5, timeout * 0.1), 0.01)


# Handler, Invocation and Answer are plain slotted classes, written out rather than made by
# ``dataclasses``: the generated methods are compiled at import, a measurable part of the
# start-up of a command hook (one process per tool call). Each has what the dataclass had: the
# same constructor, repr, equality (identity for Handler) and ``__match_args__``.


class Handler:
    """One registered handler and its options."""

    __slots__ = (
        "awaits_nothing",
        "deadline",
        "description",
        "event",
        "fail_closed",
        "func",
        "idempotent",
        "is_async",
        "matcher",
        "matches",
        "name",
        "stop_loop_guard",
        "timeout",
    )
    __match_args__ = (
        "name",
        "event",
        "func",
        "matcher",
        "timeout",
        "fail_closed",
        "stop_loop_guard",
        "idempotent",
        "description",
    )

    name: str
    event: str
    func: HandlerFunc
    matcher: str | None
    timeout: float
    fail_closed: bool
    stop_loop_guard: bool
    idempotent: bool
    description: str
    is_async: bool
    awaits_nothing: bool
    deadline: float
    matches: Callable[[str | None], bool]

    def __init__(
        self,
        name: str,
        event: str,
        func: HandlerFunc,
        matcher: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        fail_closed: bool = False,
        stop_loop_guard: bool = True,
        idempotent: bool = False,
        description: str = "",
    ) -> None:
        self.name = name
        self.event = event
        self.func = func
        self.matcher = matcher
        self.timeout = timeout
        self.fail_closed = fail_closed
        self.stop_loop_guard = stop_loop_guard
        self.idempotent = idempotent
        self.description = description
        self.is_async = inspect.iscoroutinefunction(func)
        # an async handler whose own code has no await: it cannot suspend, so it is awaited
        # as it is, with no deadline to arm (see HookApp._invoke)
        self.awaits_nothing = self.is_async and never_suspends(func)
        self.deadline = server_deadline(timeout)
        self.matches = compile_matcher(matcher)

    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}(name={self.name!r}, event={self.event!r}, "
            f"func={self.func!r}, matcher={self.matcher!r}, timeout={self.timeout!r}, "
            f"fail_closed={self.fail_closed!r}, stop_loop_guard={self.stop_loop_guard!r}, "
            f"idempotent={self.idempotent!r}, description={self.description!r}, "
            f"is_async={self.is_async!r}, deadline={self.deadline!r})"
        )

    @property
    def model(self) -> type[HookEvent]:
        return model_for(self.event)


class Invocation:
    """What one handler did with one event: kept for the audit trail and metrics."""

    __slots__ = ("error", "handler", "latency_ms", "output", "status")
    __match_args__ = ("handler", "status", "output", "error", "latency_ms")

    handler: Handler
    status: Status
    output: Output | None
    error: str | None
    latency_ms: float

    def __init__(
        self,
        handler: Handler,
        status: Status,
        output: Output | None = None,
        error: str | None = None,
        latency_ms: float = 0.0,
    ) -> None:
        self.handler = handler
        self.status = status
        self.output = output
        self.error = error
        self.latency_ms = latency_ms

    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}(handler={self.handler!r}, status={self.status!r}, "
            f"output={self.output!r}, error={self.error!r}, latency_ms={self.latency_ms!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Invocation) or other.__class__ is not self.__class__:
            return NotImplemented
        return (self.handler, self.status, self.output, self.error, self.latency_ms) == (
            other.handler,
            other.status,
            other.output,
            other.error,
            other.latency_ms,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value


class Answer:
    """The server's answer to one event: the Claude Code JSON and how it was reached."""

    __slots__ = ("event", "invocations", "output")
    __match_args__ = ("event", "output", "invocations")

    event: HookEvent
    output: dict[str, Any]
    invocations: list[Invocation]

    def __init__(
        self, event: HookEvent, output: dict[str, Any], invocations: list[Invocation]
    ) -> None:
        self.event = event
        self.output = output
        self.invocations = invocations

    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}(event={self.event!r}, output={self.output!r}, "
            f"invocations={self.invocations!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Answer) or other.__class__ is not self.__class__:
            return NotImplemented
        return (self.event, self.output, self.invocations) == (
            other.event,
            other.output,
            other.invocations,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    @property
    def failed(self) -> bool:
        """True when handlers ran and every one failed with no fail-closed policy: there is
        no answer to give (the webhook says 500, MCP an isError result)."""
        for invocation in self.invocations:
            if invocation.status is not _ERROR and invocation.status is not _TIMEOUT:
                return False
        return bool(self.invocations)

    @property
    def timed_out(self) -> bool:
        return self.failed and any(i.status is _TIMEOUT for i in self.invocations)

    @property
    def unrecorded(self) -> bool:
        """True when this answer stands in for one whose audit record could not be committed
        (the durable audit trail), and no fail-closed policy answered: the webhook says 503."""
        return self.failed and any(i.error == UNRECORDED_MESSAGE for i in self.invocations)

    @property
    def body(self) -> bytes:
        """The output as the bytes every transport sends (compact, UTF-8)."""
        return dump_json(self.output)


# Called after every answer with (answer, transport, context): audit, metrics, spans.
AnswerObserver = Callable[[Answer, str, dict[str, Any]], None]
# Awaited after the observers, before the answer is sent, with the same arguments (the very
# context dict the observers were given): returns the answer to send, this one or another. How
# the durable audit trail holds an answer until its record is committed.
AnswerCommitter = Callable[[Answer, str, dict[str, Any]], Awaitable[Answer]]
# (handler, event, run the handler) -> output: wraps every handler run (idempotency).
HandlerWrapper = Callable[[Handler, HookEvent, Callable[[], Awaitable[Output]]], Awaitable[Output]]


def dump_json(value: Any) -> bytes:
    """The one JSON encoding of outputs, so the webhook and MCP answers are byte-identical.

    Compact UTF-8 by pydantic-core (already loaded for the models), several times faster than
    ``json.dumps`` on the hot path.
    """
    try:
        return to_json(value)
    except PydanticSerializationError:
        # a lone surrogate (a handler echoing a prompt that carried "\udc8f") has no UTF-8
        # form; the stdlib escapes it as JSON allows. Anything else unserializable still raises.
        return json.dumps(value, separators=(",", ":")).encode()


class InputTooDeep(ValueError):
    """A hook input whose values nest deeper than :data:`MAX_INPUT_DEPTH`."""

    def __init__(self) -> None:
        super().__init__(f"nested deeper than {MAX_INPUT_DEPTH} levels")


def load_json(body: bytes | str) -> Any:
    """The one JSON decoding of hook inputs, nested at most :data:`MAX_INPUT_DEPTH` levels.

    pydantic-core's parser first: about twice as fast as ``json.loads``, and it stops near the
    depth limit by itself. What it refuses is read again by the standard library, which takes
    the lone surrogate escapes (``"\\udc8f"``) runtimes do send, with the depth checked there:
    that is the failure path, so the walk costs the hot path nothing. Raises
    :class:`InputTooDeep`, or ``ValueError`` for anything that is not JSON.
    """
    try:
        return from_json(body)
    except ValueError:
        pass
    try:
        value = json.loads(body)
    except RecursionError:
        raise InputTooDeep from None
    if _deeper_than(value, MAX_INPUT_DEPTH + 1):  # + 1: the input around its values
        raise InputTooDeep
    return value


# The top-level fields that identify an input (its session, its call), read from an input that
# cannot be parsed so the answer to it can still be traced (:meth:`HookApp.answer_unreadable`).
INPUT_ID_FIELDS = ("session_id", "tool_use_id", "turn_id", "prompt_id")
# A JSON string, a run of opening or of closing brackets, or a separator: all the scan needs.
# A run is one token, so a body of ten thousand "[" costs one match, not ten thousand.
_SHALLOW_TOKENS = rb'"(?:[^"\\]|\\.)*"|[\[{]+|[\]}]+|[:,]'
# How many tokens that scan reads at most: what it costs is bounded, whatever the input (past
# it, the fields not yet found are left out).
MAX_SCAN_TOKENS = 20_000


def top_level_strings(raw: bytes, names: Collection[str]) -> dict[str, str]:
    """The string values of the top-level object's fields ``names`` in a JSON input that may
    not parse (nested too deep, cut off): a scan of its tokens that follows nesting only as a
    count and never reads what is nested, so no depth stops it, and that reads at most
    :data:`MAX_SCAN_TOKENS` tokens. A field whose value is not a string is left out; so is
    everything when the input is not an object."""
    import re  # the failure path only

    found: dict[str, str] = {}
    depth = 0
    state = ""  # at depth 1: "key" expected, "colon" after a key, "value" after the colon
    key: str | None = None
    for count, match in enumerate(re.finditer(_SHALLOW_TOKENS, raw, re.DOTALL)):
        if count >= MAX_SCAN_TOKENS:
            break
        token = match.group()
        first = token[:1]
        if first in b"[{":
            if depth == 0 and first != b"{":
                return {}  # not an object
            depth += len(token)
            state = "key" if depth == 1 else ""
        elif first in b"]}":
            depth -= len(token)
            if depth <= 0:
                break
            state = ""
        elif depth != 1:
            continue
        elif first == b",":
            state = "key"
        elif first == b":":
            state = "value" if state == "colon" else ""
        elif state == "key":
            key, state = _json_text(token), "colon"
        elif state == "value":
            if key is not None and key in names:
                value = _json_text(token)
                if value is not None:
                    found[key] = value
            state = ""
    return found


def _json_text(token: bytes) -> str | None:
    try:
        value = json.loads(token)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests dicts and lists more than ``limit`` levels (without recursing)."""
    if not isinstance(value, (dict, list)):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def fail_closed_notice(invocation: Invocation) -> str:
    """The reason given when a fail-closed handler's failure decides the answer."""
    error = invocation.error or ""
    if error == TIMEOUT_MESSAGE:
        what = "did not answer in time"
    elif error.startswith(UNREADABLE_MESSAGE):
        what = "could not read the hook input"
    elif error == UNRECORDED_MESSAGE:
        what = "could not have its decision recorded"
    else:
        what = "failed"
    return (
        f"Blocked by policy: the check {invocation.handler.name!r} {what}, "
        "and it is configured to fail closed."
    )


def one_line(exc: BaseException) -> str:
    """``Type: message`` on one line: hook runtimes read stderr line by line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
