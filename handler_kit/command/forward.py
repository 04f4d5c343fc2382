"""``handler-kit forward URL``: a command hook that asks a running handler-kit server.

The runtime starts this process per hook call, as it would ``handler-kit command``; it sends
the hook input on stdin to the server (``POST URL``, or ``URL/hooks/NAME`` with ``--handler
NAME``) with the bearer token from ``$HANDLER_KIT_TOKEN`` (``--token-env`` names another
variable), and prints the server's answer in the runtime's dialect (``--runtime``, see
:mod:`handler_kit.command.dialects`).

Why: a runtime calling a server itself (an http hook) proceeds when the server is down, times
out or answers an error. The forwarder is a command hook, so it still answers then: with
``--fail-closed``, the event's safe decision (a deny on PreToolUse, a block on
UserPromptSubmit; exit 2 in the sandbox dialect); without it, no answer (exit 0, empty
stdout). Either way one stderr line says what failed. A failure is a refused or broken
connection, no answer within ``--timeout`` seconds, a status other than 2xx, or a body that is
not a JSON object (an empty 2xx body is "no opinion", as for an http hook).

Start-up is paid on every tool call, so this module loads only the standard library, and
little of it: not the user's app, not pydantic nor :mod:`handler_kit.core`, not argparse on
the usual path (see :mod:`handler_kit.command._options`). It speaks HTTP/1.1 over a socket
itself: importing :mod:`http.client` would also import :mod:`ssl` and :mod:`email`, a large
share of a bare interpreter's start-up; :mod:`ssl` is imported only for an ``https`` URL.
"""

from __future__ import annotations

import json
import sys
import time

from handler_kit.command import _options, dialects
from handler_kit.command._clock import since_process_start
from handler_kit.command._stdin import read_stdin
from handler_kit.config import client_token

TYPE_CHECKING = False  # typing.TYPE_CHECKING to a type checker, without importing typing
if TYPE_CHECKING:
    import argparse
    import socket
    from typing import Any

USAGE_EXIT = 1  # never 2: that would block the call with a usage message as the reason
DEFAULT_TIMEOUT = _options.DEFAULT_TIMEOUT
MAX_ANSWER_BYTES = 4 * 1024 * 1024
TOKEN_VARIABLE = _options.TOKEN_VARIABLE


class Failure(Exception):
    """The server could not answer; the message says how, on one line."""


class Target:
    """Where the input goes: the URL, split for a socket (a plain class: typing is not loaded
    on the forwarder's start-up)."""

    __slots__ = ("host", "host_header", "path", "port", "tls", "url")

    def __init__(
        self, url: str, tls: bool, host: str, port: int, path: str, host_header: str
    ) -> None:
        self.url = url
        self.tls = tls
        self.host = host
        self.port = port
        self.path = path  # path and query, as sent in the request line
        self.host_header = host_header


def parse_url(url: str, handler: str | None = None) -> Target:
    """``url`` (with ``/hooks/HANDLER`` appended when ``handler`` is given) as a
    :class:`Target`; ``ValueError`` with a one-line message when it is not an http(s) URL."""
    if any(ord(c) <= 32 or ord(c) == 127 for c in url):
        raise ValueError(f"the URL has spaces or control characters: {url!r}")
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("http", "https"):
        raise ValueError(f"expected an http(s) URL like https://hooks.example.com, got {url!r}")
    rest = rest.split("#", 1)[0]
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    netloc, path = rest[:cut], rest[cut:]
    host, port = _host_and_port(url, netloc, default_port=443 if scheme == "https" else 80)
    if handler is not None:
        path = _handler_route(path, handler)
        url = f"{scheme}://{netloc}{path}"
    return Target(url, scheme == "https", host, port, path or "/", netloc)


