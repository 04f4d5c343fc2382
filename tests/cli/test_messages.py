"""The CLI's refusals as a person meets them, each a real ``handler-kit`` process: one line
that says what to do (the port to change, the extra to install, the variable to set, the
handler names there are), never a traceback, and nothing said about serving before it.

The processes of a test start together (each imports the server stack: one after the other,
their start-up would dominate the file)."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

from tests.cli.support import SERVE_TOKEN, TARGET
from tests.support.apps import OPS_APP
from tests.support.payloads import REFUND_EVENT
from tests.support.processes import HANDLER_KIT, REPO, clean_env, free_port

TIMEOUT = 60.0  # bounded, and generous: a loaded 2-core machine imports slowly


def run_all(
    cases: dict[str, tuple[list[str], dict[str, str]]],
    cwd: Path = REPO,
    stdin: str = "",
) -> dict[str, subprocess.CompletedProcess[str]]:
    """Run ``handler-kit ARGS`` for every case at once; their results by name."""
    procs = {
        name: subprocess.Popen(
            [str(HANDLER_KIT), *argv],
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, (argv, env) in cases.items()
    }
    results = {}
    try:
        for name, proc in procs.items():
            out, err = proc.communicate(stdin, timeout=TIMEOUT)
            results[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


def one_line_refusal(result: subprocess.CompletedProcess[str], prefix: str) -> str:
    """The single stderr line of a refused start, checked: exit 2, nothing on stdout (no
    banner), no traceback."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == "", result.stdout
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(prefix), lines[0]
    return lines[0]


def test_a_port_in_use_is_one_line_before_any_banner() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = clean_env(HANDLER_KIT_TOKENS=SERVE_TOKEN)
        results = run_all(
            {
                "serve": (["serve", TARGET, "--host", "127.0.0.1", "--port", str(port)], env),
                "dev": (["dev", TARGET, "--port", str(port)], env),
            }
        )
    for command, result in results.items():
        line = one_line_refusal(result, f"handler-kit {command}: ")
        assert line == f"handler-kit {command}: port {port} is in use; pass --port"
        assert "refund-gate" not in result.stderr  # no banner printed before it


def _hidden(root: Path, package: str) -> str:
    """A folder that, put first on PYTHONPATH, makes ``package`` fail to import as it does
    when it is not installed."""
    folder = root / f"hide-{package}"
    (folder / package).mkdir(parents=True)
    (folder / package / "__init__.py").write_text(
        f"raise ImportError('No module named {package!r} (hidden by the test)')\n"
    )
    return str(folder)


def test_a_missing_extra_names_the_install_line(tmp_path: Path) -> None:
    base = {"HANDLER_KIT_TOKENS": SERVE_TOKEN}

    def serve(target: str, hide: str, **settings: str) -> tuple[list[str], dict[str, str]]:
        argv = ["serve", target, "--host", "127.0.0.1", "--port", str(free_port())]
        return argv, clean_env(**base, PYTHONPATH=_hidden(tmp_path, hide), **settings)

    results = run_all(
        {
            "metrics": serve(TARGET, "prometheus_client", HANDLER_KIT_METRICS="1"),
            "otel": serve(TARGET, "opentelemetry", HANDLER_KIT_OTEL="1"),
            # an app with an idempotent handler: without the check it starts, then every call
            # to that handler fails
            "redis": serve(
                OPS_APP,
                "redis",
                HANDLER_KIT_IDEMPOTENCY_REDIS_URL="redis://127.0.0.1:1/0",
                HANDLER_KIT_IDEMPOTENCY_KEYS="k" * 32,
            ),
            "postgres": serve(
                TARGET, "psycopg", HANDLER_KIT_AUDIT="postgresql://u:pw-secret@127.0.0.1:1/db"
            ),
        }
    )
    expected = {
        "metrics": "HANDLER_KIT_METRICS=1 needs the metrics extra: "
        "pip install 'handler-kit[metrics]'",
        "otel": "HANDLER_KIT_OTEL=1 needs the otel extra: pip install 'handler-kit[otel]'",
        "redis": "HANDLER_KIT_IDEMPOTENCY_REDIS_URL needs the redis extra: "
        "pip install 'handler-kit[redis]'",
        "postgres": "HANDLER_KIT_AUDIT=postgresql://... needs the postgres extra: "
        "pip install 'handler-kit[postgres]'",
    }
    for name, result in results.items():
        line = one_line_refusal(result, "handler-kit serve: ")
        assert line == f"handler-kit serve: {expected[name]}", name
        assert "pw-secret" not in result.stderr


BROKEN = """\
from handler_kit import HookApp

app = HookApp("broken")
limits = {"refund": 500,
          "credit" 200}
"""


