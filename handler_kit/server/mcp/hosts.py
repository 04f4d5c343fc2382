"""Which Host and Origin headers the MCP endpoint answers: the SDK's DNS-rebinding settings.

A browser page on an attacker's domain can resolve that domain to 127.0.0.1 and post to a local
server; the SDK refuses such requests by their Host (421) and Origin (403). This module turns
the server's ``allowed_hosts`` setting into the SDK's :class:`TransportSecuritySettings`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mcp.server.transport_security import TransportSecuritySettings

__all__ = ["ALL_HOSTS", "LOOPBACK_HOSTS", "transport_security"]


# Host headers always accepted: loopback, with or without a port. Allowing them never opens a
# DNS-rebinding hole (a rebinding attack arrives with the attacker's host name in Host).
LOOPBACK_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]")
ALL_HOSTS = "*"


def transport_security(allowed_hosts: Sequence[str] | None) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding settings for ``allowed_hosts``.

    Each entry is a host name (``hooks.example.com``: accepted with any port or none), a
    ``host:port`` (that port only), or ``*`` (no Host/Origin check at all: for a server behind
    a proxy that sets its own Host, where bearer auth already defeats rebinding). Loopback names
    are always accepted. Origins follow the hosts, on http and https; a request without an
    ``Origin`` (every server-side runtime) is never refused for it. Anything else (a URL, a
    ``*.example.com`` pattern the SDK cannot match) raises ``ValueError`` at start-up, rather
    than refusing every request later.
    """
    entries = [h.strip().lower() for h in (allowed_hosts or ()) if h and h.strip()]
    if ALL_HOSTS in entries:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts: list[str] = []
    origins: list[str] = []
    for entry in [*LOOPBACK_HOSTS, *entries]:
        name, port = _split_host(entry)
        forms = [f"{name}:{port}"] if port else [name, f"{name}:*"]
        for form in forms:
            if form not in hosts:
                hosts.append(form)
                origins.extend(f"{scheme}://{form}" for scheme in ("http", "https"))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


_HOST_NAME = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9_.-]*[a-z0-9])?)")


def _split_host(entry: str) -> tuple[str, str | None]:
    """``host`` / ``host:port`` / ``host:*`` / ``[v6]:port`` -> (host, port or None)."""
    name, port = entry, None
    if entry.startswith("["):
        close = entry.find("]")
        if close != -1 and entry[close + 1 : close + 2] == ":":
            name, port = entry[: close + 1], entry[close + 2 :]
    elif entry.count(":") == 1:
        name, port = entry.split(":")
    if port == "*":
        port = None
    if not _HOST_NAME.fullmatch(name) or (port is not None and not port.isdigit()):
        raise ValueError(
            f"allowed host {entry!r} is not supported: give a host name "
            "(hooks.example.com), host:port, or * to accept any Host"
        )
    return name, port
