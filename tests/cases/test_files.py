"""Reading case files: the shapes each format takes, and every malformed case reported on one
line naming the file and the case; and the comparison's own rules (subset, JSON equality)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handler_kit.cases import Answer, CaseFileError, Expect, compare, load_case_file
from tests.cases.support import BASH_LS, PASSING, write_json

GOOD = {"event": BASH_LS, "expect": {"decision": "allow"}}


def test_the_json_shapes(tmp_path: Path) -> None:
    one = load_case_file(write_json(tmp_path / "one.json", GOOD))
    assert [c.name for c in one.cases] == ["case 1"] and one.app is None
    many = load_case_file(write_json(tmp_path / "many.json", PASSING))
    assert [c.name for c in many.cases] == [c["name"] for c in PASSING]
    mapping = load_case_file(
        write_json(tmp_path / "mapping.json", {"app": "mod:app", "cases": [GOOD]})
    )
    assert mapping.app == "mod:app" and len(mapping.cases) == 1
    case = many.cases[2]  # given by event_name
    assert case.input == {"hook_event_name": "PreToolUse", **PASSING[2]["event"]}


def test_yaml_and_jsonl(tmp_path: Path) -> None:
    yaml_file = tmp_path / "cases.yml"
    yaml_file.write_text(
        "app: mod:app\ncases:\n  - event_name: Stop\n    expect: {decision: block}\n",
        encoding="utf-8",
    )
    loaded = load_case_file(yaml_file)
    assert loaded.app == "mod:app" and loaded.cases[0].input == {"hook_event_name": "Stop"}
    lines = tmp_path / "cases.jsonl"
    lines.write_text(f"{json.dumps(GOOD)}\n\n{json.dumps(GOOD)}\n", encoding="utf-8")
    assert [c.name for c in load_case_file(lines).cases] == ["line 1", "line 3"]


def _case(**changes: Any) -> dict[str, Any]:
    return {"name": "c", **GOOD, **changes}


@pytest.mark.parametrize(
    ("cases", "message"),
    [
        (
            [GOOD, _case(event={"hook_event_name": "PreTooluse"})],
            "case 2 ('c'): unknown hook event 'PreTooluse' (did you mean 'PreToolUse'?)",
        ),
        ([_case(event={"tool_name": "x"})], "case 1 ('c'): the event has no hook_event_name"),
        (
            [_case(event_name="Stop")],
            "event_name 'Stop' and the event's hook_event_name 'PreToolUse' differ",
        ),
        ([_case(expect={})], "expect names nothing to check"),
        ([_case(expect={"reason": "("})], "expect.reason: not a regular expression"),
        ([_case(expect={"decision": "approve"})], "expect.decision: Input should be 'allow'"),
        (
            [_case(expect={"decsion": "deny"})],
            "expect.decsion: no such key (did you mean 'decision'?)",
        ),
        ([_case(evnt={})], "case 1 ('c'): evnt: no such key (did you mean 'event'?)"),
        (
            [_case(expect={"decision": "deny", "xyz": 1})],
            "expect.xyz: no such key (the keys are ",
        ),
        ([_case(handler="a/b")], "handler: not a handler name: 'a/b'"),
        ([_case(), _case()], "case 2 ('c'): the name 'c' is taken by case 1"),
        (["not a case"], "case 1: a case must be a mapping"),
        ({"cases": [GOOD], "ap": "x"}, "unknown key 'ap' beside 'cases'"),
        ({"cases": GOOD}, "'cases' must be a list of cases"),
        (3, "expected a case, a list of cases or a mapping with 'cases'"),
    ],
)
def test_a_malformed_file_is_one_line_naming_where(
    tmp_path: Path, cases: Any, message: str
) -> None:
    path = write_json(tmp_path / "cases.json", cases)
    with pytest.raises(CaseFileError) as raised:
        load_case_file(path)
    text = str(raised.value)
    assert text.startswith(f"{path}: ") and message in text, text
    assert "\n" not in text


def test_a_yaml_error_shows_its_line_column_and_text(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(
        "cases:\n  - event: {hook_event_name: Stop\n    expect: {decision: none}\n",
        encoding="utf-8",
    )
    with pytest.raises(CaseFileError) as raised:
        load_case_file(path)
    assert str(raised.value).splitlines() == [
        f"{path}, line 3, column 11: not valid YAML: expected ',' or '}}', but got ':' "
        "(while parsing a flow mapping)",
        "        expect: {decision: none}",
        "              ^",
    ]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("cases.json", "{", "not valid JSON"),
        ("cases.jsonl", f"{json.dumps(GOOD)}\n\n{{oops\n", ":3: not valid JSON"),
        ("cases.yaml", "cases: [\n", "not valid YAML"),
        (
            "cases.yaml",
            "event: {hook_event_name: Stop, when: 2026-01-02}\nexpect: {decision: none}\n",
            "quote dates",
        ),
        ("cases.txt", "", "not a case file"),
    ],
)
def test_unreadable_files(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CaseFileError, match=message):
        load_case_file(path)


def test_updated_input_is_a_subset_with_json_equality() -> None:
    actual = Answer(decision="allow", updated_input={"a": 1, "b": {"c": True, "d": 2}})
    assert compare(Expect(updated_input={"b": {"c": True}}), actual) == []
    # Python's True == 1 is not JSON's
    (mismatch,) = compare(Expect(updated_input={"b": {"c": 1}}), actual)
    assert str(mismatch) == "updated_input.b.c: expected 1, got true"
    (missing,) = compare(Expect(updated_input={"e": None}), actual)
    assert str(missing) == "updated_input.e: expected null, got no such key"
    (rewritten,) = compare(Expect(updated_input=None), actual)
    assert str(rewritten) == 'updated_input: expected none, got {"a": 1, "b": {"c": true, "d": 2}}'
    assert compare(Expect(decision="none"), Answer()) == []
