"""The real agents (Claude Code, Codex) run headless against a scripted model, with hooks
installed by ``handler-kit install``: ``make test-runtimes``, which installs the pinned agents
(handler_kit/agents/versions.py) outside the repository and names the folder in
``HANDLER_KIT_AGENTS_DIR``. Not part of ``make test``: these tests are marked ``runtimes``,
which the default run deselects. Missing agents fail every test, with how to get them; nothing
skips.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from handler_kit.agents import AgentRun, Turn, install_hooks, run_agent, run_app
from handler_kit.agents.versions import AGENTS, describe, executable

# A cases file of wrong expectations, for `handler-kit test --runtime`'s failure report: it
# fails by design, so the hookcases_* collector of `make test` must not run it as tests.
collect_ignore = ["data/hookcases_refund_gate_wrong.yaml"]

APPS = Path(__file__).parent / "apps"
AGENTS_DIR_VARIABLE = "HANDLER_KIT_AGENTS_DIR"


def pytest_report_header() -> str:
    return f"agents: {describe()} from {os.environ.get(AGENTS_DIR_VARIABLE, '(not set)')}"


@pytest.fixture(scope="session")
def agents_dir() -> Path:
    value = os.environ.get(AGENTS_DIR_VARIABLE)
    if not value:
        pytest.fail(
            f"{AGENTS_DIR_VARIABLE} is not set: run `make test-runtimes`, which installs the "
            f"pinned agents ({describe()}) and sets it"
        )
    folder = Path(value)
    missing = [str(executable(folder, a)) for a in AGENTS if not executable(folder, a).exists()]
    if missing:
        pytest.fail(
            f"the pinned agents are not installed: {', '.join(missing)} missing; run "
            "`make test-runtimes`"
        )
    return folder


def app_source(name: str) -> str:
    return (APPS / name).read_text(encoding="utf-8")


Runner = Callable[..., AgentRun]


@pytest.fixture(scope="session")
def runs_dir(agents_dir: Path) -> Iterator[Path]:
    """Work folders of this session, under the agents folder (Codex refuses a home under /tmp),
    removed at the end."""
    runs = agents_dir / "runs"
    runs.mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=runs))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def scenario_projects(runs_dir: Path) -> dict[str, tuple[Path, str]]:
    """One project per agent with the scenario app installed, made on first use: installing
    costs two Python start-ups, and the projects are reused by every run that does not change
    the app (each run gets a fresh home, and the markers are cleared)."""
    return {}


@pytest.fixture
def run(agents_dir: Path, runs_dir: Path, scenario_projects: dict[str, tuple[Path, str]]) -> Runner:
    """``run(agent, script, **options)``: one run of an agent. Without ``app``, ``files``,
    ``install_args`` or ``after_install``, in the shared project of the scenario app
    (``scenarios:app``); with any of them, in a project of its own."""

    def go(agent: str, script: Sequence[Turn], **options: Any) -> AgentRun:
        workdir = Path(tempfile.mkdtemp(dir=runs_dir))
        options.setdefault("timeout", 90)
        own = {"app", "files", "install_args", "after_install"}
        if own & options.keys():
            app = options.pop("app", "scenarios:app")
            options.setdefault("files", {"scenarios.py": app_source("scenarios.py")})
            return run_app(
                agent,
                app,
                script,
                agents_dir=agents_dir,
                workdir=workdir,
                python=sys.executable,
                **options,
            )
        if agent not in scenario_projects:
            project = runs_dir / f"{agent}-scenarios"
            message = install_hooks(
                agent,
                "scenarios:app",
                project,
                files={"scenarios.py": app_source("scenarios.py")},
                python=sys.executable,
            )
            scenario_projects[agent] = (project, message)
        project, message = scenario_projects[agent]
        for marker in project.glob("*.marker"):
            marker.unlink()
        return run_agent(
            agent,
            project,
            script,
            agents_dir=agents_dir,
            home=workdir / "home",
            python=sys.executable,
            install_message=message,
            **options,
        )

    return go


@pytest.fixture(params=AGENTS)
def agent(request: pytest.FixtureRequest) -> str:
    return str(request.param)


TOKEN = "runtime-scenarios-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@contextlib.contextmanager
def served(project: Path, app: str, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """``handler-kit serve APP`` in ``project`` on 127.0.0.1 with the bearer token ``TOKEN``
    (``env`` added to its environment); its base URL once ``/readyz`` answers."""
    port = free_port()
    log = (project / "server.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "handler_kit", "serve", app, "--port", str(port)],
        cwd=project,
        env={
            **os.environ,
            "HANDLER_KIT_TOKENS": TOKEN,
            "HANDLER_KIT_HOST": "127.0.0.1",
            **(env or {}),
        },
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"handler-kit serve did not start: {(project / 'server.log').read_text()}"
                )
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
