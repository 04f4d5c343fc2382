"""``/metrics``: Prometheus text behind the server's auth, counts by event/handler/decision/
status, latency histograms, and correct totals with ``--workers 2`` (multiprocess mode)."""

from __future__ import annotations

import asyncio
import json
import os

import httpx
import pytest

pytest.importorskip("prometheus_client")

from prometheus_client.parser import text_string_to_metric_families

from handler_kit import HookApp
from handler_kit.config import OperationsConfig, ServerConfig
from handler_kit.testing import HookClient
from tests.support.apps import OPS_APP
from tests.support.http import TOKEN, send_many
from tests.support.payloads import pre_tool_use
from tests.support.processes import clean_env, free_port, serve


def _samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                out[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def _total(text: str, name: str) -> float:
    return sum(_samples(text, name).values())


def test_metrics_route_counts_and_needs_the_token(ops_app: HookApp) -> None:
    config = ServerConfig(tokens=[TOKEN], operations=OperationsConfig(metrics=True))
    # explode's crash is counted, not raised: the test reads the server's answer to it
    with HookClient.for_app(ops_app, config, raise_handler_exceptions=False) as client:
        for amount in (900, 10, 20):
            client.send(pre_tool_use("issue_refund", f"tu-{amount}", amount=amount))
        client.send(pre_tool_use("explode", "tu-x"))
        http = client._http
        unauthenticated = http.get("/metrics", headers={"Authorization": ""})
        assert unauthenticated.status_code == 401
        response = http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    invocations = _samples(text, "handler_kit_invocations_total")
    key = (("decision", "deny"), ("event", "PreToolUse"), ("handler", "refund_gate"))
    assert invocations[(*key, ("status", "ok"))] == 1
    none = (("decision", "none"), ("event", "PreToolUse"), ("handler", "refund_gate"))
    assert invocations[(*none, ("status", "ok"))] == 2
    failed = (("decision", "none"), ("event", "PreToolUse"), ("handler", "explode"))
    assert invocations[(*failed, ("status", "error"))] == 1
    count = _samples(text, "handler_kit_invocation_duration_seconds_count")
    assert count[(("event", "PreToolUse"), ("handler", "refund_gate"))] == 3
    assert _samples(text, "handler_kit_invocation_duration_seconds_bucket")
    answers = _samples(text, "handler_kit_answers_total")
    assert sum(answers.values()) == 4
    assert {dict(k)["transport"] for k in answers} == {"webhook"}


def test_no_metrics_route_unless_turned_on(ops_app: HookApp) -> None:
    with HookClient.for_app(ops_app) as client:
        assert client._http.get("/metrics").status_code == 404


def test_two_workers_report_one_total(tmp_path: object) -> None:
    """Requests spread over two workers; every scrape, whichever worker answers it, reports
    the total of both."""
    port = free_port()
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN, HANDLER_KIT_METRICS="1")
    with serve(OPS_APP, port=port, workers=2, env=env) as server:
        url = f"http://127.0.0.1:{port}"
        pids: set[str] = set()
        sent = 0
        for round_ in range(40):  # bounded: until both workers have answered
            bodies = [pre_tool_use("whoami", f"tu-{round_}-{i}") for i in range(10)]
            results = asyncio.run(
                send_many(f"{url}/hooks", bodies, concurrency=10, fresh_connections=True)
            )
            for result in results:
                assert isinstance(result, httpx.Response) and result.status_code == 200
                reason = json.loads(result.content)["hookSpecificOutput"]
                pids.add(reason["permissionDecisionReason"])
            sent += len(bodies)
            if len(pids) == 2:
                break
        assert len(pids) == 2, "both workers answered"
        totals = set()
        for _ in range(6):  # new connection each time: the scrapes land on either worker
            with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
                text = http.get(f"{url}/metrics").text
            totals.add(
                (
                    _total(text, "handler_kit_invocations_total"),
                    _total(text, "handler_kit_answers_total"),
                    _total(text, "handler_kit_invocation_duration_seconds_count"),
                )
            )
        assert totals == {(sent, sent, sent)}
        folder = _multiproc_dir(server.proc.pid)
        assert folder is not None and os.listdir(folder)  # one file per worker and metric
        assert server.terminate()
    assert not os.path.exists(folder), "the temporary directory is removed at exit"


def _multiproc_dir(pid: int) -> str | None:
    """The metrics directory the serve process made: in its workers' environment."""
    children = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as fh:
            children.extend(fh.read().split())
    for child in children:
        with open(f"/proc/{child}/environ", "rb") as fh:
            for entry in fh.read().split(b"\0"):
                if entry.startswith(b"PROMETHEUS_MULTIPROC_DIR="):
                    return entry.split(b"=", 1)[1].decode()
    return None
