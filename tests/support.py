"""Helpers shared by the test suites: condition waits instead of sleeps."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

__all__ = ["wait_until"]


def wait_until(
    predicate: Callable[[], T], timeout_s: float = 30.0, interval_s: float = 0.005, what: str = ""
) -> T:
    """Poll ``predicate`` until it returns a truthy value; fail loudly after ``timeout_s``.

    Tests wait on conditions, never on fixed sleeps: CI machines have 2 noisy cores.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            msg = f"condition not met within {timeout_s} s: {what or predicate!r}"
            raise AssertionError(msg)
        time.sleep(interval_s)
