"""HookApp: the registry of handlers, and the one code path that answers an event.

Every transport (webhook, MCP tool, command hook, in-process test client) calls
:meth:`HookApp.answer`, so a decision is reached the same way whichever carries it: the same
matchers, deadline, failure policy, stop-loop guard and merge.

Nothing here imports the server stack: a command hook imports this module on every tool call.
Not even :mod:`asyncio` at import time (a large share of a command hook's start-up): it is
imported where it is used, so a command hook whose one async handler never awaits runs
without it (see :func:`handler_kit.command.hook._run_answer`).
"""

from __future__ import annotations

import inspect
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic_core import PydanticSerializationError, to_json

from handler_kit.core._coroutines import stops_the_run
from handler_kit.core._decorators import EventDecorators, HandlerDefinitionError
from handler_kit.core._log import lazy_logger
from handler_kit.core.events import EVENT_MODELS, MATCHERLESS_EVENTS, HookEvent, model_for
from handler_kit.core.loop_guard import LOOP_GUARDED_EVENTS, in_stop_loop
from handler_kit.core.matchers import is_match_all
from handler_kit.core.merge import Failure, merge
from handler_kit.core.outputs import SAFE_DECISIONS, Output, OutputError, normalize
from handler_kit.core.vocabulary import (
    DEFAULT_CALLS_PER_HANDLER,
    DEFAULT_THREADS,
    DEFAULT_TIMEOUT,
    DEFAULT_TIMEOUTS,
    INTERNAL_MESSAGE,
    MAX_TIMEOUTS,
    TIMEOUT_MESSAGE,
    UNREADABLE_MESSAGE,
    UNRECORDED_MESSAGE,
    Answer,
    AnswerCommitter,
    AnswerObserver,
    Handler,
    HandlerWrapper,
    Invocation,
    Status,
    fail_closed_notice,
)

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from handler_kit.config import ServerConfig
    from handler_kit.server.app import HandlerKitASGI

# logging is imported when something is first logged: a run that logs nothing never loads it
logger = lazy_logger("handler_kit")

F = TypeVar("F", bound=Callable[..., Any])

# Status.OK looked up once: a member read from an enum class goes through the enum type's
# __getattr__, the slow way, and every answer's invocation takes this one
_OK = Status.OK

__all__ = ["Answer", "Handler", "HandlerThreads", "HookApp", "Invocation", "Status"]


