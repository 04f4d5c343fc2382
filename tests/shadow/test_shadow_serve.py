"""Shadow mode through ``handler-kit serve --shadow``: a candidate that crashes, hangs or is
slow leaves every answer, and its timing, as it was; candidate work is shed (and counted) at
saturation; agreements and disagreements are counted per handler, on both webhook routes and
MCP."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.shadow.apps import GATE_SECONDS
from tests.shadow.support import (
    ENFORCED as ENFORCED_AS_CANDIDATE,
)
from tests.shadow.support import (
    HEADERS,
    ROUTES,
    Sent,
    metric,
    percentile,
    send_all,
    send_side_by_side,
    served,
    traffic,
    wait_for_metric,
)

REQUESTS = traffic(40)
# what an answer may take beyond the enforced gate's own time, on a loaded 2-core machine: far
# below what any of the bad candidates takes (a slow one 0.4 s, a hanging one for ever)
BOUND = 0.2
# what one answer alone may take on such a machine, when the server got no core for a moment
STALL = 2.0


@pytest.fixture(scope="module")
def baseline() -> Iterator[str]:
    """The URL of the same server without a shadow: each test times its answers beside the
    shadowed server's (``send_side_by_side``), under the same load."""
    with served() as (_, url):
        yield url


def expected_bodies(requests: list[tuple[str, dict[str, object]]]) -> list[bytes]:
    """What the enforced gate answers: rm -rf denied, anything else no opinion."""
    bodies = []
    for _, body in requests:
        command = body["tool_input"]["command"]  # type: ignore[index]
        if "rm -rf" in command:
            bodies.append(
                json.dumps(
                    {
                        "hookSpecificOutput": {
                            "hookEventName": "PreToolUse",
                            "permissionDecision": "deny",
                            "permissionDecisionReason": "rm -rf is not allowed",
                        }
                    },
                    separators=(",", ":"),
                ).encode()
            )
        else:
            bodies.append(b"{}")
    return bodies


def assert_as_without_shadow(
    shadowed: list[Sent],
    unshadowed: list[Sent],
    requests: list[tuple[str, dict[str, object]]] = REQUESTS,
) -> None:
    assert [s.status for s in shadowed] == [200] * len(requests)
    assert [s.body for s in unshadowed] == expected_bodies(requests)
    # byte for byte what the same server answers without a shadow
    assert [s.body for s in shadowed] == [s.body for s in unshadowed]
    # A candidate that held the server up would delay every answer (the slow one by 0.4 s,
    # the hanging one for ever): all answers but the slowest must be within the bound. The
    # slowest alone may meet a moment when the machine gave the server no core (seen with a
    # second test process beside it), so it gets a looser one.
    times = sorted(s.seconds for s in shadowed)
    assert times[-2] < GATE_SECONDS + BOUND, f"answers took {times[-2]:.3f} s and more"
    assert times[-1] < GATE_SECONDS + STALL, f"an answer took {times[-1]:.3f} s"
    # the distribution too: the median within a few ms of the unshadowed one's
    median, base_median = (percentile([s.seconds for s in r], 0.5) for r in (shadowed, unshadowed))
    assert median < base_median + 0.015, (median, base_median)


def test_a_crashing_candidate_changes_no_answer(baseline: str) -> None:
    with served("tests.shadow.apps:crashing") as (server, url):
        shadowed, unshadowed = send_side_by_side(url, baseline, REQUESTS)
        assert_as_without_shadow(shadowed, unshadowed)
        # it answered, by its failure policy, every time: a disagreement each (the gate
        # crashed where the enforced one answered), and the server is still up
        assert wait_for_metric(url, "handler_kit_shadow_answers_total", len(REQUESTS)) == len(
            REQUESTS
        )
        assert metric(url, "handler_kit_shadow_answers_total", result="disagree") == len(REQUESTS)
        assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
        assert server.proc.poll() is None


def test_a_hanging_candidate_changes_no_answer_and_its_work_is_shed(baseline: str) -> None:
    """The candidate holds its process for good on the first answer; four answers handed
    over and not answered is the bound (4), and everything after is shed and counted."""
    with served("tests.shadow.apps:hanging", HANDLER_KIT_SHADOW_QUEUE_SIZE="4") as (
        server,
        url,
    ):
        shadowed, unshadowed = send_side_by_side(url, baseline, REQUESTS)
        assert_as_without_shadow(shadowed, unshadowed)
        shed = metric(url, "handler_kit_shadow_shed_total", reason="queue_full")
        assert shed == len(REQUESTS) - 4
        # and more traffic is shed as it comes, never queued: the queue stays at its bound
        send_all(url, REQUESTS[:10])
        assert metric(url, "handler_kit_shadow_shed_total", reason="queue_full") == shed + 10
        assert metric(url, "handler_kit_shadow_answers_total") == 0
        # a shutdown does not wait for the held thread
        assert server.terminate(timeout=15)


def test_a_slow_candidate_changes_no_answer(baseline: str) -> None:
    with served("tests.shadow.apps:slow") as (_, url):
        shadowed, unshadowed = send_side_by_side(url, baseline, REQUESTS)
        assert_as_without_shadow(shadowed, unshadowed)
        # it decides as the enforced gate does, only later
        assert wait_for_metric(url, "handler_kit_shadow_answers_total", 3, result="agree") >= 3
        assert metric(url, "handler_kit_shadow_answers_total", result="disagree") == 0


