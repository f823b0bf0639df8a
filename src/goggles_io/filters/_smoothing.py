"""Smoothing filters: moving average, exponential moving average, running median.

NaN policy: smoothing propagates NaN. A NaN input makes the moving average and the median NaN
while it is inside the window, and the exponential average NaN until ``reset()``. Put an outlier
filter first in a ``ConcatFilter`` to drop NaN before smoothing.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from goggles_io.exceptions import ConfigurationError
from goggles_io.filters._base import (
    Filter,
    State,
    check_float,
    check_int,
    ring_push,
    ring_state,
    ring_valid,
)

__all__ = ["AverageFilter", "ExpAverageFilter", "MedianFilter"]


class _Windowed(Filter):
    """A filter over the last ``window_size`` inputs, kept in a ring window."""

    def __init__(self, window_size: int, prefix: str = "") -> None:
        super().__init__(prefix)
        self.window_size = check_int("window_size", window_size, 1)

    def _params(self) -> dict[str, Any]:
        return {"window_size": self.window_size}

    def _init(self, xp: ModuleType, shape: tuple[int, ...], dtype: Any) -> State:
        return ring_state(xp, self.window_size, shape, dtype, 0.0)


class AverageFilter(_Windowed):
    """Mean of the last ``window_size`` inputs (of those seen, until the window has filled).

    Args:
        window_size: Number of inputs averaged, an int >= 1.
    """

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[State, Any]:
        new = ring_push(xp, state, x, self.window_size)
        valid = ring_valid(xp, self.window_size, new["head"], new["count"], x.ndim)
        total = xp.sum(xp.where(valid, new["buf"], 0), axis=0)
        return new, (total / new["count"]).astype(x.dtype)


class ExpAverageFilter(Filter):
    """``y = alpha * x + (1 - alpha) * y_prev``; the first input passes through unchanged.

    Args:
        alpha: Weight of the newest input, in [0, 1]; 1 disables smoothing, 0 holds the first input.
    """

    def __init__(self, alpha: float, prefix: str = "") -> None:
        super().__init__(prefix)
        alpha = check_float("alpha", alpha)
        if not 0.0 <= alpha <= 1.0:
            msg = f"alpha must be in [0, 1] (got {alpha!r})."
            raise ConfigurationError(msg, key="alpha", value=alpha)
        self.alpha = alpha

    def _params(self) -> dict[str, Any]:
        return {"alpha": self.alpha}

    def _init(self, xp: ModuleType, shape: tuple[int, ...], dtype: Any) -> State:
        return {"value": xp.zeros(shape, dtype=dtype), "seen": xp.asarray(False)}

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[State, Any]:
        blended = self.alpha * x + (1.0 - self.alpha) * state["value"]
        y = xp.where(state["seen"], blended, x).astype(x.dtype)
        return {"value": y, "seen": xp.asarray(True)}, y


class MedianFilter(_Windowed):
    """Median of the last ``window_size`` inputs (of those seen until it fills), as ``np.median``.

    The window is sorted with empty slots pushed to the end, so the median index depends on the
    count only: no data-dependent shapes, and jit-safe.

    Args:
        window_size: Number of inputs the median is taken over, an int >= 1.
    """

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[State, Any]:
        new = ring_push(xp, state, x, self.window_size)
        valid = ring_valid(xp, self.window_size, new["head"], new["count"], x.ndim)
        buf = new["buf"]
        has_nan = xp.any(valid & xp.isnan(buf), axis=0)
        # Empty and NaN slots sort last; the first `count` sorted slots are the valid values.
        ordered = xp.sort(xp.where(valid & ~xp.isnan(buf), buf, xp.inf), axis=0)
        lo = ordered[(new["count"] - 1) // 2]
        hi = ordered[new["count"] // 2]
        median = xp.where(lo == hi, lo, (lo + hi) / 2)
        return new, xp.where(has_nan, xp.nan, median).astype(x.dtype)
