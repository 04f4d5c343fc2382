"""``handler-kit command MODULE:ATTR``: a HookApp as a command hook (stdin -> stdout, exit code).

Claude Code, Codex, Posit Assistant and sandboxed agent platforms start a new process per hook
call, write the hook input on its stdin and read the answer from its stdout and exit code. This
module is that process. The decision is reached by :meth:`HookApp.answer`, exactly as over the
webhook or MCP (same matchers, deadline, failure policy, stop-loop guard, merge); only the
framing differs.

Dialects:

- default (Claude Code / Codex / Posit JSON): the merged output JSON on stdout (``{}`` for no
  opinion), exit 0.
- ``--exit-codes`` (runtimes that read only exit codes): deny/block/ask/halt -> the reason on
  stderr and exit 2; context -> the plain text on stdout and exit 0; otherwise exit 0 with an
  empty stdout.

Errors: bad input, an app that cannot be imported, or every handler failing with no fail-closed
policy -> one line on stderr and exit 1, the "non-blocking error" of every runtime; stdout stays
empty so Claude Code does not read a ``{}`` there as a successful no-opinion answer.

Stdout belongs to the answer alone: while the app is imported and its handlers run, file
descriptor 1 points at a scratch file, so a ``print()`` in a handler (or a child process it
starts) cannot corrupt the JSON; what it wrote is reported on stderr with the logs. Log records
are held back and written after the answer is decided, one line each (full tracebacks with
``HANDLER_KIT_DEBUG=1``; ``--log-file`` sends them to a file). When the exit-code dialect blocks,
stderr carries the reason and nothing else: the runtime hands all of it to the model.

Start-up matters (one process per tool call): this module imports only the core, never the
server stack (starlette, uvicorn, mcp, httpx) nor argparse (see :func:`parse_fast`), builds only
the input's own event model, and answers an async handler that cannot suspend without importing
asyncio at all (see :func:`_run_answer`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from handler_kit.config import CommandConfig
from handler_kit.core._coroutines import never_suspends, run_without_loop
from handler_kit.core.vocabulary import one_line

if TYPE_CHECKING:
    import argparse

    from handler_kit.core.app import HookApp
    from handler_kit.core.vocabulary import Answer

OK_EXIT = 0
ERROR_EXIT = 1  # a non-blocking error for every runtime
BLOCK_EXIT = 2  # deny / block in the exit-code dialect


class CommandError(Exception):
    """Input the command cannot answer; its message is the one stderr line."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``handler-kit command``."""
    parser.add_argument("target", metavar="MODULE:ATTR", help="the HookApp, e.g. myhooks:app")
    parser.add_argument(
        "--exit-codes",
        action="store_true",
        help="answer with exit codes: block/deny -> reason on stderr and exit 2, "
        "context -> plain text on stdout",
    )
    parser.add_argument(
        "--handler",
        metavar="NAME",
        help="run only this handler (as POST /hooks/NAME would); default: every matching one",
    )
    parser.add_argument(
        "--log-file",
        metavar="PATH",
        help="append log lines to PATH instead of stderr",
    )
    # argparse exits 2 on a usage error, and exit 2 means "block" to a hook runtime: a typo in a
    # settings file would block every tool call with a usage message as the reason. Exit 1 is
    # the non-blocking error it is.
    parser.error = _usage_error  # type: ignore[method-assign,assignment]


def parse_fast(argv: list[str]) -> Any | None:
    """The arguments of ``handler-kit command`` without argparse, or None to use argparse.

    This process starts once per tool call and argparse (with gettext) is a measurable part
    of its start-up; the grammar is four options. Anything unusual (``--help``, an unknown
    option, a missing value) returns None and goes through argparse, with its messages.
    """
    from types import SimpleNamespace

    args = SimpleNamespace(target=None, exit_codes=False, handler=None, log_file=None)
    words = iter(argv)
    for word in words:
        name, eq, value = word.partition("=")
        if word == "--exit-codes":
            args.exit_codes = True
        elif name in ("--handler", "--log-file"):
            if not eq:
                value = next(words, "")
            if not value or value.startswith("-"):
                return None
            setattr(args, name[2:].replace("-", "_"), value)
        elif word.startswith("-") or args.target is not None:
            return None
        else:
            args.target = word
    return args if args.target is not None else None


