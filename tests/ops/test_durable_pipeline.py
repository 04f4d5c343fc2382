"""The durable audit mode's pipeline: the server hands a loop turn's answers to the writer
process in several frames (the last one marked), the process builds each frame's records as
it comes and a thread of its own commits each turn as a group, joining the turns that ended
while a commit was in progress. What must hold: a turn is committed as one group once its end
has come, never before; a commit that fails fails every answer of every turn it held while
the turns after it are built meanwhile; nothing is acknowledged that was not committed; and
each answer's deadline is its own (the channel's one timer for them all)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from handler_kit import HookApp, PreToolUse, allow
from handler_kit.config import OperationsConfig, ServerConfig
from handler_kit.ops.audit.process import AuditProcess, read_frame, write_frame
from handler_kit.ops.audit.records import Capture, RecordPolicy, Redactor
from handler_kit.ops.audit.trail import Observed, capture
from handler_kit.testing import running_server
from tests.support.http import TOKEN
from tests.support.payloads import pre_tool_use

# far longer than any of these waits takes on a loaded machine: only a hang reaches it
WAIT = 30.0


def captures(*tool_use_ids: str) -> list[Capture]:
    """The captured answers of a handler that allows, one per ``tool_use_id``."""
    hooks = HookApp("pipeline")

    @hooks.pre_tool_use()
    async def check(event: PreToolUse) -> Any:
        return allow("fine")

    async def answers() -> list[Any]:
        return [
            await hooks.answer(
                PreToolUse.model_validate(pre_tool_use("Bash", tool_use_id, command="ls"))
            )
            for tool_use_id in tool_use_ids
        ]

    return [
        capture(
            Observed(
                answer=answer,
                transport="webhook",
                principal=None,
                traceparent=None,
                end_ns=time.time_ns(),
                pid=os.getpid(),
            )
        )
        for answer in asyncio.run(answers())
    ]


@contextlib.contextmanager
def writer(db: Path) -> Iterator[AuditProcess]:
    """The real audit writer process, durable, committing to a SQLite file."""
    process = AuditProcess(
        [f"sqlite:{db}"],
        app="pipeline",
        policy=RecordPolicy(redactor=Redactor([])),
        durable=True,
        timeout=WAIT,
    )
    try:
        yield process
    finally:
        process.close()


def answer_of(process: AuditProcess, timeout: float = WAIT) -> Any:
    """The process's next word, or None when none came within ``timeout`` seconds."""
    ready, _, _ = select.select([process.acks], [], [], timeout)
    return read_frame(process.acks) if ready else None


