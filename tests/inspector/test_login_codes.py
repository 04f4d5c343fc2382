"""One-time login links: good once, for a short time, never a cookie and never made from one."""

from __future__ import annotations

import time
from pathlib import Path

from handler_kit.inspector.session import LOGIN_CODE_SECONDS, LoginCodes, SessionSigner

SECRET = b"0123456789abcdef0123456789abcdef"


def test_a_code_is_good_once_across_processes_sharing_the_secret(tmp_path: Path) -> None:
    issued = LoginCodes(SECRET, str(tmp_path)).issue()
    # another server process (a worker, or the one a reload starts) with the same secret
    assert LoginCodes(SECRET, str(tmp_path)).redeem(issued)
    assert not LoginCodes(SECRET, str(tmp_path)).redeem(issued)
    assert not LoginCodes(SECRET, str(tmp_path)).redeem(LoginCodes(b"x" * 32).issue())


def test_a_code_expires_and_is_not_a_session(tmp_path: Path) -> None:
    codes = LoginCodes(SECRET, str(tmp_path))
    old = codes.issue(now=time.time() - LOGIN_CODE_SECONDS - 1)
    assert not codes.redeem(old)
    code = codes.issue()
    assert SessionSigner(SECRET).principal(code) is None  # a code is no cookie
    cookie = SessionSigner(SECRET).issue("token#0")
    assert not codes.redeem(cookie)  # and a cookie no code
    assert not codes.redeem(None) and not codes.redeem("")
