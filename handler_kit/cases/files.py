"""Reading case files: JSON (one case, a list of cases, or ``{"app": ..., "cases": [...]}``),
JSON Lines (one case a line) and YAML (the same shapes as JSON; needs the ``yaml`` extra).

Every problem is a :class:`CaseFileError` whose message names the file and the case (its
position and, when it has one, its name) on one line, fit for a terminal; never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from handler_kit.cases.model import Case
from handler_kit.cases.patterns import SUFFIXES, is_case_file

YAML_HINT = "pip install 'handler-kit[yaml]'"
# The values a YAML file may expand to. Its aliases (``*name``) share one value, so a few
# hundred bytes of nested aliases are billions of values once sent as JSON (the "billion
# laughs"): counted, over the shared values, before anything is expanded.
MAX_VALUES = 1_000_000
# The keys of a file that is a mapping rather than one case
FILE_KEYS = frozenset({"app", "cases"})


class CaseFileError(Exception):
    """A case file that cannot be read or has a case that is not a case; the message says
    where and why."""


@dataclass(frozen=True)
class CaseFile:
    """The cases of one file, and the app the file names (``MODULE:ATTR``), if it does."""

    path: Path
    cases: tuple[Case, ...]
    app: str | None = None


def load_case_file(path: str | Path) -> CaseFile:
    """Read and check every case of ``path``; raises :class:`CaseFileError`."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise CaseFileError(f"{path}: not a case file (expected {', '.join(SUFFIXES)})")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CaseFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CaseFileError(f"{path}: not UTF-8 text ({exc.reason})") from None
    if suffix == ".jsonl":
        raws = list(_json_lines(path, text))
        return CaseFile(path, tuple(_cases(path, raws)))
    data = _yaml(path, text) if suffix in (".yaml", ".yml") else _json(path, text)
    app: str | None = None
    if isinstance(data, dict) and "cases" in data:
        unknown = sorted(set(data) - FILE_KEYS)
        if unknown:
            raise CaseFileError(
                f"{path}: unknown key {unknown[0]!r} beside 'cases' (the file's keys are "
                f"'app' and 'cases')"
            )
        app = data.get("app")
        if app is not None and not isinstance(app, str):
            raise CaseFileError(f"{path}: 'app' must be MODULE:ATTR, a string")
        data = data["cases"]
        if not isinstance(data, list):
            raise CaseFileError(f"{path}: 'cases' must be a list of cases")
    elif isinstance(data, dict):
        data = [data]
    elif not isinstance(data, list):
        raise CaseFileError(f"{path}: expected a case, a list of cases or a mapping with 'cases'")
    raws = [(f"case {index}", raw) for index, raw in enumerate(data, 1)]
    return CaseFile(path, tuple(_cases(path, raws)), app)


def find_case_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files named, and the case files (``hookcases_*``) under the folders named."""
    found: list[Path] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.is_file() and is_case_file(p)))
        else:
            found.append(path)
    return found


def _json(path: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise CaseFileError(f"{path}: not valid JSON: {exc}") from None
    except RecursionError:
        raise CaseFileError(f"{path}: not valid JSON: nested too deeply") from None


def _json_lines(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield f"line {number}", json.loads(line)
        except ValueError as exc:
            raise CaseFileError(f"{path}:{number}: not valid JSON: {exc}") from None
        except RecursionError:
            raise CaseFileError(f"{path}:{number}: not valid JSON: nested too deeply") from None


def _yaml(path: Path, text: str) -> Any:
    try:
        import yaml
    except ImportError:
        raise CaseFileError(f"{path}: reading YAML case files needs PyYAML: {YAML_HINT}") from None
    try:
        data = yaml.safe_load(text)
        size = _expanded_size(data, {}, set())
    except yaml.YAMLError as exc:
        raise CaseFileError(_yaml_error(path, text, exc)) from None
    except RecursionError:
        raise CaseFileError(f"{path}: not valid YAML: nested too deeply") from None
    except _SelfReference:
        raise CaseFileError(f"{path}: a value contains itself (a YAML alias)") from None
    if size > MAX_VALUES:
        raise CaseFileError(
            f"{path}: expands to more than {MAX_VALUES:,} values (YAML aliases repeated "
            "within each other?)"
        )
    try:
        # YAML has values JSON has not (dates, sets): an event is sent as JSON, so refuse them
        # here, where the file can be named, rather than when the case is sent
        json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise CaseFileError(f"{path}: a value is not JSON ({exc}); quote dates and times") from None
    return data


def _yaml_error(path: Path, text: str, exc: Exception) -> str:
    """Where the YAML is wrong (file, line, column), in a sentence, then the line itself and
    a caret under the column, as Python shows a syntax error."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
    context = getattr(exc, "context", None)
    if context:
        problem = f"{problem} ({' '.join(str(context).split())})"
    if mark is None:
        return f"{path}: not valid YAML: {problem}"
    line, column = mark.line + 1, mark.column + 1
    message = f"{path}, line {line}, column {column}: not valid YAML: {problem}"
    lines = text.splitlines()
    if 0 < line <= len(lines):
        source = lines[line - 1].expandtabs(1)
        message += f"\n    {source}\n    {' ' * mark.column}^"
    return message


