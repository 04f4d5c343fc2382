"""pytest plugin for handler-kit contract tests (fixtures added in issue 4).

Loaded by pytest through the ``pytest11`` entry point in every run, so it must import nothing
heavy at module level.
"""

from __future__ import annotations
