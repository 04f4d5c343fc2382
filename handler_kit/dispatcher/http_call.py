"""Calling one ``http`` handler the way Runbear does.

- ``POST`` of the hook input as JSON, with ``Content-Type: application/json``,
  ``X-Runbear-Hook-Event: <event>`` and the configured headers (which cannot override those two,
  ``Content-Length`` or ``Host``);
- a 2xx with a JSON object body is a result; a 2xx with an empty body is a no-op;
- any other status, a redirect (never followed), a body over 1 MB, or a body that is not a JSON
  object is a failure, and so is an object with a field Runbear reads that it cannot read
  (``answers.py``: the fields Runbear ignores are ignored whatever they hold);
- only ``https`` and only a public address: the host is resolved and a private, loopback,
  link-local, site-local or otherwise non-global address is refused before connecting. An IPv6
  address that carries an IPv4 one (IPv4-mapped, IPv4-compatible, SIIT, NAT64, 6to4) is judged
  by the IPv4 address it carries, since a translator or tunnel delivers the request there. The
  connection then goes to the address that was checked (with the original name for ``Host``,
  SNI and certificate checks), so a second DNS answer cannot point the request somewhere
  private. ``allow_private`` lifts both rules for tests against 127.0.0.1.

The timeout is not applied here: the dispatcher bounds the whole call, connection included.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

import httpx

from handler_kit.core.outputs import Output, OutputError
from handler_kit.dispatcher.answers import read_answer
from handler_kit.runbear.document import FORBIDDEN_HEADERS

MAX_BODY_BYTES = 1024 * 1024
USER_AGENT = "handler-kit-dispatcher/0.1 (Runbear hooks reference runtime)"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]


class RefusedAddress(Exception):
    """The handler's host resolves to an address Runbear refuses to call."""


@dataclass(slots=True)
class HttpResult:
    """What one http handler answered and how the runtime reads it."""

    ok: bool
    output: Output | None = None
    error: str | None = None
    status_code: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    body_truncated: bool = False


# IPv6 prefixes whose last 32 bits are an IPv4 address that a translator delivers to. The
# standard library calls most of them global, whatever IPv4 address they carry.
_EMBEDDING_PREFIXES = (
    ipaddress.IPv6Network("64:ff9b::/96"),  # NAT64, the well-known prefix (RFC 6052)
    ipaddress.IPv6Network("::ffff:0:0:0/96"),  # SIIT, IPv4-translated (RFC 2765)
    ipaddress.IPv6Network("::/96"),  # IPv4-compatible (RFC 4291, deprecated)
)
# NAT64 prefixes for local use (RFC 8215): which IPv4 network they reach is the network's own
# choice, so they are never public.
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (IPv4-mapped, SIIT, NAT64, IPv4-compatible,
    6to4), else None."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    # :: and ::1 are IPv6's own unspecified and loopback addresses, not IPv4-compatible ones
    if int(address) > 1:
        for prefix in _EMBEDDING_PREFIXES:
            if address in prefix:
                return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: IPAddress) -> bool:
    """True for a globally routable unicast address (the only kind Runbear calls). An IPv6
    address that carries an IPv4 one is as public as that IPv4 address."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.is_site_local or address in _LOCAL_NAT64:
            return False
        address = embedded_ipv4(address) or address
    return address.is_global and not address.is_multicast


def describe(address: IPAddress) -> str:
    """Why an address is not public, in words ("loopback", "private"...)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.is_site_local:
            return "site-local"
        if address in _LOCAL_NAT64:
            return "local-use NAT64"
        address = embedded_ipv4(address) or address
    for kind in ("loopback", "private", "link_local", "multicast", "unspecified", "reserved"):
        if getattr(address, f"is_{kind}", False):
            return kind.replace("_", "-")
    return "non-public"