class HookApp(EventDecorators):
    """A named set of hook handlers.

    >>> hooks = HookApp("refund-gate")
    >>> @hooks.pre_tool_use(matcher="issue_refund", fail_closed=True)
    ... async def refund_gate(event: PreToolUse) -> Output | None: ...

    One decorator per event (:class:`~handler_kit.core._decorators.EventDecorators`), bare or
    with options, typed so that a checker flags a handler of another event, a return value no
    event takes and a misspelt option; :meth:`on` registers by event name.

    Sync (``def``) handlers run on the app's own pool of ``threads`` threads, at most
    ``calls_per_handler`` at once for any one handler; a call over that limit waits for a
    thread until its deadline, then gets its handler's failure policy.

    ``config_errors``: what is wrong with the app's own configuration, one line each naming
    the setting (read at import, so that the module still imports). A server refuses to start
    on any; a command hook runs one handler per call, so each handler answers for the settings
    it uses (a gate denies, others raise).
    """

    def __init__(
        self,
        name: str = "handler-kit",
        *,
        description: str = "",
        threads: int = DEFAULT_THREADS,
        calls_per_handler: int = DEFAULT_CALLS_PER_HANDLER,
        config_errors: Iterable[str] = (),
    ) -> None:
        self.name = name
        self.description = description
        self.config_errors = tuple(config_errors)
        # shared with every extended() copy: one pool however the app is served
        self.threads = HandlerThreads(threads, calls_per_handler)
        self.handlers: list[Handler] = []
        self.by_name: dict[str, Handler] = {}
        self.by_event: dict[str, list[Handler]] = {}
        # Called after every answer with (answer, transport, context): audit, metrics, spans.
        self.observers: tuple[AnswerObserver, ...] = ()
        # Awaited after the observers, before the answer is sent: the durable audit trail.
        self.committers: tuple[AnswerCommitter, ...] = ()
        # Wrap every handler run, outermost first: idempotency.
        self.wrappers: tuple[HandlerWrapper, ...] = ()
        # Whether a KeyboardInterrupt raised by a handler is that handler's failure rather than
        # the end of the run. A command hook gets Ctrl-C as one, wherever its main thread is,
        # so there it stops the run; a server gets Ctrl-C as a signal, never out of a handler,
        # so there it is handler code's own (and would otherwise end the server process).
        self.interrupt_fails = False
        self._asgi: HandlerKitASGI | None = None

    def extended(
        self,
        *,
        observers: Iterable[AnswerObserver] = (),
        wrappers: Iterable[HandlerWrapper] = (),
        committers: Iterable[AnswerCommitter] = (),
        interrupt_fails: bool | None = None,
    ) -> HookApp:
        """This app with more observers, wrappers (outermost first) and committers, as a new
        HookApp sharing its handlers; this one is left as it was. How the server and the
        command hook put operations around the answer path without changing the user's app.
        ``interrupt_fails``: see :attr:`interrupt_fails` (the server sets it; unchanged when
        None)."""
        app = HookApp.__new__(HookApp)
        app.__dict__.update(self.__dict__)
        app.observers = (*self.observers, *observers)
        app.committers = (*self.committers, *committers)
        app.wrappers = (*wrappers, *self.wrappers)
        if interrupt_fails is not None:
            app.interrupt_fails = interrupt_fails
        app._asgi = None
        return app

    # -- serving ----------------------------------------------------------------------------

    def asgi(self, config: ServerConfig | None = None, **options: Any) -> HandlerKitASGI:
        """The ASGI app serving this HookApp (webhook, MCP, health), built now.

        ``config`` is a :class:`~handler_kit.config.ServerConfig`; without one, the
        configuration is read from ``HANDLER_KIT_*`` environment variables and keyword options
        replace its fields.
        """
        # The one import from a higher layer: the server is loaded only when asked for, so
        # defining handlers (and running them as a command hook) costs nothing of it.
        from handler_kit.server.app import create_asgi_app

        if config is None:
            from handler_kit.config import ServerConfig

            config = ServerConfig.from_env(**options)
        elif options:
            raise TypeError("pass either a ServerConfig or keyword options, not both")
        return create_asgi_app(self, config)

    async def __call__(
        self,
        scope: Any,
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        """A HookApp is itself an ASGI app (``uvicorn module:app``), configured from the
        environment on first use; importing it costs nothing of the server stack."""
        if self._asgi is None:
            self._asgi = self.asgi()
        await self._asgi(scope, receive, send)

    def lifespan(self, app: Any = None) -> AbstractAsyncContextManager[None]:
        """The lifespan of this app's server, for a host app this one is mounted in.

        Starlette and FastAPI run only the top app's lifespan, and the MCP endpoint (and
        the audit trail, metrics...) need theirs: pass this as the host's, as in
        ``Starlette(routes=[Mount("/agent", app=hooks)], lifespan=hooks.lifespan)`` or
        ``FastAPI(lifespan=hooks.lifespan)``. The server is the one this app serves as an
        ASGI app, configured from the environment.
        """
        if self._asgi is None:
            self._asgi = self.asgi()
        return self._asgi.lifespan(app)

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
        Code's rule; an event without a matcher field (UserPromptSubmit, Stop...) refuses one.
        ``timeout`` is what the runtime allows (default 5 s on SessionStart, 3 s
        elsewhere); the server answers a little before it. ``fail_closed`` makes a failure or a
        late answer the event's safe decision (deny on PreToolUse, block on UserPromptSubmit).
        ``stop_loop_guard=False`` lets a Stop handler block even when ``stop_hook_active``.
        ``idempotent`` replays the recorded answer for a repeated idempotency key.
        """
        if event not in EVENT_MODELS and not allow_unknown_event:
            known = ", ".join(sorted(EVENT_MODELS))
            raise HandlerDefinitionError(
                f"unknown hook event {event!r}; known events: {known} "
                "(pass allow_unknown_event=True for a runtime's own events)",
                name,
            )
        if fail_closed and event not in SAFE_DECISIONS:
            raise HandlerDefinitionError(
                f"fail_closed is not possible on {event}: only "
                f"{', '.join(SAFE_DECISIONS)} have a safe decision to fail to",
                name,
            )
        if not stop_loop_guard and event not in LOOP_GUARDED_EVENTS:
            raise HandlerDefinitionError(
                f"stop_loop_guard is not possible on {event}: only "
                f"{', '.join(sorted(LOOP_GUARDED_EVENTS))} have a stop loop to guard",
                name,
            )
        if timeout is not None and not timeout > 0:
            raise HandlerDefinitionError(
                f"timeout must be a positive number of seconds, not {timeout!r}", name
            )
        most = MAX_TIMEOUTS.get(event)
        if timeout is not None and most is not None and timeout > most:
            raise HandlerDefinitionError(
                f"timeout={timeout!r} is too long for {event}: the runtime waits at most "
                f"{most + 1:g} s, and a command hook is installed with a second more than the "
                f"handler's timeout; use at most {most:g}",
                name,
            )
        if event in MATCHERLESS_EVENTS and not is_match_all(matcher):
            # the handler would be matched against nothing and never run, while a runtime
            # runs that matcher group on every event
            raise HandlerDefinitionError(
                f"{event} has no matcher: the runtimes ignore a matcher there and run the "
                f"handler on every {event}; remove matcher={matcher!r}",
                name,
            )

        def decorate(func: F) -> F:
            handler_name = name or func.__name__
            if handler_name in self.by_name:
                raise HandlerDefinitionError(
                    f"a handler named {handler_name!r} is already registered"
                    f"{_defined_at(self.by_name[handler_name].func)}; pass name=... to tell "
                    "them apart",
                    handler_name,
                    func,
                )
            if not handler_name.replace("_", "").replace("-", "").isalnum():
                raise HandlerDefinitionError(
                    f"handler name {handler_name!r} must be letters, digits, '_' or '-' "
                    "(it is a URL path segment and an MCP tool name)",
                    handler_name,
                    func,
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
                raise HandlerDefinitionError(str(exc), handler_name, func) from None
            self.handlers.append(handler)
            self.by_name[handler_name] = handler
            self.by_event.setdefault(event, []).append(handler)
            return func

        return decorate

    # -- answering --------------------------------------------------------------------------

    def matching(self, event: HookEvent) -> list[Handler]:
        """The handlers of ``event`` whose matcher matches it, in registration order."""
        handlers = self.by_event.get(event.hook_event_name)
        if not handlers:
            return []
        value = event.matcher_value()
        matched = []  # a loop, not a comprehension: no function made and called per event
        for handler in handlers:
            if handler.matches(value):
                matched.append(handler)
        return matched

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
        :attr:`Answer.invocations`. Nor for an error around the handlers (a wrapper's or a
        committer's, or handler-kit's own): logged, and answered by each handler's policy too.
        """
        started = time.perf_counter()
        if handlers is None:
            handlers = self.matching(event)
        # read once: an event is a pydantic model, whose every attribute read takes the slow
        # way (the model class has __getattr__)
        name = event.hook_event_name
        try:
            if len(handlers) == 1:
                invocations = [await self._invoke(handlers[0], event, name, started)]
            elif handlers:
                import asyncio

                invocations = list(
                    await asyncio.gather(*(self._invoke(h, event, name, started) for h in handlers))
                )
            else:
                invocations = []
            if len(invocations) == 1 and invocations[0].output is not None:
                # one handler that answered: its output is the answer
                output = invocations[0].output.render(name, checked=True)
            else:
                output = self._combine(event, invocations)
            answer = Answer(event, output, invocations)
            if self.observers or self.committers:
                if context is None:
                    context = {}  # one dict: a committer finds there what an observer left
                if self.observers:
                    self._observe(answer, transport, context)
                for commit in self.committers:
                    answer = await commit(answer, transport, context)
        except Exception:
            # not a handler's failure (each is caught and answered by its policy): a bug of
            # ours, or of a wrapper or committer. Still each handler's policy answers, so a
            # fail-closed gate gives its safe decision on every transport, not an error that
            # the runtime would read as "go ahead".
            logger.exception("the answer to %s could not be made", name)
            return self._answer_failed(
                event, handlers, Status.ERROR, INTERNAL_MESSAGE, transport, context
            )
        return answer

    def answer_unreadable(
        self,
        event_name: str,
        handlers: Sequence[Handler],
        problem: str,
        *,
        transport: str = "direct",
        context: dict[str, Any] | None = None,
        known: Mapping[str, str] | None = None,
    ) -> Answer | None:
        """The answer to an input that could not be read, when ``handlers`` were to run on it:
        the safe decision of the fail-closed ones among them (a gate that cannot read its input
        cannot let the call through), or None when none fails closed and the transport reports
        bad input as usual. ``problem`` says what was wrong, for the log and the audit trail.
        ``known``: the input's identifying fields that could still be read (its
        ``session_id``, ``tool_use_id``...: :func:`~handler_kit.core.vocabulary.top_level_strings`),
        so the answer's audit record says which call it answered.
        """
        gates = [h for h in handlers if h.fail_closed]
        if not gates:
            return None
        logger.warning(
            "%s could not read its %s input (%s): answered with its safe decision",
            ", ".join(h.name for h in gates),
            event_name,
            problem,
        )
        event = _known_event(event_name, known)
        return self._answer_failed(
            event, gates, Status.ERROR, f"{UNREADABLE_MESSAGE} ({problem})", transport, context
        )

    def answer_not_made(
        self,
        event: HookEvent | str,
        handlers: Sequence[Handler],
        *,
        transport: str = "direct",
        context: dict[str, Any] | None = None,
        known: Mapping[str, str] | None = None,
    ) -> Answer:
        """The answer given when a transport failed to make one around :meth:`answer` (a bug
        of handler-kit's in reading the input or in writing the answer out): every one of
        ``handlers`` has failed, each answered by its failure policy, as :meth:`answer` does
        for an error around the handlers. A fail-closed gate gives its safe decision; otherwise
        the answer has failed and the transport reports its error. ``event``: the event read,
        or only its name when it was not (``known``: its ids, as for
        :meth:`answer_unreadable`), and then the Stop loop guard cannot see
        ``stop_hook_active``."""
        if isinstance(event, str):
            event = _known_event(event, known)
        return self._answer_failed(
            event, handlers, Status.ERROR, INTERNAL_MESSAGE, transport, context
        )

    def answer_timed_out(
        self,
        event: HookEvent,
        handlers: Sequence[Handler],
        *,
        transport: str = "direct",
        context: dict[str, Any] | None = None,
    ) -> Answer:
        """The answer given when ``handlers`` are all still running at their deadline and the
        answer cannot wait for them (a command hook whose handler holds its main thread): every
        one has timed out, each answered by its failure policy."""
        return self._answer_failed(
            event, handlers, Status.TIMEOUT, TIMEOUT_MESSAGE, transport, context
        )

    def answer_unrecorded(
        self,
        event: HookEvent,
        handlers: Sequence[Handler],
        *,
        transport: str = "direct",
        context: dict[str, Any] | None = None,
    ) -> Answer:
        """The answer given instead of one whose audit record could not be committed by its
        deadline (the durable audit trail): each handler failed, answered by its failure
        policy (the safe decision of a fail-closed one; otherwise the answer has failed, and
        :attr:`Answer.unrecorded` says why). Observed like any answer, so the trail records
        what was sent once it can."""
        return self._answer_failed(
            event, handlers, Status.ERROR, UNRECORDED_MESSAGE, transport, context
        )

    def _answer_failed(
        self,
        event: HookEvent,
        handlers: Sequence[Handler],
        status: Status,
        error: str,
        transport: str,
        context: dict[str, Any] | None,
    ) -> Answer:
        now = time.perf_counter()
        invocations = [self._failed(h, status, error, now) for h in handlers]
        answer = Answer(event, self._combine(event, invocations), invocations)
        self._observe(answer, transport, context)
        return answer

    def _observe(self, answer: Answer, transport: str, context: dict[str, Any] | None) -> None:
        for observer in self.observers:
            try:
                observer(answer, transport, context if context is not None else {})
            except Exception:  # an observer must never change the answer
                logger.exception("observer %r failed", observer)

    def answer_sync(self, event: HookEvent, **options: Any) -> Answer:
        """:meth:`answer` for synchronous callers (command hooks, scripts)."""
        import asyncio

        return asyncio.run(self.answer(event, **options))

    async def _invoke(
        self, handler: Handler, event: HookEvent, name: str, started: float
    ) -> Invocation:
        """Run one handler on ``event`` (of the event ``name``) within its deadline, counted
        from ``started`` (when the answer began, the same for every handler of the event).

        An async handler whose own code cannot suspend (:attr:`Handler.awaits_nothing`), with
        no wrappers, is awaited as it is: no deadline could cut it short, so no timer is armed
        (:mod:`handler_kit.core._fast_coroutines`); an answer that comes after its deadline is
        late all the same (:func:`_returned`). Every other handler runs under a timer for its
        deadline."""
        if handler.awaits_nothing and not self.wrappers:
            try:
                value = await handler.func(event)
                now = time.perf_counter()
                output = _returned(handler, name, value, now - started)
            except BaseException as exc:
                return self._caught(handler, name, exc, started)
            if output.is_plain:  # nothing _settle checks: on time, JSON, no loop to guard
                return Invocation(handler, _OK, output, None, (now - started) * 1000)
            return _ok(handler, self._settle(handler, event, output, started, now), started)
        try:
            import asyncio

            remaining = handler.deadline - (time.perf_counter() - started)
            async with asyncio.timeout(max(remaining, 0.0)):
                if self.wrappers:
                    output = await self._wrapped(handler, event)
                else:
                    output = await self._run(handler, event)
        except BaseException as exc:
            return self._caught(handler, name, exc, started)
        settled = self._settle(handler, event, output, started, time.perf_counter())
        return _ok(handler, settled, started)

    def _caught(
        self, handler: Handler, event_name: str, exc: BaseException, started: float
    ) -> Invocation:
        """The invocation of a handler run that raised ``exc`` (called in its ``except``), or
        ``exc`` raised again when it stops the run rather than failing the handler (an
        interrupt, the answering task's cancellation: see ``stops_the_run``), unless an
        interrupt is a handler's failure here (:attr:`interrupt_fails`)."""
        if (
            not isinstance(exc, Exception)
            and stops_the_run(exc)
            and not (self.interrupt_fails and isinstance(exc, KeyboardInterrupt))
        ):
            raise exc
        if isinstance(exc, TimeoutError):
            return self._failed(handler, Status.TIMEOUT, TIMEOUT_MESSAGE, started)
        if isinstance(exc, OutputError):
            message = f"{handler.name} returned an answer {event_name} cannot carry: {exc}"
            logger.error(message)
            return self._failed(handler, Status.ERROR, message, started)
        logger.exception("handler %s failed on %s", handler.name, event_name)
        return self._failed(handler, Status.ERROR, f"{type(exc).__name__}: {exc}", started)

    def _settle(
        self, handler: Handler, event: HookEvent, output: Output, started: float, now: float
    ) -> Output | Invocation:
        """``output``, answered at ``now``, when it can be sent as it is; otherwise the
        invocation that answers instead (not JSON, past the deadline, or a loop guarded)."""
        if not output.is_plain:
            try:  # what the handler put in is sent as JSON: a value JSON cannot carry is its bug
                _check_json(
                    (
                        output.updated_input,
                        output.specific,
                        output.extra,
                        output.reason,
                        output.context,
                        output.stop_reason,
                        output.system_message,
                    )
                )
            except (TypeError, ValueError, PydanticSerializationError) as exc:
                message = f"{handler.name} returned a value JSON cannot carry: {exc}"
                logger.error(message)
                return self._failed(handler, Status.ERROR, message, started)
            now = time.perf_counter()
        elapsed = now - started
        if elapsed > handler.deadline:
            # An answer outlives its deadline when the event loop could not cut it off in
            # time: something held the loop. The runtime may have given up already, and the
            # answer would be sent as if on time: it is the failure policy's instead.
            logger.warning(
                "%s answered %.1f s after the answer began, past its %.1f s deadline (the "
                "event loop was held): its answer is not sent, its failure policy answers",
                handler.name,
                elapsed,
                handler.deadline,
            )
            return self._failed(handler, Status.TIMEOUT, TIMEOUT_MESSAGE, started)
        if (
            (output.decision == "block" or output.context is not None)
            and handler.stop_loop_guard
            and in_stop_loop(event.hook_event_name, getattr(event, "stop_hook_active", None))
        ):
            # On Stop, context continues the turn as a block does (Claude Code reads either as
            # "keep going"; the dialects of Codex, Posit and the sandbox render it as a block),
            # so neither is sent while the agent is already going on because of a stop hook.
            what = "blocked" if output.decision == "block" else "gave context on"
            logger.warning(
                "%s %s a %s while stop_hook_active was true: not sent, to avoid a loop",
                handler.name,
                what,
                event.hook_event_name,
            )
            kept = Output(
                continue_=output.continue_,
                stop_reason=output.stop_reason,
                system_message=output.system_message,
                suppress_output=output.suppress_output,
            )
            if kept.is_empty:
                return Invocation(handler, Status.LOOP_GUARDED, None, None, elapsed * 1000)
            return kept
        return output

    async def _run(self, handler: Handler, event: HookEvent) -> Output:
        if handler.is_async:
            value = await handler.func(event)
        else:
            value = await self.threads.run(handler, event)
        return normalize(event.hook_event_name, value)

    async def _wrapped(self, handler: Handler, event: HookEvent) -> Output:
        async def innermost() -> Output:
            return await self._run(handler, event)

        call: Callable[[], Awaitable[Output]] = innermost
        for wrapper in reversed(self.wrappers):
            call = _bind(wrapper, handler, event, call)
        # what the outermost wrapper returns is the handler's answer: checked as a handler's
        # return value is, so a wrapper cannot send what the event cannot carry, nor fail
        # outside the handler's failure policy by returning something that is not an output
        return normalize(event.hook_event_name, await call())

    @staticmethod
    def _failed(handler: Handler, status: Status, error: str, started: float) -> Invocation:
        latency = (time.perf_counter() - started) * 1000
        if handler.fail_closed:
            return Invocation(handler, Status.FAIL_CLOSED, None, error, latency)
        return Invocation(handler, status, None, error, latency)

    @staticmethod
    def _combine(event: HookEvent, invocations: list[Invocation]) -> dict[str, Any]:
        """The answer of several invocations, or of one that gave no output (one that did is
        its output, rendered: :meth:`answer` does that itself)."""
        name = event.hook_event_name
        if len(invocations) == 1 and invocations[0].status is not Status.FAIL_CLOSED:
            return {}  # no opinion, or a failure that does not fail closed: no answer
        results: list[Output | Failure | None] = []
        for inv in invocations:
            if inv.status is Status.FAIL_CLOSED:
                results.append(Failure(fail_closed=True, notice=fail_closed_notice(inv)))
            elif inv.output is None:
                # no opinion, or a failure that does not fail closed: neither adds to the merge
                results.append(None)
            else:
                results.append(inv.output)
        return merge(name, results).to_output().render(name)


def _known_event(event_name: str, known: Mapping[str, str] | None) -> HookEvent:
    """The event as far as it is known: its name and the ids that could be read from its
    input, every other field missing."""
    model = model_for(event_name)
    fields: dict[str, Any] = {
        name: value
        for name, value in (known or {}).items()
        if name in model.model_fields and name != "hook_event_name" and isinstance(value, str)
    }
    return model.model_construct(**fields, hook_event_name=event_name)


def _returned(handler: Handler, event_name: str, value: Any, seconds: float) -> Output:
    """The checked output of an async handler that cannot suspend and returned ``value``
    ``seconds`` after its answer began; ``TimeoutError`` when it ran through its deadline: it
    held the event loop all along, where no deadline could interrupt it, so it is named for
    it."""
    if seconds > handler.deadline:
        logger.warning(
            "%s blocked the event loop for %.1f s, through its %.1f s deadline: its answer is "
            "not sent, its failure policy answers. An async handler must not block; make it a "
            "plain def, or run the blocking call with await asyncio.to_thread(...)",
            handler.name,
            seconds,
            handler.deadline,
        )
        raise TimeoutError
    if type(value) is Output:  # normalize's case for a helper's output, without its frame
        value.check(event_name)
        return value
    return normalize(event_name, value)


def _ok(handler: Handler, settled: Output | Invocation, started: float) -> Invocation:
    """The invocation of a run :meth:`HookApp._settle` settled: OK for an output."""
    if isinstance(settled, Invocation):
        return settled
    return Invocation(handler, _OK, settled, None, (time.perf_counter() - started) * 1000)


class HandlerThreads:
    """The threads sync handlers run on: handler-kit's own, not asyncio's default executor.

    The default executor is small (a handful of threads on a small machine) and shared with
    whatever else needs a thread (JWKS fetches, DNS look-ups): a few handler calls stuck in
    I/O would take all of it, and every other sync handler, of any event, would time out
    behind them. Here each handler has at most ``per_handler`` calls on a thread at once, out
    of ``size`` threads in all: a stuck handler holds its own share, never the pool. A call
    over its handler's limit waits, holding no thread, until a call of that handler returns
    or its deadline passes (then its failure policy answers). A thread is made when a call
    needs one, so an app whose handlers are all async starts none.
    """

    def __init__(
        self, size: int = DEFAULT_THREADS, per_handler: int = DEFAULT_CALLS_PER_HANDLER
    ) -> None:
        if size < 1 or per_handler < 1:
            raise ValueError(
                f"threads and calls_per_handler must be at least 1, not {size} and {per_handler}"
            )
        self.size = size
        self.per_handler = min(per_handler, size)
        self._executor: Any = None
        self._slots: dict[Handler, _Slots] = {}
        self._lock = threading.Lock()

    async def run(self, handler: Handler, event: HookEvent) -> Any:
        """``handler.func(event)`` on a thread of the pool, with the caller's context."""
        import asyncio
        import contextvars

        slots = self._slots.get(handler)
        if slots is None:
            with self._lock:
                slots = self._slots.setdefault(handler, _Slots(self.per_handler))
        await slots.acquire()
        try:
            future = self._pool().submit(contextvars.copy_context().run, handler.func, event)
        except BaseException:
            slots.release()
            raise
        # Released when the call is over, not when its caller stops waiting: a call cut off
        # at its deadline still holds its thread, and counts against its handler, until it
        # returns. A call cancelled before a thread took it is over too.
        future.add_done_callback(slots.release)
        return await asyncio.wrap_future(future)

    def _pool(self) -> Any:
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            with self._lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(
                        self.size, thread_name_prefix="handler-kit-handler"
                    )
                    _FORKABLE.add(self)
        return self._executor

    def _forget(self) -> None:
        """In a process forked from this one: start again without threads. The child inherits
        the pool but none of its threads, so a call handed to it would wait for ever (its
        failure policy answering every call at its deadline), and the calls that were running
        keep their handlers' slots taken."""
        self._executor = None
        self._slots = {}
        self._lock = threading.Lock()


# Thread pools that a forked child must not use (a pre-forking server, a tool that forks a
# process per task): each is dropped in the child, which makes its own when a call needs one.
_FORKABLE: weakref.WeakSet[HandlerThreads] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for threads in list(_FORKABLE):
        threads._forget()
    _FORKABLE.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


class _Slots:
    """The calls of one handler that may hold a thread at once, waited for in FIFO order.

    Taken on an event loop and given back from any thread (a call returns on its worker
    thread), by loops that may differ (several servers, or a test's loop, in one process):
    hence a lock and ``call_soon_threadsafe`` rather than an ``asyncio.Semaphore``, which
    belongs to one loop.
    """

    __slots__ = ("limit", "lock", "running", "waiting")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running = 0
        self.waiting: deque[tuple[Any, Any]] = deque()
        self.lock = threading.Lock()

    async def acquire(self) -> None:
        import asyncio

        with self.lock:
            if self.running < self.limit:
                self.running += 1
                return
            loop = asyncio.get_running_loop()
            waiter = loop.create_future()
            self.waiting.append((loop, waiter))
        try:
            await waiter  # release() hands its slot over, already counted
        except BaseException:
            with self.lock:
                try:
                    self.waiting.remove((loop, waiter))
                    handed_over = False
                except ValueError:
                    handed_over = True
            if handed_over:  # given a slot as it stopped waiting: pass it on
                self.release()
            raise

    def release(self, *_: object) -> None:
        while True:
            with self.lock:
                if not self.waiting:
                    self.running -= 1
                    return
                loop, waiter = self.waiting.popleft()
            try:
                loop.call_soon_threadsafe(_hand_over, waiter)
                return
            except RuntimeError:  # its loop is closed: nobody waits there any more
                continue


def _hand_over(waiter: Any) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _bind(
    wrapper: HandlerWrapper,
    handler: Handler,
    event: HookEvent,
    call: Callable[[], Awaitable[Output]],
) -> Callable[[], Awaitable[Output]]:
    def bound() -> Awaitable[Output]:
        return wrapper(handler, event, call)

    return bound


def _check_json(value: Any) -> None:
    """Raise ``ValueError`` or ``TypeError`` when ``value`` cannot be sent as strict JSON, as
    :func:`~handler_kit.core.vocabulary.dump_json` writes it: by pydantic-core, or by the
    standard library when a string holds a lone surrogate (so a value only pydantic-core can
    write, such as bytes, fails beside one). NaN and the infinities fail too: both encoders
    write them (``NaN``, ``Infinity``), but a runtime's JSON parser refuses the whole answer,
    and a fail-closed gate's deny would be lost with it."""
    try:
        data = to_json(value)
    except PydanticSerializationError:
        import json

        json.dumps(value, allow_nan=False)
        return
    if b"NaN" in data or b"Infinity" in data:  # most often inside a string: read it to be sure
        from pydantic_core import from_json

        try:
            from_json(data, allow_inf_nan=False)
        except ValueError:
            raise ValueError("NaN and the infinities are not JSON") from None


def _defined_at(func: Callable[..., Any]) -> str:
    """`` (at FILE, line N)`` where ``func`` is defined, when Python knows it."""
    code = getattr(inspect.unwrap(func), "__code__", None)
    return f" (at {code.co_filename}, line {code.co_firstlineno})" if code is not None else ""


def _check_signature(func: Callable[..., Any], name: str) -> None:
    """A handler takes the event as its one positional argument; say so at decoration."""
    if not callable(func):
        raise HandlerDefinitionError("is not callable", name, func)
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(object())
    except TypeError:
        raise HandlerDefinitionError(
            f"must take the event as its one argument: def {name}(event): ...",
            name,
            func,
        ) from None
