"""The runs under test of tests/command, each made once per test module: the ``handler-kit``
console script on every captured payload, on bad input, on failing handlers and on handlers that
hold the process past their deadline (started concurrently, a few at a time: one after the other,
their start-ups would dominate these tests' time); and the two upstreams of ``handler-kit
forward``, a real ``handler-kit serve`` and an address where nothing listens."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.command.support import (
    APP,
    BAD_INPUTS,
    CRASHY,
    EXIT_CODE_BAD_INPUTS,
    PAYLOAD_FILES,
    TOKEN,
    Run,
    event_json,
    run,
    run_many,
)
from tests.support.apps import COMMAND_APP
from tests.support.processes import clean_env, free_port, serve

# -- handler-kit command (test_hook.py) -------------------------------------------------------


@pytest.fixture(scope="module")
def payload_runs() -> dict[tuple[str, str], Run]:
    """Every payload through the command, in both dialects (started concurrently)."""
    jobs = {}
    for path in PAYLOAD_FILES:
        stdin = path.read_bytes()
        jobs[(path.name, "json")] = (["command", APP], stdin)
        jobs[(path.name, "exit-codes")] = (["command", APP, "--exit-codes"], stdin)
    return run_many(jobs)


@pytest.fixture(scope="module")
def bad_input_runs() -> dict[tuple[str, str], Run]:
    jobs = {}
    for name, (stdin, _) in BAD_INPUTS.items():
        jobs[(name, "json")] = (["command", APP], stdin)
    for name in EXIT_CODE_BAD_INPUTS:
        jobs[(name, "exit-codes")] = (["command", APP, "--exit-codes"], BAD_INPUTS[name][0])
    return run_many(jobs)


@pytest.fixture(scope="module")
def crash_runs() -> dict[str, Run]:
    refund = event_json(
        hook_event_name="PreToolUse", tool_name="issue_refund", tool_input={"amount": 1}
    )
    slow = event_json(hook_event_name="PreToolUse", tool_name="slow_refund", tool_input={})
    prompt = event_json(hook_event_name="UserPromptSubmit", prompt="hello")
    stop = event_json(hook_event_name="Stop", stop_hook_active=False)
    start = event_json(hook_event_name="SessionStart", source="startup")
    async_refund = event_json(hook_event_name="PreToolUse", tool_name="async_refund")
    slow_async = event_json(hook_event_name="PreToolUse", tool_name="slow_async_refund")
    post = event_json(hook_event_name="PostToolUse", tool_name="Read", tool_response={})
    return run_many(
        {
            "async-crash": (["command", CRASHY], async_refund),
            "async-stuck-exit": (["command", CRASHY, "--exit-codes"], slow_async),
            "awaiting": (["command", CRASHY], post),
            "crash": (["command", CRASHY], refund),
            "crash-exit": (["command", CRASHY, "--exit-codes"], refund),
            "stuck": (["command", CRASHY], slow),
            "stuck-exit": (["command", CRASHY, "--exit-codes"], slow),
            "all-failed": (["command", CRASHY], prompt),
            "all-failed-exit": (["command", CRASHY, "--exit-codes"], prompt),
            "no-reason-exit": (["command", CRASHY, "--exit-codes"], stop),
            "chatty": (["command", CRASHY], start),
            "chatty-exit": (["command", CRASHY, "--exit-codes"], start),
        }
    )


BLOCKING_APP = """
import threading, time

import handler_kit.command.hook as hook
from handler_kit import HookApp, allow, context

app = HookApp("blocking")


@app.pre_tool_use(matcher="sleeper", timeout=2, fail_closed=True)
async def sleeping_gate(event):
    time.sleep(30)  # a blocking call in an async handler: no deadline can interrupt it
    return allow("late allow")


@app.pre_tool_use(matcher="awaiter", timeout=2, fail_closed=True)
async def awaiting_gate(event):
    import asyncio

    await asyncio.sleep(0)  # on an event loop, then blocking it
    time.sleep(30)
    return allow("late allow")


@app.post_tool_use(timeout=2)
async def sleeping_note(event):
    time.sleep(30)
    return context("late context")


@app.pre_tool_use(matcher="racer", timeout=1, fail_closed=True)
async def racing_gate(event):
    # The fault: the handler returns just as the watchdog has written its answer, so both
    # threads hold an answer at once. Once its answer is on stdout, the watchdog signals,
    # then gives the main thread time to write its own, if it could, before it exits.
    written = threading.Event()
    write_stderr = hook._write_stderr

    def watched_write_stderr(*args):
        if threading.current_thread().name == "handler-kit-watchdog":
            written.set()
            time.sleep(1)
        write_stderr(*args)

    hook._write_stderr = watched_write_stderr
    written.wait(20)
    return allow("late allow")
"""


@pytest.fixture(scope="module")
def blocking_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Run, float]]:
    folder = tmp_path_factory.mktemp("blocking")
    (folder / "blocking_hooks.py").write_text(BLOCKING_APP)

    def timed(args: list[str], stdin: bytes) -> tuple[Run, float]:
        started = time.monotonic()
        result = run(["command", "blocking_hooks:app", *args], stdin, cwd=folder)
        return result, time.monotonic() - started

    jobs = {
        "sleeper": ([], event_json(hook_event_name="PreToolUse", tool_name="sleeper")),
        "awaiter": ([], event_json(hook_event_name="PreToolUse", tool_name="awaiter")),
        "sleeper-exit": (
            ["--exit-codes"],
            event_json(hook_event_name="PreToolUse", tool_name="sleeper"),
        ),
        "note": ([], event_json(hook_event_name="PostToolUse", tool_name="Read")),
        "racer": ([], event_json(hook_event_name="PreToolUse", tool_name="racer")),
    }
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {key: pool.submit(timed, *job) for key, job in jobs.items()}
        return {key: future.result() for key, future in futures.items()}


# -- handler-kit forward (test_forward.py) ----------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    with serve(COMMAND_APP, port=port, env=clean_env(HANDLER_KIT_TOKENS=TOKEN)):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def nothing_listening() -> str:
    return f"http://127.0.0.1:{free_port()}/hooks/refund_gate"