async def resolve_host(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (an IP literal resolves to itself)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def public_address(host: str, port: int, resolver: Resolver = resolve_host) -> str:
    """The address to connect to for ``host``; raises :class:`RefusedAddress` unless every
    address it resolves to is public (one private answer is enough to refuse)."""
    try:
        addresses = await resolver(host, port)
    except OSError as exc:
        raise RefusedAddress(f"cannot resolve {host}: {exc}") from None
    if not addresses:
        raise RefusedAddress(f"{host} resolves to no address")
    for text in addresses:
        address = ipaddress.ip_address(text.split("%", 1)[0])
        if not is_public(address):
            carried = embedded_ipv4(address)
            carries = f" (it carries the IPv4 address {carried})" if carried is not None else ""
            raise RefusedAddress(
                f"refused: {host} resolves to {address}, a {describe(address)} address"
                f"{carries}; Runbear calls public addresses only (allow_private is for local "
                "tests)"
            )
    return addresses[0]


def request_headers(event_name: str, configured: dict[str, str]) -> dict[str, str]:
    """The headers of the POST: configured ones, then the ones Runbear always sets."""
    headers = {k: v for k, v in configured.items() if k.lower() not in FORBIDDEN_HEADERS}
    if not any(k.lower() == "user-agent" for k in headers):
        headers["User-Agent"] = USER_AGENT
    headers["Content-Type"] = "application/json"
    headers["X-Runbear-Hook-Event"] = event_name
    return headers


def read_body(event_name: str, body: bytes) -> Output | None:
    """Read a 2xx body: None for an empty one (no-op), an :class:`Output` for a JSON object.

    Raises :class:`OutputError` for anything else: the runtime counts it as a failure.
    """
    if not body.strip():
        return None
    try:
        data = json.loads(body)
    except RecursionError:  # nested past the parser's limit: not an answer, not a crash
        raise OutputError("the response body is JSON nested too deeply to read") from None
    except ValueError as exc:
        raise OutputError(f"the response body is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise OutputError(f"the response body is JSON but not an object ({type(data).__name__})")
    return read_answer(event_name, data)


async def call_http(
    client: httpx.AsyncClient,
    url: str,
    event_name: str,
    payload: dict[str, Any],
    *,
    headers: dict[str, str] | None = None,
    allow_private: bool = False,
    allow_http: bool = False,
    resolver: Resolver = resolve_host,
    max_body: int = MAX_BODY_BYTES,
) -> HttpResult:
    """POST ``payload`` to ``url`` and read the answer by Runbear's rules. Never raises for
    the endpoint's behaviour (that is a failed :class:`HttpResult`); cancellation propagates."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme != "https" and not (scheme == "http" and (allow_http or allow_private)):
        return HttpResult(False, error=f"refused: {url} is not an https URL")
    send_headers = request_headers(event_name, headers or {})
    target = url
    extensions: dict[str, Any] = {}
    if not allow_private:
        try:
            target, send_headers["Host"], extensions = await _pinned_target(parts, resolver)
        except RefusedAddress as exc:
            return HttpResult(False, error=str(exc))
    content = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    try:
        async with client.stream(
            "POST", target, content=content, headers=send_headers, extensions=extensions
        ) as response:
            result = await _receive(response, max_body)
            if result.error is not None:
                return result
    except httpx.HTTPError as exc:
        return HttpResult(False, error=f"{type(exc).__name__}: {exc or 'transport error'}")
    except OSError as exc:  # e.g. an SSL context that could not be built
        return HttpResult(False, error=f"{type(exc).__name__}: {exc}")
    return _read_result(event_name, result)


async def _pinned_target(parts: SplitResult, resolver: Resolver) -> tuple[str, str, dict[str, Any]]:
    """Where the request goes when only public addresses may be called: the URL rewritten to
    the address just checked, the ``Host`` header, and the request's extensions (the name for
    SNI and the certificate, unless the host is an IP literal).

    Raises :class:`RefusedAddress` when the host resolves to an address Runbear refuses.
    """
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    address = await public_address(host, port, resolver)
    # Connect to the address just checked; keep the name for Host, SNI and the certificate.
    literal = f"[{address}]" if ":" in address else address
    netloc = literal if parts.port is None else f"{literal}:{parts.port}"
    target = urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    extensions: dict[str, Any] = {}
    if not _is_ip_literal(host):
        extensions["sni_hostname"] = host
    return target, parts.netloc.rsplit("@", 1)[-1], extensions


async def _receive(response: httpx.Response, max_body: int) -> HttpResult:
    """The response as far as it is read: a failure (``error`` set) for a redirect, never
    followed, or a body over ``max_body`` (declared or counted while reading, then not read
    further); otherwise the status, headers and whole body, not yet judged.
    """
    result = HttpResult(False, status_code=response.status_code, headers=dict(response.headers))
    if response.is_redirect or 300 <= response.status_code < 400:
        location = response.headers.get("location", "")
        result.error = f"redirect {response.status_code} to {location!r} (not followed)"
        return result
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_body:
        result.error = f"response body over 1 MB ({declared} bytes declared)"
        result.body_truncated = True
        return result
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_body:
            result.error = "response body over 1 MB (stopped reading)"
            result.body = b"".join(chunks)
            result.body_truncated = True
            return result
        chunks.append(chunk)
    result.body = b"".join(chunks)
    return result


def _read_result(event_name: str, result: HttpResult) -> HttpResult:
    """Whether a response read whole is a result: a non-2xx status is a failure (with the
    start of its body), and so is a 2xx body Runbear cannot read (:func:`read_body`).
    """
    if result.status_code is None or not 200 <= result.status_code < 300:
        snippet = result.body[:200].decode("utf-8", "replace")
        result.error = f"HTTP {result.status_code}" + (f": {snippet}" if snippet else "")
        return result
    try:
        result.output = read_body(event_name, result.body)
    except OutputError as exc:
        result.error = str(exc)
        return result
    result.ok = True
    return result


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
