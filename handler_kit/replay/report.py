"""The replay's report: counts per verdict, overall and per handler, the first examples of
each change as differences under a one-line header (``handler-kit test``'s style), and the
decisions that were not replayed, apart, with why. Text for a terminal, JSON and JUnit XML
for CI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from handler_kit.replay.classify import VERDICTS, Difference
from handler_kit.replay.run import Crash, Outcome

# How each apart-reported reason is said in the totals
NOT_REPLAYED_WORDS = {
    "incomplete": "input incomplete",
    "side_effects": "skipped (side effects)",
    "unreadable": "input unreadable",
}
_CHANGES = ("loosened", "tightened", "changed")


@dataclass
class Summary:
    """Everything the reports say, gathered while the decisions stream by: the counts, and
    the first ``examples`` outcomes of each verdict per handler (all of them when None)."""

    examples: int | None = 3
    replayed: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    not_replayed: Counter[str] = field(default_factory=Counter)
    reasons: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    handlers: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    # (handler, verdict) -> [(outcome, that handler's differences)]
    shown: dict[tuple[str, str], list[tuple[Outcome, tuple[Difference, ...]]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    changed: list[Outcome] = field(default_factory=list)  # every decision not unchanged
    apart: list[Outcome] = field(default_factory=list)  # the first of those not replayed
    # each crash of a candidate handler -> the decisions it took part in (the key kept is the
    # first one seen, with its message)
    crashes: Counter[Crash] = field(default_factory=Counter)
    # why nothing was replayed (:func:`nothing_replayed`), when nothing was: set by the caller,
    # which alone knows the source and the filters
    nothing: str | None = None

    def add(self, outcome: Outcome) -> None:
        self.crashes.update(outcome.crashes)
        if outcome.verdict is None:
            kind = outcome.not_replayed or "incomplete"
            self.not_replayed[kind] += 1
            self.reasons[kind][outcome.why or ""] += 1
            if self.examples is None or len(self.apart) < self.examples:
                self.apart.append(outcome)
            return
        self.replayed += 1
        self.verdicts[outcome.verdict] += 1
        if outcome.verdict != "unchanged":
            self.changed.append(outcome)
        for part in outcome.handlers:
            self.handlers[part.name][part.verdict] += 1
            if part.verdict == "unchanged":
                continue
            examples = self.shown[(part.name, part.verdict)]
            if self.examples is None or len(examples) < self.examples:
                examples.append((outcome, part.differences))

    @property
    def loosened(self) -> bool:
        """Whether any decision, or any handler's own part in one, loosened."""
        return self.verdicts["loosened"] > 0 or any(
            counts["loosened"] for counts in self.handlers.values()
        )

    def totals(self) -> str:
        line = f"{self.replayed} replayed: " + ", ".join(
            f"{self.verdicts[v]} {v}" for v in VERDICTS
        )
        apart = [
            f"{self.not_replayed[k]} {words}"
            for k, words in NOT_REPLAYED_WORDS.items()
            if self.not_replayed[k]
        ]
        if apart:
            line += f"; not replayed: {', '.join(apart)}"
        return line


def nothing_replayed(
    summary: Summary, source: str, total: int | None, filters: Sequence[str] = ()
) -> str | None:
    """Why a replay that replayed nothing proves nothing, in one line, with the count of each
    reason (None when something was replayed): ``total``, the decisions the source holds (the
    filters aside); ``filters``, the options that chose among them (``--event``...)."""
    if summary.replayed:
        return None
    apart = summary.not_replayed.total()
    if not total and not apart:
        return f"nothing was replayed, so nothing was checked: {source} holds no decisions"
    total = max(total or 0, apart)
    reasons = [
        f"{summary.not_replayed[kind]} {words}"
        for kind, words in NOT_REPLAYED_WORDS.items()
        if summary.not_replayed[kind]
    ]
    if total > apart:
        reasons.append(f"{total - apart} left out by {', '.join(filters) or 'the filters'}")
    return (
        "nothing was replayed, so nothing was checked: "
        f"{total} decision{'s' * (total != 1)} in {source}, {', '.join(reasons)}"
    )


def header(outcome: Outcome) -> str:
    """``evt_... 2026-05-09T07:35:25.123Z PreToolUse issue_refund {"amount": 640}``"""
    recorded = outcome.recorded
    return f"{recorded.event_id} {recorded.time} {summary(outcome)}"


def summary(outcome: Outcome) -> str:
    """``PreToolUse issue_refund {"amount": 640}``: the event, its tool and tool input."""
    recorded = outcome.recorded
    parts = [recorded.event]
    if recorded.tool_name:
        parts.append(recorded.tool_name)
    tool_input = (recorded.input or {}).get("tool_input")
    if isinstance(tool_input, dict):
        shown = json.dumps(tool_input, ensure_ascii=False, sort_keys=True)
        parts.append(shown if len(shown) <= 80 else shown[:77] + "...")
    return " ".join(p for p in parts if p)


