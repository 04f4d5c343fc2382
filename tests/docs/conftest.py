"""The docs' own code under test: the README's ``myhooks.py``, as a user would save it."""

from __future__ import annotations

import sys
import types

import pytest

from tests.docs.pages import blocks, page


@pytest.fixture
def myhooks(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The README's ``myhooks.py``, importable as ``myhooks`` for the length of a test."""
    app_block = blocks(page("README.md"), "python")[0]
    assert app_block.startswith("# myhooks.py\n")
    module = types.ModuleType("myhooks")
    exec(compile(app_block, "README:myhooks.py", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, "myhooks", module)
    return module
