"""Stateless, element-wise filters: affine scaling and quantisation. NaN passes through both."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from goggles_io.filters._base import Filter, State, check_float

__all__ = ["Quantize", "Scale"]


class Scale(Filter):
    """``y = x * scale + offset``: unit changes and normalisation with fixed constants.

    Args:
        scale: Multiplier (finite).
        offset: Added after scaling (finite).
    """

    type_name = "scale"

    def __init__(self, scale: float = 1.0, offset: float = 0.0) -> None:
        super().__init__()
        self.scale = check_float("scale", scale)
        self.offset = check_float("offset", offset)

    def _params(self) -> dict[str, Any]:
        return {"scale": self.scale, "offset": self.offset}

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[Any, State]:
        return (x * self.scale + self.offset).astype(x.dtype), state


class Quantize(Filter):
    """Round to the nearest multiple of ``step`` (ties to even, as ``numpy.round`` does).

    Args:
        step: Quantisation step, > 0.
    """

    type_name = "quantize"

    def __init__(self, step: float = 1.0) -> None:
        super().__init__()
        self.step = check_float("step", step, positive=True)

    def _params(self) -> dict[str, Any]:
        return {"step": self.step}

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[Any, State]:
        return (xp.round(x / self.step) * self.step).astype(x.dtype), state
