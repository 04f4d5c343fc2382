"""Serving the shadow tests' apps with ``handler-kit serve`` and sending them traffic."""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx

from tests.support.processes import Process, clean_env, free_port, serve

TOKEN = "shadow-test-token-0123456789abcdef"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
ENFORCED = "tests.shadow.apps:enforced"

COMMANDS = ("ls -la", "rm -rf /tmp/x", "rm notes.txt", "git status")
ROUTES = ("/hooks", "/hooks/bash_gate")


def hook_input(command: str, number: int) -> dict[str, object]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "shadow-session",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/work",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": f"toolu_{number:04d}",
    }


def traffic(count: int) -> list[tuple[str, dict[str, object]]]:
    """``count`` requests: every command on both webhook routes, in turn."""
    return [
        (ROUTES[n % 2], hook_input(COMMANDS[(n // 2) % len(COMMANDS)], n)) for n in range(count)
    ]


@dataclass(frozen=True)
class Sent:
    status: int
    body: bytes
    seconds: float


@contextlib.contextmanager
def served(shadow: str | None = None, **env: str) -> Iterator[tuple[Process, str]]:
    """The enforced app on ``handler-kit serve`` (with ``--shadow shadow``), and its URL."""
    port = free_port()
    options = ("--shadow", shadow) if shadow is not None else ()
    environ = clean_env(HANDLER_KIT_TOKENS=TOKEN, HANDLER_KIT_METRICS="1", **env)
    with serve(ENFORCED, port=port, env=environ, options=options) as server:
        yield server, f"http://127.0.0.1:{port}"


def send_all(url: str, requests: list[tuple[str, dict[str, object]]]) -> list[Sent]:
    """Each request in turn on one keep-alive connection, timed from send to whole answer."""
    sent = []
    with httpx.Client(base_url=url, headers=HEADERS, timeout=30) as http:
        http.get("/healthz")  # the connection is open before the first timing
        for path, body in requests:
            content = json.dumps(body).encode()
            started = time.perf_counter()
            response = http.post(path, content=content)
            sent.append(Sent(response.status_code, response.content, time.perf_counter() - started))
    return sent


def send_side_by_side(
    url: str, beside: str, requests: list[tuple[str, dict[str, object]]]
) -> tuple[list[Sent], list[Sent]]:
    """Each request sent to ``url`` and to ``beside`` in turn (which goes first alternates),
    each on its own keep-alive connection, timed as :func:`send_all` times them: the two
    servers' timings are taken over the same moments, so whatever else the machine runs
    meanwhile weighs on both alike."""
    sent: tuple[list[Sent], list[Sent]] = ([], [])
    with (
        httpx.Client(base_url=url, headers=HEADERS, timeout=30) as first,
        httpx.Client(base_url=beside, headers=HEADERS, timeout=30) as second,
    ):
        clients = (first, second)
        for http in clients:
            http.get("/healthz")  # the connection is open before the first timing
        for number, (path, body) in enumerate(requests):
            content = json.dumps(body).encode()
            for side in (0, 1) if number % 2 == 0 else (1, 0):
                started = time.perf_counter()
                response = clients[side].post(path, content=content)
                seconds = time.perf_counter() - started
                sent[side].append(Sent(response.status_code, response.content, seconds))
    return sent


_SAMPLE = re.compile(r"^(?P<name>[a-z_]+)\{(?P<labels>[^}]*)\} (?P<value>[0-9.e+-]+)$", re.M)


def metric(url: str, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels`` (0 when there is none)."""
    text = httpx.get(f"{url}/metrics", headers=HEADERS, timeout=10).text
    total = 0.0
    for match in _SAMPLE.finditer(text):
        if match["name"] != name:
            continue
        found = dict(re.findall(r'([a-z_]+)="([^"]*)"', match["labels"]))
        if all(found.get(key) == value for key, value in labels.items()):
            total += float(match["value"])
    return total


def wait_for_metric(
    url: str, name: str, expected: float, timeout: float = 20.0, **labels: str
) -> float:
    """``name`` once it reaches ``expected`` (or its value at ``timeout``)."""
    deadline = time.monotonic() + timeout
    value = metric(url, name, **labels)
    while value < expected and time.monotonic() < deadline:
        time.sleep(0.1)
        value = metric(url, name, **labels)
    return value


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]