def _host_and_port(url: str, netloc: str, default_port: int) -> tuple[str, int]:
    """The host and port of a URL's ``netloc`` (``host``, ``host:port``, ``[v6]:port``)."""
    if "@" in netloc:
        raise ValueError("put no credentials in the URL: the token comes from the environment")
    if netloc.startswith("["):
        host, bracket, port_text = netloc[1:].partition("]")
        if not bracket or (port_text and not port_text.startswith(":")):
            raise ValueError(f"bad IPv6 address in {url!r}")
        port_text = port_text[1:]
    else:
        host, _, port_text = netloc.partition(":")
    if not host:
        raise ValueError(f"the URL has no host: {url!r}")
    if port_text and not (port_text.isdigit() and 0 < int(port_text) < 65536):
        raise ValueError(f"bad port in {url!r}")
    return host, int(port_text) if port_text else default_port


def _handler_route(path: str, handler: str) -> str:
    """The route of ``handler`` under a server's base URL path (``--handler``)."""
    if not handler or not all(c.isalnum() or c in "_.-" for c in handler):
        raise ValueError(f"bad handler name {handler!r}")
    if "?" in path:
        raise ValueError("with --handler, give the server's base URL (no query)")
    return f"{path.rstrip('/')}/hooks/{handler}"


# -- arguments -----------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``handler-kit forward`` (for ``--help``: :func:`main` reads them with
    :func:`~handler_kit.command._options.parse`)."""
    _options.add_to(parser, _options.FORWARD)
    parser.error = _usage_error  # type: ignore[method-assign,assignment]


def _usage_error(message: str) -> None:
    sys.stderr.write(f"handler-kit forward: {message}\n")
    sys.exit(USAGE_EXIT)


def main(argv: list[str]) -> int:
    """``handler-kit forward ARGV...``; every usage error exits 1. argparse is loaded only to
    print ``--help``."""
    args: Any
    try:
        args = _options.parse(argv, _options.FORWARD)
    except _options.UsageError as exc:
        _usage_error(str(exc))
    if args is None:
        import argparse

        parser = argparse.ArgumentParser(
            prog="handler-kit forward",
            description="A command hook that sends the hook input on stdin to a running "
            "handler-kit server and prints its answer in the runtime's dialect.",
            allow_abbrev=False,
        )
        add_arguments(parser)
        args = parser.parse_args(argv)
    return run(args)


def run(args: Any) -> int:
    """Forward the input on stdin; return the exit code."""
    try:
        runtime = _runtime(args)
        target = parse_url(args.url, args.handler)
        if not args.timeout > 0:
            raise ValueError(f"--timeout must be positive, not {args.timeout:g}")
        if not args.token_env:
            raise ValueError("--token-env needs a variable name")
    except ValueError as exc:
        _write_stderr([f"handler-kit forward: {exc}"])
        return USAGE_EXIT
    # One deadline for the whole call: the runtime's timeout runs from the process's spawn
    # (the interpreter's start included), and a forwarder it kills lets the call proceed.
    deadline = time.monotonic() + args.timeout - since_process_start()
    body = read_stdin()
    event = _event_name(body)
    try:
        answer = _ask(target, body, event, args, deadline)
    except Failure as exc:
        return _unanswered(runtime, target, event, str(exc), fail_closed=args.fail_closed)
    if event is None:  # an input we could not read, answered anyway: the answer names it
        hso = answer.get("hookSpecificOutput")
        named = hso.get("hookEventName") if isinstance(hso, dict) else None
        event = named if isinstance(named, str) else ""
    try:
        rendered = dialects.render(
            runtime,
            event,
            answer,
            fail_closed=args.fail_closed,
            fallback=lambda what: f"The hook server {what} this.",
            stop_hook_active=dialects.stop_hook_active(event, body),
        )
    except (RecursionError, ValueError) as exc:
        # an answer Python read but cannot write again (nested nearly as deep as the
        # interpreter allows, a lone surrogate where bytes are written): a crash here would
        # exit 1, which every runtime lets through
        what = f"the answer could not be passed on ({type(exc).__name__})"
        return _unanswered(runtime, target, event or None, what, fail_closed=args.fail_closed)
    _write_stdout(rendered.stdout)
    if rendered.code == dialects.BLOCK_EXIT:
        _write_stderr([rendered.stderr])  # the reason, and nothing else: the model reads it
    else:
        _write_stderr([f"handler-kit: warning: {note}" for note in rendered.notes])
    return rendered.code


def _runtime(args: Any) -> str:
    runtime = args.runtime
    if args.exit_codes:
        if runtime not in (None, dialects.SANDBOX):
            raise ValueError(f"--exit-codes is --runtime sandbox; it contradicts {runtime}")
        return dialects.SANDBOX
    return dialects.runtime_name(runtime or dialects.DEFAULT_RUNTIME)


def _event_name(body: bytes) -> str | None:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    name = data.get("hook_event_name") if isinstance(data, dict) else None
    return name if isinstance(name, str) and name else None


def _unanswered(
    runtime: str, target: Target, event: str | None, what: str, *, fail_closed: bool
) -> int:
    """The server could not answer: the safe decision with ``--fail-closed``, else none."""
    line = f"handler-kit forward: {target.url}: {what}"
    if not fail_closed:
        _write_stdout(b"{}\n" if event and dialects.needs_json(runtime, event) else b"")
        _write_stderr([f"{line}; no answer given"])
        return dialects.OK_EXIT
    reason = (
        f"Blocked by policy: the hook server did not answer ({what}), and this check is "
        "configured to fail closed."
    )
    if event is None:
        # An input with no event name: exit 2 blocks wherever a block is possible, in every
        # runtime's exit-code rules.
        _write_stderr([reason])
        return dialects.BLOCK_EXIT
    safe = dialects.safe_output(event, reason)
    if safe is None:
        _write_stdout(b"{}\n" if dialects.needs_json(runtime, event) else b"")
        _write_stderr([f"{line}; {event} has no safe decision to fail to, no answer given"])
        return dialects.OK_EXIT
    rendered = dialects.render(runtime, event, safe, fail_closed=True)
    _write_stdout(rendered.stdout)
    if rendered.code == dialects.BLOCK_EXIT:
        _write_stderr([rendered.stderr])
    else:
        _write_stderr([f"{line}; answered the fail-closed {dialects.SAFE_EVENTS[event]}"])
    return rendered.code


# -- HTTP ----------------------------------------------------------------------------------


def _ask(
    target: Target, body: bytes, event: str | None, args: Any, deadline: float
) -> dict[str, Any]:
    """The server's answer to ``body``, a JSON object, by ``deadline``; :class:`Failure` when
    there is none."""
    from handler_kit._version import __version__

    token = client_token(args.token_env)
    headers = [
        ("Host", target.host_header),
        ("User-Agent", f"handler-kit-forward/{__version__}"),
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
    ]
    if token:
        headers.append(("Authorization", f"Bearer {token}"))
    if event:
        headers.append(("X-Runbear-Hook-Event", event))
    if args.app:
        headers.append(("X-Handler-Kit-App", args.app))
    for name, value in headers:
        if any(c in value for c in "\r\n\0"):
            raise Failure(f"the {name} header would hold a line break; check ${args.token_env}")
    head = f"POST {target.path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    status, answer = _exchange(
        target, head.encode("latin-1", "replace") + b"\r\n" + body, deadline, args.timeout
    )
    if not 200 <= status < 300:
        detail = _error_message(answer)
        what = f"HTTP {status}" + (f" ({detail})" if detail else "")
        if status == 401:
            # the client's one token and the server's list have different names: say which
            what += (
                f"; ${args.token_env} is not set"
                if not token
                else f"; the server did not accept ${args.token_env} (check it against the "
                "server's HANDLER_KIT_TOKENS or its JWT settings)"
            )
        if status == 404 and "/hooks" not in target.path:
            # a server's base URL given where a handler route is meant: say which URL is
            what += (
                f"; {target.url} is not a hook route: give the server's URL with /hooks (every "
                "handler) or /hooks/NAME (one handler), or the base URL with --handler NAME"
            )
        raise Failure(what)
    if not answer.strip():
        return {}  # a 2xx with no body: no opinion, as for an http hook
    try:
        # NaN and the infinities too: Python reads them, a runtime's parser refuses the whole
        # answer passed on (Claude Code then reads stdout as text and lets the call run)
        data = json.loads(answer, parse_constant=_not_json)
    except (ValueError, RecursionError):
        raise Failure(f"HTTP {status} with a body that is not JSON") from None
    if not isinstance(data, dict):
        raise Failure(f"HTTP {status} with JSON that is not an object")
    hso = data.get("hookSpecificOutput")
    named = hso.get("hookEventName") if isinstance(hso, dict) else None
    if event and named is not None and named != event:
        raise Failure(f"the answer is for {named}, not {event}")
    return data


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _exchange(target: Target, request: bytes, deadline: float, timeout: float) -> tuple[int, bytes]:
    """Send ``request``, read the response until it is complete; (status, body).

    ``deadline`` (a :func:`time.monotonic` time) bounds the whole exchange: each step (the
    name's lookup, the connection to each of its addresses, the TLS handshake, every send and
    every read) gets what is left of it, never the whole timeout again. ``timeout`` is the
    figure the messages name.
    """
    addresses = _resolve(target, deadline, timeout)
    sock = _connect(addresses, deadline, timeout)
    step = "no answer"
    try:
        if target.tls:
            step = "no TLS handshake"
            sock.settimeout(_left(deadline))
            sock = _wrap_tls(sock, target.host)
        step = "the request was not read"
        view = memoryview(request)
        while view:
            sock.settimeout(_left(deadline))
            view = view[sock.send(view) :]
        step = "no answer"
        received = bytearray()
        while True:
            sock.settimeout(_left(deadline))
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
            if len(received) > MAX_ANSWER_BYTES:
                raise Failure(f"the answer is over {MAX_ANSWER_BYTES} bytes")
            if _complete(received):
                break
    except TimeoutError:
        raise Failure(f"{step} within {timeout:g} s") from None
    except OSError as exc:
        raise Failure(f"the connection failed: {_os_error(exc)}") from None
    finally:
        sock.close()
    return _parse_response(bytes(received))


def _left(deadline: float) -> float:
    """The time left before ``deadline``; TimeoutError when there is none (a socket timeout
    of 0 would mean "do not wait", not "give up")."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _resolve(target: Target, deadline: float, timeout: float) -> list[Any]:
    """The addresses of ``target`` (getaddrinfo's tuples), looked up by the deadline.

    ``getaddrinfo`` takes no timeout, and a resolver that never answers holds it for as long as
    resolv.conf's retries last; so a name is looked up in a thread of its own, left behind when
    the deadline passes (the process exits soon after: a ``_thread`` thread is not waited for).
    An address literal needs no lookup and no thread.
    """
    import socket

    try:
        return socket.getaddrinfo(
            target.host, target.port, 0, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST
        )
    except (OSError, UnicodeError):
        pass  # a name: looked up below
    import _thread

    done = _thread.allocate_lock()
    done.acquire()
    found: list[Any] = []

    def look_up() -> None:
        try:
            found.append(socket.getaddrinfo(target.host, target.port, 0, socket.SOCK_STREAM))
        except BaseException as exc:  # handed to the waiting thread, which names it
            found.append(exc)
        finally:
            done.release()

    _thread.start_new_thread(look_up, ())
    left = deadline - time.monotonic()
    if left <= 0 or not done.acquire(timeout=left):
        raise Failure(f"no address for {target.host} within {timeout:g} s")
    result = found[0]
    if isinstance(result, OSError):
        raise Failure(f"cannot resolve {target.host}: {_os_error(result)}")
    if isinstance(result, UnicodeError):
        raise Failure(f"cannot resolve {target.host}: not a valid host name")
    if isinstance(result, BaseException):
        raise result
    if not result:
        raise Failure(f"cannot resolve {target.host}: no address")
    return list(result)


