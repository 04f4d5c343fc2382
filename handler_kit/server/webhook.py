"""The webhook routes, ``POST /hooks`` and ``POST /hooks/{name}``, as plain ASGI.

This is the hot path of every tool call an agent makes, so it is written against ASGI
directly rather than through Starlette's Request/Response objects (which cost about as much as
everything else together): one pass over the headers, one ``validate_json`` that parses and
validates the body together, the handler, one encoding of its answer. Everything that can be
worked out once (handler table, validators, error bodies, header lists, the JSON of plain
answers) is worked out at start-up.

Every bad input gets a JSON error body with a stable ``error`` code, never a traceback:
400 (malformed JSON, nested too deep, not an object, validation failed, event header
mismatch), 404 (unknown handler), 405 (wrong method), 413 (body over the cap), 500 (handler
failed, no fail-closed policy), 503 (durable audit: the answer's record could not be committed
by its deadline, no fail-closed policy). Authentication (401) happens before this, in
:mod:`handler_kit.server.app`.

One exception: a fail-closed handler's own route answers an input it cannot read (a 400 or
413 above, but not an event mismatch) with the handler's safe decision, because a runtime
proceeds on a 4xx and the gate would be open to whoever can shape its input. ``POST /hooks``
keeps the error: there no single gate is responsible for the input.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from time import perf_counter
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_json

from handler_kit.core._coroutines import never_suspends
from handler_kit.core.app import HookApp
from handler_kit.core.events import HookEvent, model_for
from handler_kit.core.matchers import is_match_all
from handler_kit.core.outputs import Output, OutputError
from handler_kit.core.vocabulary import (
    INPUT_ID_FIELDS,
    MAX_INPUT_DEPTH,
    Answer,
    Handler,
    InputTooDeep,
    Invocation,
    Status,
    dump_json,
    load_json,
    top_level_strings,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

EVENT_HEADER = b"x-runbear-hook-event"
_CONTENT_TYPE = (b"content-type", b"application/json")
_JSON_HEADERS = [_CONTENT_TYPE]
# the content-length header of each body size answered so far (a few sizes, most often one
# per decision), so an answer does not format its length
_LENGTH_HEADERS: dict[int, tuple[bytes, bytes]] = {}
_KEPT_LENGTHS = 1024


class BodyTooLarge(Exception):
    pass


class ClientDisconnected(Exception):
    pass


class HTTPError(Exception):
    """An error answer: status, stable code, message for the caller, optional details."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: list[dict[str, Any]] | None = None,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers or []

    def body(self) -> bytes:
        payload: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.details is not None:
            payload["details"] = self.details
        return json.dumps(payload).encode()


