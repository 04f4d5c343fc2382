"""HookApp: the registry of handlers, and the one code path that answers an event.

Every transport (webhook, MCP tool, command hook, in-process test client) calls
:meth:`HookApp.answer`, so a decision is reached the same way whichever carries it: the same
matchers, deadline, failure policy, stop-loop guard and merge.

Nothing here imports the server stack: a command hook imports this module on every tool call.
Not even :mod:`asyncio` at import time (it is a quarter of a command hook's start-up): it is
imported where it is used, so a command hook whose one async handler never awaits runs
without it (see :func:`handler_kit.command._run_answer`).
"""

from __future__ import annotations

import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic_core import PydanticSerializationError, to_json

from handler_kit.events import EVENT_MODELS, HookEvent, model_for
from handler_kit.matchers import compile_matcher
from handler_kit.merge import Failure, merge
from handler_kit.outputs import SAFE_DECISIONS, Output, OutputError, normalize

logger = logging.getLogger("handler_kit")

F = TypeVar("F", bound=Callable[..., Any])
HandlerFunc = Callable[[Any], Any] | Callable[[Any], Awaitable[Any]]

DEFAULT_TIMEOUTS = {"SessionStart": 5.0}
DEFAULT_TIMEOUT = 3.0
TIMEOUT_MESSAGE = "handler did not answer in time"
LOOP_GUARDED_EVENTS = frozenset({"Stop", "SubagentStop"})
# A handler's result as the transports report it.
OK, ERROR, TIMEOUT, FAIL_CLOSED, LOOP_GUARDED = (
    "ok",
    "error",
    "timeout",
    "fail_closed",
    "loop_guarded",
)


def server_deadline(timeout: float) -> float:
    """How long the server lets a handler run: a little under what the runtime allows, so a
    fail-closed gate's own deny reaches the runtime before the runtime gives up on it."""
    return max(timeout - min(0.5, timeout * 0.1), 0.01)


@dataclass(slots=True, eq=False)
class Handler:
    """One registered handler and its options."""

    name: str
    event: str
    func: HandlerFunc
    matcher: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    fail_closed: bool = False
    stop_loop_guard: bool = True
    idempotent: bool = False
    description: str = ""
    is_async: bool = field(init=False)
    deadline: float = field(init=False)
    matches: Callable[[str | None], bool] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.is_async = inspect.iscoroutinefunction(self.func)
        self.deadline = server_deadline(self.timeout)
        self.matches = compile_matcher(self.matcher)

    @property
    def model(self) -> type[HookEvent]:
        return model_for(self.event)


@dataclass(slots=True)
class Invocation:
    """What one handler did with one event: kept for the audit trail and metrics."""

    handler: Handler
    status: str
    output: Output | None = None
    error: str | None = None
    latency_ms: float = 0.0


@dataclass(slots=True)
class Answer:
    """The server's answer to one event: the Claude Code JSON and how it was reached."""

    event: HookEvent
    output: dict[str, Any]
    invocations: list[Invocation]

    @property
    def failed(self) -> bool:
        """True when handlers ran and every one failed with no fail-closed policy: there is
        no answer to give (the webhook says 500, MCP an isError result)."""
        for invocation in self.invocations:
            if invocation.status is not ERROR and invocation.status is not TIMEOUT:
                return False
        return bool(self.invocations)

    @property
    def timed_out(self) -> bool:
        return self.failed and any(i.status == TIMEOUT for i in self.invocations)

    @property
    def body(self) -> bytes:
        """The output as the bytes every transport sends (compact, UTF-8)."""
        return dump_json(self.output)


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


AnswerObserver = Callable[[Answer, str, dict[str, Any]], None]
# (handler, event, run the handler) -> output: wraps every handler run (idempotency, tracing).
HandlerWrapper = Callable[[Handler, HookEvent, Callable[[], Awaitable[Output]]], Awaitable[Output]]


