"""Outlier rejection: a fixed range, and a z-score test against a window of recent inputs.

NaN policy: outlier filters reject NaN (and infinities) always. A rejected input is replaced
according to ``replace_with``: ``"last"`` (default) repeats the last accepted value, or NaN when
nothing has been accepted yet; ``"nan"`` emits NaN; a number emits that number. Accepted inputs
pass through unchanged. Arrays are judged element by element.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from goggles_io.exceptions import ConfigurationError
from goggles_io.filters._base import Filter, State, check_float, check_int, ring_valid, ring_write

__all__ = ["RangeFilter", "ZScoreFilter"]

_REPLACE_MODES = ("last", "nan")
_DEFAULT_MIN_COUNT = 5


def _check_replace(value: Any) -> str | float:
    if isinstance(value, str):
        if value not in _REPLACE_MODES:
            msg = f"replace_with must be one of {_REPLACE_MODES} or a number (got {value!r})."
            raise ConfigurationError(msg, key="replace_with", value=value)
        return value
    return check_float("replace_with", value, finite=False)


class _Rejector(Filter):
    """Shared replacement logic: remember the last accepted value, substitute rejected ones."""

    def __init__(self, replace_with: str | float) -> None:
        super().__init__()
        self.replace_with = _check_replace(replace_with)

    def _last_state(self, xp: ModuleType, shape: tuple[int, ...], dtype: Any) -> State:
        return {"last": xp.full(shape, np.nan, dtype=dtype)}

    def _replace(self, xp: ModuleType, state: State, x: Any, accept: Any) -> tuple[Any, Any]:
        """Return ``(y, new_last)`` for the acceptance mask ``accept``."""
        if self.replace_with == "last":
            fill = state["last"]
        elif self.replace_with == "nan":
            fill = xp.full(x.shape, np.nan, dtype=x.dtype)
        else:
            fill = xp.full(x.shape, self.replace_with, dtype=x.dtype)
        return xp.where(accept, x, fill), xp.where(accept, x, state["last"])


class RangeFilter(_Rejector):
    """Accept inputs inside ``[low, high]``; replace the others (and NaN).

    Args:
        low: Smallest accepted value (``-inf`` for no lower bound).
        high: Largest accepted value (``inf`` for no upper bound); must be >= ``low``.
        replace_with: ``"last"``, ``"nan"`` or a number; see the module docstring.
    """

    type_name = "range"

    def __init__(
        self, low: float = -np.inf, high: float = np.inf, replace_with: str | float = "last"
    ) -> None:
        super().__init__(replace_with)
        self.low = check_float("low", low, finite=False)
        self.high = check_float("high", high, finite=False)
        if np.isnan(self.low) or np.isnan(self.high) or self.low > self.high:
            msg = f"low must be <= high (got low={low!r}, high={high!r})."
            raise ConfigurationError(msg, key="low", value=low)

    def _params(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "replace_with": self.replace_with}

    def _init(self, xp: ModuleType, shape: tuple[int, ...], dtype: Any) -> State:
        return self._last_state(xp, shape, dtype)

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[Any, State]:
        accept = (x >= self.low) & (x <= self.high)  # False for NaN
        y, last = self._replace(xp, state, x, accept)
        return y, {"last": last}


class ZScoreFilter(_Rejector):
    """Reject inputs more than ``threshold`` standard deviations from the recent mean.

    The statistics (mean, population std) are over the finite values among the last ``window``
    inputs, accepted or not, so a genuine level shift is accepted once it fills the window. With
    fewer than ``min_count`` finite values in the window every finite input is accepted. With a
    zero std, any value different from the mean is rejected.

    Args:
        window: Number of recent inputs the statistics cover, >= 2.
        threshold: Largest accepted ``|x - mean| / std``, > 0.
        min_count: Finite values needed before anything is rejected, in [2, window]; default
            ``min(5, window)``.
        replace_with: ``"last"``, ``"nan"`` or a number; see the module docstring.
    """

    type_name = "zscore"

    def __init__(
        self,
        window: int = 20,
        threshold: float = 3.0,
        min_count: int | None = None,
        replace_with: str | float = "last",
    ) -> None:
        super().__init__(replace_with)
        self.window = check_int("window", window, 2)
        self.threshold = check_float("threshold", threshold, positive=True)
        if min_count is None:
            min_count = min(_DEFAULT_MIN_COUNT, self.window)
        self.min_count = check_int("min_count", min_count, 2)
        if self.min_count > self.window:
            msg = f"min_count must be <= window={self.window} (got {min_count!r})."
            raise ConfigurationError(msg, key="min_count", value=min_count)

    def _params(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "threshold": self.threshold,
            "min_count": self.min_count,
            "replace_with": self.replace_with,
        }

    def _init(self, xp: ModuleType, shape: tuple[int, ...], dtype: Any) -> State:
        return {
            **self._last_state(xp, shape, dtype),
            "buf": xp.full((self.window, *shape), np.nan, dtype=dtype),
            "head": xp.asarray(0, dtype=xp.int32),
            "count": xp.asarray(0, dtype=xp.int32),
        }

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[Any, State]:
        buf = state["buf"]
        valid = ring_valid(xp, self.window, state["head"], state["count"], x.ndim)
        finite = valid & xp.isfinite(buf)
        n = xp.sum(finite, axis=0)
        safe_n = xp.maximum(n, 1)
        mean = xp.sum(xp.where(finite, buf, 0), axis=0) / safe_n
        var = xp.sum(xp.where(finite, (buf - mean) ** 2, 0), axis=0) / safe_n
        deviation = xp.abs(x - mean)
        inlier = deviation <= self.threshold * xp.sqrt(var)
        accept = xp.isfinite(x) & ((n < self.min_count) | inlier)
        y, last = self._replace(xp, state, x, accept)
        return y, {
            "last": last,
            "buf": ring_write(xp, buf, state["head"], x),
            "head": (state["head"] + 1) % self.window,
            "count": xp.minimum(state["count"] + 1, self.window),
        }
