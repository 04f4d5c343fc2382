"""Writes the code and docs that list the hook events, from the one table of events
(:data:`handler_kit.core._event_table.EVENTS`): ``make generate``, or
``python -m handler_kit.core._generate`` (``--check`` only says which files are stale).

Each generated part of a file sits between two marker lines, ``# <generated: NAME> ...`` and
``# </generated: NAME>`` (HTML comments in Markdown); what is outside the markers is written by
hand and left as it is. The per-event decorators are code rather than a loop at import: type
checkers read them, and a command hook imports them on every tool call. A test regenerates
every file in memory and compares it with the committed one.

Never imported by handler-kit at run time, nor is the table.
"""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path

from handler_kit.core._event_table import EVENTS, EventSpec

ROOT = Path(__file__).resolve().parents[2]
COMMAND = "make generate"
SOURCE = "core/_event_table.py"
WIDTH = 100  # ruff's line-length: the generated code is as `ruff format` writes it


def _fit(indent: str, head: str, items: Iterable[str], tail: str) -> list[str]:
    """``head item, item tail`` as ruff formats a bracket: on one line when it fits, else its
    contents on one indented line, else one item a line with a trailing comma."""
    items = list(items)
    one = f"{indent}{head}{', '.join(items)}{tail}"
    if len(one) <= WIDTH:
        return [one]
    inner = indent + "    "
    middle = inner + ", ".join(items)
    if len(middle) <= WIDTH:
        return [f"{indent}{head}", middle, f"{indent}{tail}"]
    return [f"{indent}{head}", *(f"{inner}{item}," for item in items), f"{indent}{tail}"]


def _exploded(indent: str, head: str, items: Iterable[str], tail: str) -> list[str]:
    """One item a line with a trailing comma, which ruff keeps as it is."""
    inner = indent + "    "
    return [f"{indent}{head}", *(f"{inner}{item}," for item in items), f"{indent}{tail}"]


def _sorted_names(events: Iterable[EventSpec]) -> list[str]:
    return sorted(e.name for e in events)


def _handler_type(event: EventSpec) -> str:
    return f"{event.name}Handler"


def _options(event: EventSpec) -> list[str]:
    """The keyword options the event can use, in the order of HookApp.on."""
    options = []
    if event.matcher_field is not None:
        options.append("matcher: str | None = None")
    options += ["name: str | None = None", "timeout: float | None = None"]
    if event.safe_decision is not None:
        options.append("fail_closed: bool = False")
    if event.loop_guarded:
        options.append("stop_loop_guard: bool = True")
    options.append("idempotent: bool = False")
    return options


def _docstring(event: EventSpec) -> list[str]:
    whose = "Codex's " if event.runtimes == ("codex",) else ""
    text = f"Register a handler of {whose}{event.name}; options as in :meth:`HookApp.on`."
    if event.note:
        text += " " + event.note
    indent = " " * 8
    lines = textwrap.wrap(text, WIDTH - 3, initial_indent=indent + '"""', subsequent_indent=indent)
    lines[-1] += '"""'
    return lines


def decorator_models() -> list[str]:
    return _exploded("    ", "from handler_kit.core.events import (", _sorted_names(EVENTS), ")")


def handler_types() -> list[str]:
    lines = ["if TYPE_CHECKING:"]
    for event in EVENTS:
        kind = _handler_type(event)
        lines += _fit(
            "    ", f"{kind} = TypeVar(", [f'"{kind}"', f'bound="EventHandler[{event.name}]"'], ")"
        )
    return lines


def decorators() -> list[str]:
    lines: list[str] = []
    for event in EVENTS:
        kind, method = _handler_type(event), event.decorator
        if lines:
            lines.append("")
        lines.append("    @overload")
        lines += _fit("    ", f"def {method}(", ["self", f"func: {kind}", "/"], f") -> {kind}: ...")
        lines.append("    @overload")
        lines += _fit(
            "    ",
            f"def {method}(",
            ["self", "/", "*", *_options(event)],
            f") -> Callable[[{kind}], {kind}]: ...",
        )
        lines.append(f"    def {method}(self, func: Any = None, /, **options: Any) -> Any:")
        lines += _docstring(event)
        lines.append(f'        return _register(self, "{event.name}", func, options)')
    return lines