class HookApp:
    """A named set of hook handlers.

    >>> hooks = HookApp("refund-gate")
    >>> @hooks.pre_tool_use(matcher="issue_refund", fail_closed=True)
    ... async def refund_gate(event): ...
    """

    def __init__(self, name: str = "handler-kit", *, description: str = "") -> None:
        self.name = name
        self.description = description
        self.handlers: list[Handler] = []
        self.by_name: dict[str, Handler] = {}
        self.by_event: dict[str, list[Handler]] = {}
        # Called after every answer with (answer, transport, context): audit, metrics.
        self.observers: list[AnswerObserver] = []
        # Wrap every handler run, outermost first: idempotency, tracing.
        self.wrappers: list[HandlerWrapper] = []
        self._asgi: Any = None

    # -- serving ----------------------------------------------------------------------------

    def asgi(self, config: Any = None, **options: Any) -> Any:
        """The ASGI app serving this HookApp (webhook, MCP, health), built now.

        ``config`` is a :class:`~handler_kit.server.ServerConfig`; keyword options override
        fields of the configuration read from ``HANDLER_KIT_*`` environment variables.
        """
        from handler_kit.server import ServerConfig, create_asgi_app

        if config is None:
            config = ServerConfig.from_env(**options)
        return create_asgi_app(self, config)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """A HookApp is itself an ASGI app (``uvicorn module:app``), configured from the
        environment on first use; importing it costs nothing of the server stack."""
        if self._asgi is None:
            self._asgi = self.asgi()
        await self._asgi(scope, receive, send)

    # -- registration ---------------------------------------------------------------------

    def on(
        self,
        event: str,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        fail_closed: bool = False,
        stop_loop_guard: bool = True,
        idempotent: bool = False,
        allow_unknown_event: bool = False,
    ) -> Callable[[F], F]:
        """Register the decorated function as a handler of ``event``.

        ``matcher`` filters by tool name (or source, agent type... per event), with Claude
        Code's rule. ``timeout`` is what the runtime allows (default 5 s on SessionStart, 3 s
        elsewhere); the server answers a little before it. ``fail_closed`` makes a failure or a
        late answer the event's safe decision (deny on PreToolUse, block on UserPromptSubmit).
        ``stop_loop_guard=False`` lets a Stop handler block even when ``stop_hook_active``.
        ``idempotent`` replays the recorded answer for a repeated idempotency key.
        """
        if event not in EVENT_MODELS and not allow_unknown_event:
            known = ", ".join(sorted(EVENT_MODELS))
            raise ValueError(
                f"unknown hook event {event!r}; known events: {known} "
                "(pass allow_unknown_event=True for a runtime's own events)"
            )
        if fail_closed and event not in SAFE_DECISIONS:
            raise ValueError(
                f"fail_closed is not possible on {event}: only "
                f"{', '.join(SAFE_DECISIONS)} have a safe decision to fail to"
            )
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")

        def decorate(func: F) -> F:
            handler_name = name or func.__name__
            if handler_name in self.by_name:
                raise ValueError(f"a handler named {handler_name!r} is already registered")
            if not handler_name.replace("_", "").replace("-", "").isalnum():
                raise ValueError(
                    f"handler name {handler_name!r} must be letters, digits, '_' or '-' "
                    "(it is a URL path segment and an MCP tool name)"
                )
            _check_signature(func, handler_name)
            try:
                handler = Handler(
                    name=handler_name,
                    event=event,
                    func=func,
                    matcher=matcher,
                    timeout=float(timeout or DEFAULT_TIMEOUTS.get(event, DEFAULT_TIMEOUT)),
                    fail_closed=fail_closed,
                    stop_loop_guard=stop_loop_guard,
                    idempotent=idempotent,
                    description=inspect.getdoc(func) or "",
                )
            except ValueError as exc:
                raise ValueError(f"handler {handler_name!r}: {exc}") from None
            self.handlers.append(handler)
            self.by_name[handler_name] = handler
            self.by_event.setdefault(event, []).append(handler)
            return func

        return decorate

    def _for(event: str) -> Callable[..., Callable[[F], F]]:  # type: ignore[misc]
        def decorator(self: HookApp, **options: Any) -> Callable[[F], F]:
            return self.on(event, **options)

        decorator.__name__ = event
        decorator.__doc__ = f"Register a {event} handler; options as in :meth:`on`."
        return decorator

    session_start = _for("SessionStart")
    user_prompt_submit = _for("UserPromptSubmit")
    pre_tool_use = _for("PreToolUse")
    post_tool_use = _for("PostToolUse")
    stop = _for("Stop")
    post_tool_use_failure = _for("PostToolUseFailure")
    post_tool_batch = _for("PostToolBatch")
    permission_request = _for("PermissionRequest")
    permission_denied = _for("PermissionDenied")
    subagent_start = _for("SubagentStart")
    subagent_stop = _for("SubagentStop")
    stop_failure = _for("StopFailure")
    session_end = _for("SessionEnd")
    setup = _for("Setup")
    instructions_loaded = _for("InstructionsLoaded")
    user_prompt_expansion = _for("UserPromptExpansion")
    message_display = _for("MessageDisplay")
    notification = _for("Notification")
    task_created = _for("TaskCreated")
    task_completed = _for("TaskCompleted")
    teammate_idle = _for("TeammateIdle")
    config_change = _for("ConfigChange")
    cwd_changed = _for("CwdChanged")
    directory_added = _for("DirectoryAdded")
    file_changed = _for("FileChanged")
    worktree_create = _for("WorktreeCreate")
    worktree_remove = _for("WorktreeRemove")
    pre_compact = _for("PreCompact")
    post_compact = _for("PostCompact")
    elicitation = _for("Elicitation")
    elicitation_result = _for("ElicitationResult")
    del _for

    # -- answering --------------------------------------------------------------------------

    def matching(self, event: HookEvent) -> list[Handler]:
        """The handlers of ``event`` whose matcher matches it, in registration order."""
        handlers = self.by_event.get(event.hook_event_name)
        if not handlers:
            return []
        value = event.matcher_value()
        return [h for h in handlers if h.matches(value)]

    async def answer(
        self,
        event: HookEvent,
        handlers: Sequence[Handler] | None = None,
        *,
        transport: str = "direct",
        context: dict[str, Any] | None = None,
    ) -> Answer:
        """Run ``handlers`` (default: every matching one) on ``event`` and merge their outputs.

        Never raises for a handler's failure: that is answered by its policy and recorded in
        :attr:`Answer.invocations`.
        """
        if handlers is None:
            handlers = self.matching(event)
        if len(handlers) == 1:
            invocations = [await self._invoke(handlers[0], event)]
        elif handlers:
            import asyncio

            invocations = list(await asyncio.gather(*(self._invoke(h, event) for h in handlers)))
        else:
            invocations = []
        answer = Answer(event, self._combine(event, invocations), invocations)
        for observer in self.observers:
            try:
                observer(answer, transport, context or {})
            except Exception:  # an observer must never change the answer
                logger.exception("observer %r failed", observer)
        return answer

    def answer_sync(self, event: HookEvent, **options: Any) -> Answer:
        """:meth:`answer` for synchronous callers (command hooks, scripts)."""
        import asyncio

        return asyncio.run(self.answer(event, **options))

    async def _invoke(self, handler: Handler, event: HookEvent) -> Invocation:
        started = time.perf_counter()
        event_name = event.hook_event_name
        try:
            if handler.is_async and not self.wrappers:
                output = await self._run_async_fast(handler, event, started)
            else:
                import asyncio

                async with asyncio.timeout(handler.deadline):
                    if self.wrappers:
                        output = await self._wrapped(handler, event)
                    else:
                        output = await self._run(handler, event)
        except TimeoutError:
            return self._failed(handler, TIMEOUT, TIMEOUT_MESSAGE, started)
        except OutputError as exc:
            message = f"{handler.name} returned an answer {event_name} cannot carry: {exc}"
            logger.error(message)
            return self._failed(handler, ERROR, message, started)
        except Exception as exc:
            logger.exception("handler %s failed on %s", handler.name, event_name)
            return self._failed(handler, ERROR, f"{type(exc).__name__}: {exc}", started)
        if output.updated_input is not None or output.specific or output.extra:
            try:  # what the handler put in is sent as JSON: a value JSON cannot carry is its bug
                to_json((output.updated_input, output.specific, output.extra))
            except (TypeError, ValueError, PydanticSerializationError) as exc:
                message = f"{handler.name} returned a value JSON cannot carry: {exc}"
                logger.error(message)
                return self._failed(handler, ERROR, message, started)
        latency = (time.perf_counter() - started) * 1000
        if (
            output.decision == "block"
            and handler.stop_loop_guard
            and event_name in LOOP_GUARDED_EVENTS
            and getattr(event, "stop_hook_active", None) is True
        ):
            logger.warning(
                "%s blocked a %s while stop_hook_active was true: not sent, to avoid a loop",
                handler.name,
                event_name,
            )
            return Invocation(handler, LOOP_GUARDED, None, None, latency)
        return Invocation(handler, OK, output, None, latency)

    @staticmethod
    async def _run_async_fast(handler: Handler, event: HookEvent, started: float) -> Output:
        """Run an async handler's first step inline; arm the deadline only if it suspends.

        Most gates decide without awaiting anything, and a timer per request (what
        ``asyncio.timeout`` costs) is a measurable share of the hot path. A handler that never
        suspends cannot be interrupted by a deadline anyway, so nothing is lost: the deadline
        is armed, for the time that is left, the moment the handler first waits on something.
        """
        coro = handler.func(event)
        try:
            yielded = coro.send(None)
        except StopIteration as stop:
            return normalize(event.hook_event_name, stop.value)
        import asyncio

        remaining = handler.deadline - (time.perf_counter() - started)
        try:
            async with asyncio.timeout(max(remaining, 0.0)):
                value = await _Resume(coro, yielded)
        finally:
            coro.close()
        return normalize(event.hook_event_name, value)

    async def _run(self, handler: Handler, event: HookEvent) -> Output:
        if handler.is_async:
            value = await handler.func(event)
        else:
            import asyncio

            value = await asyncio.to_thread(handler.func, event)
        return normalize(event.hook_event_name, value)

    async def _wrapped(self, handler: Handler, event: HookEvent) -> Output:
        async def innermost() -> Output:
            return await self._run(handler, event)

        call: Callable[[], Awaitable[Output]] = innermost
        for wrapper in reversed(self.wrappers):
            call = _bind(wrapper, handler, event, call)
        return await call()

    @staticmethod
    def _failed(handler: Handler, status: str, error: str, started: float) -> Invocation:
        latency = (time.perf_counter() - started) * 1000
        if handler.fail_closed:
            return Invocation(handler, FAIL_CLOSED, None, error, latency)
        return Invocation(handler, status, None, error, latency)

    @staticmethod
    def _combine(event: HookEvent, invocations: list[Invocation]) -> dict[str, Any]:
        name = event.hook_event_name
        if len(invocations) == 1:
            only = invocations[0]
            if only.output is not None:
                return only.output.render(name, checked=True)
            if only.status != FAIL_CLOSED:
                return {}
        results: list[Output | Failure | None] = []
        for inv in invocations:
            if inv.status == FAIL_CLOSED:
                results.append(Failure(fail_closed=True, notice=fail_closed_notice(inv)))
            elif inv.output is None:
                results.append(None if inv.status in (OK, LOOP_GUARDED) else Failure())
            else:
                results.append(inv.output)
        return merge(name, results).to_output().render(name)