def _usage_error(message: str) -> None:
    sys.stderr.write(f"handler-kit command: {message}\n")
    sys.exit(ERROR_EXIT)


def main(argv: list[str]) -> int:
    """``handler-kit command ARGV...``: parse (fast, or with argparse for anything unusual)
    and run. Every usage error exits 1, never argparse's 2."""
    args = parse_fast(argv)
    if args is None:
        import argparse

        parser = argparse.ArgumentParser(
            prog="handler-kit command",
            description="Run a HookApp as a command hook: one hook input on stdin, "
            "the answer on stdout (or as an exit code with --exit-codes).",
        )
        add_arguments(parser)
        args = parser.parse_args(argv)
    return run(args)


def run(args: argparse.Namespace, config: CommandConfig | None = None) -> int:
    """Answer the one hook input on stdin; return the exit code."""
    logs = _LogBuffer()
    root = logging.getLogger()
    root.addHandler(logs)
    level = root.level
    try:
        config = config if config is not None else CommandConfig.from_env()
    except ValueError as exc:  # a malformed setting: one line, non-blocking, like bad input
        root.removeHandler(logs)
        _write_stderr(ERROR_EXIT, f"handler-kit: {exc}", [], args.log_file)
        return ERROR_EXIT
    debug = config.debug
    root.setLevel(logging.DEBUG if debug else logging.WARNING)
    with _StdoutGuard(config.tmpdir) as guard:
        try:
            code, out, err, stuck = _answer(args, config)
        except CommandError as exc:
            code, out, err, stuck = ERROR_EXIT, b"", f"handler-kit: {exc}", False
        except Exception as exc:  # a bug of ours: still one line, still non-blocking
            logging.getLogger("handler_kit").debug("command failed", exc_info=True)
            message = f"handler-kit: internal error: {one_line(exc)}"
            code, out, err, stuck = ERROR_EXIT, b"", message, False
        finally:
            root.removeHandler(logs)
            root.setLevel(level)
        chatter = [f"handler-kit: stdout of the app: {line}" for line in guard.chatter()]
        guard.write_stdout(out)
        lines = chatter + logs.lines(with_traceback=debug)
        _write_stderr(code, err, lines, args.log_file)
    if stuck:
        _leave_now(code)
    return code


def _answer(args: argparse.Namespace, config: CommandConfig) -> tuple[int, bytes, str, bool]:
    """(exit code, stdout bytes, stderr message, a handler thread may still be running) for
    the input on stdin."""
    from handler_kit.core.loader import LoadError, load_app
    from handler_kit.core.vocabulary import TIMEOUT_MESSAGE

    try:
        app = load_app(args.target)
    except LoadError as exc:
        raise CommandError(str(exc)) from None
    # Audit trail and spans, written before exit; only when configured, so a hook without
    # them imports none of that code.
    if config.operations.auditing or config.operations.tracing:
        from handler_kit.ops.operations import Operations

        try:
            operations = Operations.build(
                app, config.operations, transport="command", traceparent=config.traceparent
            )
        except ValueError as exc:
            raise CommandError(f"operations: {exc}") from None
        app = operations.apply(app)
    handlers = None
    if args.handler is not None:
        only = app.by_name.get(args.handler)
        if only is None:
            raise CommandError(f"app {app.name!r} has no handler named {args.handler!r}")
        handlers = [only]
    data = _read_input()
    event_name = data.get("hook_event_name")
    if not isinstance(event_name, str) or not event_name:
        raise CommandError("hook input has no hook_event_name (a string naming the event)")
    if handlers is None:
        if not app.by_event.get(event_name):
            raise CommandError(f"app {app.name!r} has no handlers for {event_name}")
    elif handlers[0].event != event_name:
        raise CommandError(
            f"handler {args.handler!r} handles {handlers[0].event}, not {event_name}"
        )
    event = _validate(event_name, data)
    if handlers is not None and not handlers[0].matches(event.matcher_value()):
        handlers = []  # its matcher does not match: no opinion, like POST /hooks/{name}
    answer = _run_answer(app, event, handlers)
    # A handler cut off at its deadline may still be running in a worker thread.
    stuck = any(i.error == TIMEOUT_MESSAGE for i in answer.invocations)
    if answer.failed:
        failures = "; ".join(f"{i.handler.name}: {i.error}" for i in answer.invocations)
        message = f"handler-kit: every handler failed on {event_name} ({failures})"
        return ERROR_EXIT, b"", message, stuck
    if args.exit_codes:
        return (*_exit_code_answer(app, answer), stuck)
    return OK_EXIT, answer.body + b"\n", "", stuck


