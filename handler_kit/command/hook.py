"""``handler-kit command MODULE:ATTR``: a HookApp as a command hook (stdin -> stdout, exit code).

Claude Code, Codex, Posit Assistant and sandboxed agent platforms start a new process per hook
call, write the hook input on its stdin and read the answer from its stdout and exit code. This
module is that process. The decision is reached by :meth:`HookApp.answer`, exactly as over the
webhook or MCP (same matchers, deadline, failure policy, stop-loop guard, merge); only the
framing differs.

Dialects (``--runtime``, see :mod:`handler_kit.command.dialects`):

- ``claude-code``, the default: the merged output JSON on stdout (``{}`` for no opinion),
  exit 0.
- ``codex``, ``posit``: the JSON that runtime reads; a decision it cannot carry becomes the
  closest safe one it can, and a log line says so.
- ``sandbox`` (``--exit-codes``, for runtimes that read only exit codes): exit 2 with the
  reason on stderr to block a call or give a tool result feedback; context on stdout where the
  runtime reads it.

Errors: bad input, an app that cannot be imported, or every handler failing with no fail-closed
policy -> one line on stderr and exit 1, the "non-blocking error" of every runtime; stdout stays
empty so Claude Code does not read a ``{}`` there as a successful no-opinion answer. Since
every runtime proceeds on it, an input a fail-closed gate cannot read is its safe decision
instead (see :func:`_unreadable`), and handlers that hold the process past their deadline are
answered by their failure policy all the same (see :class:`_Watchdog`).

Stdout belongs to the answer alone: while the app is imported and its handlers run, file
descriptor 1 points at a scratch file, so a ``print()`` in a handler (or a child process it
starts) cannot corrupt the JSON; what it wrote is reported on stderr with the logs. Log records
are held back and written after the answer is decided, one line each (full tracebacks with
``HANDLER_KIT_DEBUG=1``; ``--log-file`` sends them to a file). When the exit-code dialect blocks,
stderr carries the reason and nothing else: the runtime hands all of it to the model.

Start-up matters (one process per tool call): this module imports only the core, never the
server stack (starlette, uvicorn, mcp, httpx) nor argparse (see :func:`main`), builds only
the input's own event model, and answers an async handler that cannot suspend without importing
asyncio at all (see :func:`_run_answer`).
"""

from __future__ import annotations

import _thread
import contextlib
import json
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

from handler_kit.command._clock import since_process_start
from handler_kit.command._stdin import read_stdin
from handler_kit.config import command_config
from handler_kit.core._fast_coroutines import run_without_loop
from handler_kit.core.vocabulary import (
    COMMAND_STARTUP_ALLOWANCE,
    INPUT_ID_FIELDS,
    one_line,
    top_level_strings,
)

if TYPE_CHECKING:
    import argparse
    import logging
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

    from handler_kit.config import CommandConfig, DefaultCommandConfig
    from handler_kit.core.app import HookApp
    from handler_kit.core.vocabulary import Answer, Handler

OK_EXIT = 0
ERROR_EXIT = 1  # a non-blocking error for every runtime
BLOCK_EXIT = 2  # deny / block in the exit-code dialect


class CommandError(Exception):
    """Input the command cannot answer; its message is the one stderr line."""


