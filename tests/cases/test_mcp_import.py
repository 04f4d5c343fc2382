"""``handler-kit test`` answers cases through the webhook, so it never imports the MCP SDK (the
largest part of a short run's start-up); a server with MCP on still imports it when it is made
(an SDK that cannot load stops the start, not the first tool call) and serves its tools."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from handler_kit.testing import RunningServer
from tests.cases.support import APP, PASSING, write_json
from tests.support.apps.cases import app as cases_app
from tests.support.processes import REPO, clean_env

# the command in a fresh interpreter, then what it had imported, as the last line of stderr
RUN_CLI = """\
import json, sys
from handler_kit.cli import main
code = main(sys.argv[1:])
mcp = sorted(m for m in sys.modules if m.partition(".")[0] == "mcp" or ".server.mcp" in m)
server = "handler_kit.server.app" in sys.modules
sys.stderr.write(json.dumps({"code": code, "mcp": mcp, "server": server}))
"""

MAKE_APP = """\
import json, sys
from handler_kit.config import ServerConfig
from handler_kit.server.app import create_asgi_app
from tests.support.apps.cases import app
create_asgi_app(app, ServerConfig(tokens=["t" * 32], mcp=sys.argv[1] == "on"))
print(json.dumps("mcp" in sys.modules))
"""


def python(script: str, *args: str | Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        cwd=REPO,
        env=env if env is not None else clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + "\n" + done.stderr


def cli_imports(*args: str | Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    output = python(RUN_CLI, "test", *args, env=env)
    result: dict[str, Any] = json.loads(output.splitlines()[-1])
    assert result["code"] == 0, output
    return result


def test_cases_in_process_import_no_mcp(tmp_path: Path) -> None:
    cases = write_json(tmp_path / "shell.json", PASSING)
    result = cli_imports(cases, "--app", APP)
    # answered through the app's real server stack, without its MCP endpoint
    assert result == {"code": 0, "mcp": [], "server": True}


def test_cases_over_the_webhook_import_no_mcp(cases_server: RunningServer, tmp_path: Path) -> None:
    cases = write_json(tmp_path / "shell.json", PASSING)
    env = clean_env(HANDLER_KIT_TOKEN=cases_server.token)
    result = cli_imports(cases, "--url", cases_server.url, env=env)
    assert result["mcp"] == []


def test_a_server_with_mcp_imports_the_sdk_when_it_is_made() -> None:
    assert json.loads(python(MAKE_APP, "on").split()[0]) is True
    assert json.loads(python(MAKE_APP, "off").split()[0]) is False


def test_mcp_is_still_served(cases_server: RunningServer) -> None:
    async def tools() -> list[str]:
        headers = {"Authorization": f"Bearer {cases_server.token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30)) as http:
            transport = streamable_http_client(cases_server.mcp_url, http_client=http)
            async with Client(transport) as client:
                listed = await client.list_tools()
                called = await client.call_tool(
                    "sandbox", {"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}
                )
        assert "rm -rf is not allowed" in called.content[0].text  # type: ignore[union-attr]
        return [tool.name for tool in listed.tools]

    assert sorted(asyncio.run(tools())) == sorted(h.name for h in cases_app.handlers)
