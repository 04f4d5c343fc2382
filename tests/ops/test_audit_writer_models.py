"""The audit writer process builds the models of the app's events, and their JSON validators and
serializers, when it starts: the record of a webhook's answer validates its body with its
event's model, and the first answer of each event would otherwise pay for the model's build
(and pydantic's first validator) in the writer, in durable mode inside that answer's commit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from handler_kit import HookApp, PreToolUse, Stop
from handler_kit.config import OperationsConfig
from handler_kit.ops.operations import Operations
from tests.support.processes import REPO, clean_env

# The writer's main, run in a process of its own on a pipe holding the server's first frame
# (the config) and "stop"; then which of the four models defined at import are built.
PROBE = """
import json, os, sys
from handler_kit.ops.audit.process import encode_frame, main, writer_config
from handler_kit.ops.audit.records import RecordPolicy

config = writer_config(
    [%(sink)r], app="probe", policy=RecordPolicy(), durable=%(durable)r, events=%(events)r
)
read, write = os.pipe()
os.write(write, encode_frame(("config", config)) + encode_frame(("stop",)))
os.close(write)
os.dup2(read, 0)
acks_read, acks_write = os.pipe()
code = main([str(acks_write)])
from handler_kit.core.events import EVENT_MODELS
names = ("SessionStart", "PreToolUse", "PostToolUse", "Stop")
from handler_kit.ops import keys
codecs = [n for n in names if EVENT_MODELS[n] in keys._CODECS]
report = {
    "code": code,
    "built": [n for n in names if EVENT_MODELS[n].__pydantic_complete__],
    "codecs": codecs,
}
sys.stderr.write("REPORT " + json.dumps(report) + "\\n")
"""


def writer_builds(tmp_path: Path, events: list[str], *, durable: bool) -> dict[str, object]:
    sink = f"sqlite:{tmp_path / 'audit.db'}" if durable else f"jsonl:{tmp_path / 'audit.jsonl'}"
    probe = PROBE % {"sink": sink, "durable": durable, "events": events}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        timeout=120,
    )
    lines = done.stderr.decode().splitlines()
    line = next((x for x in lines if x.startswith("REPORT ")), None)
    assert line is not None, done.stderr.decode()[-2000:]
    report: dict[str, object] = json.loads(line.removeprefix("REPORT "))
    return report


def test_the_writer_builds_the_models_of_the_events_it_is_given(tmp_path: Path) -> None:
    assert writer_builds(tmp_path, ["PreToolUse", "Stop"], durable=True) == {
        "code": 0,
        "built": ["PreToolUse", "Stop"],
        "codecs": ["PreToolUse", "Stop"],
    }
    assert writer_builds(tmp_path, ["PostToolUse"], durable=False) == {
        "code": 0,
        "built": ["PostToolUse"],
        "codecs": ["PostToolUse"],
    }
    # given none, it builds none before its first batch (a writer of an older server)
    assert writer_builds(tmp_path, [], durable=False) == {"code": 0, "built": [], "codecs": []}


def test_the_trail_gives_its_writer_the_apps_events(tmp_path: Path) -> None:
    app = HookApp("events")

    @app.pre_tool_use
    def gate(event: PreToolUse) -> None:
        return None

    @app.stop
    def check(event: Stop) -> None:
        return None

    operations = Operations.build(
        app, OperationsConfig(audit=[f"jsonl:{tmp_path / 'audit.jsonl'}"])
    )
    assert operations.audit is not None
    assert operations.audit.events == ("PreToolUse", "Stop")