def _connect(addresses: list[Any], deadline: float, timeout: float) -> socket.socket:
    """A socket connected to the first of ``addresses`` that accepts, by the deadline."""
    import socket

    error: OSError | None = None
    for family, kind, proto, _, address in addresses:
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(_left(deadline))
            sock.connect(address)
            return sock
        except TimeoutError:
            sock.close()
            if deadline - time.monotonic() <= 0:
                break
            error = None
        except OSError as exc:
            sock.close()
            error = exc
    if error is None:
        raise Failure(f"no connection within {timeout:g} s")
    if isinstance(error, ConnectionRefusedError):
        raise Failure("connection refused")
    raise Failure(f"cannot connect: {_os_error(error)}")


def _wrap_tls(sock: socket.socket, host: str) -> socket.socket:
    """``sock`` with TLS; the handshake is bounded by the socket's timeout as a whole."""
    import ssl

    context = ssl.create_default_context()
    return context.wrap_socket(sock, server_hostname=host)


def _os_error(exc: OSError) -> str:
    return " ".join(str(exc.strerror or exc or type(exc).__name__).split())


def _complete(received: bytearray) -> bool:
    """True once a response with a Content-Length has all of its body (no need to wait for
    the server to close the connection)."""
    end = received.find(b"\r\n\r\n")
    if end < 0:
        return False
    if received.startswith(b"HTTP/1.1 1") or received.startswith(b"HTTP/1.0 1"):
        return False  # an interim 1xx response: the real one follows
    head = bytes(received[:end])
    if (_header(head, b"transfer-encoding") or b"").lower() == b"chunked":
        return received.endswith(b"\r\n0\r\n\r\n") or len(received) == end + 9
    length = _content_length(head)
    return length is not None and len(received) - end - 4 >= length


