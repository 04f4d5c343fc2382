"""Claude Code settings: the ``hooks`` block of an app, and ``handler-kit install``.

Install runs on a settings.json that already holds other hooks, permissions and keys Claude
Code does not know: none of them may change, a second install leaves the file's bytes alone,
and ``--dry-run`` writes nothing. Most cases run in-process; a few run the console script.
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

from handler_kit import HookApp, PreToolUse
from handler_kit.claude_code.settings import (
    APP_HEADER,
    SettingsError,
    claude_code_hooks,
    install,
    is_ours,
    merge_hooks,
)
from tests.claude_code.support import EXISTING, write_json
from tests.support.apps import COMMAND_APP as TARGET
from tests.support.apps import CRASHY_APP
from tests.support.apps import command as command_app
from tests.support.processes import REPO

HANDLER_KIT = Path(sys.executable).parent / "handler-kit"
BASE = "https://hooks.example.com"

# The interpreter every command entry names, quoted for a shell.
PYTHON = shlex.quote(sys.executable)
# handler names of tests.support.apps.command:app that are fail-closed gates
GATES = {"refund_gate", "prompt_policy"}


def command_line(target: str, handler: str) -> str:
    """The command line installed for one handler, spelled out by hand."""
    line = (
        f'cd "$CLAUDE_PROJECT_DIR" && {PYTHON} -I -m handler_kit command {target} '
        f"--handler {handler}"
    )
    if handler in GATES:
        reason = (
            f"Blocked by policy: the check {handler} could not run, and it is configured to "
            "fail closed."
        )
        line += f" || {{ echo '{reason}' >&2; exit 2; }}"
    return line


def event_line(target: str, gates: tuple[str, ...] = ()) -> str:
    """The command line installed for one event's handlers (no --handler: the process runs
    each one that matches), blocking when it cannot start if the event has a gate."""
    line = f'cd "$CLAUDE_PROJECT_DIR" && {PYTHON} -I -m handler_kit command {target}'
    if gates:
        reason = (
            f"Blocked by policy: the check {gates[0]} could not run, and it is configured to "
            "fail closed."
        )
        line += f" || {{ echo '{reason}' >&2; exit 2; }}"
    return line


# tests.support.apps.command:app installed as command hooks: one entry per event, its matcher
# the union of its handlers' (Bash, Grep and the refund tools by name, mcp__.* as a pattern),
# its timeout the longest of theirs plus the start-up allowance
COMMAND_BLOCK = {
    "PreToolUse": [
        {
            "matcher": "(?:mcp__.*)|^(?:issue_refund|orders__refund|Bash|Grep)$",
            "hooks": [
                {
                    "type": "command",
                    "command": event_line(TARGET, ("refund_gate",)),
                    "timeout": 4,
                }
            ],
        }
    ],
    "PostToolUse": [{"hooks": [{"type": "command", "command": event_line(TARGET), "timeout": 4}]}],
    "UserPromptSubmit": [
        {
            "hooks": [
                {
                    "type": "command",
                    "command": event_line(TARGET, ("prompt_policy",)),
                    "timeout": 4,
                }
            ]
        }
    ],
    "Stop": [{"hooks": [{"type": "command", "command": event_line(TARGET), "timeout": 4}]}],
    "SessionStart": [
        {
            "matcher": "startup|resume",
            "hooks": [{"type": "command", "command": event_line(TARGET), "timeout": 6}],
        }
    ],
}


def without_ours(settings: dict[str, Any], module_attr: str = TARGET) -> dict[str, Any]:
    """``settings`` with every entry of ``module_attr`` (and groups/events left empty) gone."""
    out = dict(settings)
    hooks = {}
    for event, groups in settings.get("hooks", {}).items():
        kept = []
        for group in groups:
            entries = [e for e in group["hooks"] if not is_ours(e, module_attr)]
            if entries:
                kept.append({**group, "hooks": entries})
            elif not group["hooks"]:
                kept.append(group)
        if kept or not groups:
            hooks[event] = kept
    out["hooks"] = hooks
    return out


def ours(settings: dict[str, Any], module_attr: str = TARGET) -> list[tuple[str, Any, Any]]:
    return [
        (event, group.get("matcher"), entry)
        for event, groups in settings["hooks"].items()
        for group in groups
        for entry in group["hooks"]
        if is_ours(entry, module_attr)
    ]


# -- the hooks block --------------------------------------------------------------------------


def test_http_block_one_group_per_handler() -> None:
    warnings: list[str] = []
    block = claude_code_hooks(command_app.app, TARGET, base_url=BASE + "/", warn=warnings.append)
    assert list(block) == ["PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart"]
    assert [g.get("matcher") for g in block["PreToolUse"]] == [
        "issue_refund|orders__refund",
        "Bash",
        "mcp__.*",
        "Grep",
    ]
    assert block["PreToolUse"][0] == {
        "matcher": "issue_refund|orders__refund",
        "hooks": [
            {
                "type": "http",
                "url": "https://hooks.example.com/hooks/refund_gate",
                "headers": {
                    "Authorization": "Bearer $HANDLER_KIT_TOKEN",
                    APP_HEADER: TARGET,
                },
                "allowedEnvVars": ["HANDLER_KIT_TOKEN"],
                "timeout": 3,
            }
        ],
    }
    assert "matcher" not in block["Stop"][0]  # no matcher: every Stop
    # Claude Code never calls http hooks on SessionStart: a command hook, and a warning
    assert block["SessionStart"] == [
        {
            "matcher": "startup|resume",
            "hooks": [
                {
                    "type": "command",
                    "command": event_line(TARGET),
                    "timeout": 6,
                }
            ],
        }
    ]
    assert len(warnings) == 1 and "SessionStart" in warnings[0]


def test_command_block_one_entry_per_event() -> None:
    block = claude_code_hooks(command_app.app, TARGET, command=True)
    assert block == claude_code_hooks(command_app.app, TARGET)  # the default
    assert block == COMMAND_BLOCK


def test_command_block_per_handler() -> None:
    block = claude_code_hooks(command_app.app, TARGET, command=True, per_handler=True)
    entries = [g["hooks"][0] for groups in block.values() for g in groups]
    assert len(entries) == len(command_app.app.handlers)
    for entry, handler in zip(entries, command_app.app.handlers, strict=True):
        assert entry == {
            "type": "command",
            "command": command_line(TARGET, handler.name),
            "timeout": handler.timeout + 1,  # the process starts before the deadline does
        }


def test_block_rejects_bad_options() -> None:
    app = command_app.app
    with pytest.raises(ValueError, match="pass one of"):
        claude_code_hooks(app, TARGET, base_url=BASE, command=True)
    with pytest.raises(ValueError, match="pass one of"):
        claude_code_hooks(app, TARGET, base_url=BASE, via=BASE)
    for url in ("hooks.example.com", "ftp://x", "https://x/?a=1", "https://${HOST}"):
        with pytest.raises(ValueError):
            claude_code_hooks(app, TARGET, base_url=url)
    with pytest.raises(ValueError, match="MODULE:ATTR"):
        claude_code_hooks(app, "my hooks; rm -rf /:app")


def test_is_ours_only_matches_this_app() -> None:
    assert is_ours({"type": "command", "command": f"handler-kit command {TARGET}"}, TARGET)
    assert is_ours(
        {"type": "command", "command": f"/opt/venv/bin/handler-kit command {TARGET} --exit-codes"},
        TARGET,
    )
    assert not is_ours({"type": "command", "command": "handler-kit command other:app"}, TARGET)
    assert not is_ours({"type": "command", "command": f"echo handler-kit command {TARGET}"}, TARGET)
    # the form install writes now: an absolute interpreter (quoted, spaces and all), from the
    # project directory; and the forwarder, which names the app with --app
    python = "'/home/dana/my refunds/.venv/bin/python'"
    for command in (
        f'cd "$CLAUDE_PROJECT_DIR" && {python} -m handler_kit command {TARGET} --handler x',
        f"cd '/home/dana/my refunds' && {python} -m handler_kit command {TARGET} || exit 2",
        f"{python} -m handler_kit command {TARGET} --handler x || {{ echo 'x' >&2; exit 2; }}",
        f"{python} -m handler_kit forward https://h/hooks/x --app {TARGET} --fail-closed",
        f"/usr/bin/python3 -m handler_kit forward https://h/hooks/x --app={TARGET}",
        f'cd "$CLAUDE_PROJECT_DIR" && {python} -I -m handler_kit command {TARGET} --handler x',
        f"{python} -I -m handler_kit forward https://h/hooks/x --app {TARGET} --fail-closed",
    ):
        assert is_ours({"type": "command", "command": command}, TARGET), command
    for command in (
        f"{python} -m handler_kit command other:app --handler x",
        f"{python} -m handler_kit forward https://h/hooks/x --app other:app",
        f"{python} -m handler_kit forward https://h/hooks/{TARGET}",
        f"{python} -m other_tool command {TARGET}",
        f"echo x && {python} -m handler_kit command {TARGET}",
        f"cd '/unbalanced && {python} -m handler_kit command {TARGET}",
    ):
        assert not is_ours({"type": "command", "command": command}, TARGET), command
    assert is_ours({"type": "http", "url": "x", "headers": {APP_HEADER: TARGET}}, TARGET)
    assert not is_ours({"type": "http", "url": f"{BASE}/hooks/refund_gate"}, TARGET)
    assert not is_ours("not a dict", TARGET)


# -- install ----------------------------------------------------------------------------------


def test_install_keeps_everything_else(
    tmp_path: Path, settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = settings.read_bytes()
    message = install(command_app.app, TARGET, str(settings), base_url=BASE)
    assert "installed" in message
    after = json.loads(settings.read_bytes())
    assert list(after) == list(EXISTING)  # key order kept
    assert without_ours(after) == EXISTING
    # our entries: one per handler, the user's own hooks first where they were
    assert len(ours(after)) == len(command_app.app.handlers)
    assert after["hooks"]["PreToolUse"][:2] == EXISTING["hooks"]["PreToolUse"]
    assert list(after["hooks"])[:3] == ["PreToolUse", "Notification", "SessionEnd"]
    assert (tmp_path / "settings.json.bak").read_bytes() == original
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert "SessionStart" in capsys.readouterr().err  # the http -> command warning


def test_second_install_is_a_no_op(tmp_path: Path, settings: Path) -> None:
    install(command_app.app, TARGET, str(settings), base_url=BASE)
    first = settings.read_bytes()
    backup = (tmp_path / "settings.json.bak").read_bytes()
    stamp = settings.stat().st_mtime_ns
    message = install(command_app.app, TARGET, str(settings), base_url=BASE)
    assert "nothing written" in message and "already" in message
    assert settings.read_bytes() == first
    assert settings.stat().st_mtime_ns == stamp
    assert (tmp_path / "settings.json.bak").read_bytes() == backup


def test_reinstall_replaces_only_our_entries(settings: Path) -> None:
    """Switching http -> command, a user's hook added to one of our groups, and a handler
    removed from the app: our old entries go, everything else stays."""
    install(command_app.app, TARGET, str(settings), base_url=BASE)
    data = json.loads(settings.read_bytes())
    stop_group = data["hooks"]["Stop"][0]
    stop_group["hooks"].append({"type": "command", "command": "./after-stop.sh"})
    write_json(settings, data)

    install(command_app.app, TARGET, str(settings), command=True)
    data = json.loads(settings.read_bytes())
    assert {entry["type"] for _, _, entry in ours(data)} == {"command"}
    assert len(ours(data)) == len(COMMAND_BLOCK)  # one per event
    stop_commands = [e["command"] for g in data["hooks"]["Stop"] for e in g["hooks"]]
    assert stop_commands == [event_line(TARGET), "./after-stop.sh"]

    smaller = HookApp("smaller")

    @smaller.pre_tool_use(matcher="Bash")
    def no_npm(event: PreToolUse) -> None:
        return None

    install(smaller, TARGET, str(settings), command=True)
    data = json.loads(settings.read_bytes())
    assert [(e, m) for e, m, _ in ours(data)] == [("PreToolUse", "Bash")]
    assert "SessionStart" not in data["hooks"] and "UserPromptSubmit" not in data["hooks"]
    assert data["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "./after-stop.sh"}]}]
    assert data["hooks"]["SessionEnd"] == []  # the user's empty list is theirs
    expected_rest = json.loads(json.dumps(EXISTING))
    expected_rest["hooks"]["Stop"] = data["hooks"]["Stop"]
    assert without_ours(data) == expected_rest


def test_another_apps_entries_are_left_alone(settings: Path) -> None:
    install(command_app.crashy, CRASHY_APP, str(settings), command=True)
    with_other = json.loads(settings.read_bytes())
    install(command_app.app, TARGET, str(settings), base_url=BASE)
    data = json.loads(settings.read_bytes())
    assert ours(data, CRASHY_APP) == ours(with_other, CRASHY_APP)
    assert without_ours(data) == with_other


def test_dry_run_writes_nothing(
    tmp_path: Path, settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = settings.read_bytes()
    message = install(command_app.app, TARGET, str(settings), command=True, dry_run=True)
    assert "nothing written" in message
    diff = capsys.readouterr().out
    assert diff.startswith(f"--- {settings}\n+++ {settings} (installed)\n")
    added = [line for line in diff.splitlines() if line.startswith("+")]
    command = json.dumps({"command": event_line(TARGET, ("refund_gate",))})[1:-1] + ","
    assert any(line.strip("+ ") == command for line in added)
    assert settings.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]


def test_missing_file_is_created(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    message = install(command_app.app, TARGET, str(settings), command=True)
    assert message.startswith("created")
    data = json.loads(settings.read_bytes())
    assert list(data) == ["hooks"]
    assert data["hooks"] == COMMAND_BLOCK
    assert settings.read_bytes().endswith(b"}\n")
    assert not (tmp_path / ".claude" / "settings.json.bak").exists()


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b'{"hooks": {,}}', "is not valid JSON (line 1 column 12"),
        (b"// comment\n{}", "is not valid JSON"),
        (b"[1, 2]", "holds a JSON list, not an object"),
        (b'{"hooks": []}', '"hooks" in the settings file is not an object'),
    ],
)
def test_invalid_settings_are_refused(
    tmp_path: Path, settings_path: Path, content: bytes, fragment: str
) -> None:
    settings_path.write_bytes(content)
    with pytest.raises(SettingsError) as info:
        install(command_app.app, TARGET, str(settings_path), command=True)
    assert fragment in str(info.value)
    assert settings_path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]


@pytest.mark.parametrize("indent", [4, "\t"])
def test_indentation_is_kept(settings_path: Path, indent: int | str) -> None:
    write_json(settings_path, EXISTING, indent=indent)
    install(command_app.app, TARGET, str(settings_path), command=True)
    text = settings_path.read_text()
    assert text == json.dumps(json.loads(text), indent=indent, ensure_ascii=False) + "\n"


# A hand-written settings file: a one-line "permissions", spacing and escapes of its own, a
# key order of its own. Only the hooks value may change.
HAND_WRITTEN_HEAD = """{
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
  "model":"opus",
"""
HAND_WRITTEN_TAIL = """,
  "env":   { "FOO" : "caf\\u00e9" }
}
"""


def test_only_the_hooks_value_is_rewritten(settings_path: Path) -> None:
    old_hooks = '"hooks": {"Notification": [{"hooks": [{"type": "command", "command": "n"}]}]}'
    settings_path.write_text(HAND_WRITTEN_HEAD + "  " + old_hooks + HAND_WRITTEN_TAIL)
    install(command_app.app, TARGET, str(settings_path), command=True)
    text = settings_path.read_text()
    assert text.startswith(HAND_WRITTEN_HEAD + '  "hooks": {\n    "Notification": [')
    assert text.endswith("\n  }" + HAND_WRITTEN_TAIL)
    hooks = json.loads(text)["hooks"]
    assert hooks["Notification"][0]["hooks"] == [{"type": "command", "command": "n"}]
    assert hooks["PreToolUse"] == claude_code_hooks(command_app.app, TARGET)["PreToolUse"]


def test_a_hooks_key_is_added_after_the_last_member(settings_path: Path) -> None:
    original = HAND_WRITTEN_HEAD + '  "x": 1' + HAND_WRITTEN_TAIL
    settings_path.write_text(original)
    install(command_app.app, TARGET, str(settings_path), command=True)
    text = settings_path.read_text()
    head = original[: -len("\n}\n")]
    assert text.startswith(head + ',\n  "hooks": {\n    "PreToolUse": [')
    assert text.endswith("\n  }\n}\n")
    assert json.loads(text)["hooks"] == claude_code_hooks(command_app.app, TARGET)


def test_merge_does_not_modify_its_input() -> None:
    before = json.dumps(EXISTING)
    block = claude_code_hooks(command_app.app, TARGET)
    merged = merge_hooks(EXISTING, block, TARGET)
    assert json.dumps(EXISTING) == before
    assert merge_hooks(merged, block, TARGET) == merged


# -- the console script -----------------------------------------------------------------------


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDLER_KIT_")}
    return subprocess.run(
        [str(HANDLER_KIT), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=60
    )


@pytest.mark.skipif(not HANDLER_KIT.exists(), reason="no handler-kit console script")
def test_install_command(tmp_path: Path, settings: Path) -> None:
    original = settings.read_bytes()
    first = cli("install", TARGET, "--settings", str(settings), "--command")
    assert first.returncode == 0, first.stderr
    assert first.stdout == ""
    assert f"installed the 5 hooks of {TARGET}" in first.stderr
    written = settings.read_bytes()
    again = cli("install", TARGET, "--settings", str(settings), "--command")
    assert again.returncode == 0
    assert "already has the 5 hooks" in again.stderr
    assert settings.read_bytes() == written
    assert (tmp_path / "settings.json.bak").read_bytes() == original

    # the installed command line runs as Claude Code would run it (a shell, in the project)
    entry = json.loads(written)["hooks"]["PreToolUse"][2]["hooks"][0]
    env = dict(os.environ, PATH=f"{HANDLER_KIT.parent}{os.pathsep}{os.environ['PATH']}")
    event = {
        "hook_event_name": "PreToolUse",
        "tool_name": "orders__refund",
        "tool_input": {"amount": 900},
    }
    hook = subprocess.run(
        entry["command"],
        shell=True,
        input=json.dumps(event),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )
    assert hook.returncode == 0, hook.stderr
    assert json.loads(hook.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"

    broken = tmp_path / "broken.json"
    broken.write_text('{"hooks": ')
    refused = cli("install", TARGET, "--settings", str(broken), "--base-url", BASE)
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"handler-kit install: {broken} is not valid JSON")
    assert "Traceback" not in refused.stderr
    assert broken.read_text() == '{"hooks": '

    missing_app = cli("install", "nosuch_module:app", "--settings", str(settings), "--command")
    assert missing_app.returncode == 1
    assert "no module named 'nosuch_module'" in missing_app.stderr