def _model_imports(events: Iterable[EventSpec]) -> list[str]:
    """``from <model module> import <models>`` for each module, in isort's order."""
    by_module: dict[str, list[str]] = {}
    for event in events:
        by_module.setdefault(event.module, []).append(event.name)
    lines: list[str] = []
    for module in sorted(by_module):
        names = sorted(by_module[module])
        head = f"from handler_kit.core.{module} import "
        if len(names) == 1:
            lines.append(f"    {head}{names[0]}")
        else:
            lines += _exploded("    ", f"{head}(", names, ")")
    return lines


def package_models() -> list[str]:
    return _model_imports(EVENTS)


def package_classes() -> list[str]:
    return _exploded("", "_EVENT_CLASSES = (", (f'"{n}"' for n in _sorted_names(EVENTS)), ")")


def package_all() -> list[str]:
    return _exploded("", "__all__ += [", (f'"{n}"' for n in _sorted_names(EVENTS)), "]")


def lazy_models() -> list[str]:
    return _model_imports(e for e in EVENTS if e.module != "_base_events")


def claude_all() -> list[str]:
    names = _sorted_names(e for e in EVENTS if e.module == "_claude_events")
    return _exploded("", "__all__ = [", (f'"{n}"' for n in names), "]")


def _collection(head: str, items: list[str], tail: str) -> list[str]:
    """A literal as ruff formats it: on one line when it fits, else one item a line."""
    one = f"{head}{', '.join(items)}{',' if len(items) == 1 and head.endswith('(') else ''}{tail}"
    if len(one) <= WIDTH:
        return [one]
    return _exploded("", head, items, tail)


def _frozenset(target: str, names: list[str]) -> list[str]:
    head, items = f"{target}: frozenset[str] = frozenset(", [f'"{n}"' for n in names]
    one = f"{head}{{{', '.join(items)}}})"
    if len(one) <= WIDTH:
        return [one]
    return [head, *_exploded("    ", "{", items, "}"), ")"]


def _quoted(names: Iterable[str]) -> list[str]:
    return [f'"{n}"' for n in names]


def names_lists() -> list[str]:
    """The event lists of handler_kit.core.names, as literals."""
    safe = [
        (e.name, e.safe_decision) for d in ("deny", "block") for e in EVENTS if e.safe_decision == d
    ]
    defaults = [(e.name, e.default_timeout) for e in EVENTS if e.default_timeout is not None]
    most = [(e.name, e.max_timeout) for e in EVENTS if e.max_timeout is not None]
    lines = [
        "# Every event name, in the order of Claude Code's docs, then Codex's own (Interrupt)."
    ]
    lines += _collection("EVENT_NAMES: tuple[str, ...] = (", _quoted(e.name for e in EVENTS), ")")
    lines.append("# The events Runbear runs.")
    runbear = _quoted(e.name for e in EVENTS if "runbear" in e.runtimes)
    lines += _collection("RUNBEAR_EVENTS: tuple[str, ...] = (", runbear, ")")
    lines += [
        "# Events whose input has no field a matcher is tested against: the runtimes ignore a",
        "# matcher there (each model's ``matcher_field`` is None).",
    ]
    lines += _frozenset(
        "MATCHERLESS_EVENTS", sorted(e.name for e in EVENTS if e.matcher_field is None)
    )
    lines += [
        "# Events whose safe answer, when a fail-closed handler fails, is known: the denying",
        "# events first, as the error messages and the docs name them.",
    ]
    lines += _collection(
        "SAFE_DECISIONS: dict[str, str] = {", [f'"{n}": "{d}"' for n, d in safe], "}"
    )
    lines.append("# Events with a stop loop: a block there while ``stop_hook_active`` is dropped.")
    lines += _frozenset("LOOP_GUARDED_EVENTS", sorted(e.name for e in EVENTS if e.loop_guarded))
    lines.append(
        "# A handler's timeout where it is not the general default, and the most it may be."
    )
    lines += _collection(
        "DEFAULT_TIMEOUTS: dict[str, float] = {", [f'"{n}": {t!r}' for n, t in defaults], "}"
    )
    lines += _collection(
        "MAX_TIMEOUTS: dict[str, float] = {", [f'"{n}": {t!r}' for n, t in most], "}"
    )
    return lines


