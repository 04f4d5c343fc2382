"""The webhook routes, ``POST /hooks`` and ``POST /hooks/{name}``, as plain ASGI.

This is the hot path of every tool call an agent makes, so it is written against ASGI
directly rather than through Starlette's Request/Response objects (which cost about as much as
everything else together): one pass over the headers, one ``model_validate_json`` that parses
and validates the body together, the handler, one ``json.dumps``. Everything that can be worked
out once (handler table, error bodies, header lists) is worked out at start-up.

Every bad input gets a JSON error body with a stable ``error`` code, never a traceback:
400 (malformed JSON, nested too deep, not an object, validation failed, event header
mismatch), 404 (unknown handler), 405 (wrong method), 413 (body over the cap), 500 (handler
failed, no fail-closed policy). Authentication (401) happens before this, in
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
from typing import Any

from pydantic import ValidationError

from handler_kit.core.app import HookApp
from handler_kit.core.events import HookEvent, model_for
from handler_kit.core.vocabulary import MAX_INPUT_DEPTH, Handler, InputTooDeep, load_json

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

EVENT_HEADER = b"x-runbear-hook-event"
_JSON_HEADERS = [(b"content-type", b"application/json")]


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


class Webhook:
    """The ASGI endpoint behind ``/hooks`` and ``/hooks/{name}`` (already authenticated)."""

    def __init__(
        self, hook_app: HookApp, *, max_body_bytes: int, require_event_header: bool
    ) -> None:
        self.hook_app = hook_app
        self.max_body_bytes = max_body_bytes
        self.require_event_header = require_event_header
        self.routes: dict[str, Handler | None] = {"/hooks": None, "/hooks/": None}
        for handler in hook_app.handlers:
            self.routes[f"/hooks/{handler.name}"] = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await send_json(send, 200, await self.handle(scope, receive))
        except HTTPError as error:
            await send_error(send, error)
        except ClientDisconnected:
            return

    async def handle(self, scope: Scope, receive: Receive) -> bytes:
        """The response body for one request; raises :class:`HTTPError` for an error."""
        path = scope["path"]
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
            return self.unreadable(handler, error, scope)
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
        if answer.failed:
            if answer.timed_out:
                raise HTTPError(500, "handler_timeout", "the handler did not answer in time")
            raise HTTPError(500, "handler_failed", "the handler failed; see the server log")
        try:
            return answer.body
        except (TypeError, ValueError):  # an output holding a value JSON cannot carry
            logging.getLogger("handler_kit").exception("the answer to %s is not JSON", name)
            raise HTTPError(
                500, "handler_failed", "the handler failed; see the server log"
            ) from None

    def unreadable(self, handler: Handler | None, error: HTTPError, scope: Scope) -> bytes:
        """The answer to an input the route's handler cannot read: the handler's safe
        decision when it fails closed; otherwise ``error`` is raised as it is."""
        if handler is None:
            raise error
        headers = scope.get("handler_kit.headers") or dict(scope["headers"])
        answer = self.hook_app.answer_unreadable(
            handler.event,
            [handler],
            f"{error.code}: {error.message}",
            transport="webhook",
            context=_context(scope, headers.get(b"traceparent")),
        )
        if answer is None:  # the handler does not fail closed
            raise error
        return answer.body


def _context(scope: Scope, traceparent: bytes | None) -> dict[str, Any]:
    """What observers (audit, metrics, tracing) get with a webhook answer."""
    context: dict[str, Any] = {"principal": scope.get("handler_kit.principal")}
    if traceparent is not None:
        context["traceparent"] = traceparent.decode("latin-1")
    return context


def _too_large(limit: int) -> HTTPError:
    return HTTPError(413, "body_too_large", f"the body is over the {limit}-byte limit")