def _read_input() -> dict[str, Any]:
    raw = sys.stdin.buffer.read()
    if not raw.strip():
        raise CommandError("no hook input on stdin (expected one JSON object)")
    try:
        data = json.loads(raw)
    except UnicodeDecodeError as exc:
        raise CommandError(f"hook input is not UTF-8 JSON: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise CommandError(
            f"hook input is not JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(data, dict):
        name = type(data).__name__
        kind = {"list": "an array", "str": "a string"}.get(name, name)
        raise CommandError(f"hook input must be a JSON object, not {kind}")
    return data


def _validate(event_name: str, data: dict[str, Any]) -> Any:
    """The event's model, validated: only this one model is built (the others stay deferred)."""
    from pydantic import ValidationError

    from handler_kit.core.events import model_for

    try:
        return model_for(event_name).model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        first = errors[0]
        where = ".".join(str(part) for part in first["loc"]) or "input"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise CommandError(f"invalid {event_name} input: {where}: {first['msg']}{more}") from None


def _run_answer(app: HookApp, event: Any, handlers: Any) -> Answer:
    """:meth:`HookApp.answer`, on an event loop only when one can be needed.

    Importing :mod:`asyncio` is a large share of this process's start-up, and most gates are
    ``async def`` functions that decide without awaiting anything: such a handler's coroutine
    finishes on its first step (``HookApp`` runs that step inline, see ``_run_async_fast``),
    so ``answer()`` completes without ever suspending and is driven here with no loop
    (:mod:`handler_kit.core._coroutines`). That is certain, not hoped for, when: at most one
    handler runs (several are gathered on a loop), no wrappers, the handler's code has no ``await``,
    ``async for`` or ``async with`` (it cannot suspend), and nothing the app imported uses
    asyncio (so nothing it calls synchronously expects a running loop). A non-suspending
    handler cannot be cut off by its deadline on a loop either: the answer is the same.

    Otherwise a loop of our own, not ``asyncio.run``: that waits for the default executor's
    threads on the way out, so a sync handler stuck past its deadline would hold the process
    until the runtime kills it, and a fail-closed gate's deny would become the runtime's
    fail-open timeout. ``loop.close()`` does not wait; :func:`_leave_now` exits without
    joining such a thread.
    """
    context = {"pid": os.getpid()}
    if handlers is None:
        handlers = app.matching(event)
    if (
        len(handlers) <= 1
        and not app.wrappers
        and "asyncio" not in sys.modules
        and all(h.is_async and never_suspends(h.func) for h in handlers)
    ):
        return run_without_loop(app.answer(event, handlers, transport="command", context=context))
    import asyncio

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(
            app.answer(event, handlers, transport="command", context=context)
        )
    finally:
        loop.close()


def _exit_code_answer(app: HookApp, answer: Answer) -> tuple[int, bytes, str]:
    """The exit-code dialect: what a runtime that reads only the exit code can be told."""
    from handler_kit.core.outputs import parse_output

    event_name = answer.event.hook_event_name
    output = parse_output(event_name, answer.output)
    if output.continue_ is False:
        return BLOCK_EXIT, b"", output.stop_reason or _fallback_reason(app, answer, "stopped")
    if output.decision in ("deny", "block", "ask"):
        # ask: there is nobody to ask in an exit-code runtime; the safe reading is deny.
        return BLOCK_EXIT, b"", output.reason or _fallback_reason(app, answer, "blocked")
    if output.updated_input is not None:
        logging.getLogger("handler_kit").warning(
            "%s: the exit-code dialect cannot carry a rewritten tool input; the call runs "
            "with its original input",
            event_name,
        )
    if output.context:
        return OK_EXIT, output.context.encode(), ""
    return OK_EXIT, b"", ""


def _fallback_reason(app: HookApp, answer: Answer, what: str) -> str:
    """A block with no reason still needs one: Codex ignores an exit 2 with an empty stderr."""
    names = ", ".join(i.handler.name for i in answer.invocations) or app.name
    return f"The hook {app.name!r} {what} this ({names})."


def _write_stderr(code: int, err: str, logs: list[str], log_file: str | None) -> None:
    """The reason or error line first (runtimes show the first line), then the logs."""
    if log_file:
        try:
            with open(log_file, "a", encoding="utf-8") as fh:
                fh.writelines(f"{line}\n" for line in logs)
        except OSError as exc:
            logs = [*logs, f"handler-kit: cannot write the log file: {one_line(exc)}"]
        else:
            logs = []
    if code == BLOCK_EXIT:
        # The runtime hands all of stderr to the model (or user) as the reason: nothing else.
        logs = []
    lines = ([err] if err else []) + logs
    if lines:
        _write(sys.stderr, "".join(f"{line}\n" for line in lines).encode())


def _write(stream: Any, data: bytes) -> None:
    try:
        stream.flush()
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            buffer.write(data)
        else:  # a text-only stream (a test's capture)
            stream.write(data.decode("utf-8", "replace"))
        stream.flush()
    except (ValueError, OSError):
        pass  # the runtime stopped reading (BrokenPipeError): nothing left to tell it


class _StdoutGuard:
    """Keep stdout for the answer: while user code runs, fd 1 points at a scratch file.

    fd-level, so ``print()``, C extensions and child processes a handler starts are all caught.
    What they wrote is handed back by :meth:`chatter` and written to stderr with the logs, after
    the answer. The answer itself goes to the saved real stdout, so a handler thread still
    running past its deadline cannot write into it either. Where an anonymous scratch file
    cannot be made (not Linux), fd 1 points at stderr instead.
    """

    def __init__(self, tmpdir: str | None = None) -> None:
        self.tmpdir = tmpdir
        self.saved_fd: int | None = None
        self.scratch_fd: int | None = None

    def __enter__(self) -> _StdoutGuard:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stdout.flush()
        try:
            self.saved_fd = os.dup(1)
        except OSError:  # no stdout at all: nothing to protect
            return self
        self.scratch_fd = _anonymous_file(self.tmpdir)
        os.dup2(self.scratch_fd if self.scratch_fd is not None else 2, 1)
        return self

    def chatter(self) -> list[str]:
        """Lines user code wrote to stdout so far."""
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stdout.flush()
        if self.scratch_fd is None:
            return []
        chunks = []
        try:
            os.lseek(self.scratch_fd, 0, os.SEEK_SET)
            while chunk := os.read(self.scratch_fd, 65536):
                chunks.append(chunk)
        except OSError:
            return []
        return b"".join(chunks).decode("utf-8", "replace").splitlines()

    def write_stdout(self, data: bytes) -> None:
        """Write the answer to the real stdout."""
        if not data:
            return
        if self.saved_fd is None:
            _write(sys.stdout, data)
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.saved_fd, view) :]
        except OSError:
            pass  # the runtime stopped reading (EPIPE): nothing left to tell it

    def __exit__(self, *exc_info: object) -> None:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stdout.flush()
        if self.saved_fd is not None:
            os.dup2(self.saved_fd, 1)
            os.close(self.saved_fd)
        if self.scratch_fd is not None:
            os.close(self.scratch_fd)


