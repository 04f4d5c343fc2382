"""``handler-kit serve`` with two workers behind one port answers MCP and the webhook alike:
stateless JSON MCP lets either worker take any request."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from example_servers import refund_gate
from handler_kit.testing import RunningServer
from tests.server.mcp.support import DENY_640, MODES, TOKEN, call, only_text, run
from tests.support.processes import REPO, clean_env, free_port, process, serve_argv


@pytest.mark.slow
def test_serve_with_two_workers_answers_mcp_and_webhook() -> None:
    port = free_port()
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN, PYTHONPATH=str(REPO))
    options = ("--workers", "2", "--log-level", "info")
    argv = serve_argv("example_servers.refund_gate:app", port, *options)
    with process(argv, env) as server_process:
        # two workers importing on a loaded CI box: a generous bound
        server_process.wait_started(workers=2, timeout=120)
        base = f"http://127.0.0.1:{port}"
        server = RunningServer(
            url=base, token=TOKEN, ca_file=None, hook_app=refund_gate.app, port=port
        )

        async def mcp_calls() -> list[str]:
            async def one(i: int) -> str:
                amount = 640 if i % 2 else 40
                args = {"tool_name": "issue_refund", "tool_input": {"amount": amount}}
                # a fresh client per call: consecutive calls land on either worker
                result = await call(server, MODES[i % 2], "refund_gate", args)
                assert result.is_error is False
                return only_text(result)

            return await asyncio.gather(*(one(i) for i in range(40)))

        texts = run(mcp_calls())
        assert texts == [DENY_640 if i % 2 else "{}" for i in range(40)]

        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            for i in range(40):
                amount = 640 if i % 2 else 40
                event = {
                    "hook_event_name": "PreToolUse",
                    "tool_name": "issue_refund",
                    "tool_input": {"amount": amount},
                }
                response = http.post("/hooks/refund_gate", json=event)
                assert response.status_code == 200
                assert response.text == (DENY_640 if i % 2 else "{}")