def _content_length(head: bytes) -> int | None:
    """The Content-Length of a response head, None when it has none that is a number. A
    number longer than any answer read is kept as one over the cap: Python refuses to convert
    a string of thousands of digits (a ValueError, which would crash the forwarder: exit 1,
    which every runtime lets through)."""
    length = _header(head, b"content-length")
    if length is None or not length.isdigit():
        return None
    return int(length) if len(length) <= 12 else MAX_ANSWER_BYTES + 1


def _header(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        key, sep, value = line.partition(b":")
        if sep and key.strip().lower() == name:
            return value.strip()
    return None


def _parse_response(data: bytes) -> tuple[int, bytes]:
    while True:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            if not data:
                raise Failure("the server closed the connection without an answer")
            raise Failure("the answer is not HTTP")
        status_line = head.split(b"\r\n", 1)[0].split(None, 2)
        if (
            len(status_line) < 2
            or not status_line[0].startswith(b"HTTP/")
            or not (status_line[1].isdigit() and len(status_line[1]) == 3)
        ):
            raise Failure("the answer is not HTTP")
        status = int(status_line[1])
        if 100 <= status < 200:
            data = rest
            continue
        break
    if (_header(head, b"transfer-encoding") or b"").lower() == b"chunked":
        return status, _dechunk(rest)
    length = _content_length(head)
    if length is not None:
        if len(rest) < length:
            raise Failure("the answer was cut short")
        return status, rest[:length]
    return status, rest


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    while True:
        size_line, sep, data = data.partition(b"\r\n")
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise Failure("the answer's chunked body is malformed") from None
        if not sep or len(data) < size:
            raise Failure("the answer was cut short")
        if size == 0:
            return bytes(out)
        out += data[:size]
        data = data[size + 2 :]


def _error_message(body: bytes) -> str | None:
    """The ``message`` of a handler-kit error body, on one line, if there is one."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    message = data.get("message") if isinstance(data, dict) else None
    return " ".join(message.split())[:200] if isinstance(message, str) and message else None


# -- output --------------------------------------------------------------------------------


def _write_stdout(data: bytes) -> None:
    if data:
        _write(sys.stdout, data)


def _write_stderr(lines: list[str]) -> None:
    text = "".join(f"{line}\n" for line in lines if line)
    if text:
        _write(sys.stderr, text.encode("utf-8", "replace"))


def _write(stream: Any, data: bytes) -> None:
    try:
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            buffer.write(data)
        else:
            stream.write(data.decode("utf-8", "replace"))
        stream.flush()
    except (ValueError, OSError):
        pass  # the runtime stopped reading: nothing left to tell it
