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
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, NoReturn

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_json

from handler_kit.core.app import HookApp
from handler_kit.core.events import EVENT_MODELS, HookEvent, json_validator, model_for
from handler_kit.core.vocabulary import (
    INPUT_ID_FIELDS,
    INTERNAL_MESSAGE,
    MAX_INPUT_DEPTH,
    Answer,
    Handler,
    InputTooDeep,
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
# read once: a member read from an enum class takes the enum type's __getattr__, the slow way
_OK = Status.OK


class BodyTooLarge(Exception):
    pass


class ClientDisconnected(Exception):
    pass


class Unreadable(Exception):
    """The answer to an input a fail-closed route could not read: ``body``, its handler's
    safe decision, is sent with 200 as any answer."""

    def __init__(self, body: bytes) -> None:
        super().__init__()
        self.body = body


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


async def read_body(receive: Receive, limit: int, first: Message | None = None) -> bytes:
    """The whole request body, or :class:`BodyTooLarge` as soon as it passes ``limit``.
    ``first``: its first message, when already received."""
    message = await receive() if first is None else first
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
        raise _no_event_named()
    try:
        return model_for(event_name or name).model_validate(data)
    except ValidationError as exc:
        raise HTTPError(
            400, "invalid_event", "the hook input failed validation", validation_details(exc)
        ) from None


def _no_event_named() -> HTTPError:
    return HTTPError(
        400,
        "invalid_event",
        "the hook input failed validation",
        [{"path": "hook_event_name", "message": "Field required (a non-empty string)"}],
    )


class _Plan:
    """What a route needs, decided at start-up: the event it reads (None: the body names it),
    that event's validator, and the handler it answers with (None: every matching one).

    ``POST /hooks/{name}`` has one plan, its handler's; ``POST /hooks`` has one per event a
    request's ``X-Runbear-Hook-Event`` header can name (the header picks the validator) and
    one for a request without the header. Every plan is served by the same functions."""

    __slots__ = ("event", "event_header", "handler", "validate_json")

    def __init__(self, event: str | None, handler: Handler | None) -> None:
        self.event = event
        self.event_header = event.encode("latin-1") if event is not None else None
        self.handler = handler
        self.validate_json = json_validator(model_for(event)) if event is not None else None


class Webhook:
    """The ASGI endpoint behind ``/hooks`` and ``/hooks/{name}`` (already authenticated).

    Both routes take one path: the plan of the route (see :class:`_Plan`), the body read and
    validated in one pass, the handlers chosen (the route's, if its matcher matches, or every
    matching one), :meth:`HookApp.answer`, and its JSON. The context observers get is made only
    when something observes the answers.
    """

    def __init__(
        self, hook_app: HookApp, *, max_body_bytes: int, require_event_header: bool
    ) -> None:
        self.hook_app = hook_app
        self.max_body_bytes = max_body_bytes
        self.require_event_header = require_event_header
        general = _Plan(None, None)
        self._plans: dict[str, _Plan] = {"/hooks": general, "/hooks/": general}
        for handler in hook_app.handlers:
            self._plans[f"/hooks/{handler.name}"] = _Plan(handler.event, handler)
        # POST /hooks with the event named in its header: that event's validator, built now
        # for the events the app handles, on first use for the other known ones (building
        # every event's schema would hold up the start)
        self._event_plans: dict[bytes, _Plan] = {
            name.encode("latin-1"): _Plan(name, None) for name in hook_app.by_event
        }
        # observers (audit, metrics, spans) and committers are fixed when the app is built
        self._observed = bool(hook_app.observers or hook_app.committers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"] if not scope.get("root_path") else route_path(scope)
        await self.serve(path, scope, receive, send)

    async def serve(self, path: str, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI call for ``path``, the request's path below the mount point (known to the
        caller): one coroutine from the request's head to its answer's last byte."""
        event: HookEvent | None = None
        try:
            plan, headers, raw_event = self._head(path, scope)
            message = await receive()
            body = message.get("body", b"")
            if message.get("more_body", False) or message["type"] != "http.request":
                body = await self._rest_of_body(plan, scope, receive, message)
            event = self._event(plan, scope, body, raw_event)
            handler = plan.handler
            if handler is None:
                handlers = self.hook_app.matching(event)
            else:
                handlers = [handler] if handler.matches(event.matcher_value()) else []
            context = (
                _context(scope, headers.get(b"traceparent"), body, True) if self._observed else None
            )
            answer = await self.hook_app.answer(
                event, handlers, transport="webhook", context=context
            )
            body = _body(answer, event)
        except HTTPError as error:
            await send_error(send, error)
            return
        except Unreadable as unreadable:
            body = unreadable.body
        except ClientDisconnected:
            return
        except Exception:
            # a bug of ours around the answer (a handler's, a wrapper's or a committer's error
            # is answered inside HookApp.answer): a bare 500 would be the runtime's "go ahead"
            try:
                body = self._not_made(path, scope, event)
            except HTTPError as error:
                await send_error(send, error)
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

    def _head(self, path: str, scope: Scope) -> tuple[_Plan, dict[bytes, bytes], bytes | None]:
        """The route's plan (the event header's, on ``POST /hooks``), the request's headers
        and its event header, from what the head says: :class:`HTTPError` for a route,
        method or missing header the webhook does not answer, :class:`Unreadable` for a body
        announced over the cap, when the route's handler fails closed."""
        plan = self._plans.get(path)
        if plan is None:
            raise HTTPError(
                404, "unknown_handler", f"no handler at {path}; see GET /healthz for the list"
            )
        if scope["method"] != "POST":
            raise HTTPError(405, "method_not_allowed", "use POST", headers=[(b"allow", b"POST")])
        headers = scope.get("handler_kit.headers") or dict(scope["headers"])
        raw_event = headers.get(EVENT_HEADER)
        if raw_event is not None and plan.handler is None:
            plan = self._event_plans.get(raw_event) or self._event_plan(raw_event, plan)
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            self.unreadable(plan.handler, _too_large(self.max_body_bytes), scope)
        if raw_event is None and self.require_event_header:
            raise HTTPError(
                400, "missing_event_header", "the X-Runbear-Hook-Event header is required"
            )
        return plan, headers, raw_event

    def _event_plan(self, raw_event: bytes, general: _Plan) -> _Plan:
        """The plan of ``POST /hooks`` for a known event the app has no handler of, made on
        its first request; ``general`` (the body names the event) for any other header."""
        name = raw_event.decode("latin-1")
        if name not in EVENT_MODELS:
            return general
        plan = self._event_plans[raw_event] = _Plan(name, None)
        return plan

    async def _rest_of_body(
        self, plan: _Plan, scope: Scope, receive: Receive, first: Message
    ) -> bytes:
        """The whole body when it did not come in one message (see :func:`read_body`)."""
        try:
            return await read_body(receive, self.max_body_bytes, first)
        except BodyTooLarge:
            self.unreadable(plan.handler, _too_large(self.max_body_bytes), scope)

    def _event(self, plan: _Plan, scope: Scope, body: bytes, raw_event: bytes | None) -> HookEvent:
        """The plan's event read from the whole body and checked against the route and the
        event header (:class:`HTTPError` when it is another); :class:`Unreadable` when the
        route's handler fails closed and cannot read it."""
        if len(body) > self.max_body_bytes:
            self.unreadable(plan.handler, _too_large(self.max_body_bytes), scope)
        event: HookEvent | None = None
        if plan.validate_json is not None:
            try:  # noqa: SIM105 (a with statement costs more on every request)
                event = plan.validate_json(body)
            except ValidationError:
                pass  # the general parse below: the same outcome, and the error saying why
        if event is None:
            try:
                event = parse_hook_input(body, plan.event)
            except HTTPError as error:
                self.unreadable(plan.handler, error, scope, body)
        name = event.hook_event_name
        if not name:  # the route's validator takes any string: an input that names no event
            self.unreadable(plan.handler, _no_event_named(), scope, body)
        if raw_event is not None and (name != plan.event or raw_event != plan.event_header):
            header = raw_event.decode("latin-1")
            if name != header:
                raise HTTPError(
                    400,
                    "event_mismatch",
                    f"X-Runbear-Hook-Event is {header!r} but hook_event_name is {name!r}",
                )
        handler = plan.handler
        if handler is not None and name != handler.event:
            raise HTTPError(
                400,
                "event_mismatch",
                f"handler {handler.name!r} handles {handler.event}, not {name}",
            )
        return event

    def _not_made(self, path: str, scope: Scope, event: HookEvent | None) -> bytes:
        """The body answering a request whose answer could not be made (a bug of ours, logged
        here): the failure policy of the handlers the route was to run, as for an error around
        the handlers, so a fail-closed gate gives its safe decision; otherwise, or when the
        route's handlers cannot be told, the :class:`HTTPError` to send."""
        logging.getLogger("handler_kit").exception("the answer at %s could not be made", path)
        plan = self._plans.get(path)
        handlers: list[Handler] | None
        if plan is not None and plan.handler is not None:
            handlers = [plan.handler]
        elif event is not None:
            # POST /hooks: every handler of the event, whatever its matcher (the matching may
            # be what failed), the event named by the body read or else by the header
            handlers = self.hook_app.by_event.get(event.hook_event_name)
        else:
            raw_event = dict(scope["headers"]).get(EVENT_HEADER)
            handlers = (
                self.hook_app.by_event.get(raw_event.decode("latin-1")) if raw_event else None
            )
        if not handlers:
            raise HTTPError(500, "internal_error", INTERNAL_MESSAGE)
        # as little of the usual way as can be: the bug may be in any of it
        answer = self.hook_app.answer_not_made(
            event if event is not None else handlers[0].event,
            handlers,
            transport="webhook",
            context={"principal": scope.get("handler_kit.principal")},
        )
        if answer.failed:
            raise _handler_failed()
        return answer.body

    def unreadable(
        self, handler: Handler | None, error: HTTPError, scope: Scope, body: bytes = b""
    ) -> NoReturn:
        """Answer an input the route's handler cannot read: :class:`Unreadable` with the
        handler's safe decision when it fails closed; otherwise ``error`` is raised as it is.
        The input's ids, when they can still be read from ``body``, go to its audit record."""
        if handler is None or not handler.fail_closed:
            raise error
        headers = scope.get("handler_kit.headers") or dict(scope["headers"])
        answer = self.hook_app.answer_unreadable(
            handler.event,
            [handler],
            f"{error.code}: {error.message}",
            transport="webhook",
            context=_context(scope, headers.get(b"traceparent"), body or None, False),
            known=top_level_strings(body, INPUT_ID_FIELDS) if body else None,
        )
        if answer is None:  # the handler does not fail closed
            raise error
        raise Unreadable(answer.body)


def _body(answer: Answer, event: HookEvent) -> bytes:
    """The response body of an answer to ``event``, or the :class:`HTTPError` of a failed
    one."""
    invocations = answer.invocations
    # a first handler that answered rules out a failed answer without the property's loop
    if invocations and invocations[0].status is not _OK and answer.failed:
        if answer.unrecorded:
            # durable audit: the decision could not be recorded, so it is not given
            raise HTTPError(
                503,
                "audit_unavailable",
                "the answer's audit record could not be committed in time; retry later",
            )
        if answer.timed_out:
            raise HTTPError(500, "handler_timeout", "the handler did not answer in time")
        raise _handler_failed()
    try:
        try:
            return to_json(answer.output)  # Answer.body, without its two Python frames
        except PydanticSerializationError:
            return dump_json(answer.output)  # its fallback, and its errors
    except (TypeError, ValueError):  # an output holding a value JSON cannot carry
        logging.getLogger("handler_kit").exception(
            "the answer to %s is not JSON", event.hook_event_name
        )
        raise _handler_failed() from None


def _handler_failed() -> HTTPError:
    return HTTPError(500, "handler_failed", "the handler failed; see the server log")


def _context(
    scope: Scope, traceparent: bytes | None, body: bytes | None, validated: bool
) -> dict[str, Any]:
    """What observers (audit, metrics, tracing) get with a webhook answer: ``body``, the
    input as received, is what the audit record digests (and keeps whole when asked);
    ``event_from_body``, whether the answered event is the body validated by its event's model
    (the audit writer then derives the input's text from the body, not the server)."""
    context: dict[str, Any] = {
        "principal": scope.get("handler_kit.principal"),
        "body": body,
        "event_from_body": validated,
    }
    if traceparent is not None:
        context["traceparent"] = traceparent.decode("latin-1")
    return context


def _too_large(limit: int) -> HTTPError:
    return HTTPError(413, "body_too_large", f"the body is over the {limit}-byte limit")
