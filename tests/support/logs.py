"""Waiting on a log record of a server running in the test's process (caplog sees it)."""

from __future__ import annotations

import logging
import time

import pytest


def wait_for_record(
    caplog: pytest.LogCaptureFixture, needle: str, timeout: float = 10.0
) -> logging.LogRecord:
    """The first record whose message contains ``needle``, once one is logged (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        for record in caplog.records:
            if needle in record.getMessage():
                return record
        if time.monotonic() >= deadline:
            raise AssertionError(f"{needle!r} not logged within {timeout} s")
        time.sleep(0.02)