def test_agreements_and_disagreements_are_counted_per_handler() -> None:
    """The stricter candidate denies every rm: it disagrees on ``rm notes.txt`` (the enforced
    gate let it through) and on ``rm -rf`` (denied for another reason), on both routes and
    over MCP; ``audit_note``, the same in both apps, always agrees, and so does
    ``stricter_extra``, which only the candidate has and which never has an opinion."""
    requests = traffic(16)  # every command twice on each route
    with served("tests.shadow.apps:stricter") as (_, url):
        send_all(url, requests)
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "bash_gate",
                "arguments": {"tool_name": "Bash", "tool_input": {"command": "rm notes.txt"}},
            },
        }
        mcp = httpx.post(
            f"{url}/mcp",
            json=call,
            headers={**HEADERS, "Accept": "application/json, text/event-stream"},
            timeout=10,
        )
        assert mcp.status_code == 200 and mcp.json()["result"]["content"][0]["text"] == "{}"
        total = len(requests) + 1
        answers = "handler_kit_shadow_answers_total"
        assert wait_for_metric(url, answers, total) == total
        assert metric(url, answers, result="agree") == 8  # ls and git status
        assert metric(url, answers, result="disagree") == 9  # the rms, and the MCP call
        per_handler = "handler_kit_shadow_handler_answers_total"
        assert metric(url, per_handler, handler="bash_gate", result="agree") == 8
        assert metric(url, per_handler, handler="bash_gate", result="disagree") == 9
        # POST /hooks runs it (8 requests); /hooks/bash_gate and the tool do not
        assert metric(url, per_handler, handler="audit_note", result="agree") == 8
        assert metric(url, per_handler, handler="audit_note", result="disagree") == 0
        assert metric(url, per_handler, handler="stricter_extra", result="agree") == 8
        assert metric(url, per_handler, handler="stricter_extra", result="disagree") == 0
        assert metric(url, "handler_kit_shadow_shed_total") == 0


def test_a_candidate_whose_process_dies_loses_only_what_it_had(baseline: str) -> None:
    """Its process ends on ``git status``: what it had is counted as lost, a new process
    answers what comes next, and every answer is as it was."""
    with served("tests.shadow.apps:dying") as (server, url):
        # ends with the first git status
        shadowed, unshadowed = send_side_by_side(url, baseline, REQUESTS[:7])
        assert_as_without_shadow(shadowed, unshadowed, REQUESTS[:7])
        assert wait_for_metric(url, "handler_kit_shadow_shed_total", 1, reason="lost") >= 1
        answered = metric(url, "handler_kit_shadow_answers_total")
        lost = metric(url, "handler_kit_shadow_shed_total", reason="lost")
        assert answered + lost == 7
        # said as the new process is started, a second after: what comes next is its
        server.wait_for_output("ended with status 3")
        send_all(url, REQUESTS[:6])  # no git status: every one answered
        assert wait_for_metric(url, "handler_kit_shadow_answers_total", answered + 6) == (
            answered + 6
        )


def _descendants(pid: int) -> dict[int, str]:
    """The processes under ``pid``, with their command lines (Linux's /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                parent = int(stat[stat.rindex(")") + 2 :].split()[1])
                children.setdefault(parent, []).append(int(entry))
    found, todo = {}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            with contextlib.suppress(OSError):
                found[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
            todo.append(child)
    return {child: cmdline.decode() for child, cmdline in found.items()}


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def test_the_candidate_takes_only_idle_cpu_and_the_server_runs_no_shadow_thread() -> None:
    """The candidate's process is scheduled at idle priority (a server's wake-up preempts it
    at once: it may use only the CPU the server leaves), and the server's process runs no
    thread for the shadow: its event loop talks to the candidate, so nothing of the shadow
    holds the interpreter while a request waits."""
    threads = []
    for shadow in (None, "tests.shadow.apps:stricter"):
        with served(shadow) as (server, url):
            send_all(url, REQUESTS[:8])
            # both sides read /metrics (its exposition runs on a worker thread)
            answered = wait_for_metric(url, "handler_kit_shadow_answers_total", 8 if shadow else 0)
            if shadow is not None:
                assert answered == 8
                candidates = [
                    pid
                    for pid, cmdline in _descendants(server.proc.pid).items()
                    if "-m handler_kit.shadow " in cmdline
                ]
                assert len(candidates) == 1, _descendants(server.proc.pid)
                assert os.sched_getscheduler(candidates[0]) == os.SCHED_IDLE
            threads.append(_threads(server.proc.pid))
    assert threads[1] == threads[0]


def test_the_candidate_reads_the_webhook_input_as_the_server_did() -> None:
    """The candidate gets the webhook's body as received and reads the event from it again:
    an input that pydantic-core refuses and the standard library reads (a lone surrogate
    escape, seen in captured prompts) is answered by the candidate as by the server. The
    candidate here is the enforced app itself, so every answer agrees."""
    bodies = [
        b'{"hook_event_name":"PreToolUse","session_id":"s","transcript_path":"/t",'
        b'"cwd":"/w","tool_name":"Bash","tool_input":{"command":"rm -rf \\udc8f"},'
        b'"tool_use_id":"toolu_%d"}' % number
        for number in range(4)
    ]
    with served(ENFORCED_AS_CANDIDATE) as (_, url):
        with httpx.Client(base_url=url, headers=HEADERS, timeout=30) as http:
            for number, body in enumerate(bodies):
                path = ROUTES[number % 2]
                answer = http.post(path, content=body)
                assert answer.status_code == 200
                assert answer.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
        answers = "handler_kit_shadow_answers_total"
        assert wait_for_metric(url, answers, 4) == 4
        assert metric(url, answers, result="agree") == 4
        assert metric(url, "handler_kit_shadow_shed_total") == 0
