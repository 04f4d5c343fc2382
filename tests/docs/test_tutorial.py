"""docs/tutorial.md, run as a reader runs it: in a fresh virtualenv and an empty folder, each
file written and each command run in order, the long-running ones (``# runs until Ctrl-C``)
started and waited for until their section ends. It ends with a gate that is tested,
installed into Claude Code's settings and served with tokens and an audit trail.

The virtualenv is new, and handler-kit is installed into it with pip: the wheel built from this
checkout (``checkout_wheel``, built once per run with the build backend from the package index,
as pip builds a source distribution for a user), with ``--no-deps``: the dependencies are found
in the test run's own environment, through a ``.pth`` file."""

from __future__ import annotations

import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.docs.pages import page
from tests.support.processes import clean_env, free_port

LONG_RUNNING = "# runs until Ctrl-C"
START_TIMEOUT = 60.0
STEP_TIMEOUT = 120.0


def _fresh_venv(where: Path, wheel: Path) -> Path:
    """A new virtualenv with handler-kit pip-installed from the wheel of this checkout."""
    venv = where / ".venv"
    subprocess.run(
        [
            getattr(sys, "_base_executable", sys.executable),
            "-m",
            "venv",
            "--without-pip",
            str(venv),
        ],
        check=True,
        timeout=STEP_TIMEOUT,
    )
    site = next((venv / "lib").glob("python*/site-packages"))
    ours = next(Path(p) for p in sys.path if p.endswith("site-packages") and "venv" in p)
    # the dependencies (and pip), from this run's environment: processed as a site folder,
    # after the new virtualenv's own, so the handler-kit installed below is the one imported
    (site / "zz_test_dependencies.pth").write_text(f"import site; site.addsitedir({str(ours)!r})\n")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
    subprocess.run([*pip, str(wheel)], check=True, timeout=STEP_TIMEOUT, capture_output=True)
    return venv


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of each ``## `` section, in order."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts), 2)]


def _wait_listening(port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        assert server.poll() is None, log.read_text()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"not listening on {port}:\n{log.read_text()}")


@pytest.mark.slow
def test_the_tutorial_runs_as_written(tmp_path: Path, checkout_wheel: Path) -> None:
    text = page("tutorial.md")
    project = tmp_path / "first-policy"
    project.mkdir()
    venv = _fresh_venv(project, checkout_wheel)
    env = clean_env()
    env.pop("PYTHONPATH", None)
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}:{env['PATH']}")
    ports: dict[str, int] = {}
    outputs: list[str] = []
    sections = _sections(text)
    assert [h.split(".")[0] for h, _ in sections] == ["1", "2", "3", "4", "5", "6", "7"]
    # the setup before the first step: the virtualenv is made above, from this checkout
    assert "$ pip install handler-kit" in text.split("## 1.")[0]
    for heading, body in sections:
        servers: list[subprocess.Popen[bytes]] = []
        try:
            for info, content in re.findall(r"```(\w+[^\n]*)\n(.*?)```", body, re.S):
                title = re.search(r'title="([^"]+)"', info)
                if title:
                    (project / title.group(1)).write_text(content)
                    continue
                if not info.startswith("console"):
                    continue
                for line in content.splitlines():
                    if not line.startswith("$ "):
                        continue
                    command = line[2:]
                    # each port of the page becomes a free one of this machine
                    for port in re.findall(r"\b(88\d\d)\b", command):
                        ports.setdefault(port, free_port())
                        command = command.replace(port, str(ports[port]))
                    if command.startswith("export "):
                        name, _, value = command[len("export ") :].partition("=")
                        env[name] = shlex.split(value)[0]
                        continue
                    if command.endswith(LONG_RUNNING):
                        log = project / f"server-{len(outputs)}.log"
                        with log.open("wb") as sink:
                            server = subprocess.Popen(
                                ["bash", "-c", f"exec {command}"],
                                cwd=project,
                                env=env,
                                stdout=sink,
                                stderr=subprocess.STDOUT,
                            )
                        servers.append(server)
                        port = int(re.search(r"--port (\d+)", command).group(1))
                        _wait_listening(port, server, log)
                        outputs.append(log.read_text())
                        continue
                    done = subprocess.run(
                        ["bash", "-c", command],
                        cwd=project,
                        env=env,
                        capture_output=True,
                        text=True,
                        timeout=STEP_TIMEOUT,
                    )
                    assert done.returncode == 0, (heading, command, done.stdout, done.stderr)
                    outputs.append(done.stdout)
            if heading.startswith("7."):
                port = ports["8804"]
                login = httpx.get(f"http://127.0.0.1:{port}/_inspector", timeout=10)
                assert login.status_code in (200, 303, 307), login.text
        finally:
            for server in servers:
                server.terminate()
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()

    # the end state: installed, tested, served with an audit trail
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert "policy:app" in json.dumps(settings["hooks"]["PreToolUse"])
    command_answer = next(o for o in outputs if '"permissionDecision"' in o)
    assert json.loads(command_answer)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert sum("2 passed, 0 failed" in o for o in outputs) == 3, outputs
    dev_banner = next(o for o in outputs if "Bearer token:" in o)
    assert "/_inspector/login?code=" in dev_banner
    with sqlite3.connect(project / "audit.db") as audit:
        tables = [r[0] for r in audit.execute("select name from sqlite_master where type='table'")]
        assert any(audit.execute(f"select count(*) from {t}").fetchone()[0] >= 2 for t in tables)
    assert os.path.isfile(venv / "bin" / "handler-kit")
