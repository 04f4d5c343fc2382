"""HookClient: in-process (through the app's real ASGI stack) and URL (real HTTPS) modes give
the same answers, typed."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from handler_kit import (
    HookApp,
    PostToolUse,
    PreToolUse,
    Stop,
    UserPromptSubmit,
    deny,
)
from handler_kit.config import ServerConfig
from handler_kit.core.outputs import OutputError
from handler_kit.testing import HookClient, HookResult, running_server
from tests.support.apps.client import app as hooks

EVENTS: list[tuple[dict[str, Any] | Any, str | None]] = [
    ({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}, None),
    ({"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {}}, None),
    ({"hook_event_name": "UserPromptSubmit", "prompt": "hello", "user_name": "Dana"}, None),
    ({"hook_event_name": "UserPromptSubmit", "prompt": "forbidden topic"}, None),
    ({"hook_event_name": "UserPromptSubmit", "prompt": "hi"}, "prompt_policy"),
    ({"hook_event_name": "PostToolUse", "tool_name": "boom"}, None),  # 500
    ({"hook_event_name": "Stop", "stop_hook_active": True}, "add_flag"),  # 400 event mismatch
    ({"tool_name": "Bash"}, None),  # 400 missing hook_event_name
    ({"hook_event_name": "PreToolUse", "tool_name": "Bash"}, "nope"),  # 404
    (PreToolUse(hook_event_name="PreToolUse", tool_name="Bash", tool_input={"a": 1}), None),
    (Stop(hook_event_name="Stop", last_assistant_message="done"), None),
]


def comparable(result: HookResult) -> tuple:
    return (
        result.status_code,
        result.json,
        result.decision,
        result.reason,
        result.context,
        result.updated_input,
        result.no_opinion,
    )


@pytest.mark.parametrize(("event", "handler"), EVENTS)
def test_in_process_and_url_modes_agree(clients, event, handler):
    in_process, over_https = clients
    local = in_process.send(event, handler=handler)
    remote = over_https.send(event, handler=handler)
    assert comparable(local) == comparable(remote)


def test_results_read_like_a_runtime(clients):
    in_process, _ = clients
    rewritten = in_process.send(EVENTS[0][0])
    assert rewritten.decision == "allow"
    assert rewritten.updated_input == {"command": "ls", "safe": True}
    assert not rewritten.no_opinion
    assert in_process.send(EVENTS[1][0]).no_opinion
    context = in_process.send(EVENTS[2][0])
    assert context.context == "user: Dana" and context.decision is None
    blocked = in_process.send(EVENTS[3][0])
    assert (blocked.decision, blocked.reason) == ("block", "Not here.")
    failed = in_process.send({"hook_event_name": "PostToolUse", "tool_name": "boom"})
    assert failed.status_code == 500 and failed.output is None and not failed.no_opinion
    assert failed.json["error"] == "handler_failed"


def test_typed_events_keep_extra_fields(clients):
    _, over_https = clients
    event = UserPromptSubmit(
        hook_event_name="UserPromptSubmit", prompt="hello", user_name="Ana", brand_new="x"
    )
    assert over_https.send(event).context == "user: Ana"


def test_event_header_can_be_left_out_or_overridden(clients):
    in_process, over_https = clients
    event = {"hook_event_name": "UserPromptSubmit", "prompt": "hi", "user_name": "Bo"}
    for client in (in_process, over_https):
        assert client.send(event, event_header=False).context == "user: Bo"
        mismatch = client.send(
            event, event_header=False, headers={"X-Runbear-Hook-Event": "PreToolUse"}
        )
        assert mismatch.status_code == 400 and mismatch.json["error"] == "event_mismatch"


def test_for_app_with_a_config_and_the_refund_gate(refund_app: HookApp):
    token = "configured-token-0123456789"
    config = ServerConfig(tokens=[token], require_event_header=True)
    with HookClient.for_app(refund_app, config=config) as client:
        result = client.send(
            {
                "hook_event_name": "PreToolUse",
                "tool_name": "issue_refund",
                "tool_input": {"amount": 640},
            }
        )
        assert result.reason == "Refunds over $500 need a human approver."
        missing = client.send({"hook_event_name": "Stop"}, event_header=False)
        assert missing.status_code == 400


def test_for_url_with_a_wrong_token_sees_401():
    with (
        running_server(hooks, tls=True) as server,
        HookClient.for_url(server.url, token="wrong-token-0123456789", ca_file=server.ca_file) as c,
    ):
        result = c.send(EVENTS[0][0])
        assert result.status_code == 401 and result.json["error"] == "unauthorized"
        assert result.output is None


# -- crashes and misspelt events --------------------------------------------------------------

crashing = HookApp("crashing")
both_in_flight = threading.Barrier(2, timeout=10)


@crashing.post_tool_use(matcher="boom")
def crashes(event: PostToolUse):
    raise RuntimeError("the audit store is down")


@crashing.pre_tool_use(matcher="issue_refund", fail_closed=True)
async def refund_gate(event: PreToolUse):
    raise KeyError("amount")


@crashing.stop()
def wrong_answer(event: Stop):
    return deny("Stop cannot carry a deny")


@crashing.post_tool_use(matcher="together_ok|together_boom")
def together(event: PostToolUse):
    both_in_flight.wait()  # the two requests of the concurrency test are answered at once
    if event.tool_name == "together_boom":
        raise RuntimeError("only mine")
    return "fine"


POST_BOOM = {"hook_event_name": "PostToolUse", "tool_name": "boom"}
REFUND = {"hook_event_name": "PreToolUse", "tool_name": "issue_refund", "tool_input": {}}


def test_in_process_a_handler_exception_is_raised_in_the_test() -> None:
    with HookClient.for_app(crashing) as client:
        with pytest.raises(RuntimeError, match="the audit store is down"):
            client.send(POST_BOOM)
        # whatever the failure policy: a fail-closed gate's crash is still a crash
        with pytest.raises(KeyError, match="amount"):
            client.send(REFUND)
        with pytest.raises(OutputError, match="Stop"):
            client.send({"hook_event_name": "Stop"})
        # the client goes on working, and an answer that is not a crash is read as before
        assert client.send({**POST_BOOM, "tool_name": "other"}).no_opinion


def test_raise_handler_exceptions_false_reads_the_answer_the_server_sends() -> None:
    with (
        HookClient.for_app(crashing, raise_handler_exceptions=False) as in_process,
        running_server(crashing) as server,
        HookClient.for_url(server.url, token=server.token) as over_http,
    ):
        for client in (in_process, over_http):  # the server's answers are the same for both
            failed = client.send(POST_BOOM)
            assert failed.status_code == 500 and failed.json["error"] == "handler_failed"
            gate = client.send(REFUND)
            assert gate.decision == "deny" and "configured to fail closed" in (gate.reason or "")


def test_a_handler_exception_is_raised_for_its_own_request_only() -> None:
    """Two threads share one client: the crash is raised in the thread whose request hit it."""
    outcomes: dict[str, object] = {}

    def send(tool_name: str) -> None:
        try:
            outcomes[tool_name] = client.send({**POST_BOOM, "tool_name": tool_name}).context
        except Exception as exc:
            outcomes[tool_name] = exc

    with HookClient.for_app(crashing) as client:
        threads = [
            threading.Thread(target=send, args=(n,)) for n in ("together_ok", "together_boom")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    assert outcomes["together_ok"] == "fine"
    assert isinstance(outcomes["together_boom"], RuntimeError)
    assert str(outcomes["together_boom"]) == "only mine"


def test_an_unknown_event_name_is_a_value_error_naming_it_and_the_events() -> None:
    with (
        HookClient.for_app(crashing) as in_process,
        running_server(crashing) as server,
        HookClient.for_url(server.url, token=server.token) as over_http,
    ):
        for client in (in_process, over_http):
            with pytest.raises(ValueError) as caught:
                client.send({"hook_event_name": "PreToolUsee", "tool_name": "issue_refund"})
            message = str(caught.value)
            assert "'PreToolUsee'" in message and "did you mean 'PreToolUse'" in message
            assert "SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop" in message
            # no name at all is the server's to refuse, loudly
            assert client.send({"tool_name": "x"}).status_code == 400