class _SelfReference(Exception):
    pass


def _expanded_size(value: Any, sizes: dict[int, int], open_: set[int]) -> int:
    """How many values ``value`` is once every alias is written out, counting each shared
    value once (``sizes``, by identity); stops counting past :data:`MAX_VALUES`."""
    if not isinstance(value, list | dict):
        return 1
    key = id(value)
    if key in sizes:
        return sizes[key]
    if key in open_:
        raise _SelfReference
    open_.add(key)
    total = 1
    for item in value.values() if isinstance(value, dict) else value:
        total += _expanded_size(item, sizes, open_)
        if total > MAX_VALUES:
            break
    open_.discard(key)
    sizes[key] = total
    return total


def _cases(path: Path, raws: list[tuple[str, Any]]) -> list[Case]:
    """Every case of the file, checked; every bad case is reported, one line each, not only
    the first (a file is fixed in one go)."""
    seen: dict[str, str] = {}
    cases: list[Case] = []
    problems: list[str] = []
    for where, raw in raws:
        label = where
        if isinstance(raw, dict) and isinstance(raw.get("name"), str) and raw["name"]:
            label = f"{where} ({raw['name']!r})"
        if not isinstance(raw, dict):
            problems.append(f"{path}: {label}: a case must be a mapping")
            continue
        try:
            case = Case.model_validate(raw)
        except ValidationError as exc:
            problems.append(f"{path}: {label}: {_issues(exc)}")
            continue
        if not case.name:
            case = case.model_copy(update={"name": where})
        if case.name in seen:
            problems.append(
                f"{path}: {label}: the name {case.name!r} is taken by {seen[case.name]}"
            )
            continue
        seen[case.name] = where
        cases.append(case)
    if problems:
        raise CaseFileError("\n".join(problems))
    return cases


def _issues(exc: ValidationError) -> str:
    """pydantic's errors on one line: ``expect.decision: Input should be ...; ...``, a
    misspelt key with the key it is close to."""
    parts = []
    for error in exc.errors():
        location = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = f"no such key{_did_you_mean(error['loc'])}"
        parts.append(f"{location}: {message}" if location else message)
    return "; ".join(parts)


def _did_you_mean(location: tuple[Any, ...]) -> str:
    """`` (did you mean 'decision'?)`` for a key the model at ``location`` does not have, or
    the keys it has."""
    import difflib

    fields = _fields_at(Case, location[:-1])
    if not fields:
        return ""
    close = difflib.get_close_matches(str(location[-1]), fields, n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (the keys are {', '.join(sorted(fields))})"


def _fields_at(model: Any, path: tuple[Any, ...]) -> list[str]:
    """The field names of the pydantic model reached from ``model`` through ``path``."""
    import typing

    from pydantic import BaseModel

    current: Any = model
    for part in path:
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        field = current.model_fields.get(str(part))
        if field is None:
            return []
        candidates = [field.annotation, *typing.get_args(field.annotation)]
        current = next(
            (c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None
        )
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []
