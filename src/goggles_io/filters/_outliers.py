"""Outlier rejection: a fixed range, and a standard-deviation test against recent inputs.

A rejected element is replaced by the output of the ``fallback_filter`` chain. That chain is
stepped on every input, fed the last accepted value of each element (the range's midpoint, or
0 for ``StdRejectFilter``, before anything is accepted), so a smoothing fallback follows the
accepted signal. With no fallback filters the last accepted value itself is emitted;
``[ScaleFilter(scale=0.0, offset=c)]`` emits the constant ``c``. Accepted elements pass through
unchanged. NaN and infinities are always rejected. Arrays are judged element by element.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

from goggles_io.exceptions import ConfigurationError
from goggles_io.filters._base import (
    Filter,
    State,
    check_float,
    check_int,
    check_order,
    ring_push,
    ring_state,
    ring_valid,
)
from goggles_io.filters._concat import ConcatFilter, FilterConfig, FilterLike, build_filter

__all__ = ["RangeRejectFilter", "StdRejectFilter"]


def _fallback(
    value: FilterLike | Iterable[FilterLike], available: Mapping[str, type[Filter]] | None
) -> ConcatFilter:
    if isinstance(value, (Filter, FilterConfig, Mapping)):
        value = [value]
    return ConcatFilter([build_filter(item, available) for item in value])


class _Rejector(Filter):
    """Shared replacement: track the last accepted value, step the fallback on it."""

    def __init__(
        self,
        fallback_filter: FilterLike | Iterable[FilterLike],
        available_filters: Mapping[str, type[Filter]] | None,
        prefix: str,
    ) -> None:
        super().__init__(prefix)
        self.fallback_filter = _fallback(fallback_filter, available_filters)

    def _initial_value(self) -> float:
        return 0.0

    def _rejector_state(self, xp: ModuleType, shape: tuple[int, ...], dtype: Any) -> State:
        last = xp.full(shape, self._initial_value(), dtype=dtype)
        return {"last": last, "fallback": self.fallback_filter.init_state(last)}

    def _replace(self, xp: ModuleType, state: State, x: Any, accept: Any) -> tuple[State, Any]:
        """Return the new ``last``/``fallback`` state and the output for the mask ``accept``."""
        last = xp.where(accept, x, state["last"])
        fallback_state, substitute = self.fallback_filter.apply(state["fallback"], last)
        y = xp.where(accept, x, substitute).astype(x.dtype)
        return {"last": last, "fallback": fallback_state}, y


class RangeRejectFilter(_Rejector):
    """Accept elements inside ``[min_value, max_value]``; replace the others (and NaN).

    Before anything is accepted the fallback is fed the range's midpoint (the finite bound of a
    half-open range, 0 for an unbounded one).

    Args:
        min_value: Smallest accepted value (``-inf`` for no lower bound).
        max_value: Largest accepted value (``inf`` for none); must be >= ``min_value``.
        fallback_filter: Filters or configs producing replacements; see the module docstring.
    """

    def __init__(
        self,
        min_value: float,
        max_value: float,
        fallback_filter: FilterLike | Iterable[FilterLike] = (),
        available_filters: Mapping[str, type[Filter]] | None = None,
        prefix: str = "",
    ) -> None:
        self.min_value = check_float("min_value", min_value, finite=False)
        self.max_value = check_float("max_value", max_value, finite=False)
        check_order("min_value", self.min_value, "max_value", self.max_value, strict=False)
        super().__init__(fallback_filter, available_filters, prefix)

    def _params(self) -> dict[str, Any]:
        return {
            "min_value": self.min_value,
            "max_value": self.max_value,
            "fallback_filter": self.fallback_filter,
        }

    def _initial_value(self) -> float:
        low, high = self.min_value, self.max_value
        if math.isfinite(low) and math.isfinite(high):
            return (low + high) / 2
        if math.isfinite(low) or math.isfinite(high):
            return low if math.isfinite(low) else high
        return 0.0

    def _init(self, xp: ModuleType, shape: tuple[int, ...], dtype: Any) -> State:
        return self._rejector_state(xp, shape, dtype)

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[State, Any]:
        accept = (x >= self.min_value) & (x <= self.max_value) & xp.isfinite(x)
        return self._replace(xp, state, x, accept)


class StdRejectFilter(_Rejector):
    """Reject elements more than ``std_factor`` standard deviations from the recent mean.

    The mean and population std are over the finite values among the last ``window_size``
    inputs, accepted or not (so a genuine level shift is accepted once it fills the window).
    Until ``window_size`` inputs have been seen (the warm-up) every finite input passes, as it
    does while the window holds no finite value. With a zero std (one finite value, or equal
    ones), any value other than the mean is rejected.

    Args:
        std_factor: Largest accepted ``|x - mean| / std``, > 0.
        window_size: Number of recent inputs the statistics cover, an int >= 1.
        fallback_filter: Filters or configs producing replacements; see the module docstring.
    """

    def __init__(
        self,
        std_factor: float,
        window_size: int,
        fallback_filter: FilterLike | Iterable[FilterLike] = (),
        available_filters: Mapping[str, type[Filter]] | None = None,
        prefix: str = "",
    ) -> None:
        self.std_factor = check_float("std_factor", std_factor)
        if not self.std_factor > 0:
            msg = f"std_factor must be > 0 (got {std_factor!r})."
            raise ConfigurationError(msg, key="std_factor", value=std_factor)
        self.window_size = check_int("window_size", window_size, 1)
        super().__init__(fallback_filter, available_filters, prefix)

    def _params(self) -> dict[str, Any]:
        return {
            "std_factor": self.std_factor,
            "window_size": self.window_size,
            "fallback_filter": self.fallback_filter,
        }

    def _init(self, xp: ModuleType, shape: tuple[int, ...], dtype: Any) -> State:
        window = ring_state(xp, self.window_size, shape, dtype, math.nan)
        return {**self._rejector_state(xp, shape, dtype), "window": window}

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[State, Any]:
        window = state["window"]
        buf = window["buf"]
        valid = ring_valid(xp, self.window_size, window["head"], window["count"], x.ndim)
        finite = valid & xp.isfinite(buf)
        n = xp.sum(finite, axis=0)
        safe_n = xp.maximum(n, 1)
        mean = xp.sum(xp.where(finite, buf, 0), axis=0) / safe_n
        var = xp.sum(xp.where(finite, (buf - mean) ** 2, 0), axis=0) / safe_n
        inlier = xp.abs(x - mean) <= self.std_factor * xp.sqrt(var)
        judged = (window["count"] >= self.window_size) & (n > 0)
        accept = xp.isfinite(x) & (~judged | inlier)
        new, y = self._replace(xp, state, x, accept)
        return {**new, "window": ring_push(xp, window, x, self.window_size)}, y