def committed_ids(db: Path) -> list[str]:
    """The tool_use_ids of the answer records committed, in commit order."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        try:
            rows = conn.execute("SELECT tool_use_id FROM audit WHERE kind = 'decision' ORDER BY id")
            return [row[0] for row in rows]
        except sqlite3.OperationalError:  # no table yet
            return []


def test_a_turn_sent_in_frames_is_committed_once_its_last_frame_came(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    with writer(db) as process:
        write_frame(process.fd, ("batch", captures("a-1", "a-2"), False))
        write_frame(process.fd, ("batch", captures("a-3"), False))
        # the turn has not ended: nothing is committed, nothing answered
        assert answer_of(process, timeout=1.0) is None
        assert committed_ids(db) == []
        write_frame(process.fd, ("batch", captures("a-4"), True))
        # one commit for the whole turn, one list per frame in its answer
        assert answer_of(process) == ("committed", None, [[], [], []])
        assert committed_ids(db) == ["a-1", "a-2", "a-3", "a-4"]
        # an empty last frame ends a turn whose answers all went before it
        write_frame(process.fd, ("batch", captures("b-1"), False))
        write_frame(process.fd, ("batch", [], True))
        assert answer_of(process) == ("committed", None, [[], []])
        # a flush is answered after the commits handed over before it
        write_frame(process.fd, ("batch", captures("c-1"), True))
        write_frame(process.fd, ("flush",))
        assert answer_of(process) == ("committed", None, [[]])
        assert answer_of(process) == ("flushed",)
    assert committed_ids(db) == ["a-1", "a-2", "a-3", "a-4", "b-1", "c-1"]


def test_a_commit_that_fails_while_the_next_turns_are_built_fails_them_all(
    tmp_path: Path,
) -> None:
    """The first turn's commit waits for a lock (another connection holds the database) while
    two more turns come and are built; then the database refuses the rows. Every turn is
    answered as failed, in order, and none of their records is there; once the database
    takes rows again, the next turn commits."""
    db = tmp_path / "audit.sqlite3"
    with writer(db) as process:
        write_frame(process.fd, ("batch", captures("ok-1"), True))
        assert answer_of(process) == ("committed", None, [[]])
        locker = sqlite3.connect(db, isolation_level=None)
        try:
            locker.execute("BEGIN EXCLUSIVE")
            write_frame(process.fd, ("batch", captures("down-1", "down-2"), True))
            # the commit is waiting for the lock: the next turns come meanwhile
            assert answer_of(process, timeout=0.5) is None
            write_frame(process.fd, ("batch", captures("down-3"), False))
            write_frame(process.fd, ("batch", captures("down-4"), True))
            write_frame(process.fd, ("batch", captures("down-5"), True))
            locker.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON audit BEGIN "
                "SELECT RAISE(ABORT, 'the audit store refuses rows'); END"
            )
            locker.execute("COMMIT")
            # the first turn alone (its commit had begun), then the turns built meanwhile
            # (joined into one commit, or not, as they were handed over): one list per
            # frame, every one failed
            failed: list[list[int]] = []
            answers = 0
            while len(failed) < 4:
                answer = answer_of(process)
                assert answer is not None, f"no answer for every frame: {failed}"
                kind, why, unbuilt = answer
                assert kind == "committed" and why is not None and "refuses rows" in why
                failed += unbuilt
                answers += 1
            assert failed == [[], [], [], []]
            assert 2 <= answers <= 3
            assert committed_ids(db) == ["ok-1"]
            locker.execute("DROP TRIGGER refuse")
        finally:
            locker.close()
        write_frame(process.fd, ("batch", captures("ok-2"), True))
        assert answer_of(process) == ("committed", None, [[]])
    assert committed_ids(db) == ["ok-1", "ok-2"]


def stall_app() -> HookApp:
    """A gate with a short deadline and a check with a long one, both allowing."""
    hooks = HookApp("durable-deadlines")

    @hooks.pre_tool_use(matcher="gated", fail_closed=True, timeout=1.0)
    async def gate(event: PreToolUse) -> Any:
        return allow("fine")

    @hooks.pre_tool_use(matcher="open", timeout=20.0)
    async def check(event: PreToolUse) -> Any:
        return allow("fine")

    return hooks


def test_each_answer_waits_for_its_commit_until_its_own_deadline(tmp_path: Path) -> None:
    """Two answers wait for one stalled commit: the one with the short deadline gets its
    failure policy by then; the other is not failed with it, and is sent allowed (and
    recorded) once the commit goes through."""
    db = tmp_path / "audit.sqlite3"
    operations = OperationsConfig(audit=[f"sqlite:{db}"], audit_durable=True)
    config = ServerConfig(tokens=[TOKEN], operations=operations)
    with running_server(stall_app(), config=config) as server:

        async def both() -> tuple[Any, Any]:
            import httpx

            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as c:
                gate = asyncio.create_task(
                    c.post("/hooks/gate", json=pre_tool_use("gated", "short", command="ls"))
                )
                check = asyncio.create_task(
                    c.post("/hooks/check", json=pre_tool_use("open", "long", command="ls"))
                )
                gated = await gate
                # the short deadline has passed and the commit still waits: let it through
                locker.execute("ROLLBACK")
                return gated, await check

        with server.http(timeout=30) as client:
            first = client.post("/hooks/gate", json=pre_tool_use("gated", "first", command="ls"))
            assert first.status_code == 200, first.text
        locker = sqlite3.connect(db, isolation_level=None)
        try:
            locker.execute("BEGIN EXCLUSIVE")
            gated, checked = asyncio.run(both())
        finally:
            locker.close()
    gate_output = gated.json()["hookSpecificOutput"]
    assert gate_output["permissionDecision"] == "deny"
    assert "could not have its decision recorded" in gate_output["permissionDecisionReason"]
    assert checked.status_code == 200, checked.text
    assert checked.json()["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert "long" in committed_ids(db)