def model_modules() -> list[str]:
    items = [f'"{e.name}": "handler_kit.core.{e.module}"' for e in EVENTS]
    return _collection("_MODULES = {", items, "}")


_RUNTIME_NAMES = {
    "claude-code": "Claude Code",
    "codex": "Codex",
    "posit": "Posit",
    "runbear": "Runbear",
}


def docs_table() -> list[str]:
    lines = [
        "",
        "| event | decorator | runtimes | matcher tested against | fails closed to "
        "| loop guard | default timeout |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in EVENTS:
        matcher = f"`{e.matcher_field}`" if e.matcher_field else "no matcher"
        runtimes = ", ".join(_RUNTIME_NAMES[r] for r in e.runtimes)
        timeout = f"{e.default_timeout or 3:g} s"
        if e.max_timeout is not None:
            timeout += f" (at most {e.max_timeout:g} s)"
        lines.append(
            f"| {e.name} | `@app.{e.decorator}` | {runtimes} | {matcher} "
            f"| {e.safe_decision or ''} | {'yes' if e.loop_guarded else ''} | {timeout} |"
        )
    return [*lines, ""]


# file -> {region name: its lines}
TARGETS: dict[str, dict[str, Callable[[], list[str]]]] = {
    "handler_kit/core/_decorators.py": {
        "models": decorator_models,
        "handler-types": handler_types,
        "decorators": decorators,
    },
    "handler_kit/__init__.py": {
        "models": package_models,
        "event-classes": package_classes,
        "all": package_all,
    },
    "handler_kit/core/names.py": {"lists": names_lists},
    "handler_kit/core/events.py": {
        "models": lazy_models,
        "all": package_all,
        "modules": model_modules,
    },
    "handler_kit/core/_claude_events.py": {"all": claude_all},
    "docs/handlers.md": {"events": docs_table},
}


def _markers(path: str, name: str) -> tuple[str, str]:
    start = f"<generated: {name}> from {SOURCE} by `{COMMAND}`; do not edit"
    end = f"</generated: {name}>"
    if path.endswith(".md"):
        return f"<!-- {start} -->", f"<!-- {end} -->"
    return f"# {start}", f"# {end}"


def regenerate(path: str, text: str) -> str:
    """``text``, the content of ``path``, with every generated part written anew."""
    comment = "<!-- " if path.endswith(".md") else "# "
    for name, make in TARGETS[path].items():
        start, end = _markers(path, name)
        # the start line is found by its name alone, and written anew with the rest
        pattern = re.compile(
            rf"^(?P<indent>[ \t]*){re.escape(comment)}<generated: {re.escape(name)}>[^\n]*\n"
            rf".*?(?P<blank>\n*)^(?P=indent){re.escape(end)}$",
            re.MULTILINE | re.DOTALL,
        )
        found = list(pattern.finditer(text))
        if len(found) != 1:
            raise ValueError(f"{path}: expected one pair of markers {start!r} ... {end!r}")
        indent = found[0]["indent"]
        # the blank lines before the end marker are ruff's to decide (it wants one where a
        # statement follows the marker), so they are kept
        lines = make()
        blanks = len(found[0]["blank"]) - 1 if found[0]["blank"] else 0
        while lines and not lines[-1]:
            lines.pop()
            blanks = max(blanks, 1)
        body = "\n".join([f"{indent}{start}", *lines, *[""] * blanks, f"{indent}{end}"])
        text = text[: found[0].start()] + body + text[found[0].end() :]
    return text


def stale() -> list[str]:
    """The generated files that differ from what the table makes of them."""
    out = []
    for path in TARGETS:
        text = (ROOT / path).read_text(encoding="utf-8")
        if regenerate(path, text) != text:
            out.append(path)
    return out


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        paths = stale()
        for path in paths:
            print(f"{path} is stale: run `{COMMAND}`", file=sys.stderr)
        return 1 if paths else 0
    if argv:
        print("usage: python -m handler_kit.core._generate [--check]", file=sys.stderr)
        return 2
    for path in TARGETS:
        file = ROOT / path
        text = file.read_text(encoding="utf-8")
        new = regenerate(path, text)
        if new != text:
            file.write_text(new, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
