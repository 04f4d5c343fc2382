"""Which HTTP protocol ``handler-kit serve`` gives uvicorn.

The connection limits (``handler_kit.server._httptools_protocol``) are a subclass of uvicorn's
private httptools protocol class: they are used only on the uvicorn versions they are tested
with, the range ``pyproject.toml`` declares (a test keeps the two the same). On any other
version the server runs on uvicorn's own protocol rather than on a subclass of a class that may
have changed under it, and says so once, with what is lost.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from typing import cast

import uvicorn

__all__ = ["TESTED_UVICORN", "protocol_class", "uvicorn_is_tested"]

logger = logging.getLogger("handler_kit.serve")

# [lowest, first untested): the uvicorn versions the subclass is tested with, as
# ``uvicorn[standard]>=0.54,<0.55`` in pyproject.toml. Widening it is a release's work: read the
# new uvicorn's httptools_impl, run tests/server, then move both.
TESTED_UVICORN: tuple[tuple[int, int], tuple[int, int]] = ((0, 54), (0, 55))

_warned = False

LOST = (
    "the idle timeout before a first request, the request head timeout and size limit "
    "(--header-timeout, --max-header-bytes), the per-address limit on unanswered connections, "
    "and JSON bodies on uvicorn's own 400 and 503 answers"
)


def _release(version: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a version string such as ``0.54.0`` or ``0.55.0rc1``."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else None


def uvicorn_is_tested(version: str = uvicorn.__version__) -> bool:
    release = _release(version)
    low, high = TESTED_UVICORN
    return release is not None and low <= release < high


def protocol_class(
    *, keep_alive: float, head_timeout: float, max_head_bytes: int, max_unanswered: int
) -> type[asyncio.Protocol] | str:
    """What to pass as ``uvicorn.run(http=...)``: on a tested uvicorn, a partial of the
    subclass that uvicorn calls with each connection's arguments (the partial carries the
    limits and pickles into spawned workers); on any other, ``"auto"``, uvicorn's own choice
    of protocol, after one warning."""
    if not uvicorn_is_tested():
        _warn_untested(uvicorn.__version__)
        return "auto"
    from handler_kit.server._httptools_protocol import HttpToolsProtocol

    factory = functools.partial(
        HttpToolsProtocol,
        keep_alive=keep_alive,
        head_timeout=head_timeout,
        max_head_bytes=max_head_bytes,
        max_unanswered=max_unanswered,
    )
    return cast("type[asyncio.Protocol]", factory)


def _warn_untested(version: str) -> None:
    global _warned
    if _warned:
        return
    _warned = True
    (low_major, low_minor), (high_major, high_minor) = TESTED_UVICORN
    logger.warning(
        "uvicorn %s is not a version handler-kit is tested with (>=%d.%d,<%d.%d): serving "
        "with uvicorn's own HTTP protocol, without %s",
        version,
        low_major,
        low_minor,
        high_major,
        high_minor,
        LOST,
    )
