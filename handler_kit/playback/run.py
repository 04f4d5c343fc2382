"""Playing a case file through a real agent: one throwaway project per file, the hooks
installed there by ``handler-kit install``, one headless run of the agent per played case,
each with a fresh private home."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from handler_kit.agents.runner import SYSTEM_PATH, AgentRun, install_hooks, run_agent
from handler_kit.agents.versions import PACKAGES, install_dir
from handler_kit.cases.comparison import NO_ANSWER, NOT_PLAYED, Mismatch
from handler_kit.cases.files import CaseFile
from handler_kit.cases.model import Case
from handler_kit.cases.report import CaseResult, Verdict
from handler_kit.playback.judge import Seen, judge, offered
from handler_kit.playback.plan import NotPlayed, Play, plan
from handler_kit.playback.stub import STUB_FILE, STUB_SOURCE, mcp_servers, recorded_calls

AGENT_TIMEOUT = 120.0
OWN_FILES = "_handler_kit_"  # the start of the names of the stub's files


class AgentNotFound(Exception):
    """No agent executable: the message says how to get one."""


def find_agent(agent: str, binary: str | None, which: Callable[[str], str | None]) -> Path:
    """The agent's executable: ``binary`` when given, else its command on PATH (``which``)."""
    package, version, command = PACKAGES[agent]
    if binary is not None:
        path = Path(binary).expanduser()
        if not path.is_file():
            raise AgentNotFound(f"--binary {binary}: no such file")
        return path.absolute()
    found = which(command)
    if found is not None:
        return Path(found).absolute()
    cached = install_dir(Path("~/.cache/handler-kit/agents")) / "node_modules" / ".bin" / command
    raise AgentNotFound(
        f"{command} ({agent}) is not on PATH: give --binary PATH, e.g. the one `make "
        f"test-runtimes` installs ({cached}), or install it with `npm install -g "
        f"{package}@{version}`"
    )


@dataclass
class Player:
    """Plays case files through ``agent`` (the executable ``command``); work folders go under
    ``work`` (not ``/tmp``: Codex refuses to put its helpers there)."""

    agent: str
    command: Path
    work: Path
    source: Path  # the folder the app imports from (the current directory)
    python: str = sys.executable
    timeout: float = AGENT_TIMEOUT

    def play_file(self, case_file: CaseFile, app: str) -> list[CaseResult]:
        plays = [(case, plan(case, self.agent)) for case in case_file.cases]
        if all(isinstance(p, NotPlayed) for _, p in plays):
            return [
                _not_played(case_file, case, p) for case, p in plays if isinstance(p, NotPlayed)
            ]
        self.work.mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix="hk-test-", dir=self.work))
        try:
            project = workdir / "project"
            project.mkdir()
            self._link_app(app, project)
            (project / STUB_FILE).write_text(STUB_SOURCE, encoding="utf-8")
            message = install_hooks(self.agent, app, project, python=self.python)
            results: list[CaseResult] = []
            for number, (case, p) in enumerate(plays):
                if isinstance(p, NotPlayed):
                    results.append(_not_played(case_file, case, p))
                    continue
                home = workdir / f"home-{number}"
                results.append(self._play(case_file, case, p, project, home, message))
            return results
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _link_app(self, app: str, project: Path) -> None:
        # The hooks import the app in the project folder, as from the user's: each entry of
        # the user's folder is linked there (the app's module and what it imports beside it),
        # but not the hidden ones, where the user's own agent settings are, nor files named
        # like the run's own, which the run writes.
        for entry in self.source.iterdir():
            if not entry.name.startswith((".", OWN_FILES)) and not (project / entry.name).exists():
                (project / entry.name).symlink_to(entry)

    def _play(
        self, case_file: CaseFile, case: Case, play: Play, project: Path, home: Path, message: str
    ) -> CaseResult:
        started = time.perf_counter()
        for old in project.glob("_handler_kit_calls*"):
            old.unlink()
        servers = None
        if play.server is not None and play.tool is not None:
            servers = mcp_servers(play.server, play.tool, project, self.python)
        run = run_agent(
            self.agent,
            project,
            play.script,
            agents_dir=self.command.parent,
            home=home,
            prompt=play.prompt,
            allowed_tools=() if play.tool_name is None else (play.tool_name,),
            mcp_servers=servers,
            timeout=self.timeout,
            python=self.python,
            install_message=message,
            command=self.command,
            # the agent's folder too: an npm install's node is often beside it (nvm)
            env={"PATH": f"{os.path.dirname(self.python)}:{self.command.parent}:{SYSTEM_PATH}"},
        )
        seconds = time.perf_counter() - started
        failure = _failure(run)
        if failure is None and play.tool_name and not offered(run.requests, play.tool_name):
            failure = (
                f"{run.agent} never offered the model {play.tool_name}: the stub MCP server "
                "did not connect"
            )
        if failure is not None:
            mismatch = Mismatch(NO_ANSWER, "an answer", failure)
            return CaseResult(case_file, case, "error", (mismatch,), seconds)
        seen = Seen(run.requests, tuple(recorded_calls(project)), run.output)
        mismatches = tuple(judge(case, play, seen))
        verdict: Verdict = "failed" if mismatches else "passed"
        return CaseResult(case_file, case, verdict, mismatches, seconds)


def _not_played(case_file: CaseFile, case: Case, why: NotPlayed) -> CaseResult:
    return CaseResult(case_file, case, "not_played", (Mismatch(NOT_PLAYED, "", why.why),))


def _failure(run: AgentRun) -> str | None:
    """Why the run shows nothing to compare, if it does not: the agent timed out or failed."""
    tail = " ".join(run.stderr.split()[-40:])
    if run.timed_out:
        return f"{run.agent} did not finish within its time limit; stderr: {tail}"
    if run.returncode != 0:
        return f"{run.agent} exited {run.returncode}; stderr: {tail}"
    return None
