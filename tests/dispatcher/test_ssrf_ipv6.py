"""The dispatcher's address guard against IPv6 forms that reach a private IPv4 address: NAT64,
6to4, IPv4-compatible and SIIT addresses are judged by the IPv4 address they carry, and
site-local and local-use NAT64 addresses are never public. Checked on the guard itself, on an
http handler call, and through ``handler-kit dispatch`` as a user runs it."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from handler_kit.dispatcher.http_call import (
    RefusedAddress,
    call_http,
    embedded_ipv4,
    is_public,
    public_address,
)
from tests.support.dispatch import http

# (address, what it carries or is)
PRIVATE_FORMS = [
    ("64:ff9b::a00:1", "10.0.0.1"),  # NAT64 of 10.0.0.1
    ("64:ff9b::7f00:1", "127.0.0.1"),  # NAT64 of loopback
    ("64:ff9b::a9fe:a9fe", "169.254.169.254"),  # NAT64 of the cloud metadata address
    ("2002:c0a8:101::1", "192.168.1.1"),  # 6to4 of 192.168.1.1
    ("2002:a9fe:a9fe::", "169.254.169.254"),  # 6to4 of the metadata address
    ("::10.0.0.1", "10.0.0.1"),  # IPv4-compatible
    ("::127.0.0.1", "127.0.0.1"),
    ("::ffff:0:10.0.0.1", "10.0.0.1"),  # SIIT (IPv4-translated)
    ("::ffff:0:172.16.0.1", "172.16.0.1"),
]
NEVER_PUBLIC = ["fec0::1", "feff:ffff::1", "64:ff9b:1::a00:1", "64:ff9b:1::808:808"]
# the same forms carrying a public IPv4 address stay public, and so do ordinary addresses
PUBLIC = ["64:ff9b::808:808", "2002:808:808::1", "2606:4700:4700::1111", "8.8.8.8"]


def handler_kit_command() -> list[str]:
    """The installed console script, as a user runs it."""
    script = Path(sys.executable).with_name("handler-kit")
    return [str(script)] if script.exists() else [sys.executable, "-m", "handler_kit.cli"]


@pytest.mark.parametrize(("text", "carried"), PRIVATE_FORMS)
def test_an_ipv6_address_carrying_a_private_ipv4_is_not_public(text: str, carried: str) -> None:
    address = ipaddress.ip_address(text)
    assert embedded_ipv4(address) == ipaddress.IPv4Address(carried)
    assert not is_public(address)


@pytest.mark.parametrize("text", NEVER_PUBLIC)
def test_site_local_and_local_use_nat64_are_not_public(text: str) -> None:
    assert not is_public(ipaddress.ip_address(text))


@pytest.mark.parametrize("text", PUBLIC)
def test_public_addresses_stay_public(text: str) -> None:
    assert is_public(ipaddress.ip_address(text))


@pytest.mark.parametrize("text", [text for text, _ in PRIVATE_FORMS] + NEVER_PUBLIC)
def test_the_guard_refuses_the_literal_and_says_why(text: str) -> None:
    with pytest.raises(RefusedAddress) as caught:
        asyncio.run(public_address(text, 443))
    message = str(caught.value)
    assert message.startswith("refused:") and text in message
    carried = embedded_ipv4(ipaddress.ip_address(text))
    if carried is not None:
        assert f"carries the IPv4 address {carried}" in message


@pytest.mark.parametrize("text", ["64:ff9b::a00:1", "2002:a00:1::1", "fec0::1"])
def test_an_http_handler_at_such_an_address_is_refused_before_connecting(text: str) -> None:
    async def call() -> str | None:
        # a transport that fails the test if the dispatcher ever tries to connect
        def connect(request: httpx.Request) -> httpx.Response:
            raise AssertionError(f"connected to {request.url}")

        async with httpx.AsyncClient(transport=httpx.MockTransport(connect)) as client:
            result = await call_http(
                client, f"https://[{text}]/gate", "Stop", {"hook_event_name": "Stop"}
            )
        assert not result.ok
        return result.error

    error = asyncio.run(asyncio.wait_for(call(), 30))
    assert error is not None and error.startswith("refused:"), error


def test_handler_kit_dispatch_refuses_a_nat64_literal(tmp_path: Path) -> None:
    document = tmp_path / "hooks.json"
    document.write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [http("https://[64:ff9b::a00:1]/stop")]}]}})
    )
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps({"hook_event_name": "Stop"}) + "\n")
    result = subprocess.run(
        [*handler_kit_command(), "dispatch", "--document", str(document), "--events", str(events)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    (line,) = [json.loads(x) for x in result.stdout.splitlines()]
    (handler,) = line["handlers"]
    assert handler["status"] == "failed"
    assert handler["error"].startswith("refused:"), handler["error"]
    assert "10.0.0.1" in handler["error"]
    assert "Traceback" not in result.stderr
