"""The webhook's records carry the idempotency keys the answer path would compute, though the
audit writer process derives the input's text from the body (the server only hands the body
over): over the real webhook, both routes, a body as a runtime writes it (spaces, its keys in
another order, a null, a field the model does not know) and one pydantic-core refuses (a lone
surrogate escape, read by the standard library)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import httpx

from handler_kit import HookApp, PreToolUse, allow
from handler_kit.config import OperationsConfig, ServerConfig
from handler_kit.testing import running_server
from tests.support.http import TOKEN
from tests.support.payloads import wait_for_jsonl

SPACED = (
    b'{"tool_input": {"command": "ls", "n": 1.50}, "tool_use_id": "tu-spaced", '
    b'"hook_event_name": "PreToolUse", "permission_mode": null, "session_id": "s-1", '
    b'"tool_name": "Bash", "vendor": [1, {"b": true}]}'
)
# the input as the model writes it (its fields' order, nulls dropped): what the keys digest
SPACED_TEXT = (
    '{"hook_event_name":"PreToolUse","session_id":"s-1","tool_name":"Bash",'
    '"tool_input":{"command":"ls","n":1.5},"tool_use_id":"tu-spaced","vendor":[1,{"b":true}]}'
)
LONE = (
    b'{"hook_event_name":"PreToolUse","session_id":"s-1","tool_name":"Bash",'
    b'"tool_use_id":"tu-lone","tool_input":{"command":"echo \\udc8f"}}'
)
LONE_TEXT = (
    '{"hook_event_name":"PreToolUse","session_id":"s-1","tool_name":"Bash",'
    '"tool_input":{"command":"echo \\udc8f"},"tool_use_id":"tu-lone"}'
)


def _gate() -> HookApp:
    app = HookApp("enforced")

    @app.pre_tool_use(name="gate")
    def gate(event: PreToolUse) -> Any:
        return allow("fine")

    return app


def test_the_keys_of_a_webhook_record_digest_the_input_as_the_model_writes_it(
    tmp_path: Path,
) -> None:
    log = tmp_path / "audit.jsonl"
    config = ServerConfig(tokens=[TOKEN], operations=OperationsConfig(audit=[f"jsonl:{log}"]))
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with running_server(_gate(), config=config) as server:
        with httpx.Client(base_url=server.url, timeout=10, headers=headers) as http:
            for path in ("/hooks", "/hooks/gate"):
                for body in (SPACED, LONE):
                    assert http.post(path, content=body).status_code == 200
        records = wait_for_jsonl(log, 4)
    assert hashlib.sha256(SPACED_TEXT.encode()).hexdigest()[:16] == "ccb19a1a6320bf68"
    assert hashlib.sha256(LONE_TEXT.encode()).hexdigest()[:16] == "fcf227d65c428422"
    expected = [
        ("tool_use_id=tu-spaced:PreToolUse:", "ccb19a1a6320bf68", SPACED),
        ("tool_use_id=tu-lone:PreToolUse:", "fcf227d65c428422", LONE),
    ] * 2
    for record, (scope, digest, body) in zip(records, expected, strict=True):
        assert record["idempotency_key"] == f"{scope}*:{digest}"
        assert [h["idempotency_key"] for h in record["handlers"]] == [f"{scope}gate:{digest}"]
        # the input digest is of the bytes received
        assert record["input_digest"] == hashlib.sha256(body).hexdigest()[:16]
