"""docs/rollout.md, run as a reader runs it from a checkout: each command in order, with the
servers it starts (``# runs until Ctrl-C``) stopped at the end of their section, and each
command's output compared with what the page shows (event ids and times aside)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.docs.pages import REPO, page
from tests.support.processes import clean_env, free_port

LONG_RUNNING = "# runs until Ctrl-C"
STEP_TIMEOUT = 120.0
# what differs from run to run: ids and times
_VARIABLE = (
    (re.compile(r"evt_[0-9a-f]{32}"), "evt_<id>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"), "<time>"),
)


def _normal(text: str) -> str:
    for pattern, replacement in _VARIABLE:
        text = pattern.sub(replacement, text)
    return text.rstrip("\n")


def _sections(text: str) -> list[tuple[str, str]]:
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts), 2)]


def _steps(body: str) -> list[tuple[str, str]]:
    """(command, the output shown under it) of each ``$`` line of the section's console
    blocks."""
    steps: list[tuple[str, str]] = []
    for block in re.findall(r"```console\n(.*?)```", body, re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], ""))
            else:
                command, shown = steps[-1]
                steps[-1] = (command, f"{shown}{line}\n")
    return steps


def _wait_listening(port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert server.poll() is None, log.read_text()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"not listening on {port}:\n{log.read_text()}")


@pytest.mark.slow
def test_the_rollout_runs_as_written(tmp_path: Path) -> None:
    text = page("rollout.md")
    sections = _sections(text)
    assert [h.split(".")[0] for h, _ in sections] == ["1", "2", "3", "4"]
    assert sections[2][0] == "3. Shadow" and "<!-- section:shadow -->" in sections[2][1]
    # a checkout, without its outputs: the examples, the rest of the repository out of reach
    (tmp_path / "example_servers").symlink_to(REPO / "example_servers")
    env = clean_env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    ports: dict[str, int] = {}
    ran = 0
    for heading, body in sections:
        servers: list[subprocess.Popen[bytes]] = []
        try:
            for command, shown in _steps(body):
                for port in re.findall(r"\b(88\d\d)\b", command):
                    ports.setdefault(port, free_port())
                    command = command.replace(port, str(ports[port]))
                if command.startswith("export "):
                    name, _, value = command[len("export ") :].partition("=")
                    env[name] = shlex.split(value)[0]
                    continue
                if command.endswith(LONG_RUNNING):
                    log = tmp_path / f"server-{len(servers)}-{heading[:1]}.log"
                    with log.open("wb") as sink:
                        server = subprocess.Popen(
                            ["bash", "-c", f"exec {command}"],
                            cwd=tmp_path,
                            env=env,
                            stdout=sink,
                            stderr=subprocess.STDOUT,
                        )
                    servers.append(server)
                    match = re.search(r"--port (\d+)", command)
                    assert match
                    _wait_listening(int(match.group(1)), server, log)
                    continue
                done = subprocess.run(
                    ["bash", "-c", command],
                    cwd=tmp_path,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    timeout=STEP_TIMEOUT,
                )
                ran += 1
                assert _normal(done.stdout) == _normal(shown), (heading, command, done.stdout)
        finally:
            for server in servers:  # Ctrl-C: the audit trail is written as it stops
                server.send_signal(2)
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
    assert ran == 10