def test_a_syntax_error_shows_file_line_and_text(tmp_path: Path) -> None:
    (tmp_path / "broken_hooks.py").write_text(BROKEN)
    env = clean_env(HANDLER_KIT_TOKENS=SERVE_TOKEN)
    results = run_all(
        {
            "serve": (["serve", "broken_hooks:app", "--port", str(free_port())], env),
            "dev": (["dev", "broken_hooks:app", "--port", str(free_port())], env),
            "document": (["document", "broken_hooks:app"], env),
        },
        cwd=tmp_path,
    )
    where = f"{tmp_path / 'broken_hooks.py'}, line 5: SyntaxError: "
    for command, result in results.items():
        assert result.returncode != 0, command
        assert "Traceback" not in result.stderr + result.stdout, command
        assert where in result.stderr, (command, result.stderr)
        assert '"credit" 200}' in result.stderr, command
    for command in ("serve", "dev"):
        lines = results[command].stderr.rstrip().splitlines()
        # the message, then the line and a caret under the error, as Python shows them
        assert lines[0].startswith(f"handler-kit {command}: importing 'broken_hooks' failed: ")
        assert lines[1] == '    "credit" 200}', lines
        assert lines[2].strip() == "^", lines
        assert lines[2].index("^") < len(lines[1])


def test_an_unknown_handler_lists_the_handlers() -> None:
    result = run_all(
        {"command": (["command", TARGET, "--handler", "nope"], clean_env())},
        stdin=json.dumps(REFUND_EVENT),
    )["command"]
    assert result.returncode == 1  # a command hook's non-blocking error
    assert result.stderr.strip() == (
        "handler-kit: app 'refund-gate' has no handler named 'nope'; its handlers: "
        "refund_gate, returns_policy, cite_ticket, refund_audit_note"
    )


def test_send_without_a_token_names_the_variable(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps(REFUND_EVENT))
    # nothing listens there: the message comes before the request, whatever happens to it
    url = f"http://127.0.0.1:{free_port()}/hooks"
    result = run_all({"send": (["send", url, "--event", str(event)], clean_env())})["send"]
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0] == (
        "handler-kit send: no bearer token: set HANDLER_KIT_TOKEN (one of the server's "
        "HANDLER_KIT_TOKENS) or pass --token; sending without one"
    )


def test_validate_an_http_url_points_at_dispatch_allow_private(tmp_path: Path) -> None:
    document = tmp_path / "hooks.json"
    handler = {"type": "http", "url": "http://127.0.0.1:8000/hooks"}
    document.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [handler]}]}}))
    result = run_all({"validate": (["validate", str(document)], clean_env())})["validate"]
    assert result.returncode == 1
    # stdout stays exactly what Runbear's PUT answers
    assert json.loads(result.stdout)["error"] == "invalid_hooks"
    assert "Traceback" not in result.stderr
    assert "handler-kit dispatch --allow-private" in result.stderr


COMMANDS = (
    "serve",
    "dev",
    "document",
    "install",
    "validate",
    "dispatch",
    "send",
    "command",
    "forward",
)


def test_every_option_says_its_default() -> None:
    """Every option of every argparse command ends its help with its default (or says it is
    required); those backed by a setting also name its variable."""
    env = clean_env(COLUMNS="1000")
    results = run_all({name: ([name, "--help"], env) for name in COMMANDS})
    for name, result in results.items():
        assert result.returncode == 0, (name, result.stderr)
        options = result.stdout.split("options:", 1)[1]
        entries = [e for e in options.split("\n  -") if e.strip() and not e.startswith("h, ")]
        assert entries, name
        for entry in entries:
            text = " ".join(entry.split())
            assert "default" in text or "required" in text, (name, text)
    serve_help = " ".join(results["serve"].stdout.split())
    assert "--log-format {text,json}" in serve_help
    assert "env HANDLER_KIT_LOG_FORMAT" in serve_help
    assert "--tls-cert PEM PEM certificate (chain) for HTTPS (default: none; env" in serve_help


@pytest.mark.parametrize("command", ["serve", "dev"])
def test_a_bad_env_file_line_is_one_line(tmp_path: Path, command: str) -> None:
    env_file = tmp_path / "prod.env"
    env_file.write_text("HANDLER_KIT_TOKENS=secret-token-0123456789\nnot a setting\n")
    result = run_all(
        {
            command: (
                [command, TARGET, "--port", str(free_port()), "--env-file", str(env_file)],
                clean_env(),
            )
        }
    )[command]
    line = one_line_refusal(result, f"handler-kit {command}: ")
    assert line.endswith(f"--env-file: {env_file}, line 2: expected NAME=VALUE")
    assert "secret-token" not in result.stderr
