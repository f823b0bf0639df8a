"""What every watch check is built from: robust block statistics and the once-per-failure latch.

A check works on blocks of points summarised by their median and median absolute deviation, so
one outlier moves nothing; the latch makes a check alert once per failure, not once per block.
Kept apart from the checks themselves (``states.py``), which only add their own decision.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

from experiment_telemetry.aggregators.watch.configs import Collapse, Divergence, Growth

__all__ = [
    "MAD_TO_SIGMA",
    "BlockState",
    "OncePerFailure",
    "median_and_mad",
    "median_of",
    "median_sd",
]

MAD_TO_SIGMA = 1.4826  # MAD of a normal sample -> its standard deviation
_MEDIAN_SD = 1.2533  # sd of a normal sample's median, in units of sigma / sqrt(n)


def median_and_mad(values: list[float]) -> tuple[float, float]:
    """Median and median absolute deviation of ``values`` (sorted in place)."""
    values.sort()
    n = len(values)
    half = n // 2
    median = values[half] if n % 2 else 0.5 * (values[half - 1] + values[half])
    deviations = sorted(abs(v - median) for v in values)
    mad = deviations[half] if n % 2 else 0.5 * (deviations[half - 1] + deviations[half])
    return median, mad


def median_of(values: Sequence[float]) -> float:
    """Median of a short sequence."""
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else 0.5 * (ordered[n // 2 - 1] + ordered[n // 2])


def median_sd(mads: deque[float], block: int) -> float:
    """Noise scale of one block median, from the blocks' median absolute deviations."""
    return MAD_TO_SIGMA * median_of(mads) * _MEDIAN_SD / math.sqrt(block)


class OncePerFailure:
    """Fire once per failure: after an alert, re-arm only when the evidence stayed clear for
    ``needed`` checks in a row (a whole window turned over), so one noisy window inside a failure
    that goes on is not taken for its end."""

    __slots__ = ("armed", "clear", "needed")

    def __init__(self, needed: int) -> None:
        self.armed = True
        self.clear = 0
        self.needed = needed

    def fire(self) -> bool:
        """The evidence is there: ``True`` when this is a new failure (alert), else ``False``."""
        self.clear = 0
        if not self.armed:
            return False
        self.armed = False
        return True

    def hold(self) -> None:
        """Not the failure's pattern here, but not its end either: re-arming starts over."""
        self.clear = 0

    def calm(self) -> None:
        """The evidence is absent at this check: one step towards re-arming."""
        if not self.armed:
            self.clear += 1
            if self.clear >= self.needed:
                self.armed, self.clear = True, 0


class BlockState:
    """What every check on block medians keeps: the open block and the latest blocks' MADs.

    ``update`` appends to ``buf`` itself (the per-point cost stays one append and one length
    test) and calls ``_close`` once the block is full.
    """

    __slots__ = ("block", "buf", "check", "mads", "severity", "watch")

    def __init__(self, watch: Growth | Collapse | Divergence, mads: int) -> None:
        self.watch = watch
        self.check, self.severity, self.block = watch.check, watch.severity, watch.block
        self.buf: list[float] = []
        self.mads: deque[float] = deque(maxlen=mads)

    def _close(self, buf: list[float]) -> float:
        """Start the next block; keep the MAD of ``buf``, the full one, and return its median."""
        self.buf = []
        median, mad = median_and_mad(buf)
        self.mads.append(mad)
        return median
