"""``handler-kit replay SOURCE --app candidate:app``: answer every recorded decision again
with a candidate app and report what it would change.

SOURCE is an audit log: a JSON-lines file, ``sqlite:PATH`` or a ``postgresql://`` URL. The
report counts the decisions replayed, unchanged, tightened, loosened and otherwise changed,
per handler, with the first examples of each; decisions whose input was not recorded whole
are reported apart (record it with ``HANDLER_KIT_AUDIT_INPUT=full``).

Exit status: 0 when nothing loosened (or ``--allow-loosening``), 1 when a decision or a
handler's part in one loosened, 2 for a usage problem: bad options, a source that cannot be
read, an app that cannot be loaded; 3 when nothing was replayed (an empty source, or every
decision reported apart or left out by the filters), which proves nothing: one line on stderr
says why, with the count of each reason.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import re
import sys
import time
from pathlib import Path
from typing import IO, Any

from handler_kit.cli.dispatch import UsageError

# The exit status of a replay that replayed nothing: neither a pass (it checked nothing) nor a
# loosening (1) nor a usage problem (2)
NOTHING_REPLAYED = 3
# The options that choose decisions (Filters), by their argparse names
_FILTERS = ("since", "until", "event", "handler", "limit")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


EPILOG = (
    "exit status: 0 nothing loosened (or --allow-loosening); 1 a decision, or a handler's part "
    "in one, loosened; 2 a usage problem (options, source, app); 3 nothing was replayed (an "
    "empty source, or every decision reported apart or left out by the filters), so nothing "
    "was checked"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.add_argument(
        "source",
        metavar="SOURCE",
        help="the audit log: a JSON-lines file, sqlite:PATH or a postgresql:// URL",
    )
    parser.add_argument("--app", required=True, metavar="MODULE:ATTR", help="the candidate HookApp")
    parser.add_argument(
        "--since",
        metavar="WHEN",
        help="only decisions made at or after WHEN: an ISO 8601 time (UTC unless it says) "
        "or a duration ago (30m, 2h, 7d)",
    )
    parser.add_argument("--until", metavar="WHEN", help="only decisions made before WHEN")
    parser.add_argument("--event", metavar="EVENT", help="only decisions of this hook event")
    parser.add_argument(
        "--handler", metavar="NAME", help="only decisions this recorded handler took part in"
    )
    parser.add_argument(
        "--limit", type=_positive, metavar="N", help="at most N decisions, oldest first"
    )
    parser.add_argument(
        "--run-side-effects",
        action="append",
        default=[],
        metavar="NAME",
        help="run this idempotent (side-effecting) handler of the candidate too (repeatable); "
        "decisions that others would take part in are skipped and reported",
    )
    parser.add_argument(
        "--allow-loosening",
        action="store_true",
        help="exit 0 even when a decision loosened",
    )
    parser.add_argument(
        "--examples",
        type=_positive,
        default=3,
        metavar="N",
        help="the first N examples of each change per handler in the text report",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json", "junit"),
        default="text",
        help="the report (default: text)",
    )
    parser.add_argument(
        "--output",
        metavar="FILE",
        help="write the report there instead (the text report still goes to the terminal)",
    )
    parser.add_argument(
        "--write-cases",
        metavar="FILE",
        help="write the changed decisions as a case file (name it hookcases_*.yaml or .json "
        "for pytest to collect it)",
    )


def run(args: argparse.Namespace) -> int:
    from handler_kit.core.loader import LoadError, load_app
    from handler_kit.replay import (
        CasesError,
        Filters,
        Replayer,
        SourceError,
        Summary,
        nothing_replayed,
        open_source,
        write_cases,
    )

    try:
        now = time.time()
        filters = Filters(
            since=_when(args.since, "--since", now),
            until=_when(args.until, "--until", now),
            event=args.event,
            handler=args.handler,
            limit=args.limit,
        )
        try:
            candidate = load_app(args.app)
        except LoadError as exc:
            raise UsageError(str(exc)) from None
        if candidate.config_errors:
            raise UsageError(f"{args.app}: {candidate.config_errors[0]}")
        replayer = Replayer(candidate, frozenset(args.run_side_effects))
        unknown = [n for n in args.run_side_effects if n not in replayer.side_effect_handlers()]
        if unknown:
            known = ", ".join(replayer.side_effect_handlers()) or "none"
            raise UsageError(
                f"--run-side-effects {unknown[0]}: not an idempotent handler of {args.app} "
                f"(those are: {known})"
            )
        try:
            source = open_source(args.source)
        except SourceError as exc:
            raise UsageError(str(exc)) from None
        summary = Summary(examples=args.examples)
        try:
            bar = _Progress.on(sys.stderr, source, filters)
            try:
                for outcome in replayer.replay(source.decisions(filters), bar.step):
                    summary.add(outcome)
            finally:
                bar.done()
            if not summary.replayed:  # how many the filters left out, from the whole source
                chosen = [f"--{name}" for name in _FILTERS if getattr(args, name) is not None]
                total = source.count(Filters())
                summary.nothing = nothing_replayed(summary, source.name, total, chosen)
        except SourceError as exc:
            raise UsageError(str(exc)) from None
        finally:
            source.close()
        _report(args, summary)
        if args.write_cases:
            try:
                written = write_cases(args.write_cases, summary.changed, args.app)
            except CasesError as exc:
                raise UsageError(str(exc)) from None
            sys.stderr.write(f"wrote {written} case{'s' * (written != 1)} to {args.write_cases}\n")
    except UsageError as exc:
        sys.stderr.write(f"handler-kit: {exc}\n")
        return 2
    if summary.nothing is not None:
        sys.stderr.write(f"handler-kit: {summary.nothing}\n")
        return NOTHING_REPLAYED
    return 1 if summary.loosened and not args.allow_loosening else 0


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value


def _when(text: str | None, option: str, now: float) -> float | None:
    """Seconds since the epoch of an ISO 8601 time (UTC when it names no offset) or of a
    duration ago (``30m``, ``2h``, ``7d``, ``1w``; ``1h30m``)."""
    if text is None:
        return None
    spec = text.strip()
    parts = _DURATION.findall(spec)
    if parts and "".join(f"{n}{u}" for n, u in parts) == spec.replace(" ", ""):
        return now - sum(float(n) * _SECONDS[u] for n, u in parts)
    try:
        moment = _dt.datetime.fromisoformat(spec.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{option} {text!r}: expected an ISO 8601 time (2026-05-09T07:35:25Z) or a "
            "duration ago (30m, 2h, 7d)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    return moment.timestamp()


class _Progress:
    """A progress bar on stderr, only when stderr is a terminal: a long log shows it is
    moving. Redrawn at most ten times a second; erased at the end."""

    def __init__(self, stream: IO[str] | None, total: int | None) -> None:
        self.stream = stream
        self.total = total
        self.count = 0
        self._drawn = 0.0

    @classmethod
    def on(cls, stream: IO[str], source: Any, filters: Any) -> _Progress:
        isatty = getattr(stream, "isatty", None)
        if isatty is None or not isatty():
            return cls(None, None)
        return cls(stream, source.count(filters))

    def step(self) -> None:
        self.count += 1
        if self.stream is None:
            return
        now = time.monotonic()
        if now - self._drawn < 0.1:
            return
        self._drawn = now
        if self.total:
            done = min(self.count / self.total, 1.0)
            filled = int(done * 30)
            line = f"replaying [{'#' * filled}{'.' * (30 - filled)}] {self.count}/{self.total}"
        else:
            line = f"replaying {self.count}"
        self.stream.write(f"\r{line}")
        self.stream.flush()

    def done(self) -> None:
        if self.stream is not None and self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _report(args: argparse.Namespace, summary: Any) -> None:
    from handler_kit.replay import json_report, junit_report, text_report

    text = text_report(summary)
    if args.format == "json":
        report = json_report(summary)
    elif args.format == "junit":
        report = junit_report(summary, allow_loosening=args.allow_loosening)
    else:
        report = text.encode()
    if args.output:
        try:
            Path(args.output).write_bytes(report)
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        if args.format != "text":
            sys.stdout.write(text)
    else:
        sys.stdout.buffer.write(report)
    sys.stdout.flush()