def fail_closed_notice(invocation: Invocation) -> str:
    """The reason given when a fail-closed handler's failure decides the answer."""
    what = "did not answer in time" if invocation.error == TIMEOUT_MESSAGE else "failed"
    return (
        f"Blocked by policy: the check {invocation.handler.name!r} {what}, "
        "and it is configured to fail closed."
    )


class _Resume:
    """Awaitable that finishes a coroutine already stepped once by :meth:`_run_async_fast`.

    It hands what the coroutine yielded (the future it waits on) to the task driving us and
    forwards results and exceptions (cancellation included) back, as ``await`` would have.
    """

    __slots__ = ("coro", "yielded")

    def __init__(self, coro: Any, yielded: Any) -> None:
        self.coro = coro
        self.yielded = yielded

    def __await__(self) -> Any:
        coro, yielded = self.coro, self.yielded
        while True:
            try:
                sent = yield yielded
            except BaseException as exc:  # cancellation or deadline: deliver it inside
                try:
                    yielded = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
                continue
            try:
                yielded = coro.send(sent)
            except StopIteration as stop:
                return stop.value


def _bind(
    wrapper: HandlerWrapper,
    handler: Handler,
    event: HookEvent,
    call: Callable[[], Awaitable[Output]],
) -> Callable[[], Awaitable[Output]]:
    def bound() -> Awaitable[Output]:
        return wrapper(handler, event, call)

    return bound


def _check_signature(func: Callable[..., Any], name: str) -> None:
    """A handler takes the event as its one positional argument; say so at decoration."""
    if not callable(func):
        raise TypeError(f"handler {name!r} is not callable")
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(object())
    except TypeError:
        raise TypeError(
            f"handler {name!r} must take the event as its one argument: def {name}(event): ..."
        ) from None