class UnreadableInput(CommandError):
    """An input that cannot be read as the event it names (or names none): a fail-closed gate
    that was to read it answers its safe decision instead of this error."""

    def __init__(self, message: str, event_name: str | None = None) -> None:
        super().__init__(message)
        self.event_name = event_name


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``handler-kit command`` (for ``--help``: :func:`main` reads them with
    :func:`~handler_kit.command._options.parse`)."""
    from handler_kit.command import _options

    _options.add_to(parser, _options.COMMAND)
    # argparse exits 2 on a usage error, and exit 2 means "block" to a hook runtime: a typo in a
    # settings file would block every tool call with a usage message as the reason. Exit 1 is
    # the non-blocking error it is.
    parser.error = _usage_error  # type: ignore[method-assign,assignment]


def _usage_error(message: str) -> None:
    sys.stderr.write(f"handler-kit command: {message}\n")
    sys.exit(ERROR_EXIT)


def main(argv: list[str]) -> int:
    """``handler-kit command ARGV...``: parse and run. Every usage error exits 1, never
    argparse's 2. This process starts once per tool call and argparse (with gettext) is a
    measurable part of its start-up: the arguments are read by the option table's own parser,
    and argparse is loaded only to print ``--help``."""
    from handler_kit.command import _options

    args: Any
    try:
        args = _options.parse(argv, _options.COMMAND)
    except _options.UsageError as exc:
        _usage_error(str(exc))
    if args is None:
        import argparse

        parser = argparse.ArgumentParser(
            prog="handler-kit command",
            description="Run a HookApp as a command hook: one hook input on stdin, "
            "the answer on stdout and in the exit code, in the runtime's dialect.",
            allow_abbrev=False,
        )
        add_arguments(parser)
        args = parser.parse_args(argv)
    return run(args)


def run(
    args: argparse.Namespace, config: CommandConfig | DefaultCommandConfig | None = None
) -> int:
    """Answer the one hook input on stdin; return the exit code."""
    try:
        config = config if config is not None else command_config()
    except ValueError as exc:  # a malformed setting: one line, non-blocking, like bad input
        _write_stderr(ERROR_EXIT, f"handler-kit: {exc}", [], args.log_file)
        return ERROR_EXIT
    debug = config.debug
    logs = _LogBuffer(debug)
    logs.start()
    with _StdoutGuard(config.tmpdir) as guard:
        watchdog = _Watchdog(guard, logs, args.log_file, debug)
        try:
            code, out, err, stuck = _answer(args, config, watchdog)
        except CommandError as exc:
            code, out, err, stuck = ERROR_EXIT, b"", f"handler-kit: {exc}", False
        except Exception as exc:  # a bug of ours: still one line, still non-blocking
            import logging

            logging.getLogger("handler_kit").debug("command failed", exc_info=True)
            message = f"handler-kit: internal error: {one_line(exc)}"
            code, out, err, stuck = ERROR_EXIT, b"", message, False
        finally:
            watchdog.claim()  # the answer is ours to write, or the watchdog ends the process
            logs.stop()
        chatter = [f"handler-kit: stdout of the app: {line}" for line in guard.chatter()]
        guard.write_stdout(out)
        lines = chatter + logs.lines(with_traceback=debug)
        _write_stderr(code, err, lines, args.log_file)
    if stuck:
        _leave_now(code)
    return code


def _answer(
    args: argparse.Namespace,
    config: CommandConfig | DefaultCommandConfig,
    watchdog: _Watchdog | None = None,
) -> tuple[int, bytes, str, bool]:
    """(exit code, stdout bytes, stderr message, a handler thread may still be running) for
    the input on stdin; ``watchdog`` answers instead if the handlers hold the process past
    their deadline."""
    from handler_kit.core.loader import LoadError, load_app

    runtime = runtime_of(args)
    try:
        app = load_app(args.target)
    except LoadError as exc:
        raise CommandError(str(exc)) from None
    # Audit trail and spans, written before exit; only when configured, so a hook without
    # them imports none of that code.
    if config.operations.auditing or config.operations.tracing:
        from handler_kit.config import CommandConfig
        from handler_kit.ops.operations import Operations

        assert isinstance(config, CommandConfig)  # the defaults turn nothing on

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
            known = ", ".join(app.by_name) or "none"
            raise CommandError(
                f"app {app.name!r} has no handler named {args.handler!r}; its handlers: {known}"
            )
        handlers = [only]
    raw = read_stdin()
    try:
        return _answer_input(runtime, app, handlers, raw, watchdog)
    except CommandError:
        raise
    except Exception:
        # a bug of ours around the answer (a handler's error is answered inside
        # HookApp.answer): exit 1 would be every runtime's "go ahead" for a gate
        made = _not_made(runtime, app, handlers, raw)
        if made is None:
            raise
        return (*made, False)


def _answer_input(
    runtime: str,
    app: HookApp,
    handlers: list[Handler] | None,
    raw: bytes,
    watchdog: _Watchdog | None,
) -> tuple[int, bytes, str, bool]:
    """:func:`_answer` once the app is loaded and the input read from stdin."""
    from handler_kit.core.vocabulary import TIMEOUT_MESSAGE

    try:
        data = _read_input(raw)
        event_name = data.get("hook_event_name")
        if not isinstance(event_name, str) or not event_name:
            raise UnreadableInput("hook input has no hook_event_name (a string naming the event)")
        if handlers is None:
            if not app.by_event.get(event_name):
                raise CommandError(f"app {app.name!r} has no handlers for {event_name}")
        elif handlers[0].event != event_name:
            raise CommandError(
                f"handler {handlers[0].name!r} handles {handlers[0].event}, not {event_name}"
            )
        event = _validate(event_name, data)
        _name_the_project()
    except UnreadableInput as exc:
        return (*_unreadable(runtime, app, handlers, raw, exc), False)
    if handlers is None:
        handlers = app.matching(event)
    elif not handlers[0].matches(event.matcher_value()):
        handlers = []  # its matcher does not match: no opinion, like POST /hooks/{name}
    if watchdog is not None:
        watchdog.arm(app, event, handlers, runtime)
    answer = _run_answer(app, event, handlers)
    # A handler cut off at its deadline may still be running in a worker thread.
    stuck = any(i.error == TIMEOUT_MESSAGE for i in answer.invocations)
    return (*_respond(runtime, app, answer), stuck)


def _respond(runtime: str, app: HookApp, answer: Answer) -> tuple[int, bytes, str]:
    """(exit code, stdout, stderr message) for an answer: its rendering in the runtime's
    dialect, or the one error line when every handler failed with no fail-closed policy."""
    if answer.failed:
        failures = "; ".join(f"{i.handler.name}: {i.error}" for i in answer.invocations)
        name = answer.event.hook_event_name
        return ERROR_EXIT, b"", f"handler-kit: every handler failed on {name} ({failures})"
    return _render(runtime, app, answer)


def _not_made(
    runtime: str, app: HookApp, handlers: list[Handler] | None, raw: bytes
) -> tuple[int, bytes, str] | None:
    """The answer when it could not be made around the handlers (a bug of ours, logged
    here, while reading the input or writing the answer in the runtime's dialect): the failure
    policy of the handlers that were to answer (the ``--handler`` one, else every handler of
    the event the input names, whatever their matchers), as for an error around the handlers:
    a fail-closed gate's safe decision. None without one: the bug's line, exit 1."""
    import logging

    from handler_kit.core.vocabulary import fail_closed_notice

    logging.getLogger("handler_kit").exception("the answer could not be made")
    known = top_level_strings(raw, ("hook_event_name", *INPUT_ID_FIELDS))
    if handlers is None:
        handlers = app.by_event.get(known.get("hook_event_name", ""), [])
    if not handlers:
        return None
    event_name = handlers[0].event
    event: Any = event_name
    # the whole event, for the audit record; what failed may be this reading, and then its
    # name and ids will do
    with contextlib.suppress(Exception):
        event = _validate(event_name, _read_input(raw))
    answer = app.answer_not_made(
        event, handlers, transport="command", context={"pid": os.getpid()}, known=known
    )
    if answer.failed:  # no fail-closed gate
        return None
    try:
        return _respond(runtime, app, answer)
    except Exception:
        # writing the safe decision in the dialect failed too: the block every runtime reads
        # from a command hook (what `install` appends to a gate's entry)
        logging.getLogger("handler_kit").exception("the safe decision could not be written")
        return BLOCK_EXIT, b"", fail_closed_notice(answer.invocations[0])


def _read_input(raw: bytes) -> dict[str, Any]:
    from handler_kit.core.vocabulary import InputTooDeep, load_json

    if not raw.strip():
        raise UnreadableInput("no hook input on stdin (expected one JSON object)")
    try:
        data = load_json(raw)
    except InputTooDeep as exc:
        raise UnreadableInput(f"hook input is {exc}") from None
    except UnicodeDecodeError as exc:
        raise UnreadableInput(f"hook input is not UTF-8 JSON: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise UnreadableInput(
            f"hook input is not JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(data, dict):
        name = type(data).__name__
        kind = {"list": "an array", "str": "a string"}.get(name, name)
        raise UnreadableInput(f"hook input must be a JSON object, not {kind}")
    return data


def _unreadable(
    runtime: str,
    app: HookApp,
    handlers: list[Handler] | None,
    raw: bytes,
    error: UnreadableInput,
) -> tuple[int, bytes, str]:
    """The answer to an input that cannot be read: the safe decision of the fail-closed gates
    that were to read it, or ``error`` when there is none.

    The gates are the ``--handler`` one, or else the app's fail-closed handlers of the event
    the input names, if that can still be read; their matchers cannot be, so each of them
    answers.
    """
    if handlers is not None:
        gates, event_name = handlers, handlers[0].event
    else:
        found = (
            error.event_name
            or top_level_strings(raw, ("hook_event_name",)).get("hook_event_name")
            or None
        )
        if found is None:
            raise error
        gates, event_name = app.by_event.get(found, []), found
    answer = app.answer_unreadable(
        event_name,
        gates,
        str(error),
        transport="command",
        context={"pid": os.getpid()},
        known=top_level_strings(raw, INPUT_ID_FIELDS)
        if any(h.fail_closed for h in gates)
        else None,
    )
    if answer is None:
        raise error
    return _respond(runtime, app, answer)


def _name_the_project() -> None:
    """``event.project_dir``: the folder the runtime named to this process (one event per
    process: set once, for the event of this run)."""
    from handler_kit.config import runtime_project_dir
    from handler_kit.core.events import HookEvent

    HookEvent.runtime_project_dir = runtime_project_dir()


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
        raise UnreadableInput(
            f"invalid {event_name} input: {where}: {first['msg']}{more}", event_name
        ) from None


def _run_answer(app: HookApp, event: Any, handlers: Any) -> Answer:
    """:meth:`HookApp.answer`, on an event loop only when one can be needed.

    Importing :mod:`asyncio` is a large share of this process's start-up, and most gates are ``async
    def`` functions that decide without awaiting anything: such a handler cannot suspend (and
    ``HookApp`` awaits it without arming a timer), so ``answer()`` completes without ever
    suspending and is driven here with no loop (:mod:`handler_kit.core._fast_coroutines`). That
    is certain, not hoped for, when:
    at most one handler runs (several are gathered on a loop), no wrappers, the handler's code has
    no ``await``, ``async for`` or ``async with`` (it cannot suspend), and nothing the app imported
    uses asyncio (so nothing it calls synchronously expects a running loop). A non-suspending
    handler cannot be cut off by its deadline on a loop either: the answer is the same.

    Otherwise a loop of our own, not ``asyncio.run``, which waits for executor threads on the
    way out: a sync handler stuck past its deadline would hold the process until the runtime
    kills it, and a fail-closed gate's deny would become the runtime's fail-open timeout.
    ``loop.close()`` does not wait; :func:`_leave_now` exits without joining such a thread.
    """
    context = {"pid": os.getpid()}
    if handlers is None:
        handlers = app.matching(event)
    if (
        len(handlers) <= 1
        and not app.wrappers
        and "asyncio" not in sys.modules
        and all(h.awaits_nothing for h in handlers)
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


# The default dialect, handled here so that the usual path does not import the dialects.
CLAUDE_CODE = "claude-code"


def runtime_of(args: argparse.Namespace) -> str:
    """The dialect asked for: ``--runtime``, or ``sandbox`` for ``--exit-codes``."""
    runtime: str | None = getattr(args, "runtime", None)
    if getattr(args, "exit_codes", False):
        if runtime not in (None, "sandbox"):
            raise CommandError(f"--exit-codes is --runtime sandbox; it contradicts {runtime}")
        return "sandbox"
    return runtime or CLAUDE_CODE


def _render(runtime: str, app: HookApp, answer: Answer) -> tuple[int, bytes, str]:
    """The answer in the runtime's dialect; what it had to change is logged, one line each."""
    if runtime == CLAUDE_CODE:
        return OK_EXIT, answer.body + b"\n", ""
    from handler_kit.command import dialects

    rendered = dialects.render(
        runtime,
        answer.event.hook_event_name,
        answer.output,
        # a rewrite the runtime cannot apply denies the call when a fail-closed gate answered
        fail_closed=any(i.handler.fail_closed for i in answer.invocations),
        fallback=lambda what: _fallback_reason(app, answer, what),
        # the loop guard holds for a block the dialect makes, not only for a handler's
        stop_hook_active=getattr(answer.event, "stop_hook_active", None) is True,
    )
    if rendered.notes:
        import logging

        log = logging.getLogger("handler_kit")
        for note in rendered.notes:
            log.warning("%s", note)
    return rendered.code, rendered.stdout, rendered.stderr


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
    if stream is None:  # closed before the process started (``2>&-``): nowhere to write
        return
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

    A process started with stdout closed (``>&-``) has nowhere to write its answer, and is
    still guarded: whatever it opened next (the event loop's selector, an audit database, a
    log) would otherwise be given fd 1, and output meant for stdout would go into that. The
    exit code is the answer's all the same (the whole answer, in the exit-code dialect).
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
        except OSError:  # stdout is closed: the answer is dropped, fd 1 still taken below
            self.saved_fd = None
        self.scratch_fd = _anonymous_file(self.tmpdir)  # fd 1 itself when stdout is closed
        try:
            os.dup2(self.scratch_fd if self.scratch_fd is not None else 2, 1)
        except OSError:  # no scratch file and no stderr either
            null = os.open(os.devnull, os.O_WRONLY)
            if null != 1:
                os.dup2(null, 1)
                os.close(null)
        # a file opened straight onto fd 1 is close-on-exec: child processes need it too
        os.set_inheritable(1, True)
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
        if not data or self.saved_fd is None:  # nothing to write, or stdout is closed
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
        else:  # closed again, as it was
            with contextlib.suppress(OSError):
                os.close(1)
        if self.scratch_fd is not None and self.scratch_fd != 1:
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


class _LogBuffer:
    """Holds log records until the answer is decided; renders each on one line.

    The records come from a handler on the root logger, whose level is WARNING meanwhile
    (DEBUG with ``HANDLER_KIT_DEBUG=1``). Importing :mod:`logging` is a large share of this
    process's start-up and most runs never log, so the handler is added when something first
    imports ``logging`` (the app or a library it uses, at import or while a handler runs, or
    handler-kit itself to report a failure): a record logged at any point of the run is held
    here all the same, and a run that never logs never loads ``logging``.
    """

    def __init__(self, debug: bool) -> None:
        self.level = 10 if debug else 30  # logging.DEBUG, logging.WARNING
        self.records: list[logging.LogRecord] = []
        self.handler: logging.Handler | None = None
        self.saved_level = 0
        self.watch: _LoggingImport | None = None

    def start(self) -> None:
        """Hold the records logged from now on."""
        if "logging" in sys.modules:
            self.install()
        else:
            self.watch = _LoggingImport(self)
            sys.meta_path.insert(0, self.watch)

    def install(self) -> None:
        """Add the handler to the root logger (``logging`` is loaded)."""
        self.unwatch()
        if self.handler is not None:
            return
        import logging

        records = self.records

        class Held(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                records.append(record)

        root = logging.getLogger()
        self.handler = Held(logging.DEBUG)
        self.saved_level = root.level
        root.addHandler(self.handler)
        root.setLevel(self.level)

    def unwatch(self) -> None:
        watch, self.watch = self.watch, None
        if watch is not None:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(watch)

    def stop(self) -> None:
        """Hold no more records; the root logger is as it was."""
        self.unwatch()
        handler, self.handler = self.handler, None
        if handler is not None:
            import logging

            root = logging.getLogger()
            root.removeHandler(handler)
            root.setLevel(self.saved_level)

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


class _LoggingImport:
    """A meta path finder that finds nothing itself: it sees the first import of
    :mod:`logging` and has the log buffer installed as soon as the module has run, before
    the code that imported it can log anything."""

    def __init__(self, logs: _LogBuffer) -> None:
        self.logs = logs

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name != "logging" or self.logs.watch is not self:
            return None
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            if finder is self or find_spec is None:
                continue
            spec: ModuleSpec | None = find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ThenInstall(spec.loader, self.logs)  # type: ignore[assignment]
                return spec
        return None


class _ThenInstall:
    """The loader of :mod:`logging`, then the log buffer's handler added to its root logger."""

    def __init__(self, loader: Any, logs: _LogBuffer) -> None:
        self.loader = loader
        self.logs = logs

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self.loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the module's own loader from here on, as if it had been imported without us
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        self.logs.install()


class _Watchdog:
    """Answers at the deadline when the handlers hold the process past it.

    A sync handler stuck in a call is cut off by the event loop at its deadline, but nothing
    can cut off code that holds the main thread: an async handler that blocks (``time.sleep``,
    a synchronous driver), whether it runs on the loop or, awaiting nothing, without one. The
    runtime would wait for the process until its own timeout and then proceed, so a
    fail-closed gate would be open. This thread sleeps until just after the last deadline; if
    the answer is not written by then, it writes the failure policy's answer (each handler
    timed out) to the real stdout and ends the process.

    One answer only: whichever of this thread and the main thread claims the answer first
    writes it; the other never writes. The main thread claims before it writes, and if the
    watchdog was first it waits there for the process to end.
    """

    def __init__(
        self, guard: _StdoutGuard, logs: _LogBuffer, log_file: str | None, debug: bool
    ) -> None:
        self.guard = guard
        self.logs = logs
        self.log_file = log_file
        self.debug = debug
        self.lock = threading.Lock()
        self.claimed = False
        self.disarmed = threading.Event()

    def arm(self, app: HookApp, event: Any, handlers: list[Handler], runtime: str) -> None:
        if not handlers:
            return
        # Just after the deadline, so the loop's own timeout answers first when it can (it
        # knows which handlers did answer), and well inside the margin the deadline keeps
        # before the runtime's timeout. The runtime's clock started when it spawned this
        # process, not when the app had imported: on a loaded machine the start-up alone can
        # take a second or more, and a watchdog counting from here would answer after the
        # runtime had given up and let the call through.
        delay = max(h.deadline + (h.timeout - h.deadline) / 4 for h in handlers)
        runtime_gives_up = max(h.timeout for h in handlers) + COMMAND_STARTUP_ALLOWANCE
        latest = runtime_gives_up - ANSWER_MARGIN - since_process_start()
        delay = max(min(delay, latest), MIN_WATCHDOG_DELAY)
        # a bare thread: threading.Thread.start waits until the new thread has run, a
        # scheduler round trip on every tool call, and this one needs no join (it never
        # keeps the process alive: the process ends when the main thread is done)
        _thread.start_new_thread(self._watch, (delay, app, event, handlers, runtime))

    def claim(self) -> None:
        """Called by the main thread before it writes anything: from now on the watchdog
        stays silent. If it has claimed the answer already, this never returns."""
        with self.lock:
            first = not self.claimed
            self.claimed = True
        self.disarmed.set()
        if not first:
            threading.Event().wait()  # the watchdog is writing its answer, then exits

    def _watch(
        self, delay: float, app: HookApp, event: Any, handlers: list[Handler], runtime: str
    ) -> None:
        if self.disarmed.wait(delay):
            return
        with self.lock:
            if self.claimed:
                return
            self.claimed = True
        code = ERROR_EXIT
        try:
            import logging

            logging.getLogger("handler_kit").warning(
                "%s still running at the deadline (a handler that blocks, such as an async "
                "handler calling time.sleep, holds the process): answered by the failure "
                "policy without waiting for it",
                ", ".join(h.name for h in handlers),
            )
            answer = app.answer_timed_out(
                event, handlers, transport="command", context={"pid": os.getpid()}
            )
            code, out, err = _respond(runtime, app, answer)
            chatter = [f"handler-kit: stdout of the app: {line}" for line in self.guard.chatter()]
            self.guard.write_stdout(out)
            lines = chatter + self.logs.lines(with_traceback=self.debug)
            _write_stderr(code, err, lines, self.log_file)
        finally:
            _leave_now(code)


# the least time the handlers get once the app has loaded, however long the start-up took
MIN_WATCHDOG_DELAY = 0.05
# the watchdog's answer is written and the process gone this long before the runtime's timeout
ANSWER_MARGIN = 0.5


def _leave_now(code: int) -> None:
    """Exit at once: a handler thread outlived its deadline.

    The interpreter joins executor threads on the way out, so a sync handler stuck in a call
    would keep the process alive after its answer was written, until the runtime kills it.
    The answer is complete at this point: leave without waiting.
    """
    with contextlib.suppress(OSError, ValueError, AttributeError):  # stderr may be None
        sys.stderr.flush()
    os._exit(code)  # not sys.stdout.flush(): a stuck thread's print() must not follow
