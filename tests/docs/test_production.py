"""The commands of docs/production.md, run as written.

The shell blocks are taken from the page itself, so a change there is a change here. The
only substitutions are the machine-specific ones (and each is checked to apply, so the page
cannot drift from them): a free port instead of 8443, loopback instead of ``0.0.0.0``, this
test's own ``redis-server`` instead of the one on 6379, ``exec`` so the signal reaches the
server. ``make test-container`` is the container test's own command (docker/).
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from handler_kit.testing import HookClient
from tests.docs.pages import blocks, section
from tests.support.payloads import pre_tool_use
from tests.support.processes import HANDLER_KIT, REPO, clean_env, free_port, redis_server
from tests.support.processes import Process as Server


def _blocks(language: str) -> list[str]:
    return blocks(section("production", "production.md"), language)


def _substitute(text: str, old: str, new: str) -> str:
    assert old in text, f"the docs/production.md block no longer contains {old!r}"
    return text.replace(old, new)


def test_the_section_has_the_tested_blocks() -> None:
    shell = _blocks("sh")
    assert len(shell) == 3
    assert shell[0].count("handler-kit serve") == 1
    assert shell[1].startswith("curl ")
    assert shell[2].strip() == "make test-container"
    assert "test-container:" in (REPO / "Makefile").read_text()
    assert len(_blocks("python")) == 2


def test_serve_and_curl_blocks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("curl") is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("curl is not installed: .ci/run must install it")
        pytest.skip("curl is not installed")
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "cert.pem"))
    cert.private_key_pem.write_to_path(str(tmp_path / "key.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    new_token, old_token = "new-token-0123456789abcdef", "old-token-fedcba9876543210"
    port = free_port()
    serve_block, curl_block = _blocks("sh")[:2]

    with redis_server() as redis_url:
        script = serve_block
        script = _substitute(script, "--host 0.0.0.0", "--host 127.0.0.1")
        script = _substitute(script, "--port 8443", f"--port {port}")
        script = _substitute(script, "redis://127.0.0.1:6379/0", redis_url)
        script = _substitute(script, "handler-kit serve", "exec handler-kit serve")
        env = clean_env(
            NEW_TOKEN=new_token,
            OLD_TOKEN=old_token,
            IDEMPOTENCY_KEY="docs-test-idempotency-key-0123456789abcdef",
            PATH=f"{HANDLER_KIT.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            # the page is followed from the repository, where example_servers is; the test
            # runs in its own folder for the certificates and the audit database
            PYTHONPATH=str(REPO),
        )
        server = Server(["bash", "-c", script], env, tmp_path)
        try:
            server.wait_started(workers=2)
            url = f"https://localhost:{port}/hooks/refund_gate"
            body = pre_tool_use("issue_refund", "toolu_docs", amount=640)
            verify = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
            with httpx.Client(verify=verify) as http:
                for token in (new_token, old_token):  # rotation: both accepted
                    response = http.post(
                        url, json=body, headers={"Authorization": f"Bearer {token}"}
                    )
                    assert response.status_code == 200
                    decision = response.json()["hookSpecificOutput"]["permissionDecision"]
                    assert decision == "deny"
                wrong = http.post(url, json=body, headers={"Authorization": "Bearer nope"})
                assert wrong.status_code == 401
            curl = subprocess.run(
                ["bash", "-c", _substitute(curl_block, "localhost:8443", f"localhost:{port}")],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert curl.returncode == 0, curl.stderr
            totals = [
                float(line.rsplit(" ", 1)[1])
                for line in curl.stdout.splitlines()
                if line.startswith("handler_kit_answers_total{")
            ]
            assert sum(totals) == 2  # both workers' answers, whichever worker was scraped
            assert server.terminate()
        finally:
            server.close()

    # the Python block reading the audit trail, run where the server ran
    audit_block = _blocks("python")[0]
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        namespace: dict[str, Any] = {"__name__": "docs_production_audit"}
        exec(compile(audit_block, "docs/production.md[audit]", "exec"), namespace)
    finally:
        os.chdir(cwd)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2
    assert all(
        line.endswith("issue_refund Refunds over $500 need a human approver.") for line in printed
    )
    detail = namespace["detail"]
    assert detail["kind"] == "decision" and detail["handlers"][0]["name"] == "refund_gate"
    principals = {r["principal"] for r in namespace["store"].recent(10, kind="decision")}
    assert principals == {"token#0", "token#1"}


def test_idempotency_block() -> None:
    namespace: dict[str, Any] = {"__name__": "docs_production_idempotency"}
    exec(compile(_blocks("python")[1], "docs/production.md[idempotency]", "exec"), namespace)
    body = pre_tool_use("issue_refund", "toolu_same", amount=900)
    with HookClient.for_app(namespace["hooks"]) as client:
        first, retry = client.send(body), client.send(body)
    assert namespace["opened"] == ["toolu_same"]
    assert first.body == retry.body and first.decision == "deny"
    assert json.loads(first.body)["hookSpecificOutput"]["permissionDecisionReason"] == (
        "Approval request 1 opened: a human decides."
    )
