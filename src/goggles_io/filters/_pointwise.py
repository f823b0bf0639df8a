"""Stateless, element-wise filters: min-max normalisation, scaling, quantisation.

NaN passes through all three. ``reset()`` has nothing to forget.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from goggles_io.exceptions import ConfigurationError
from goggles_io.filters._base import Filter, State, check_float, check_order

__all__ = ["MinMaxFilter", "QuantizationFilter", "ScaleFilter"]


def _clip(xp: ModuleType, x: Any, low: float, high: float) -> Any:
    # maximum/minimum propagate NaN in numpy and jax alike.
    return xp.minimum(xp.maximum(x, low), high)


class MinMaxFilter(Filter):
    """Map ``[min_val, max_val]`` onto ``[0, 1]``; values outside are clipped to 0 or 1.

    Args:
        min_val: The value mapped to 0 (finite).
        max_val: The value mapped to 1 (finite, > ``min_val``).
    """

    def __init__(self, min_val: float, max_val: float, prefix: str = "") -> None:
        super().__init__(prefix)
        self.min_val = check_float("min_val", min_val)
        self.max_val = check_float("max_val", max_val)
        check_order("min_val", self.min_val, "max_val", self.max_val, strict=True)

    def _params(self) -> dict[str, Any]:
        return {"min_val": self.min_val, "max_val": self.max_val}

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[State, Any]:
        y = (x - self.min_val) / (self.max_val - self.min_val)
        return state, _clip(xp, y, 0.0, 1.0).astype(x.dtype)


class ScaleFilter(Filter):
    """``y = x * scale + offset``: unit changes, sign flips, constant replacements.

    ``offset`` is a goggles_io addition (robo-goggles' ``ScaleFilter`` only scales):
    ``ScaleFilter(scale=0.0, offset=c)`` is the fallback that replaces rejected values by ``c``.

    Args:
        scale: Multiplier (a finite real number; TypeError otherwise).
        offset: Added after scaling (finite), default 0.
    """

    def __init__(self, scale: float, prefix: str = "", *, offset: float = 0.0) -> None:
        super().__init__(prefix)
        self.scale = check_float("scale", scale)
        self.offset = check_float("offset", offset)

    def _params(self) -> dict[str, Any]:
        return {"scale": self.scale, "offset": self.offset}

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[State, Any]:
        return state, (x * self.scale + self.offset).astype(x.dtype)


class QuantizationFilter(Filter):
    """Round to the nearest multiple of ``step_size`` (ties to even), then clip to the range.

    Rounding first keeps the output inside ``[min_value, max_value]`` even when the bounds are
    not multiples of the step.

    Args:
        min_value: Smallest output (finite).
        max_value: Largest output (finite, >= ``min_value``).
        step_size: Quantisation step, > 0.
    """

    def __init__(
        self,
        min_value: float = -0.15,
        max_value: float = 0.15,
        step_size: float = 0.00015,
        prefix: str = "",
    ) -> None:
        super().__init__(prefix)
        self.min_value = check_float("min_value", min_value)
        self.max_value = check_float("max_value", max_value)
        check_order("min_value", self.min_value, "max_value", self.max_value, strict=False)
        self.step_size = check_float("step_size", step_size)
        if not self.step_size > 0:
            msg = f"step_size must be > 0 (got {step_size!r})."
            raise ConfigurationError(msg, key="step_size", value=step_size)

    def _params(self) -> dict[str, Any]:
        return {
            "min_value": self.min_value,
            "max_value": self.max_value,
            "step_size": self.step_size,
        }

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[State, Any]:
        y = xp.round(x / self.step_size) * self.step_size
        return state, _clip(xp, y, self.min_value, self.max_value).astype(x.dtype)
