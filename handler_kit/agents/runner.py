"""Run a real agent (Claude Code or Codex) headless against a scripted model, with a HookApp's
hooks installed by the real ``handler-kit install``, and report what happened.

:func:`run_app` is the whole API: it writes a throwaway project (the app's files), installs the
hooks there with ``python -m handler_kit install`` in a subprocess (:func:`install_hooks`),
starts a :class:`~handler_kit.agents.model.ScriptedModel`, runs the agent with a private home
and no network but 127.0.0.1 (a proxy at a closed local port catches anything else;
:func:`run_agent`), and returns an :class:`AgentRun`: the agent's exit code and output, the
requests that reached the model, and the project folder, where the checks look for what the
tools did. One project can serve several runs: :func:`install_hooks` once, then
:func:`run_agent` with a fresh home each time.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from handler_kit.agents.model import ModelRequest, ScriptedModel, Turn
from handler_kit.agents.versions import AGENTS, CLAUDE_CODE, CODEX, describe, executable

# The agents run with this PATH (plus the folder of the Python that runs the hooks): Codex's
# npm entry point is a Node.js script, and nothing of the caller's environment leaks in.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_TIMEOUT = 90.0
MODEL_KEY_VARIABLE = "HANDLER_KIT_SCRIPTED_MODEL_KEY"
# After the file that asks for an interrupt appears: the command that made it is still running,
# and the agent has finished starting it.
INTERRUPT_SETTLE = 0.5
# Where each agent reads its project's hooks, and the runtime name `handler-kit install` takes.
SETTINGS = {
    CLAUDE_CODE: (".claude/settings.json", "claude-code"),
    CODEX: (".codex/hooks.json", "codex"),
}


class InstallFailed(Exception):
    """``handler-kit install`` refused: its exit code and stderr."""


@dataclass(frozen=True)
class AgentRun:
    """What happened in one run of an agent."""

    agent: str
    returncode: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    requests: tuple[ModelRequest, ...]
    project: Path
    seconds: float
    install_message: str

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    @property
    def output(self) -> str:
        """What the agent printed, stdout then stderr."""
        return self.stdout + self.stderr

    def reached_model(self, text: str) -> bool:
        """Whether ``text`` appears in any request the model received."""
        return any(text in request.text for request in self.requests)

    def tool_results(self) -> list[str]:
        """Every tool result the model was sent, in order, without repeats (each request
        carries the whole conversation)."""
        seen: list[str] = []
        for request in self.requests:
            for result in request.tool_results():
                if result not in seen:
                    seen.append(result)
        return seen

    def describe(self) -> str:
        """A report for a failed check: exit, output, and what reached the model."""
        requests = "\n".join(f"  {r.path}: {r.conversation[-1500:]}" for r in self.requests)
        return (
            f"{self.agent} ({describe()}) exit {self.returncode} in {self.seconds:.1f} s\n"
            f"install: {self.install_message}\n--- stdout\n{self.stdout[-4000:]}\n"
            f"--- stderr\n{self.stderr[-4000:]}\n--- {len(self.requests)} model requests "
            f"(the end of each conversation)\n{requests}"
        )


def install_hooks(
    agent: str,
    app: str,
    project: Path,
    *,
    files: Mapping[str, str] | None = None,
    install_args: Sequence[str] = (),
    python: str = sys.executable,
) -> str:
    """Write ``files`` (relative path -> text) into ``project`` and install the hooks of
    ``app`` (``MODULE:ATTR``, importable from ``project``) there for ``agent`` with the real
    ``handler-kit install`` in a subprocess; its message. ``install_args`` go to it
    (``--base-url URL``, ``--via URL``...). Raises :class:`InstallFailed` when it refuses."""
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}; one of {', '.join(AGENTS)}")
    project.mkdir(parents=True, exist_ok=True)
    _write(project, files or {})
    return _install(agent, app, project, install_args, python)


def run_agent(
    agent: str,
    project: Path,
    script: Sequence[Turn],
    *,
    agents_dir: Path,
    home: Path,
    prompt: str = "Do the task.",
    allowed_tools: Sequence[str] = ("Bash",),
    mcp_servers: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    python: str = sys.executable,
    install_message: str = "",
    interrupt_when: str | None = None,
    command: Path | None = None,
) -> AgentRun:
    """Run ``agent`` once, headless, in ``project`` (hooks installed by :func:`install_hooks`)
    against a :class:`ScriptedModel` playing ``script``.

    ``agents_dir`` is an install folder of the pinned agents
    (:func:`handler_kit.agents.versions.install_dir`); ``home`` becomes the agent's private
    home (its settings and session files), and must not be under ``/tmp`` (Codex refuses to
    put its helpers there). ``allowed_tools`` and ``mcp_servers`` (an ``mcpServers`` table)
    are Claude Code's (``mcp_servers`` is also written into Codex's configuration, its stdio
    servers as ``[mcp_servers.NAME]``); ``env`` is added to the agent's environment, which the
    hooks inherit.
    The agent and everything it started are killed at ``timeout`` seconds.
    ``interrupt_when`` names a file of the project (one a tool command creates): once it
    exists, the agent gets SIGINT, as from Ctrl-C (Codex's Interrupt event).
    ``command`` runs that agent executable instead of the one in ``agents_dir`` (an agent the
    user installed).
    """
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}; one of {', '.join(AGENTS)}")
    if command is None:
        command = executable(agents_dir, agent)
    if not command.exists():
        raise FileNotFoundError(
            f"{command} is missing: install the pinned agents ({describe()}) with "
            "`make test-runtimes` or `python -m handler_kit.agents install --cache DIR`"
        )
    home.mkdir(parents=True, exist_ok=True)
    with ScriptedModel(script) as model:
        environment = _environment(agent, model.url, home, python, env or {})
        if agent == CLAUDE_CODE:
            argv = _claude_argv(command, prompt, allowed_tools, mcp_servers, home)
        else:
            _write_codex_config(home / ".codex", model.url, project, mcp_servers or {})
            argv = _codex_argv(command, prompt, project)
        started = time.monotonic()
        interrupt = None if interrupt_when is None else project / interrupt_when
        returncode, stdout, stderr = _run(argv, project, environment, timeout, interrupt)
        seconds = time.monotonic() - started
        requests = model.requests
    return AgentRun(agent, returncode, stdout, stderr, requests, project, seconds, install_message)


def run_app(
    agent: str,
    app: str,
    script: Sequence[Turn],
    *,
    agents_dir: Path,
    workdir: Path,
    files: Mapping[str, str] | None = None,
    install_args: Sequence[str] = (),
    after_install: Mapping[str, str] | None = None,
    python: str = sys.executable,
    **options: Any,
) -> AgentRun:
    """:func:`install_hooks` then :func:`run_agent`, in ``workdir/project`` with the home
    ``workdir/home``: one run of ``agent`` with the hooks of ``app`` and the model's ``script``.
    ``after_install`` files are written between the two (an app broken after it was
    installed); ``options`` are :func:`run_agent`'s."""
    project = workdir / "project"
    message = install_hooks(
        agent, app, project, files=files, install_args=install_args, python=python
    )
    _write(project, after_install or {})
    return run_agent(
        agent,
        project,
        script,
        agents_dir=agents_dir,
        home=workdir / "home",
        python=python,
        install_message=message,
        **options,
    )


def _write(root: Path, files: Mapping[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _install(agent: str, app: str, project: Path, args: Sequence[str], python: str) -> str:
    settings, runtime = SETTINGS[agent]
    argv = [python, "-m", "handler_kit", "install", app, "--settings", str(project / settings)]
    done = subprocess.run(
        [*argv, "--runtime", runtime, *args],
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise InstallFailed(f"handler-kit install exit {done.returncode}: {done.stderr.strip()}")
    return done.stderr.strip()


def closed_port() -> int:
    """A local port nothing listens on (bound, then released): the proxy that refuses all."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _environment(
    agent: str, model_url: str, home: Path, python: str, extra: Mapping[str, str]
) -> dict[str, str]:
    proxy = f"http://127.0.0.1:{closed_port()}"
    environment = {
        "PATH": f"{os.path.dirname(python)}:{SYSTEM_PATH}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "HTTP_PROXY": proxy,
        "HTTPS_PROXY": proxy,
        "http_proxy": proxy,
        "https_proxy": proxy,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    if agent == CLAUDE_CODE:
        environment |= {
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "ANTHROPIC_BASE_URL": model_url,
            "ANTHROPIC_API_KEY": "scripted-model",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }
    else:
        environment |= {"CODEX_HOME": str(home / ".codex"), MODEL_KEY_VARIABLE: "scripted-model"}
    return environment | dict(extra)


def _claude_argv(
    command: Path,
    prompt: str,
    allowed_tools: Sequence[str],
    mcp_servers: Mapping[str, Any] | None,
    home: Path,
) -> list[str]:
    argv = [str(command), "-p", prompt, "--output-format", "stream-json", "--verbose"]
    argv += ["--debug-file", str(home / "claude-debug.log")]
    if allowed_tools:
        argv += ["--allowedTools", ",".join(allowed_tools)]
    if mcp_servers is not None:
        argv += ["--mcp-config", json.dumps({"mcpServers": dict(mcp_servers)})]
        argv += ["--strict-mcp-config"]
    return argv


def _codex_argv(command: Path, prompt: str, project: Path) -> list[str]:
    return [
        str(command),
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "--dangerously-bypass-hook-trust",
        "--color",
        "never",
        "-C",
        str(project),
        prompt,
    ]


def _toml(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string for these values


def _codex_mcp_servers(servers: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    for name, server in servers.items():
        lines += [f"[mcp_servers.{_toml(name)}]", f"command = {_toml(server['command'])}"]
        lines += [f"args = [{', '.join(_toml(a) for a in server.get('args', []))}]", ""]
    return lines


def _write_codex_config(
    codex_home: Path, model_url: str, project: Path, mcp_servers: Mapping[str, Any]
) -> None:
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        "\n".join(
            [
                'model = "handler-kit-scripted"',
                'model_provider = "scripted"',
                'approval_policy = "never"',
                'sandbox_mode = "danger-full-access"',
                "check_for_update_on_startup = false",
                "",
                "[model_providers.scripted]",
                'name = "scripted"',
                f"base_url = {_toml(model_url + '/v1')}",
                f"env_key = {_toml(MODEL_KEY_VARIABLE)}",
                'wire_api = "responses"',
                "",
                "[features]",
                "hooks = true",
                "plugins = false",
                "apps = false",
                "",
                "[analytics]",
                "enabled = false",
                "",
                f"[projects.{_toml(str(project))}]",
                'trust_level = "trusted"',
                "",
                *_codex_mcp_servers(mcp_servers),
            ]
        ),
        encoding="utf-8",
    )


def _run(
    argv: list[str],
    cwd: Path,
    environment: Mapping[str, str],
    timeout: float,
    interrupt: Path | None = None,
) -> tuple[int | None, str, str]:
    # A session of its own, so that a timeout ends the agent with its hook processes.
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(environment),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    if interrupt is not None:
        threading.Thread(
            target=_interrupt_when, args=(process, interrupt, timeout), daemon=True
        ).start()
    try:
        stdout, stderr = process.communicate(timeout=timeout)
        return process.returncode, stdout, stderr
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        return None, stdout, stderr


def _interrupt_when(process: subprocess.Popen[str], path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        if path.exists():
            time.sleep(INTERRUPT_SETTLE)
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
            return
        time.sleep(0.1)
