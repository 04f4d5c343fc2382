"""``--write-cases``: the changed decisions as a case file (``hookcases_*``) that
``handler-kit test`` and pytest run, each case the recorded input and the candidate's answer
to it as the expectation. Run against the candidate they pass; against the app that made the
recorded decisions they fail, each naming what changed: the change, kept as a regression test.

The expectation is exact where a case can be: the decision, the reason and the system message
as anchored, escaped patterns, the whole context, the rewrite of the input (or none).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from handler_kit.replay.classify import aspects
from handler_kit.replay.report import header
from handler_kit.replay.run import Outcome

SUFFIXES = (".json", ".jsonl", ".yaml", ".yml")
# The decisions a case can expect (the rest, ``halt``, has no field in a case)
CASE_DECISIONS = ("allow", "deny", "ask", "defer", "block", "none")


class CasesError(Exception):
    """The case file cannot be written: the message says why."""


def case_of(outcome: Outcome) -> dict[str, Any]:
    """One case: the recorded input, the candidate's answer as what is expected."""
    assert outcome.recorded.input is not None
    found = aspects(outcome.output)
    expect: dict[str, Any] = {}
    if found.decision in CASE_DECISIONS:
        expect["decision"] = found.decision
    if found.reason is not None:
        expect["reason"] = f"^{re.escape(found.reason)}$"
    if found.context is not None:
        expect["context_contains"] = [found.context]
    if found.system_message is not None:
        expect["system_message"] = f"^{re.escape(found.system_message)}$"
    if outcome.recorded.event == "PreToolUse" or found.updated_input is not None:
        expect["updated_input"] = found.updated_input
    return {
        "name": f"{outcome.verdict}: {header(outcome)}",
        "event": outcome.recorded.input,
        "expect": expect,
    }


def write_cases(path: str | Path, outcomes: Iterable[Outcome], app: str) -> int:
    """Write the cases of ``outcomes`` to ``path`` for ``app`` (MODULE:ATTR); how many."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise CasesError(f"{path}: a case file ends with {', '.join(SUFFIXES)}")
    cases = [case_of(o) for o in outcomes if o.recorded.input is not None]
    if suffix == ".jsonl":
        # a JSON-lines case file has no place for the app: ``handler-kit test --app`` names it
        text = "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in cases)
    elif suffix == ".json":
        text = json.dumps({"app": app, "cases": cases}, ensure_ascii=False, indent=2) + "\n"
    else:
        try:
            import yaml
        except ImportError:
            raise CasesError(
                f"{path}: writing YAML needs PyYAML (pip install 'handler-kit[yaml]'); or "
                "write .json"
            ) from None
        text = "# Written by handler-kit replay: the candidate's answers to recorded inputs.\n"
        text += yaml.safe_dump(
            {"app": app, "cases": cases}, sort_keys=False, allow_unicode=True, width=100
        )
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CasesError(f"cannot write {path}: {exc.strerror or exc}") from None
    return len(cases)
