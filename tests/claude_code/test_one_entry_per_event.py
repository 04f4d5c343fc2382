"""``handler-kit install`` writes one command entry per event: a tool call starts one process
however many handlers match it, and none when none does.

The entry's matcher is the union of its handlers' matchers, judged by handler-kit's own
implementation of Claude Code's matcher rule; the process runs every handler that matches and
answers their merged decision. Each test installs with the real console script and runs the
written command line with ``sh -c`` as the runtime would.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from handler_kit.claude_code.settings import union_matcher
from handler_kit.core.matchers import compile_matcher
from tests.support.processes import clean_env

HANDLER_KIT = Path(sys.executable).parent / "handler-kit"
PYTHON = shlex.quote(sys.executable)

APP = """\
import os
from handler_kit import HookApp, PostToolUse, PreToolUse, deny

app = HookApp("several")


def seen(name):
    # which handler ran, in which process
    with open(os.path.join(os.getcwd(), "seen.log"), "a") as fh:
        fh.write(f"{name} {os.getpid()}\\n")


@app.pre_tool_use(matcher="Bash", fail_closed=True)
def bash_gate(event: PreToolUse):
    seen("bash_gate")
    if "rm -rf" in str((event.tool_input or {}).get("command", "")):
        return deny("rm -rf is not allowed here.")
    return None


@app.pre_tool_use(matcher="Bash|Edit", timeout=5)
def repo_context(event: PreToolUse) -> str:
    seen("repo_context")
    return "This repository uses uv, not pip."


@app.pre_tool_use(matcher="mcp__orders__.*")
def orders_note(event: PreToolUse) -> str:
    seen("orders_note")
    return "Orders are production data."


@app.post_tool_use()
def audit(event: PostToolUse) -> str:
    seen("audit")
    return "audited"


@app.on("SessionEnd")
def goodbye(event):
    seen("goodbye")
