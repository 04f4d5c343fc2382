"""Recording an answer runs no import statement, on the answer path or in the writer thread.

An import statement of a module already loaded is not free: for a module that is not a
package, every run looks its ``__path__`` up and formats the AttributeError it gets, a cost
comparable to a quarter of the answer's own record (``bench/README.md``). The audit trail's
names are imported once, with its modules."""

from __future__ import annotations

import asyncio
import builtins
from pathlib import Path
from typing import Any

import pytest

from handler_kit import HookApp, PreToolUse, deny
from handler_kit.config import OperationsConfig
from handler_kit.ops.operations import Operations
from tests.support.payloads import read_jsonl


def _gate() -> HookApp:
    app = HookApp("gate")

    @app.pre_tool_use(name="refunds")
    def refunds(event: PreToolUse) -> Any:
        return deny("no refunds over 500")

    return app


def _event(n: int) -> PreToolUse:
    return PreToolUse(
        hook_event_name="PreToolUse",
        session_id="s-1",
        tool_name="refund",
        tool_use_id=f"tu-{n}",
        tool_input={"amount": 900 + n},
    )


def _context(n: int) -> dict[str, Any]:
    """The webhook's context: the body the event was validated from."""
    body = _event(n).model_dump_json(exclude_none=True).encode()
    return {"body": body, "event_from_body": True}


def test_recording_answers_runs_no_import_of_the_ops_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answers recorded through the writer process (JSON lines): once the trail has started
    (the first answer starts its writer process), more answers, each handed to the writer
    process in its own batch, import nothing of ``handler_kit.ops``."""
    log = tmp_path / "audit.jsonl"
    operations = Operations.build(_gate(), OperationsConfig(audit=[f"jsonl:{log}"]))
    served = operations.apply(_gate())
    trail = operations.audit
    assert trail is not None
    imported: list[str] = []
    original = builtins.__import__

    def counting(name: str, *args: Any, **kwargs: Any) -> Any:
        imported.append(name)
        return original(name, *args, **kwargs)

    async def answer(n: int) -> None:
        await served.answer(_event(n), transport="webhook", context=_context(n))

    try:
        asyncio.run(answer(0))
        assert trail.flush()
        monkeypatch.setattr(builtins, "__import__", counting)
        for n in range(1, 4):
            asyncio.run(answer(n))
            assert trail.flush()  # a batch of its own: the writer thread's send per batch
        monkeypatch.setattr(builtins, "__import__", original)
    finally:
        operations.close_sync()
    assert [name for name in imported if name.startswith("handler_kit.ops")] == []
    assert [r["tool_use_id"] for r in read_jsonl(log)] == ["tu-0", "tu-1", "tu-2", "tu-3"]


def test_durable_answers_commit_without_an_import_of_the_ops_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Durable mode: each answer waits for its commit (the event loop hands the writer
    process its frame and reads the acknowledgement; the committer awaits it); once the
    first answer has started the writer process, the next ones import nothing of
    ``handler_kit.ops``."""
    log = tmp_path / "audit.jsonl"
    settings = OperationsConfig(audit=[f"jsonl:{log}"], audit_durable=True)
    operations = Operations.build(_gate(), settings)
    served = operations.apply(_gate())
    imported: list[str] = []
    original = builtins.__import__

    def counting(name: str, *args: Any, **kwargs: Any) -> Any:
        imported.append(name)
        return original(name, *args, **kwargs)

    async def answers() -> list[Any]:
        outputs = []
        for n in range(4):
            if n == 1:
                monkeypatch.setattr(builtins, "__import__", counting)
            answer = await served.answer(_event(n), transport="webhook", context=_context(n))
            outputs.append(answer.output)
        monkeypatch.setattr(builtins, "__import__", original)
        return outputs

    try:
        outputs = asyncio.run(answers())
    finally:
        operations.close_sync()
    assert [name for name in imported if name.startswith("handler_kit.ops")] == []
    decisions = [o["hookSpecificOutput"]["permissionDecision"] for o in outputs]
    assert decisions == ["deny"] * 4  # each the handler's own, committed in time
    assert [r["tool_use_id"] for r in read_jsonl(log)] == ["tu-0", "tu-1", "tu-2", "tu-3"]
