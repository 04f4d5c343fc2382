"""A ``handler-kit serve`` worker moves what start-up allocated out of the garbage collector's
reach (``gc.freeze()``) once its lifespan has started: a full collection then walks only what
requests allocated, not every module, model and schema, a pause that would land on the
requests in flight. The app below reports the worker's frozen object count."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from tests.support.processes import clean_env, free_port, serve

APP = """
import gc

from handler_kit import HookApp, SessionStart

app = HookApp("gc-probe")


@app.session_start()
def frozen(event: SessionStart) -> str:
    return str(gc.get_freeze_count())
"""
TOKEN = "gc-freeze-test-token-0123456789"


def test_the_worker_freezes_what_start_up_allocated(tmp_path: Path) -> None:
    (tmp_path / "gc_probe.py").write_text(APP)
    port = free_port()
    env = clean_env(HANDLER_KIT_TOKENS=TOKEN, PYTHONPATH=f"{tmp_path}:{':'.join(sys.path)}")
    with serve("gc_probe:app", port=port, env=env):
        response = httpx.post(
            f"http://127.0.0.1:{port}/hooks/frozen",
            json={"hook_event_name": "SessionStart", "session_id": "s"},
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=30,
        )
    assert response.status_code == 200, response.text
    frozen = int(response.json()["hookSpecificOutput"]["additionalContext"])
    # every module, class and schema loaded by then: far more than a few
    assert frozen > 10_000, frozen
