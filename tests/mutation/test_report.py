"""The pieces of `make mutation` that are ours: the reading of mutmut's results, the list of
equivalent mutants and the table written into docs/reliability.md. A full run is minutes of
mutmut and not part of `make test`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reliability import mutation

APP = "handler_kit.core.app.xǁHookAppǁanswer__mutmut_"
MERGE = "handler_kit.core.merge.x_merge__mutmut_"


def test_exit_codes_fold_into_the_reports_columns() -> None:
    assert [mutation.status(c) for c in (1, 3, 0, 33, 5, 36, -24, None, 37, -11)] == [
        "killed",
        "killed",
        "survived",
        "no tests",
        "no tests",
        "timeout",
        "timeout",
        "not checked",
        "suspicious",
        "suspicious",
    ]


def test_module_of_a_method_and_of_a_function() -> None:
    assert mutation.module_of(APP + "12") == "handler_kit.core.app"
    assert mutation.module_of(MERGE + "3") == "handler_kit.core.merge"


def test_equivalents_need_a_reason() -> None:
    text = f"# comment\n\n{MERGE}1: the default is the same object\n"
    assert mutation.read_equivalents(text) == {MERGE + "1": "the default is the same object"}
    with pytest.raises(ValueError, match=r"equivalent.txt:2: expected"):
        mutation.read_equivalents(f"# c\n{MERGE}1\n")
    with pytest.raises(ValueError, match=r"equivalent.txt:1: expected"):
        mutation.read_equivalents("not a mutant: reason\n")


def test_meta_files_tally_per_module(tmp_path: Path) -> None:
    core = tmp_path / "handler_kit" / "core"
    core.mkdir(parents=True)
    meta: dict[str, object] = {"hash_by_function_name": {}, "durations_by_key": {}}
    (core / "merge.py.meta").write_text(
        json.dumps({**meta, "exit_code_by_key": {MERGE + "1": 1, MERGE + "2": 0, MERGE + "3": 0}})
    )
    (core / "app.py.meta").write_text(
        json.dumps({**meta, "exit_code_by_key": {APP + "1": 1, APP + "2": 36, APP + "3": 33}})
    )
    codes = mutation.read_meta(tmp_path / "handler_kit")
    assert len(codes) == 6
    modules = mutation.tally(codes, {MERGE + "3": "same answer"})
    by_name = {m.name: m for m in modules}
    assert by_name["handler_kit.core.merge"].counts == {"killed": 1, "survived": 1, "equivalent": 1}
    assert by_name["handler_kit.core.merge"].survivors == [MERGE + "2"]
    assert by_name["handler_kit.core.app"].counts == {"killed": 1, "timeout": 1, "no tests": 1}
    assert by_name["handler_kit.core.app"].detected == 2


def test_the_table_gives_the_kill_rate_and_names_the_survivors() -> None:
    codes = {MERGE + "1": 1, MERGE + "2": 0, MERGE + "3": 0, APP + "1": 1, APP + "2": 36}
    text = mutation.render(mutation.tally(codes, {MERGE + "3": "why"}), 1500.0, "Measured now.")
    assert text.splitlines()[:3] == [
        "Measured now.",
        "",
        "| module | generated | killed | timeout | survived | equivalent | no tests "
        "| not checked | suspicious | kill rate |",
    ]
    assert "| `handler_kit.core.app` | 2 | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 100.0% |" in text
    assert "| `handler_kit.core.merge` | 3 | 1 | 0 | 1 | 1 | 0 | 0 | 0 | 33.3% |" in text
    assert "| all | 5 | 2 | 1 | 1 | 1 | 0 | 0 | 0 | 60.0% |" in text
    assert "Kill rate in 25.0 min: 60.0% of the generated mutants killed or timed out; " in text
    assert text.endswith(f"\n- `{MERGE}2`")


def test_the_section_goes_between_its_markers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reliability import run

    page = tmp_path / "reliability.md"
    page.write_text(f"head\n{mutation.START}\nold\n{mutation.END}\ntail\n")
    monkeypatch.setattr(run, "DOC", page)
    run.write_doc("new table", mutation.START, mutation.END)
    assert page.read_text() == f"head\n{mutation.START}\nnew table\n{mutation.END}\ntail\n"


def test_children_import_the_mutated_tree_and_the_start_up_file() -> None:
    env = mutation.child_environment({"PYTHONPATH": "/elsewhere", "HOME": "/root"})
    assert env == {
        "PYTHONPATH": f"{mutation.MUTANTS}:{mutation.SITE}:/elsewhere",
        "HOME": "/root",
    }
    assert mutation.child_environment({})["PYTHONPATH"] == f"{mutation.MUTANTS}:{mutation.SITE}"


@pytest.mark.parametrize(("given", "seen"), [("stats", ""), ("m.x_f__mutmut_1", "m.x_f__mutmut_1")])
def test_a_child_runs_the_mutant_under_test_but_never_records_stats(given: str, seen: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.environ['MUTANT_UNDER_TEST'])"],
        env={**mutation.child_environment(os.environ), "MUTANT_UNDER_TEST": given},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert done.stdout == f"{seen}\n"


def test_the_header_says_what_ran_on_what() -> None:
    pyproject = (
        '[tool.mutmut]\nonly_mutate = ["handler_kit/core/merge.py"]\n'
        'pytest_add_cli_args_test_selection = ["tests/core"]\n'
    )
    run = {"seconds": 90.0, "date": "2026-12-02", "machine": "x86_64, 2 cores", "patterns": []}
    assert mutation.header({**run, **mutation.settings(pyproject)}) == (
        "Measured 2026-12-02 on x86_64, 2 cores by `make mutation` (1.5 min): mutants of "
        "`handler_kit/core/merge.py` (tested: all), each against the tests of `tests/core` "
        "that call its function."
    )
    run["patterns"] = ["handler_kit.core.merge*"]
    assert "(tested: `handler_kit.core.merge*`)" in mutation.header(
        {**run, **mutation.settings(pyproject)}
    )
    run["patterns"] = [
        "handler_kit.core.merge*",
        "handler_kit.core.merge.x_merge__mutmut_3",
        "handler_kit.core.merge.x_merge__mutmut_9",
    ]
    run["stopped"] = True
    assert (
        "by `make mutation` (1.5 min, stopped before its end: the mutants not checked were "
        "not run): mutants of" in mutation.header({**run, **mutation.settings(pyproject)})
    )
    assert "(tested: `handler_kit.core.merge*`, 2 survivors run again by name)" in (
        mutation.header({**run, **mutation.settings(pyproject)})
    )


def test_runs_of_some_modules_add_up() -> None:
    first = {"seconds": 600.0, "patterns": ["handler_kit.core.merge*"], "date": "d1"}
    second = {"seconds": 300.0, "patterns": ["handler_kit.core.matchers*"], "date": "d2"}
    assert mutation.joined(first, dict(second)) == {
        "seconds": 900.0,
        "patterns": ["handler_kit.core.merge*", "handler_kit.core.matchers*"],
        "date": "d2",
        "stopped": False,
    }
    # a run stopped with Ctrl-C stays stopped when another is added to it
    assert mutation.joined({**first, "stopped": True}, dict(second))["stopped"] is True
    # after a run of everything, a later partial run starts the count again
    assert mutation.joined({"seconds": 5000.0, "patterns": []}, dict(second)) == second


def test_the_tree_mutmut_copies_is_importable_in_its_own_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh clone has no mutants/ yet: mutmut's process, started with it on the path, copies
    the tree there and must then import from it (its first pytest run loads tests/conftest.py
    from mutants/). Here the child in mutmut's place copies a package and imports it."""
    monkeypatch.setattr(mutation, "MUTANTS", tmp_path / "mutants")
    monkeypatch.setattr(mutation, "TIMING", tmp_path / "mutants" / "run.json")
    copy_then_import = (
        "import os; os.makedirs('mutants/copied_probe');"
        "open('mutants/copied_probe/__init__.py', 'w').write('WHERE = __file__');"
        "import copied_probe; print(copied_probe.WHERE)"
    )
    real_run = subprocess.run
    seen: list[str] = []

    def mutmut(command: list[str], cwd: Path, env: dict[str, str], check: bool) -> object:
        done = real_run(
            [sys.executable, "-c", copy_then_import],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        seen.append(done.stdout + done.stderr)
        return done

    monkeypatch.setattr(subprocess, "run", mutmut)
    mutation.run_mutmut([], 1, "here")
    assert seen == [f"{tmp_path / 'mutants' / 'copied_probe' / '__init__.py'}\n"]


def test_a_module_not_run_again_keeps_its_row_and_says_which_run_it_is_from() -> None:
    before = {
        "seconds": 3000.0,
        "date": "2026-12-01",
        "machine": "x86_64, 2 cores",
        "patterns": ["handler_kit.command.dialects*"],
        "modules": [
            {"name": "handler_kit.command.dialects", "counts": {"killed": 9}, "survivors": []},
            {"name": "handler_kit.core.merge", "counts": {"killed": 1}, "survivors": []},
            {"name": "handler_kit.gone", "counts": {"killed": 5}, "survivors": []},
        ],
    }
    now = mutation.tally({MERGE + "1": 1, MERGE + "2": 0}, {})
    files = ["handler_kit/core/merge.py", "handler_kit/command/dialects.py"]
    modules = mutation.carried(now, before, files)
    assert [(m.name, m.counts) for m in modules] == [
        ("handler_kit.core.merge", {"killed": 1, "survived": 1}),
        ("handler_kit.command.dialects", {"killed": 9}),
    ]
    assert modules[1].measured == {
        "seconds": 3000.0,
        "date": "2026-12-01",
        "machine": "x86_64, 2 cores",
        "tested": "`handler_kit.command.dialects*`",
    }
    text = mutation.render(modules, 600.0, "Measured now.")
    assert "| `handler_kit.command.dialects` * | 9 | 9 | 0 | 0 | 0 | 0 | 0 | 0 | 100.0% |" in text
    assert "| all | 11 | 10 | 0 | 1 | 0 | 0 | 0 | 0 | 90.9% |" in text
    assert (
        "\\* Not tested in this run, the row of an earlier one: measured 2026-12-01 on x86_64, "
        "2 cores by `make mutation` (50.0 min; tested: `handler_kit.command.dialects*`)."
    ) in text
    assert "This run and the earlier ones together: 60.0 min." in text
    # a row carried again keeps the run it was measured in
    again = mutation.carried(
        [], {"modules": [{**before["modules"][0], "measured": {"date": "x"}}]}, files
    )
    assert again[0].measured == {"date": "x"}