"""

GATE_REASON = (
    "Blocked by policy: the check bash_gate could not run, and it is configured to fail closed."
)
LINE = f'cd "$CLAUDE_PROJECT_DIR" && {PYTHON} -I -m handler_kit command several:app'

# What install writes for APP by default: one entry per event
PER_EVENT: dict[str, Any] = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "(?:mcp__orders__.*)|^(?:Bash|Edit)$",
                "hooks": [
                    {
                        "type": "command",
                        "command": f"{LINE} || {{ echo '{GATE_REASON}' >&2; exit 2; }}",
                        "timeout": 6,  # repo_context's 5 s, plus 1 s to start
                    }
                ],
            }
        ],
        "PostToolUse": [{"hooks": [{"type": "command", "command": LINE, "timeout": 4}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": LINE, "timeout": 4}]}],
    }
}

# ... and with --per-handler: one entry per handler, as earlier releases wrote
PER_HANDLER: dict[str, Any] = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {
                        "type": "command",
                        "command": f"{LINE} --handler bash_gate || "
                        f"{{ echo '{GATE_REASON}' >&2; exit 2; }}",
                        "timeout": 4,
                    }
                ],
            },
            {
                "matcher": "Bash|Edit",
                "hooks": [
                    {"type": "command", "command": f"{LINE} --handler repo_context", "timeout": 6}
                ],
            },
            {
                "matcher": "mcp__orders__.*",
                "hooks": [
                    {"type": "command", "command": f"{LINE} --handler orders_note", "timeout": 4}
                ],
            },
        ],
        "PostToolUse": [
            {"hooks": [{"type": "command", "command": f"{LINE} --handler audit", "timeout": 4}]}
        ],
        "SessionEnd": [
            {"hooks": [{"type": "command", "command": f"{LINE} --handler goodbye", "timeout": 4}]}
        ],
    }
}

pytestmark = pytest.mark.skipif(
    not HANDLER_KIT.exists(), reason=f"no handler-kit console script next to {sys.executable}"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "my project"
    root.mkdir()
    (root / "several.py").write_text(APP)
    return root


def install(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HANDLER_KIT), "install", "several:app", *args],
        capture_output=True,
        text=True,
        cwd=project,
        env=clean_env(),
        timeout=120,
    )


def run_entry(project: Path, command: str, hook_input: dict[str, Any]) -> dict[str, Any]:
    """Run an installed command line as Claude Code does; its JSON answer."""
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps({"session_id": "s1", "cwd": str(project), **hook_input}).encode(),
        capture_output=True,
        cwd=project.parent,
        env=clean_env(PATH="/usr/bin:/bin", CLAUDE_PROJECT_DIR=str(project)),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def seen(project: Path) -> list[tuple[str, str]]:
    """The handlers that ran since the last call (and their process ids), in order."""
    log = project / "seen.log"
    if not log.exists():
        return []
    lines = log.read_text().split()
    log.unlink()
    return list(zip(lines[::2], lines[1::2], strict=True))


def bash(command: str) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }


def test_one_entry_per_event_runs_every_matching_handler_in_one_process(project: Path) -> None:
    done = install(project, "--settings", ".claude/settings.json")
    assert done.returncode == 0, done.stderr
    assert json.loads((project / ".claude" / "settings.json").read_bytes()) == PER_EVENT
    group = PER_EVENT["hooks"]["PreToolUse"][0]
    command = group["hooks"][0]["command"]

    # Bash: the gate and the context handler, in one process; the deny wins, and the context
    # rides along in hookSpecificOutput as Claude Code reads it
    assert run_entry(project, command, bash("rm -rf /")) == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "rm -rf is not allowed here.",
            "additionalContext": "This repository uses uv, not pip.",
        }
    }
    ran = seen(project)
    assert sorted(name for name, _ in ran) == ["bash_gate", "repo_context"]  # run side by side
    assert len({pid for _, pid in ran}) == 1  # one process for both
    assert run_entry(project, command, bash("ls")) == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "additionalContext": "This repository uses uv, not pip.",
        }
    }
    assert sorted(name for name, _ in seen(project)) == ["bash_gate", "repo_context"]

    # a tool only one handler matches: that one alone
    edit = {"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_input": {}}
    assert run_entry(project, command, edit) == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "additionalContext": "This repository uses uv, not pip.",
        }
    }
    assert [name for name, _ in seen(project)] == ["repo_context"]
    refund = {"hook_event_name": "PreToolUse", "tool_name": "mcp__orders__refund"}
    assert run_entry(project, command, {**refund, "tool_input": {}}) == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "additionalContext": "Orders are production data.",
        }
    }
    assert [name for name, _ in seen(project)] == ["orders_note"]

    # the entry's matcher, read by Claude Code's rule, starts the process exactly for the
    # tools one handler matches: a tool none matches starts nothing
    matches = compile_matcher(group["matcher"])
    for tool, started in [
        ("Bash", True),
        ("Edit", True),
        ("mcp__orders__refund", True),
        ("Read", False),
        ("BashOutput", False),
        ("MultiEdit", False),
        ("mcp__billing__refund", False),
        ("", False),
    ]:
        assert matches(tool) is started, tool


def test_per_handler_keeps_the_earlier_layout(project: Path) -> None:
    done = install(project, "--settings", ".claude/settings.json", "--per-handler")
    assert done.returncode == 0, done.stderr
    assert json.loads((project / ".claude" / "settings.json").read_bytes()) == PER_HANDLER
    # one process per matching handler: a Bash call starts two
    pids = set()
    for group in PER_HANDLER["hooks"]["PreToolUse"][:2]:
        run_entry(project, group["hooks"][0]["command"], bash("ls"))
        pids |= {pid for _, pid in seen(project)}
    assert len(pids) == 2


def test_entries_of_one_process_per_handler_are_replaced(project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    assert install(project, "--settings", str(settings), "--per-handler").returncode == 0
    done = install(project, "--settings", str(settings))
    assert done.returncode == 0, done.stderr
    assert (
        "replacing its 5 entries of one process per handler (--handler NAME) with one entry "
        "per event" in done.stderr
    )
    assert json.loads(settings.read_bytes()) == PER_EVENT
    again = install(project, "--settings", str(settings))
    assert "already has the 3 hooks" in again.stderr and "replacing" not in again.stderr
    # and back: --per-handler replaces the per-event entries
    back = install(project, "--settings", str(settings), "--per-handler")
    assert back.returncode == 0 and "replacing" not in back.stderr
    assert json.loads(settings.read_bytes()) == PER_HANDLER


def test_codex_and_posit_get_one_entry_per_event(project: Path) -> None:
    codex = install(project, "--settings", ".codex/hooks.json", "--runtime", "codex")
    assert codex.returncode == 0, codex.stderr
    hooks = json.loads((project / ".codex" / "hooks.json").read_bytes())["hooks"]
    line = f"cd {shlex.quote(str(project))} && {PYTHON} -I -m handler_kit command several:app"
    assert hooks["PreToolUse"] == [
        {
            "matcher": "(?:mcp__orders__.*)|^(?:Bash|Edit)$",
            "hooks": [
                {
                    "type": "command",
                    "command": f"{line} --runtime codex || {{ echo '{GATE_REASON}' >&2; exit 2; }}",
                    "timeout": 6,
                }
            ],
        }
    ]
    # Codex stops a SessionEnd hook after 3 s: the entry says 3, and install says so
    assert hooks["SessionEnd"] == [
        {"hooks": [{"type": "command", "command": f"{line} --runtime codex", "timeout": 3}]}
    ]
    assert (
        "warning: SessionEnd handler 'goodbye': Codex stops a SessionEnd hook after 3 s, so its "
        "entry's timeout is 3 s, not 4 s" in codex.stderr
    )
    posit = install(project, "--settings", ".posit/assistant/settings.json", "--runtime", "posit")
    assert posit.returncode == 0, posit.stderr
    hooks = json.loads((project / ".posit" / "assistant" / "settings.json").read_bytes())["hooks"]
    assert [(e, [g.get("matcher") for g in groups]) for e, groups in hooks.items()] == [
        ("PreToolUse", ["(?:mcp__orders__.*)|^(?:Bash|Edit)$"]),
        ("PostToolUse", [None]),
        ("SessionEnd", [None]),
    ]
    assert "SessionEnd" not in posit.stderr  # only Codex caps it
    assert hooks["SessionEnd"][0]["hooks"][0]["timeout"] == 4


def test_codex_caps_a_forwarder_too(project: Path) -> None:
    done = install(
        project,
        "--settings",
        ".codex/hooks.json",
        "--runtime",
        "codex",
        "--via",
        "https://hooks.example.com",
    )
    assert done.returncode == 0, done.stderr
    hooks = json.loads((project / ".codex" / "hooks.json").read_bytes())["hooks"]
    entry = hooks["SessionEnd"][0]["hooks"][0]
    assert entry["timeout"] == 3 and "--timeout 2.5" in entry["command"]
    assert "SessionEnd handler 'goodbye': Codex stops a SessionEnd hook after 3 s" in done.stderr
    assert len(hooks["PreToolUse"]) == 3  # forwarders stay one per handler's route


# -- the union of matchers --------------------------------------------------------------------

TOOLS = [
    "Bash",
    "BashOutput",
    "bash",
    "Edit",
    "MultiEdit",
    "Edit ",
    "Grep",
    "Read",
    "issue_refund",
    "issue_refund_v2",
    "mcp__orders__refund",
    "mcp__orders__refund_status",
    "mcp__billing__refund",
    "xmcp__orders__refund",
    "refund",
    "a b",
    "",
    "Bash\n",
]


@pytest.mark.parametrize(
    ("matchers", "union"),
    [
        (["Bash", "Edit"], "Bash|Edit"),
        (["Bash|Edit", "Edit, Grep"], "Bash|Edit|Grep"),
        (["Bash", None], None),
        (["Bash", "*"], None),
        (["Bash", " "], None),
        (["mcp__orders__.*"], "mcp__orders__.*"),
        (["mcp__orders__.*", "Bash|Edit"], "(?:mcp__orders__.*)|^(?:Bash|Edit)$"),
        (["^issue_refund$", "refund$", "Read"], "(?:^issue_refund$)|(?:refund$)|^(?:Read)$"),
        (["Bash", "a b"], "Bash|a b"),
        (["Bash|", "|"], "Bash"),
        (["|", ","], "|"),
        (["mcp__orders__(?:refund|void)$", "Grep"], "(?:mcp__orders__(?:refund|void)$)|^(?:Grep)$"),
        (["(?<=mcp__)orders", "Bash"], "(?:(?<=mcp__)orders)|^(?:Bash)$"),
        (["B.sh|E.it", "^Read$", "B.sh|E.it"], "(?:B.sh|E.it)|(?:^Read$)"),
    ],
)
def test_the_union_matches_exactly_when_one_matcher_does(
    matchers: list[str | None], union: str | None
) -> None:
    got = union_matcher(matchers)
    assert got == union
    each = [compile_matcher(m) for m in matchers]
    joined = compile_matcher(got)
    for tool in TOOLS:
        assert joined(tool) is any(m(tool) for m in each), (tool, got)


def test_patterns_that_number_their_groups_are_not_joined() -> None:
    """A backreference or a named group would refer to another pattern's group once joined:
    such an event keeps one entry per handler."""
    from handler_kit.claude_code.settings import _NO_UNION

    assert union_matcher(["(a)\\1", "b.*"]) is _NO_UNION
    assert union_matcher(["(?<x>a)\\k<x>", "Bash"]) is _NO_UNION
    assert union_matcher(["(a)\\1"]) == "(a)\\1"  # alone, it is its own union
    from handler_kit import HookApp, PreToolUse
    from handler_kit.claude_code.settings import claude_code_hooks

    app = HookApp("numbered")

    @app.pre_tool_use(matcher="(mcp)__\\1.*")
    def first(event: PreToolUse) -> None:
        return None

    @app.pre_tool_use(matcher="Bash.*")
    def second(event: PreToolUse) -> None:
        return None

    block = claude_code_hooks(app, "numbered:app", project_dir=os.getcwd())
    assert [g["matcher"] for g in block["PreToolUse"]] == ["(mcp)__\\1.*", "Bash.*"]
    assert [g["hooks"][0]["command"].split()[-1] for g in block["PreToolUse"]] == [
        "first",
        "second",
    ]