def _anonymous_file(tmpdir: str | None) -> int | None:
    """An unnamed read-write file (Linux ``O_TMPFILE``), without importing :mod:`tempfile`."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None:
        return None
    for folder in (tmpdir, "/tmp", "/dev/shm"):
        if folder:
            try:
                return os.open(folder, flag | os.O_RDWR, 0o600)
            except OSError:
                continue
    return None


class _LogBuffer(logging.Handler):
    """Holds log records until the answer is decided; renders each on one line."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def lines(self, *, with_traceback: bool) -> list[str]:
        out = []
        for record in self.records:
            try:
                message = record.getMessage()
            except Exception:  # a bad format string in a user's log call
                message = str(record.msg)
            line = f"handler-kit: {record.levelname.lower()}: {' '.join(message.split())}"
            if record.exc_info and record.exc_info[1] is not None:
                line += f" ({one_line(record.exc_info[1])})"
                if with_traceback:
                    import traceback

                    line += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
            out.append(line)
        return out


def _leave_now(code: int) -> None:
    """Exit at once: a handler thread outlived its deadline.

    The interpreter joins executor threads on the way out, so a sync handler stuck in a call
    would keep the process alive after its answer was written, until the runtime kills it.
    The answer is complete at this point: leave without waiting.
    """
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code)  # not sys.stdout.flush(): a stuck thread's print() must not follow
