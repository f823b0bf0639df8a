"""Waiting for a buffer to drain: as long as it makes progress, never on a total deadline.

``finish()`` used to give delivery a fixed number of seconds and throw away what was left; a
sink slower than the training loop (W&B offline, a PNG encoder) lost a third of a run that it
would have handled in a few more seconds. :func:`wait_while_progressing` instead gives up only
after ``stall_s`` seconds in which nothing was taken (``GOGGLES_FINISH_STALL``), shows a line
of progress on stderr when the wait is long, and lets Ctrl-C end the wait at once with the
counts (issue 29).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping

import attrs

from goggles_io._util.env import ENV_FINISH_STALL, ENV_SHUTDOWN_TIMEOUT, read_number, read_text
from goggles_io._util.report import report

__all__ = [
    "DEFAULT_FINISH_STALL_S",
    "DrainOutcome",
    "read_finish_stall",
    "wait_while_progressing",
]

DEFAULT_FINISH_STALL_S = 30.0

_FIRST_SLEEP_S = 0.0005
_MAX_SLEEP_S = 0.02


@attrs.frozen(kw_only=True)
class DrainOutcome:
    """How a wait ended.

    Attributes:
        left: items not taken when the wait ended (``0`` when it drained).
        elapsed_s: how long it waited.
        stalled: gave up: nothing was taken for ``stall_s`` seconds.
        abandoned: the user pressed Ctrl-C (or ``limit_s`` ran out): given up at once.
    """

    left: int
    elapsed_s: float
    stalled: bool = False
    abandoned: bool = False

    @property
    def drained(self) -> bool:
        """Everything was taken."""
        return self.left == 0 and not self.stalled and not self.abandoned


def read_finish_stall(env: Mapping[str, str] | None = None) -> float:
    """``GOGGLES_FINISH_STALL``; unset, ``GOGGLES_SHUTDOWN_TIMEOUT`` if set; else 30 s.

    ``GOGGLES_SHUTDOWN_TIMEOUT`` was a total deadline for ``finish()``; a user who raised it
    wanted a longer wait, so where it is set it is the stall deadline's default.
    """
    env = os.environ if env is None else env
    if read_text(env, ENV_FINISH_STALL) is None and read_text(env, ENV_SHUTDOWN_TIMEOUT):
        return read_number(env, ENV_SHUTDOWN_TIMEOUT, DEFAULT_FINISH_STALL_S, minimum=0.0)
    return read_number(env, ENV_FINISH_STALL, DEFAULT_FINISH_STALL_S, minimum=0.0)


def wait_while_progressing(
    left: Callable[[], int],
    *,
    stall_s: float,
    what: str,
    report_every_s: float = 5.0,
    done: Callable[[], bool] | None = None,
    taken: Callable[[], int] | None = None,
    limit_s: float | None = None,
    who: str = "goggles_io",
) -> DrainOutcome:
    """Wait until ``left()`` is 0 (or ``done()``); give up after ``stall_s`` s without progress.

    Args:
        left: items still to deliver (cheap; called every few milliseconds).
        stall_s: seconds without progress after which the wait gives up (``inf``: never).
        what: who the items are for, in the progress line ("events left for wandb").
        report_every_s: the first progress line comes after this long, then one as often.
        done: a second way to end the wait (the worker exited).
        taken: a count that grows with every item taken; progress is this count growing
            (more exact than ``left()`` falling while producers still add). Default: ``left()``
            falling below its previous reading.
        limit_s: a total bound the caller asked for explicitly (``flush(timeout)``); reaching it
            ends the wait as ``abandoned``.
        who: the signature of the progress lines (the host signs its own).

    Returns:
        The outcome. Never raises ``KeyboardInterrupt``: Ctrl-C returns ``abandoned=True``.
    """
    start = time.monotonic()
    now = start
    count = 0
    try:
        count = _read(left)
        if count <= 0 or (done is not None and done()):
            return DrainOutcome(left=max(count, 0), elapsed_s=time.monotonic() - start)
        mark = taken() if taken is not None else count
        last_progress = start
        next_report = start + report_every_s
        rate_at, rate_mark = start, mark
        delay = _FIRST_SLEEP_S
        while True:
            time.sleep(delay)
            delay = min(delay * 2, _MAX_SLEEP_S)
            now = time.monotonic()
            count = _read(left)
            if count <= 0 or (done is not None and done()):
                return DrainOutcome(left=max(count, 0), elapsed_s=now - start)
            progress = taken() if taken is not None else count
            if (progress > mark) if taken is not None else (progress < mark):
                last_progress = now
            mark = progress
            if now - last_progress >= stall_s:
                return DrainOutcome(left=count, elapsed_s=now - start, stalled=True)
            if limit_s is not None and now - start >= limit_s:
                return DrainOutcome(left=count, elapsed_s=now - start, abandoned=True)
            if now >= next_report:
                moved = abs(progress - rate_mark)
                rate = moved / max(now - rate_at, 1e-9)
                _report_progress(count, what, rate, stall_s, who)
                next_report = now + report_every_s
                rate_at, rate_mark = now, progress
    except KeyboardInterrupt:
        try:
            count = _read(left)
        except KeyboardInterrupt:
            pass
        return DrainOutcome(left=count, elapsed_s=time.monotonic() - start, abandoned=True)


def _read(left: Callable[[], int]) -> int:
    return max(int(left()), 0)


def _report_progress(count: int, what: str, rate: float, stall_s: float, who: str) -> None:
    patience = "" if math.isinf(stall_s) else f"; gives up after {stall_s:g} s without progress"
    report(
        f"finishing: {count:,} events left for {what}, {rate:,.0f}/s "
        f"(Ctrl-C abandons them{patience}, {ENV_FINISH_STALL} sets how long)",
        who,
    )