async def send_json(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Send a complete JSON response in two ASGI messages."""
    response_headers = [*_JSON_HEADERS, (b"content-length", str(len(body)).encode())]
    if headers:
        response_headers.extend(headers)
    await send({"type": "http.response.start", "status": status, "headers": response_headers})
    await send({"type": "http.response.body", "body": body})


async def send_error(send: Send, error: HTTPError) -> None:
    await send_json(send, error.status, error.body(), error.headers)


async def read_body(receive: Receive, limit: int) -> bytes:
    """The whole request body, or :class:`BodyTooLarge` as soon as it passes ``limit``."""
    message = await receive()
    if message["type"] == "http.disconnect":
        raise ClientDisconnected
    body: bytes = message.get("body", b"")
    if not message.get("more_body", False):
        if len(body) > limit:
            raise BodyTooLarge
        return body
    chunks = [body]
    size = len(body)
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def route_path(scope: Scope) -> str:
    """The request's path below the app's mount point, by Starlette's rule.

    Starlette's ``Mount`` (and uvicorn's ``--root-path``) leave ``path`` whole and put the
    prefix in ``root_path``: an app mounted at ``/agent`` sees ``/agent/hooks/x`` with
    ``root_path`` ``/agent``, and routes on ``/hooks/x``.
    """
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if not root or not path.startswith(root):
        return path
    if len(path) == len(root):
        return ""
    if path[len(root)] == "/":
        return path[len(root) :]
    return path


def validation_details(exc: ValidationError) -> list[dict[str, Any]]:
    """pydantic errors as ``[{path, message}]``, without echoing input values (secrets)."""
    return [
        {"path": ".".join(str(part) for part in err["loc"]) or "(body)", "message": err["msg"]}
        for err in exc.errors(include_url=False, include_input=False)
    ]


def parse_hook_input(body: bytes, event_name: str | None) -> HookEvent:
    """Parse and validate a hook input body; raise :class:`HTTPError` (400) when it is bad.

    With the event known in advance (from the route or the event header), parsing and
    validation are one pass in pydantic-core.
    """
    if event_name is not None:
        try:
            return model_for(event_name).model_validate_json(body)
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            if first["type"] != "json_invalid":
                if first["type"] == "model_type" and not first["loc"]:
                    raise HTTPError(
                        400, "not_an_object", "the body must be a JSON object (a hook input)"
                    ) from None
                raise HTTPError(
                    400,
                    "invalid_event",
                    "the hook input failed validation",
                    validation_details(exc),
                ) from None
            # pydantic-core refuses some JSON that the stdlib (and Claude Code) accept, such
            # as lone surrogate escapes ("\udc8f") seen in captured prompts: read the body the
            # slow way below before calling it malformed.
    try:
        data = load_json(body)
    except InputTooDeep:
        raise HTTPError(
            400, "too_deep", f"the body is nested deeper than {MAX_INPUT_DEPTH} levels"
        ) from None
    except ValueError:
        raise HTTPError(400, "malformed_json", "the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise HTTPError(400, "not_an_object", "the body must be a JSON object (a hook input)")
    name = data.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise HTTPError(
            400,
            "invalid_event",
            "the hook input failed validation",
            [{"path": "hook_event_name", "message": "Field required (a non-empty string)"}],
        )
    try:
        return model_for(event_name or name).model_validate(data)
    except ValidationError as exc:
        raise HTTPError(
            400, "invalid_event", "the hook input failed validation", validation_details(exc)
        ) from None


class _OutputJSON:
    """The JSON bytes of a handler's output for one event, as ``dump_json(output.render(event))``
    writes them.

    The plain outputs of the helpers (a decision, its reason, nothing else: ``deny(...)``,
    ``block(...)``, ``allow()``, no opinion) are written from templates made at start-up by
    ``render`` itself, with the reason encoded alone and the bodies of the last few reasons
    kept (most gates answer with a few constant reasons): no dict is built and none is
    encoded. Any other output is rendered and encoded.
    """

    __slots__ = ("bodies", "event", "templates")

    def __init__(self, event: str) -> None:
        self.event = event
        # decision -> (before the reason, after it), or (the body, None) when the event's
        # JSON does not carry the reason with that decision
        self.templates: dict[str | None, tuple[bytes, bytes | None]] = {}
        # decision -> {reason: body}, None being the reason of a decision given without one
        self.bodies: dict[str | None, dict[str | None, bytes]] = {}
        for decision in (None, "allow", "deny", "ask", "defer", "block"):
            try:
                Output(decision=decision).check(event)
            except OutputError:
                continue
            bare = dump_json(Output(decision=decision).render(event))
            marked = dump_json(Output(decision=decision, reason="\x00").render(event))
            parts = marked.split(b'"\\u0000"')
            if len(parts) == 2:
                self.templates[decision] = (parts[0], parts[1])
            elif len(parts) == 1 and marked == bare:
                self.templates[decision] = (bare, None)
            else:  # not a shape a template can write: rendered every time
                continue
            self.bodies[decision] = {None: bare}

    def encode(self, output: Output) -> bytes:
        """The bytes of ``output`` (checked for the event); ``TypeError`` or ``ValueError`` for
        a value JSON cannot carry, as :func:`dump_json` raises them."""
        if (
            output.context is None
            and output.updated_input is None
            and output.continue_ is None
            and output.stop_reason is None
            and output.system_message is None
            and output.suppress_output is None
            and not output.specific
            and not output.extra
        ):
            decision = output.decision
            # the exact types the templates were made for: a str subclass may hash and
            # compare as another decision or reason than the one it renders as
            bodies = (
                self.bodies.get(decision) if decision is None or type(decision) is str else None
            )
            reason = output.reason
            if bodies is not None and (reason is None or type(reason) is str):
                body = bodies.get(reason)
                if body is not None:  # the reason's body, or the decision's without a reason
                    return body
                before, after = self.templates[decision]
                if after is None or reason is None:
                    return before
                try:
                    body = before + to_json(reason) + after
                except PydanticSerializationError:
                    pass  # a lone surrogate: the whole body the general way, as it escapes it
                else:
                    # a reason made per call (an amount in it) is not kept: a few hold most
                    if len(bodies) < _KEPT_REASONS and len(reason) <= _KEPT_REASON_LENGTH:
                        bodies[reason] = body
                    return body
        return dump_json(output.render(self.event, checked=True))


_KEPT_REASONS = 32
_KEPT_REASON_LENGTH = 1000


class _Route:
    """What a ``/hooks/{name}`` route knows before any request: its handler, the validator of
    its event and the checks that apply to it.

    ``direct`` when its handler is async, the app has no wrappers (idempotency) and nothing
    observes or commits its answers (audit, metrics, spans): the route then runs the handler's
    first step itself (:meth:`HookApp._step`, the start of every async handler's run) and
    writes an answer that needs nothing else without an :class:`Invocation` or an
    :class:`Answer`; every other outcome (a failure, a suspended handler, an output beyond
    the plain ones) goes on to the general answer. ``no_opinion`` is the body of an answer
    no handler ran for (the matcher did not match), for such a route.
    """

    __slots__ = (
        "direct",
        "event",
        "event_header",
        "handler",
        "inline",
        "json",
        "matches",
        "no_opinion",
        "validate_json",
    )

    def __init__(self, handler: Handler, hook_app: HookApp, observed: bool) -> None:
        self.handler = handler
        self.event = handler.event
        self.event_header = handler.event.encode("latin-1")
        # pydantic-core's validator itself: model_validate_json is a Python frame around it
        self.validate_json = model_for(handler.event).__pydantic_validator__.validate_json
        # a handler without a matcher runs on every event of its kind: no test to make
        self.matches = None if is_match_all(handler.matcher) else handler.matches
        self.direct = handler.is_async and not hook_app.wrappers and not observed
        # a direct route whose handler's own code has no await: awaited by the route itself
        self.inline = self.direct and never_suspends(handler.func)
        self.json = _OutputJSON(handler.event)
        nobody = model_for(handler.event).model_construct(hook_event_name=handler.event)
        self.no_opinion = dump_json(HookApp._combine(nobody, []))


class Webhook:
    """The ASGI endpoint behind ``/hooks`` and ``/hooks/{name}`` (already authenticated).

    A handler's own route is the hot path: its validator, event header and matcher are
    looked up at start-up, the body is read from the first ``http.request`` message when it is
    all there, and the answer's context for observers is made only when there are observers;
    a direct route (see :class:`_Route`) answers without the general answer's objects.
    ``POST /hooks`` (every matching handler, merged) takes the general path, :meth:`handle`.
    """

    def __init__(
        self, hook_app: HookApp, *, max_body_bytes: int, require_event_header: bool
    ) -> None:
        self.hook_app = hook_app
        self.max_body_bytes = max_body_bytes
        self.require_event_header = require_event_header
        self.routes: dict[str, Handler | None] = {"/hooks": None, "/hooks/": None}
        self._routes: dict[str, _Route] = {}
        for handler in hook_app.handlers:
            self.routes[f"/hooks/{handler.name}"] = handler
        # observers (audit, metrics, spans) and committers are fixed when the app is built
        self._observed = bool(hook_app.observers or hook_app.committers)
        for handler in hook_app.handlers:
            self._routes[f"/hooks/{handler.name}"] = _Route(handler, hook_app, self._observed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"] if not scope.get("root_path") else route_path(scope)
        await self.serve(path, scope, receive, send)

    def serve(self, path: str, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """The ASGI call for ``path`` (the request's path below the mount point, known to the
        caller): a handler's own route, or the general path. Not a coroutine itself: the
        route's is the only one a request makes here."""
        route = self._routes.get(path)
        if route is None or scope["method"] != "POST":
            return self._serve(scope, receive, send)
        return self._serve_route(route, scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            body = await self.handle(scope, receive)
        except HTTPError as error:
            await send_error(send, error)
            return
        except ClientDisconnected:
            return
        await send_json(send, 200, body)

    async def _serve_route(self, route: _Route, scope: Scope, receive: Receive, send: Send) -> None:
        """:meth:`handle` for a handler's own route, with what was decided at start-up, and
        the answer sent."""
        try:
            headers = scope.get("handler_kit.headers") or dict(scope["headers"])
            raw_event = headers.get(EVENT_HEADER)
            length = headers.get(b"content-length")
            handler = route.handler
            limit = self.max_body_bytes
            if length is not None and length.isdigit() and int(length) > limit:
                body = self.unreadable(handler, _too_large(limit), scope)
            elif raw_event is None and self.require_event_header:
                raise HTTPError(
                    400, "missing_event_header", "the X-Runbear-Hook-Event header is required"
                )
            else:
                message = await receive()
                if message["type"] == "http.request" and not message.get("more_body", False):
                    body = message.get("body", b"")
                    too_large = len(body) > limit
                else:
                    try:
                        body = await read_body(_replay(message, receive), limit)
                        too_large = False
                    except BodyTooLarge:
                        too_large = True
                event = None if too_large else self._route_event(route, scope, body, raw_event)
                if event is None:
                    body = self.unreadable(handler, _too_large(limit), scope)
                elif isinstance(event, bytes):  # the answer to an input the route cannot read
                    body = event
                elif route.inline and (
                    route.matches is None or route.matches(event.matcher_value())
                ):
                    # a handler whose code cannot suspend, awaited here: its value comes back
                    # without a StopIteration to catch, and no deadline could cut it short
                    hook_app = self.hook_app
                    started = perf_counter()
                    step: Output | Invocation
                    try:
                        value = await handler.func(event)
                    except BaseException as exc:
                        step = hook_app._caught(handler, route.event, exc, started)
                    else:
                        step = hook_app._answered(handler, event, value, started)
                    if type(step) is Output:  # sendable as it is: the common case
                        try:
                            body = route.json.encode(step)
                        except (TypeError, ValueError):  # _body logs it and says 500
                            body = await self._settled(event, handler, step, started)
                    else:
                        body = await self._settled(event, handler, step, started)
                else:
                    answer = self._route_answer(route, scope, event, headers)
                    body = answer if isinstance(answer, bytes) else await answer
        except HTTPError as error:
            await send_error(send, error)
            return
        except ClientDisconnected:
            return
        size = len(body)
        length_header = _LENGTH_HEADERS.get(size)
        if length_header is None:
            length_header = (b"content-length", b"%d" % size)
            if len(_LENGTH_HEADERS) < _KEPT_LENGTHS:
                _LENGTH_HEADERS[size] = length_header
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [_CONTENT_TYPE, length_header],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def _route_event(
        self, route: _Route, scope: Scope, body: bytes, raw_event: bytes | None
    ) -> HookEvent | bytes:
        """The route's event read from the whole body and checked against the route and the
        event header (:class:`HTTPError` when it is another), or the answer to a body the
        route's handler cannot read, when it fails closed."""
        try:
            event: HookEvent = route.validate_json(body)
        except ValidationError:
            # the general parse: the same outcome, and the error that says what is wrong
            try:
                event = parse_hook_input(body, route.event)
            except HTTPError as error:
                return self.unreadable(route.handler, error, scope, body)
        name = event.hook_event_name
        if name != route.event or (raw_event is not None and raw_event != route.event_header):
            raise _mismatch(route, name, raw_event)
        return event

    def _route_answer(
        self, route: _Route, scope: Scope, event: HookEvent, headers: dict[bytes, bytes]
    ) -> bytes | Awaitable[bytes]:
        """The body of the route's answer to ``event``: its bytes when they are known without
        waiting (a direct route whose handler answered on its first step, or did not match),
        otherwise an awaitable of them."""
        handler = route.handler
        matches = route.matches
        if route.direct:
            if matches is not None and not matches(event.matcher_value()):
                return route.no_opinion
            started = perf_counter()
            step = self.hook_app._step(handler, event, started)
            if type(step) is Output:  # answered, and sendable as it is: the common case
                try:
                    return route.json.encode(step)
                except (TypeError, ValueError):
                    pass  # _body logs it and says 500, as for any answer
            return self._settled(event, handler, step, started)
        handlers = [handler] if matches is None or matches(event.matcher_value()) else []
        context = _context(scope, headers.get(b"traceparent")) if self._observed else None
        return self._answer(event, handlers, context)

    async def _answer(
        self, event: HookEvent, handlers: list[Handler], context: dict[str, Any] | None
    ) -> bytes:
        answer = await self.hook_app.answer(event, handlers, transport="webhook", context=context)
        return _body(answer, event.hook_event_name)

    async def _settled(
        self,
        event: HookEvent,
        handler: Handler,
        step: Output | Invocation | Coroutine[Any, Any, Invocation],
        started: float,
    ) -> bytes:
        """The body of a direct route's answer when its handler's first step gave no output
        to send as it is: the answer :meth:`HookApp.answer` makes of its invocation (nothing
        observes the route)."""
        if isinstance(step, Output):
            latency = (perf_counter() - started) * 1000
            invocation = Invocation(handler, Status.OK, step, None, latency)
        elif isinstance(step, Invocation):
            invocation = step
        else:
            invocation = await step
        invocations = [invocation]
        answer = Answer(event, HookApp._combine(event, invocations), invocations)
        return _body(answer, event.hook_event_name)

    async def handle(self, scope: Scope, receive: Receive) -> bytes:
        """The response body for one request; raises :class:`HTTPError` for an error."""
        path = route_path(scope)
        try:
            handler = self.routes[path]
        except KeyError:
            raise HTTPError(
                404, "unknown_handler", f"no handler at {path}; see GET /healthz for the list"
            ) from None
        if scope["method"] != "POST":
            raise HTTPError(405, "method_not_allowed", "use POST", headers=[(b"allow", b"POST")])

        headers = scope.get("handler_kit.headers") or dict(scope["headers"])
        raw_event = headers.get(EVENT_HEADER)
        event_header = raw_event.decode("latin-1") if raw_event is not None else None
        traceparent = headers.get(b"traceparent")
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            return self.unreadable(handler, _too_large(self.max_body_bytes), scope)
        if event_header is None and self.require_event_header:
            raise HTTPError(
                400, "missing_event_header", "the X-Runbear-Hook-Event header is required"
            )
        try:
            body = await read_body(receive, self.max_body_bytes)
        except BodyTooLarge:
            return self.unreadable(handler, _too_large(self.max_body_bytes), scope)

        expected = handler.event if handler is not None else event_header
        try:
            event = parse_hook_input(body, expected)
        except HTTPError as error:
            return self.unreadable(handler, error, scope, body)
        name = event.hook_event_name
        if event_header is not None and name != event_header:
            raise HTTPError(
                400,
                "event_mismatch",
                f"X-Runbear-Hook-Event is {event_header!r} but hook_event_name is {name!r}",
            )
        if handler is None:
            handlers = self.hook_app.matching(event)
        else:
            if name != handler.event:
                raise HTTPError(
                    400,
                    "event_mismatch",
                    f"handler {handler.name!r} handles {handler.event}, not {name}",
                )
            handlers = [handler] if handler.matches(event.matcher_value()) else []
        context = _context(scope, traceparent)
        answer = await self.hook_app.answer(event, handlers, transport="webhook", context=context)
        return _body(answer, name)

    def unreadable(
        self, handler: Handler | None, error: HTTPError, scope: Scope, body: bytes = b""
    ) -> bytes:
        """The answer to an input the route's handler cannot read: the handler's safe
        decision when it fails closed; otherwise ``error`` is raised as it is. The input's
        ids, when they can still be read from ``body``, go to its audit record."""
        if handler is None or not handler.fail_closed:
            raise error
        headers = scope.get("handler_kit.headers") or dict(scope["headers"])
        answer = self.hook_app.answer_unreadable(
            handler.event,
            [handler],
            f"{error.code}: {error.message}",
            transport="webhook",
            context=_context(scope, headers.get(b"traceparent")),
            known=top_level_strings(body, INPUT_ID_FIELDS) if body else None,
        )
        if answer is None:  # the handler does not fail closed
            raise error
        return answer.body


def _body(answer: Answer, name: str) -> bytes:
    """The response body of an answer, or the :class:`HTTPError` of a failed one."""
    invocations = answer.invocations
    # a first handler that answered rules out a failed answer without the property's loop
    if invocations and invocations[0].status is not Status.OK and answer.failed:
        if answer.unrecorded:
            # durable audit: the decision could not be recorded, so it is not given
            raise HTTPError(
                503,
                "audit_unavailable",
                "the answer's audit record could not be committed in time; retry later",
            )
        if answer.timed_out:
            raise HTTPError(500, "handler_timeout", "the handler did not answer in time")
        raise HTTPError(500, "handler_failed", "the handler failed; see the server log")
    try:
        try:
            return to_json(answer.output)  # Answer.body, without its two Python frames
        except PydanticSerializationError:
            return dump_json(answer.output)  # its fallback, and its errors
    except (TypeError, ValueError):  # an output holding a value JSON cannot carry
        logging.getLogger("handler_kit").exception("the answer to %s is not JSON", name)
        raise HTTPError(500, "handler_failed", "the handler failed; see the server log") from None


def _mismatch(route: _Route, name: str, raw_event: bytes | None) -> HTTPError:
    """The 400 of an event that is not the route's, or not the header's: the same checks,
    in the same order, as the general path."""
    header = raw_event.decode("latin-1") if raw_event is not None else None
    if header is not None and name != header:
        return HTTPError(
            400,
            "event_mismatch",
            f"X-Runbear-Hook-Event is {header!r} but hook_event_name is {name!r}",
        )
    return HTTPError(
        400, "event_mismatch", f"handler {route.handler.name!r} handles {route.event}, not {name}"
    )


def _replay(first: Message, receive: Receive) -> Receive:
    """``receive`` with ``first``, already received, given back first."""
    pending = [first]

    async def replay() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replay


def _context(scope: Scope, traceparent: bytes | None) -> dict[str, Any]:
    """What observers (audit, metrics, tracing) get with a webhook answer."""
    context: dict[str, Any] = {"principal": scope.get("handler_kit.principal")}
    if traceparent is not None:
        context["traceparent"] = traceparent.decode("latin-1")
    return context


def _too_large(limit: int) -> HTTPError:
    return HTTPError(413, "body_too_large", f"the body is over the {limit}-byte limit")
