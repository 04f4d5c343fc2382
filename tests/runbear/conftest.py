"""What the Runbear tests generate and validate documents from: the reference's own hooks
document, an app whose handlers each hit a rule of the generator, and the refund gate served
once per test module for the documents' end-to-end runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from example_servers import refund_gate
from handler_kit import HookApp, PostToolUse, SessionStart, Stop, UserPromptSubmit
from handler_kit.testing import RunningServer, running_server

TOKEN = "doc-test-token-0123456789abcdef"


@pytest.fixture
def spec_document() -> dict[str, Any]:
    """The reference's hooks document, as PUT takes it (a new copy for each test)."""
    return {
        "hooks": {
            "SessionStart": [
                {
                    "hooks": [
                        {
                            "type": "mcp_tool",
                            "server": "context-server",
                            "tool": "load_user_context",
                            "input": {
                                "slack_user_id": "${channel_user_id}",
                                "first_user_message": "${prompt}",
                            },
                        }
                    ]
                }
            ],
            "UserPromptSubmit": [
                {
                    "hooks": [
                        {
                            "type": "http",
                            "url": "https://hooks.example.com/runbear",
                            "headers": {"Authorization": "Bearer …"},
                            "timeout": 3,
                            "failClosed": True,
                        }
                    ]
                }
            ],
        }
    }


@pytest.fixture
def mixed_app() -> HookApp:
    """A HookApp whose handlers each meet a rule of the generator: timeouts to round up, a
    fail-closed gate, a matcher, and an event Runbear does not run."""
    hooks = HookApp("mixed")

    @hooks.session_start(matcher="startup", timeout=2.5)
    def hello(event: SessionStart) -> str:
        return "hi"

    @hooks.user_prompt_submit(fail_closed=True, timeout=0.4)
    def screen(event: UserPromptSubmit) -> None:
        return None

    @hooks.post_tool_use()
    def note(event: PostToolUse) -> None:
        return None

    @hooks.stop(timeout=10)
    def check(event: Stop) -> None:
        return None

    @hooks.on("PermissionRequest")
    def permissions(event: Any) -> None:
        return None

    return hooks


@pytest.fixture(scope="module")
def refund_server() -> Iterator[RunningServer]:
    with running_server(refund_gate.app, tokens=[TOKEN]) as server:
        yield server
