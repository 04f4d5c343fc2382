"""``GET /openapi.json``: behind the server's auth, a valid OpenAPI 3.1 document whose event
schemas take the captured payloads and whose output schemas describe the real answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from example_servers import refund_gate
from handler_kit import HookApp
from handler_kit.config import ServerConfig
from handler_kit.core.events import EVENT_MODELS
from handler_kit.server.openapi import openapi_document
from handler_kit.testing import RunningServer, running_server
from tests.server.support import TOKEN
from tests.support.payloads import REFUND_DENY, REFUND_EVENT, input_files, load


@pytest.fixture(scope="module")
def gate() -> Iterator[RunningServer]:
    config = ServerConfig(tokens=[TOKEN], require_event_header=True)
    with running_server(refund_gate.app, config=config) as server:
        yield server


@pytest.fixture(scope="module")
def document(gate: RunningServer) -> dict[str, Any]:
    with gate.http(timeout=10) as http:
        response = http.get("/openapi.json")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    result: dict[str, Any] = response.json()
    return result


def schema_of(document: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    """A validator of ``schema``, its ``#/components/schemas/...`` references resolved
    against the document."""
    return Draft202012Validator({**schema, "components": document["components"]})


def test_served_behind_the_same_auth(gate: RunningServer) -> None:
    anonymous = httpx.get(f"{gate.url}/openapi.json", timeout=10)
    assert anonymous.status_code == 401
    assert anonymous.json()["error"] == "unauthorized"
    assert anonymous.headers["www-authenticate"].startswith("Bearer")
    wrong = httpx.get(
        f"{gate.url}/openapi.json", headers={"Authorization": "Bearer not-the-token"}, timeout=10
    )
    assert wrong.status_code == 401
    with gate.http(timeout=10) as http:
        posted = http.post("/openapi.json", json={})
    assert posted.status_code == 405
    assert posted.json()["error"] == "method_not_allowed"


def test_document_is_valid_openapi_3_1(document: dict[str, Any]) -> None:
    validate(document)
    assert document["openapi"] == "3.1.0"
    assert document["info"]["title"] == refund_gate.app.name
    assert document["components"]["securitySchemes"] == {
        "bearer": {"type": "http", "scheme": "bearer"}
    }
    assert document["security"] == [{"bearer": []}]
    assert "servers" not in document  # served at the root: no mount point to name


def test_paths_are_the_webhook_routes(document: dict[str, Any]) -> None:
    handlers = refund_gate.app.handlers
    assert set(document["paths"]) == {
        "/hooks",
        "/healthz",
        "/readyz",
        *(f"/hooks/{h.name}" for h in handlers),
    }
    assert document["paths"]["/healthz"]["get"]["security"] == []
    assert document["paths"]["/readyz"]["get"]["security"] == []
    assert set(document["paths"]["/readyz"]["get"]["responses"]) == {"200", "503"}
    for handler in handlers:
        post = document["paths"][f"/hooks/{handler.name}"]["post"]
        body = post["requestBody"]["content"]["application/json"]["schema"]
        assert body == {"$ref": f"#/components/schemas/{handler.event}"}
        ok = post["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok == {"$ref": f"#/components/schemas/{handler.event}Output"}
        assert post["responses"]["400"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/Error"
        }
        (header,) = post["parameters"]
        assert header["name"] == "X-Runbear-Hook-Event"
        assert header["required"] is True  # the server requires it
        assert header["schema"]["const"] == handler.event
    hooks = document["paths"]["/hooks"]["post"]["requestBody"]["content"]["application/json"]
    events = sorted({h.event for h in handlers})
    assert hooks["schema"]["discriminator"]["propertyName"] == "hook_event_name"
    assert sorted(hooks["schema"]["discriminator"]["mapping"]) == events


def test_schemas_describe_real_inputs_and_answers(
    gate: RunningServer, document: dict[str, Any]
) -> None:
    any_event = document["paths"]["/hooks"]["post"]["requestBody"]["content"]["application/json"]
    any_input = schema_of(document, any_event["schema"])
    pre_tool_use = schema_of(document, {"$ref": "#/components/schemas/PreToolUse"})
    captured = [load(path) for path in input_files() if path.parent.name == "PreToolUse"]
    assert captured
    for payload in [REFUND_EVENT, *captured]:
        pre_tool_use.validate(payload)
        any_input.validate(payload)  # exactly one event schema takes it
    assert not pre_tool_use.is_valid({**REFUND_EVENT, "hook_event_name": "Stop"})
    assert not pre_tool_use.is_valid({"tool_name": "x"})  # hook_event_name is required

    headers = {"X-Runbear-Hook-Event": "PreToolUse"}
    with gate.http(timeout=10) as http:
        answer = http.post("/hooks/refund_gate", json=REFUND_EVENT, headers=headers)
        error = http.post("/hooks/refund_gate", content=b"[", headers=headers)
    assert answer.json() == REFUND_DENY
    schema_of(document, {"$ref": "#/components/schemas/PreToolUseOutput"}).validate(answer.json())
    schema_of(document, {"$ref": "#/components/schemas/HookOutput"}).validate(answer.json())
    output = schema_of(document, {"$ref": "#/components/schemas/PreToolUseOutput"})
    assert not output.is_valid({"hookSpecificOutput": {"permissionDecision": "maybe"}})
    assert error.status_code == 200  # a fail-closed gate answers what it cannot read with deny
    with gate.http(timeout=10) as http:
        refused = http.post("/hooks", content=b"[", headers=headers)
    assert refused.status_code == 400
    schema_of(document, {"$ref": "#/components/schemas/Error"}).validate(refused.json())


def test_every_event_schema_takes_the_captured_corpus() -> None:
    """One handler per event: each event's schema takes every captured payload of its event,
    and the /hooks body schema picks exactly that one."""
    every = HookApp("every-event")
    for event in EVENT_MODELS:
        every.on(event, name=f"on_{event}")(lambda event: None)
    document = openapi_document(every, bearer=False)
    # (the whole document's OpenAPI check is test_document_is_valid_openapi_3_1's: on every
    # event at once it takes seconds)
    assert "security" not in document
    body = document["paths"]["/hooks"]["post"]["requestBody"]["content"]["application/json"]
    any_input = schema_of(document, body["schema"])
    by_event = {
        event: schema_of(document, {"$ref": f"#/components/schemas/{event}"})
        for event in EVENT_MODELS
    }
    checked = 0
    for path in input_files():
        payload = load(path)
        event = payload.get("hook_event_name")
        if event not in EVENT_MODELS:
            continue
        by_event[event].validate(payload)
        any_input.validate(payload)
        checked += 1
    assert checked >= 40
