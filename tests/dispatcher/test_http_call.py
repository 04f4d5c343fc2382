"""http handlers, rule by rule, against a real HTTPS server on 127.0.0.1 (trustme CA)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from handler_kit.dispatcher import DocumentError
from handler_kit.dispatcher import http_call as http_call_module
from tests.support.dispatch import ScriptServer, context, document, http, permission

PRE = {
    "hook_event_name": "PreToolUse",
    "session_id": "s1",
    "thread_id": "s1",
    "tool_name": "issue_refund",
    "tool_input": {"order_id": "4821", "amount": 640},
    "tool_use_id": "toolu_01",
}
PROMPT = {"hook_event_name": "UserPromptSubmit", "thread_id": "t1", "prompt": "refund?"}


def test_http_handler_receives_the_input_as_a_json_post_with_event_and_configured_headers(
    scripted: ScriptServer, dispatcher_for
) -> None:
    url = scripted.url("gate")
    headers = {"Authorization": "Bearer s3cret", "X-Team": "support"}
    outcome = dispatcher_for(document("PreToolUse", http(url, headers=headers))).dispatch_sync(PRE)
    assert outcome.statuses == ["ok"]
    (request,) = scripted.named("gate")
    assert request.body == PRE
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-runbear-hook-event"] == "PreToolUse"
    assert request.headers["authorization"] == "Bearer s3cret"
    assert request.headers["x-team"] == "support"


def test_2xx_with_a_json_object_body_carries_a_result(scripted, dispatcher_for) -> None:
    answer = permission("deny", "Refunds over $500 need a human approver.")
    for status in (200, 201, 299):
        url = scripted.url("gate", status=status, body=answer)
        outcome = dispatcher_for(document("PreToolUse", http(url))).dispatch_sync(PRE)
        assert outcome.decision == "deny", status
        assert outcome.reason == "Refunds over $500 need a human approver."


def test_2xx_with_an_empty_body_is_a_successful_noop(scripted, dispatcher_for) -> None:
    for status in (200, 204):
        url = scripted.url("quiet", status=status)
        outcome = dispatcher_for(
            document("UserPromptSubmit", http(url, failClosed=True))
        ).dispatch_sync(PROMPT)
        assert outcome.statuses == ["ok"]
        assert outcome.decision is None  # a no-op is not a failure, even fail-closed
        assert outcome.handlers[0].error is None


def test_any_other_status_is_a_failure(scripted, dispatcher_for) -> None:
    for status in (400, 401, 404, 500, 503):
        url = scripted.url("down", status=status, body=context("UserPromptSubmit", "ignored"))
        outcome = dispatcher_for(document("UserPromptSubmit", http(url))).dispatch_sync(PROMPT)
        assert outcome.statuses == ["failed"], status
        assert outcome.handlers[0].error.startswith(f"HTTP {status}")
        assert outcome.additional_context == []  # the body of a failure is not read


def test_a_redirect_is_a_failure_and_is_not_followed(scripted, dispatcher_for) -> None:
    target = scripted.url("target", body=context("UserPromptSubmit", "followed!"))
    for status in (301, 302, 307, 308):
        url = scripted.url("moved", status=status, location=target)
        outcome = dispatcher_for(document("UserPromptSubmit", http(url))).dispatch_sync(PROMPT)
        assert outcome.statuses == ["failed"], status
        assert "redirect" in outcome.handlers[0].error
        assert outcome.additional_context == []
    assert scripted.named("target") == []  # never requested


def test_a_body_over_1_mb_is_a_failure_read_no_further(scripted, dispatcher_for) -> None:
    streamed = scripted.url("huge", big=3 * 1024 * 1024)  # chunked: no Content-Length
    declared = scripted.url("huge-declared", big=2 * 1024 * 1024, big_declared=True)
    for url in (streamed, declared):
        outcome = dispatcher_for(document("UserPromptSubmit", http(url))).dispatch_sync(PROMPT)
        assert outcome.statuses == ["failed"]
        assert "over 1 MB" in outcome.handlers[0].error
        assert len(outcome.handlers[0].http_body or b"") <= 1024 * 1024


def test_a_body_of_exactly_1_mb_is_read(scripted, dispatcher_for) -> None:
    url = scripted.url("full", big=1024 * 1024)  # 1 MB of spaces: read, then not JSON
    outcome = dispatcher_for(document("UserPromptSubmit", http(url))).dispatch_sync(PROMPT)
    assert outcome.statuses == ["ok"]  # whitespace only reads as an empty body


def test_an_unparseable_body_is_a_failure(scripted, dispatcher_for) -> None:
    bodies = {
        "text": ("plain text is not a result", "not JSON"),
        "array": ("[1, 2]", "not an object"),
        "string": ('"allow"', "not an object"),
        "bad-decision": ('{"hookSpecificOutput": {"permissionDecision": "maybe"}}', "maybe"),
        "other-event": ('{"hookSpecificOutput": {"hookEventName": "Stop"}}', "hookEventName"),
    }
    for name, (raw, expected) in bodies.items():
        url = scripted.url(name, raw=raw)
        outcome = dispatcher_for(document("PreToolUse", http(url))).dispatch_sync(PRE)
        assert outcome.statuses == ["failed"], name
        assert expected in outcome.handlers[0].error, (name, outcome.handlers[0].error)


def test_a_private_or_loopback_address_is_refused_without_allow_private(
    scripted, dispatcher_for
) -> None:
    url = scripted.url("gate", body=permission("deny", "no"))
    dispatcher = dispatcher_for(document("PreToolUse", http(url)), allow_private=False)
    outcome = dispatcher.dispatch_sync(PRE)
    assert outcome.statuses == ["failed"]
    assert "loopback" in outcome.handlers[0].error
    assert outcome.decision is None
    assert scripted.named("gate") == []  # refused before connecting


def test_a_host_name_resolving_to_a_private_address_is_refused(scripted, dispatcher_for) -> None:
    async def private(host: str, port: int) -> list[str]:
        return ["8.8.8.8", "10.1.2.3"]  # one private answer is enough to refuse

    dispatcher = dispatcher_for(
        document("PreToolUse", http("https://hooks.example.com/gate")),
        allow_private=False,
        resolver=private,
    )
    outcome = dispatcher.dispatch_sync(PRE)
    assert outcome.statuses == ["failed"]
    assert "10.1.2.3" in outcome.handlers[0].error and "private" in outcome.handlers[0].error


def test_a_public_address_is_called_at_the_address_that_was_checked(
    scripted, dispatcher_for, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pretend 127.0.0.1 is public, and resolve "localhost" to it: the request must go to the
    # checked address while keeping the name for Host, SNI and the certificate check.
    monkeypatch.setattr(http_call_module, "is_public", lambda address: True)
    seen: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        seen.append(host)
        return ["127.0.0.1"]

    url = scripted.url(
        "gate", body=permission("allow"), base=scripted.base.replace("127.0.0.1", "localhost")
    )
    dispatcher = dispatcher_for(
        document("PreToolUse", http(url)), allow_private=False, resolver=resolver
    )
    outcome = dispatcher.dispatch_sync(PRE)
    assert outcome.statuses == ["ok"], outcome.handlers[0].error
    assert outcome.decision == "allow"
    assert seen == ["localhost"]
    (request,) = scripted.named("gate")
    assert request.headers["host"].startswith("localhost:")


def test_an_unreachable_endpoint_is_a_failure(dispatcher_for) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the call: connection refused
    url = f"https://127.0.0.1:{port}/gate"
    outcome = dispatcher_for(document("PreToolUse", http(url))).dispatch_sync(PRE)
    assert outcome.statuses == ["failed"]
    assert "Connect" in outcome.handlers[0].error


def test_an_untrusted_certificate_is_a_failure(scripted) -> None:
    from handler_kit.dispatcher import Dispatcher

    url = scripted.url("gate", body=permission("deny", "no"))
    dispatcher = Dispatcher(document("PreToolUse", http(url)), allow_private=True)  # no CA
    outcome = dispatcher.dispatch_sync(PRE)
    assert outcome.statuses == ["failed"]
    assert "CERTIFICATE" in outcome.handlers[0].error.upper()


def test_an_http_url_is_refused_by_the_document_rules(scripted) -> None:
    from handler_kit.dispatcher import Dispatcher

    with pytest.raises(DocumentError) as caught:
        Dispatcher(document("Stop", http("http://hooks.example.com/x")))
    assert caught.value.error["issues"][0]["path"] == "hooks.Stop[0].hooks[0].url"


def test_a_given_http_client_is_used_and_left_open(scripted, dispatcher_for, dispatch_tls) -> None:
    import httpx

    from handler_kit.dispatcher import ssl_context

    async def scenario() -> None:
        async with httpx.AsyncClient(verify=ssl_context(dispatch_tls.ca_file)) as client:
            url = scripted.url("gate", body=permission("allow"))
            dispatcher = dispatcher_for(document("PreToolUse", http(url)), http_client=client)
            async with dispatcher:
                outcome = await dispatcher.dispatch(PRE)
            assert outcome.decision == "allow"
            assert not client.is_closed

    asyncio.run(scenario())
