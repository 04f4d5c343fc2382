"""Claude Code reaching a running server: http hooks with the token variable, the forwarder
(``install --via``) with the server up and down, ``mcp_tool`` hooks on ``/mcp``, and a tool
matcher against a real MCP server's tools."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest

from handler_kit.agents import CLAUDE_CODE, CODEX, Say, Shell, ToolCall, install_hooks, run_agent

from .conftest import TOKEN, app_source, free_port, served

pytestmark = pytest.mark.runtimes

# Claude Code connects MCP servers while the session starts, and a tool called before its server
# is connected is "No such tool available"; its own WaitForMcpServers tool waits for them.
WAIT_FOR_MCP = ToolCall("WaitForMcpServers", {})
SCENARIOS = {"scenarios.py": app_source("scenarios.py")}


def project_in(runs_dir: Path) -> Path:
    return Path(tempfile.mkdtemp(dir=runs_dir)) / "project"


def test_http_hooks_send_the_token_and_the_deny_holds(agents_dir, runs_dir) -> None:
    project = project_in(runs_dir)
    project.mkdir()
    (project / "scenarios.py").write_text(SCENARIOS["scenarios.py"])
    with served(project, "scenarios:app") as url:
        message = install_hooks(
            CLAUDE_CODE,
            "scenarios:app",
            project,
            install_args=["--base-url", url],
            python=sys.executable,
        )
        result = run_agent(
            CLAUDE_CODE,
            project,
            [Shell("touch deny-me.marker"), Say("Done.")],
            agents_dir=agents_dir,
            home=project.parent / "home",
            env={"HANDLER_KIT_TOKEN": TOKEN},
            install_message=message,
        )
        log = (project / "server.log").read_text()
    assert result.returncode == 0, result.describe()
    assert not (project / "deny-me.marker").exists(), result.describe()
    assert any("DENIED-BY-GATE" in r for r in result.tool_results()), result.describe() + log
    assert "/hooks/gate" in log or "DENIED-BY-GATE" in "".join(result.tool_results())


@pytest.mark.parametrize("agent", [CLAUDE_CODE, CODEX])
def test_the_forwarder_passes_the_servers_deny(agents_dir, runs_dir, agent: str) -> None:
    project = project_in(runs_dir)
    project.mkdir()
    (project / "scenarios.py").write_text(SCENARIOS["scenarios.py"])
    with served(project, "scenarios:app") as url:
        message = install_hooks(
            agent, "scenarios:app", project, install_args=["--via", url], python=sys.executable
        )
        result = run_agent(
            agent,
            project,
            [Shell("touch deny-me.marker"), Say("Done.")],
            agents_dir=agents_dir,
            home=project.parent / "home",
            env={"HANDLER_KIT_TOKEN": TOKEN},
            install_message=message,
        )
    assert result.returncode == 0, result.describe()
    assert not (project / "deny-me.marker").exists(), result.describe()
    assert any("DENIED-BY-GATE" in r for r in result.tool_results()), result.describe()


@pytest.mark.parametrize("agent", [CLAUDE_CODE, CODEX])
def test_the_forwarder_of_a_fail_closed_gate_denies_when_the_server_is_down(
    agents_dir, runs_dir, agent: str
) -> None:
    project = project_in(runs_dir)
    down = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    message = install_hooks(
        agent,
        "scenarios:app",
        project,
        files=SCENARIOS,
        install_args=["--via", down],
        python=sys.executable,
    )
    result = run_agent(
        agent,
        project,
        [Shell("touch server-down.marker"), Say("Done.")],
        agents_dir=agents_dir,
        home=project.parent / "home",
        env={"HANDLER_KIT_TOKEN": TOKEN},
        install_message=message,
    )
    assert result.returncode == 0, result.describe()
    assert not (project / "server-down.marker").exists(), result.describe()
    assert result.tool_results(), result.describe()


def test_mcp_tool_hooks_on_the_servers_mcp_endpoint(agents_dir, runs_dir) -> None:
    project = project_in(runs_dir)
    project.mkdir()
    (project / "scenarios.py").write_text(SCENARIOS["scenarios.py"])
    # Claude Code's own mcp_tool hook, as its documentation writes one: the hook input's
    # fields by placeholder, the tool input as a whole value.
    hook = {
        "type": "mcp_tool",
        "server": "hook-tools",
        "tool": "gate",
        "input": {
            "hook_event_name": "PreToolUse",
            "tool_name": "${tool_name}",
            "tool_input": "${tool_input}",
        },
        "timeout": 10,
    }
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}}
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps(settings))
    with served(project, "scenarios:app") as url:
        servers = {
            "hook-tools": {
                "type": "http",
                "url": f"{url}/mcp",
                "headers": {"Authorization": f"Bearer {TOKEN}"},
            }
        }
        result = run_agent(
            CLAUDE_CODE,
            project,
            [WAIT_FOR_MCP, Shell("touch deny-me.marker"), Say("Done.")],
            agents_dir=agents_dir,
            home=project.parent / "home",
            mcp_servers=servers,
        )
    report = result.describe() + "\n--- server log\n" + (project / "server.log").read_text()
    assert result.returncode == 0, report
    assert not (project / "deny-me.marker").exists(), report
    assert any("DENIED-BY-GATE" in r for r in result.tool_results()), report


def test_a_tool_matcher_catches_a_real_mcp_servers_tool(run) -> None:
    files = {
        "refunds.py": app_source("refunds.py"),
        "orders_server.py": app_source("orders_server.py"),
    }
    servers = {"orders": {"type": "stdio", "command": sys.executable, "args": ["orders_server.py"]}}
    script = [
        WAIT_FOR_MCP,
        ToolCall("mcp__orders__refund", {"order_id": "A-1", "amount": 640}),
        ToolCall("mcp__orders__refund", {"order_id": "A-2", "amount": 20}),
        Say("Done."),
    ]
    result = run(
        CLAUDE_CODE,
        script,
        app="refunds:app",
        files=files,
        mcp_servers=servers,
        allowed_tools=("mcp__orders__refund",),
    )
    assert result.returncode == 0, result.describe()
    refunds = result.project / "refunds.log"
    assert refunds.exists(), result.describe()
    assert refunds.read_text().split() == ["A-2", "20"], result.describe()
    assert any("REFUND-DENIED" in r for r in result.tool_results()), result.describe()


@pytest.mark.parametrize("agent", [CLAUDE_CODE, CODEX])
def test_the_forwarder_ignores_the_projects_own_modules(agents_dir, runs_dir, agent: str) -> None:
    # The forwarder runs in the project folder and needs nothing of it: a project module named
    # like one of the standard library's must not be imported in its place.
    project = project_in(runs_dir)
    project.mkdir()
    (project / "scenarios.py").write_text(SCENARIOS["scenarios.py"])
    with served(project, "scenarios:app") as url:
        message = install_hooks(
            agent, "scenarios:app", project, install_args=["--via", url], python=sys.executable
        )
        (project / "json.py").write_text("raise ImportError('the project json.py was imported')\n")
        result = run_agent(
            agent,
            project,
            [Shell("touch deny-me.marker"), Shell("touch plain.marker"), Say("Done.")],
            agents_dir=agents_dir,
            home=project.parent / "home",
            env={"HANDLER_KIT_TOKEN": TOKEN},
            install_message=message,
        )
    assert result.returncode == 0, result.describe()
    assert not (project / "deny-me.marker").exists(), result.describe()
    assert any("DENIED-BY-GATE" in r for r in result.tool_results()), result.describe()
    assert (project / "plain.marker").exists(), result.describe()