def text_report(summary: Summary) -> str:
    lines: list[str] = []
    for name in sorted(summary.handlers):
        counts = summary.handlers[name]
        total = sum(counts.values())
        lines.append(
            f"{name}: {total} replayed: " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS)
        )
        for verdict in _CHANGES:
            for outcome, differences in summary.shown.get((name, verdict), []):
                lines.append(f"  {verdict.upper():<9} {header(outcome)}")
                lines.extend(f"            {d}" for d in differences)
    if summary.crashes:
        if lines:
            lines.append("")
        lines.append("crashed (each traceback logged once; the failure policy answered):")
        lines.extend(f"  {line}" for line in crash_lines(summary))
    if summary.not_replayed:
        if lines:
            lines.append("")
        lines.append("not replayed (reported apart, never counted as unchanged):")
        for kind, words in NOT_REPLAYED_WORDS.items():
            for why, count in summary.reasons.get(kind, Counter()).most_common():
                lines.append(f"  {count} {words}: {why}")
    if lines:
        lines.append("")
    lines.append(f"decisions: {summary.totals()}")
    return "\n".join(lines) + "\n"


def crash_lines(summary: Summary) -> list[str]:
    """``refund_gate: RuntimeError at gate.py:26 on 9,998 decisions: the service is down``,
    the most frequent first."""
    return [
        f"{crash} on {_decisions(count)}: {crash.message}"
        for crash, count in summary.crashes.most_common()
    ]


def _decisions(count: int) -> str:
    return f"{count:,} decision{'s' * (count != 1)}"


def json_report(summary: Summary) -> bytes:
    data: dict[str, Any] = {
        "replayed": summary.replayed,
        **{v: summary.verdicts[v] for v in VERDICTS},
        "not_replayed": {k: summary.not_replayed[k] for k in NOT_REPLAYED_WORDS},
        "loosened_any": summary.loosened,
        "nothing_replayed": summary.nothing,
        "handlers": {
            name: {v: counts[v] for v in VERDICTS}
            for name, counts in sorted(summary.handlers.items())
        },
        "crashes": [
            {
                "handler": crash.handler,
                "exception": crash.exception,
                "location": crash.location,
                "message": crash.message,
                "decisions": count,
            }
            for crash, count in summary.crashes.most_common()
        ],
        "decisions": [_outcome_json(o) for o in summary.changed],
        "apart": [
            {**_identity(o), "not_replayed": o.not_replayed, "why": o.why} for o in summary.apart
        ],
    }
    return json.dumps(data, ensure_ascii=False, indent=2).encode() + b"\n"


def _identity(outcome: Outcome) -> dict[str, Any]:
    recorded = outcome.recorded
    return {
        "event_id": recorded.event_id,
        "time": recorded.time,
        "event": recorded.event,
        "tool_name": recorded.tool_name,
        "input": recorded.input,
    }


def _outcome_json(outcome: Outcome) -> dict[str, Any]:
    return {
        **_identity(outcome),
        "verdict": outcome.verdict,
        "differences": [d.as_json() for d in outcome.differences],
        "handlers": [
            {
                "name": part.name,
                "verdict": part.verdict,
                "differences": [d.as_json() for d in part.differences],
            }
            for part in outcome.handlers
        ],
    }


def junit_report(summary: Summary, *, allow_loosening: bool = False) -> bytes:
    """One ``testcase`` per changed decision (a loosened one a ``failure`` unless loosening is
    allowed) and one per decision reported apart (``skipped``, with why), then one that passes
    for the unchanged ones, so the totals add up; when nothing was replayed, one more that
    fails, saying why."""
    root = ET.Element("testsuites", name="handler-kit replay")
    suite = ET.SubElement(root, "testsuite", name="handler-kit replay")
    failures = 0
    for outcome in summary.changed:
        case = ET.SubElement(
            suite, "testcase", classname=outcome.verdict or "", name=header(outcome)
        )
        text = "\n".join(str(d) for d in outcome.differences)
        if outcome.verdict == "loosened" and not allow_loosening:
            failures += 1
            problem = ET.SubElement(case, "failure", message=f"loosened: {header(outcome)}")
            problem.text = text
        else:
            ET.SubElement(case, "system-out").text = text
    for kind, words in NOT_REPLAYED_WORDS.items():
        for why, count in summary.reasons.get(kind, Counter()).items():
            case = ET.SubElement(
                suite, "testcase", classname="not replayed", name=f"{count} {words}"
            )
            ET.SubElement(case, "skipped", message=why)
    unchanged = summary.verdicts["unchanged"]
    ET.SubElement(suite, "testcase", classname="unchanged", name=f"{unchanged} unchanged")
    tests = len(summary.changed) + sum(len(r) for r in summary.reasons.values()) + 1
    if summary.nothing is not None:  # a gate that checked nothing fails, as its exit status
        failures += 1
        tests += 1
        case = ET.SubElement(suite, "testcase", classname="nothing replayed", name="replayed")
        ET.SubElement(case, "failure", message=summary.nothing)
    skipped = sum(len(r) for r in summary.reasons.values())
    if summary.crashes:  # beside the decisions, which already count its answers
        lines = "\n".join(crash_lines(summary))
        ET.SubElement(suite, "system-err").text = f"crashed (each traceback logged once):\n{lines}"
    for element in (root, suite):
        element.set("tests", str(tests))
        element.set("failures", str(failures))
        element.set("errors", "0")
        element.set("skipped", str(skipped))
    ET.indent(root)
    xml: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return xml + b"\n"
