"""A logger that imports :mod:`logging` when it is first used.

Importing ``logging`` is a large share of a command hook's start-up (one process per tool
call), and the core logs only when something goes wrong: a handler that fails, an output it
cannot read, a loop it guards against. Its modules hold a :func:`lazy_logger`, so a run in
which nothing goes wrong never loads ``logging``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING to a type checker, without importing typing
if TYPE_CHECKING:
    import logging
    from typing import Any


class _LazyLogger:
    """Every attribute is the one of ``logging.getLogger(name)``, looked up on first use."""

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: logging.Logger | None = None

    def __getattr__(self, attribute: str) -> Any:
        logger = self._logger
        if logger is None:
            import logging

            logger = self._logger = logging.getLogger(self.name)
        return getattr(logger, attribute)

    def __repr__(self) -> str:
        return f"<lazy logger {self.name!r}>"


def lazy_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)``, without importing :mod:`logging` until a record is logged
    (or any attribute of the logger is read)."""
    return _LazyLogger(name)  # type: ignore[return-value]
