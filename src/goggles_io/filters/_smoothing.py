"""Smoothing filters: moving average, exponential moving average, running median.

NaN policy: smoothing propagates NaN. A NaN input makes the moving average and the median NaN
while it is inside the window, and the exponential average NaN until ``reset()``. Put an outlier
filter first in a chain to drop NaN before smoothing.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from goggles_io.exceptions import ConfigurationError
from goggles_io.filters._base import Filter, State, check_float, check_int, ring_valid, ring_write

__all__ = ["ExponentialMovingAverage", "MedianFilter", "MovingAverage"]


def _window_state(xp: ModuleType, window: int, shape: tuple[int, ...], dtype: Any) -> State:
    return {
        "buf": xp.zeros((window, *shape), dtype=dtype),
        "head": xp.asarray(0, dtype=xp.int32),
        "count": xp.asarray(0, dtype=xp.int32),
    }


def _push(xp: ModuleType, state: State, x: Any, window: int) -> State:
    """Write ``x`` into the ring window; the head wraps, the count saturates at ``window``."""
    return {
        "buf": ring_write(xp, state["buf"], state["head"], x),
        "head": (state["head"] + 1) % window,
        "count": xp.minimum(state["count"] + 1, window),
    }


class _Windowed(Filter):
    """A filter over the last ``window`` inputs, kept in a ring window."""

    def __init__(self, window: int = 5) -> None:
        super().__init__()
        self.window = check_int("window", window, 1)

    def _params(self) -> dict[str, Any]:
        return {"window": self.window}

    def _init(self, xp: ModuleType, shape: tuple[int, ...], dtype: Any) -> State:
        return _window_state(xp, self.window, shape, dtype)


class MovingAverage(_Windowed):
    """Mean of the last ``window`` inputs (fewer until the window has filled).

    Args:
        window: Number of inputs averaged, >= 1.
    """

    type_name = "moving_average"

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[Any, State]:
        new = _push(xp, state, x, self.window)
        valid = ring_valid(xp, self.window, new["head"], new["count"], x.ndim)
        total = xp.sum(xp.where(valid, new["buf"], 0), axis=0)
        return (total / new["count"]).astype(x.dtype), new


class ExponentialMovingAverage(Filter):
    """``y = alpha * x + (1 - alpha) * y_prev``; the first input passes through unchanged.

    Args:
        alpha: Weight of the newest input, in (0, 1]; 1 disables smoothing.
    """

    type_name = "exponential"

    def __init__(self, alpha: float = 0.1) -> None:
        super().__init__()
        alpha = check_float("alpha", alpha, positive=True)
        if alpha > 1.0:
            msg = f"alpha must be in (0, 1] (got {alpha!r})."
            raise ConfigurationError(msg, key="alpha", value=alpha)
        self.alpha = alpha

    def _params(self) -> dict[str, Any]:
        return {"alpha": self.alpha}

    def _init(self, xp: ModuleType, shape: tuple[int, ...], dtype: Any) -> State:
        return {"value": xp.zeros(shape, dtype=dtype), "seen": xp.asarray(False)}

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[Any, State]:
        blended = self.alpha * x + (1.0 - self.alpha) * state["value"]
        y = xp.where(state["seen"], blended, x).astype(x.dtype)
        return y, {"value": y, "seen": xp.asarray(True)}


class MedianFilter(_Windowed):
    """Median of the last ``window`` inputs (fewer until the window has filled), like ``np.median``.

    The window is sorted with empty slots pushed to the end, so the median index depends on the
    count only: no data-dependent shapes, and jit-safe.

    Args:
        window: Number of inputs the median is taken over, >= 1.
    """

    type_name = "median"

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[Any, State]:
        new = _push(xp, state, x, self.window)
        valid = ring_valid(xp, self.window, new["head"], new["count"], x.ndim)
        buf = new["buf"]
        has_nan = xp.any(valid & xp.isnan(buf), axis=0)
        # Empty and NaN slots sort last; the first `count` sorted slots are the valid values.
        ordered = xp.sort(xp.where(valid & ~xp.isnan(buf), buf, xp.inf), axis=0)
        lo = ordered[(new["count"] - 1) // 2]
        hi = ordered[new["count"] // 2]
        median = xp.where(lo == hi, lo, (lo + hi) / 2)
        return xp.where(has_nan, xp.nan, median).astype(x.dtype), new
