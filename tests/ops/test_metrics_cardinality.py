"""``/metrics`` stays bounded whatever event names clients send: ``POST /hooks`` answers any
``hook_event_name``, and a name that is neither a known event nor one the app handles is
counted as ``other`` rather than as a new series.

The app below is served by ``handler-kit serve tests.ops.test_metrics_cardinality:app``.
"""

from __future__ import annotations

import secrets

import httpx
import pytest

pytest.importorskip("prometheus_client")

from prometheus_client.parser import text_string_to_metric_families

from handler_kit import HookApp, PreToolUse
from handler_kit.core.names import EVENT_NAMES
from tests.support.http import TOKEN
from tests.support.processes import clean_env, free_port, serve

app = HookApp("cardinality-test")


@app.pre_tool_use(matcher="Bash")
def bash_gate(event: PreToolUse) -> None:
    return None


# a runtime's own event, registered on purpose: it keeps its name in the metrics
@app.on("AcmeAudit", allow_unknown_event=True)
def acme_audit(event: object) -> None:
    return None


TARGET = "tests.ops.test_metrics_cardinality:app"


def _body(event_name: str) -> dict[str, object]:
    return {
        "hook_event_name": event_name,
        "session_id": "s-1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
    }


def _event_labels(text: str) -> dict[str, float]:
    """The answers counted per ``event`` label."""
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "handler_kit_answers_total":
                event = sample.labels["event"]
                counts[event] = counts.get(event, 0) + sample.value
    return counts


def test_random_event_names_do_not_grow_the_metrics() -> None:
    port = free_port()
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN, HANDLER_KIT_METRICS="1")
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with (
        serve(TARGET, port=port, env=env),
        httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30) as http,
    ):

        def send_random(count: int) -> list[str]:
            names = [f"Evt{secrets.token_hex(12)}" for _ in range(count)]
            for name in names:
                response = http.post("/hooks", json=_body(name))
                # answered like any event no handler matches: no opinion
                assert response.status_code == 200, response.text
                assert response.json() == {}
            return names

        for name in ("PreToolUse", "AcmeAudit", "SessionStart"):
            assert http.post("/hooks", json=_body(name)).status_code == 200
        sent = send_random(50)
        before = http.get("/metrics")
        assert before.status_code == 200
        sent += send_random(450)
        after = http.get("/metrics")
        assert after.status_code == 200

    # the same series before and after 450 more names; only their values changed
    assert len(after.content) < len(before.content) + 512, (len(before.content), len(after.content))
    assert not any(name in after.text for name in sent)
    counts = _event_labels(after.text)
    assert counts["other"] == 500
    # known events and the app's own keep their names
    assert counts["PreToolUse"] == 1
    assert counts["SessionStart"] == 1
    assert counts["AcmeAudit"] == 1
    assert set(counts) <= {*EVENT_NAMES, "AcmeAudit", "other"}
