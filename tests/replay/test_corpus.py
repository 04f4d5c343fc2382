"""Done when: a corpus of the refund gate's decisions, recorded from real traffic through
``handler-kit serve`` (real uvicorn on 127.0.0.1) into every sink at once (JSON lines, SQLite,
Postgres) with the whole input recorded, replays with the candidate to exactly the decisions
the candidate changes, from each sink alike, and a loosening exits 1."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.replay.support import CANDIDATE, OLD, TRAFFIC
from tests.support.postgres import new_database
from tests.support.processes import HANDLER_KIT, REPO, clean_env, free_port, serve

TOKEN = "replay-corpus-token-0123456789"
TRAFFIC_FILE = REPO / "example_servers" / "data" / "refund_traffic.jsonl"


@pytest.fixture(scope="module")
def corpus(
    tmp_path_factory: pytest.TempPathFactory, postgres_server_url: str
) -> Iterator[dict[str, str]]:
    """Every sink's source, once the traffic has been answered and the server stopped."""
    folder = tmp_path_factory.mktemp("corpus")
    sources = {
        "jsonl": str(folder / "audit.jsonl"),
        "sqlite": f"sqlite:{folder / 'audit.db'}",
        "postgres": new_database(postgres_server_url),
    }
    port = free_port()
    env = clean_env(
        HANDLER_KIT_TOKENS=TOKEN,
        HANDLER_KIT_AUDIT=f"jsonl:{sources['jsonl']}, {sources['sqlite']}, {sources['postgres']}",
        HANDLER_KIT_AUDIT_INPUT="full",
    )
    events = [json.loads(line) for line in TRAFFIC_FILE.read_text().splitlines()]
    with serve("example_servers.refund_gate:app", port=port, env=env) as server:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            for event in events:
                answered = client.post(
                    "/hooks", json=event, headers={"Authorization": f"Bearer {TOKEN}"}
                )
                assert answered.status_code == 200, answered.text
        assert server.terminate(), server.output()  # the trail drains as the server stops
    yield sources


def replay(*argv: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [str(HANDLER_KIT), "replay", *argv],
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


def _key(decision: dict[str, Any]) -> str:
    hook_input = decision["input"] or {}
    return f"{decision['event']} {hook_input.get('tool_use_id') or hook_input.get('session_id')}"


def test_the_traffic_is_the_tested_traffic() -> None:
    lines = [json.loads(line) for line in TRAFFIC_FILE.read_text().splitlines()]
    assert lines[: len(TRAFFIC)] == [event for _, event, _ in TRAFFIC]
    # and one more refund, whose input holds a secret: recorded redacted, so never replayed
    assert lines[len(TRAFFIC)]["tool_input"]["auth_token"]


@pytest.mark.parametrize("sink", ["jsonl", "sqlite", "postgres"])
def test_replay_reports_exactly_what_the_candidate_changes(
    corpus: dict[str, str], sink: str
) -> None:
    code, out, err = replay(corpus[sink], "--app", CANDIDATE, "--format", "json")
    assert code == 1, err  # the $640 refund loosened
    data = json.loads(out)
    assert {k: data[k] for k in ("replayed", "unchanged", "tightened", "loosened", "changed")} == {
        "replayed": 12,
        "unchanged": 7,
        "tightened": 1,
        "loosened": 1,
        "changed": 3,
    }
    assert data["not_replayed"] == {"incomplete": 1, "side_effects": 0, "unreadable": 0}
    expected = {
        _key({"event": event["hook_event_name"], "input": event}): verdict
        for _, event, verdict in TRAFFIC
        if verdict != "unchanged"
    }
    assert {_key(d): d["verdict"] for d in data["decisions"]} == expected
    (apart,) = data["apart"]
    assert apart["tool_name"] == "issue_refund"
    assert "redacted" in apart["why"]
    assert data["handlers"] == {
        "cite_ticket": {"unchanged": 2, "tightened": 0, "loosened": 0, "changed": 0},
        "refund_audit_note": {"unchanged": 1, "tightened": 0, "loosened": 0, "changed": 1},
        "refund_gate": {"unchanged": 3, "tightened": 1, "loosened": 1, "changed": 1},
        "returns_policy": {"unchanged": 0, "tightened": 0, "loosened": 0, "changed": 1},
    }


@pytest.mark.parametrize("sink", ["jsonl", "sqlite", "postgres"])
def test_the_enforced_app_changes_nothing(corpus: dict[str, str], sink: str) -> None:
    code, out, err = replay(corpus[sink], "--app", OLD)
    assert code == 0, err
    assert out.splitlines()[-1] == (
        "decisions: 12 replayed: 12 unchanged, 0 tightened, 0 loosened, 0 changed; "
        "not replayed: 1 input incomplete"
    )


def test_allow_loosening(corpus: dict[str, str], tmp_path: Path) -> None:
    code, out, _ = replay(corpus["sqlite"], "--app", CANDIDATE, "--allow-loosening")
    assert code == 0
    assert out.splitlines()[-1] == (
        "decisions: 12 replayed: 7 unchanged, 1 tightened, 1 loosened, 3 changed; "
        "not replayed: 1 input incomplete"
    )
