"""The audit trail never stores the server's own secrets: a bearer token (or the JWT HMAC
secret) pasted into a hook input is recorded as ``[REDACTED]``, by the writer process and by
the writer thread alike, and the inspector shows the redacted record. Through a real server."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from handler_kit import HookApp, PreToolUse, deny
from handler_kit.config import JWTConfig, OperationsConfig, ServerConfig
from handler_kit.ops.audit.records import REDACTED, Redactor
from handler_kit.testing import running_server
from tests.support.payloads import wait_for_jsonl

# random-looking values no secret-value pattern recognises: only an exact match finds them
TOKEN = "Zq7xW2mK9pL4vN8rT3yB6cH1"
OTHER_TOKEN = "Ja5dF0gS8hK2lP6oI4uY7tR9"
HMAC_SECRET = "Hm4cS3cr3tV4lu3F0rTh3Audit7r41lT3st5"


def gate() -> HookApp:
    hooks = HookApp("redact-secrets")

    @hooks.pre_tool_use(matcher="Bash")
    async def bash_gate(event: PreToolUse) -> Any:
        command = str((event.tool_input or {}).get("command", ""))
        # the handler echoes the input back in its reason: the output is recorded too
        return deny(f"Not running: {command}")

    return hooks


def event(command: str, **tool_input: Any) -> dict[str, Any]:
    return {
        "session_id": "s1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, **tool_input},
        "tool_use_id": "toolu_secret",
    }


@pytest.mark.parametrize("process", [True, False], ids=["writer-process", "writer-thread"])
def test_a_token_pasted_into_tool_input_is_recorded_redacted(tmp_path: Path, process: bool):
    log = tmp_path / "audit.jsonl"
    config = ServerConfig(
        tokens=[TOKEN, OTHER_TOKEN],
        inspector=True,
        operations=OperationsConfig(
            audit=[f"jsonl:{log}", f"sqlite:{tmp_path / 'audit.sqlite3'}"], audit_process=process
        ),
    )
    pasted = event(
        f"curl -H 'X-Key: {TOKEN}' https://example.com && echo {OTHER_TOKEN}{TOKEN}",
        notes=[f"the token is {OTHER_TOKEN}", {"nested": TOKEN}],
    )
    with (
        running_server(gate(), config=config) as server,
        httpx.Client(base_url=server.url, timeout=10) as http,
    ):
        auth = {"Authorization": f"Bearer {TOKEN}"}
        answer = http.post("/hooks", json=pasted, headers=auth)
        assert answer.status_code == 200
        # the answer itself is the handler's business: it is sent as it is
        assert TOKEN in answer.text
        written = wait_for_jsonl(log, 1)
        event_id = written[-1]["event_id"]
        shown = http.get("/_inspector/api/record", params={"event_id": event_id}, headers=auth)
        assert shown.status_code == 200
    text = log.read_text()
    assert TOKEN not in text and OTHER_TOKEN not in text
    answer_record = written[-1]
    assert answer_record["input"]["tool_input"] == {
        "command": f"curl -H 'X-Key: {REDACTED}' https://example.com && echo {REDACTED}{REDACTED}",
        "notes": [f"the token is {REDACTED}", {"nested": REDACTED}],
    }
    reason = answer_record["output"]["hookSpecificOutput"]["permissionDecisionReason"]
    assert REDACTED in reason and TOKEN not in reason
    assert TOKEN not in shown.text and OTHER_TOKEN not in shown.text
    assert REDACTED in shown.text


def test_the_jwt_hmac_secret_is_redacted_too(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    config = ServerConfig(
        jwt=JWTConfig(algorithms=("HS256",), secret=HMAC_SECRET),
        operations=OperationsConfig(audit=[f"jsonl:{log}"]),
    )
    token = jwt.encode({"sub": "ci", "exp": int(time.time()) + 600}, HMAC_SECRET, "HS256")
    with (
        running_server(gate(), config=config) as server,
        httpx.Client(base_url=server.url, timeout=10) as http,
    ):
        response = http.post(
            "/hooks",
            json=event(f"export JWT_KEY={HMAC_SECRET}"),
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200
        wait_for_jsonl(log, 1)
    text = log.read_text()
    assert HMAC_SECRET not in text
    assert f"export JWT_KEY={REDACTED}" in text


def test_the_redactor_replaces_exact_secrets_longest_first() -> None:
    redactor = Redactor(secrets=["abcdefghijklmnop", "abcdefghijklmnopQRST"])
    assert redactor.text("x abcdefghijklmnopQRST y") == f"x {REDACTED} y"
    assert redactor.value({"a": ["abcdefghijklmnop!"]}, ("tool_input",)) == {"a": [f"{REDACTED}!"]}
