"""Filters for metric streams: smoothing, outlier rejection, scaling, quantisation, composition.

The names and signatures are robo-goggles' (``goggles.filters``). Every filter has two fronts over
one implementation:

* stateful, for Python loops: ``f = AverageFilter(window_size=5); y = f.step(x)`` (or ``f(x)``),
  ``f.reset()``;
* pure, for jitted code: ``state = f.init_state(x0); state, y = f.apply(state, x)``. It uses only
  array operations shared by numpy and ``jax.numpy`` (fixed-size ring windows, ``where`` instead
  of branches), so under ``jax.jit`` and as a ``jax.lax.scan`` body it matches numpy.

``create_concat_filter([FilterConfig(type="AverageFilter", parameters={"window_size": 5}), ...])``
builds a chain from config. NaN propagates through smoothing, scaling and quantisation, and is
rejected (replaced) by the outlier filters. This module never imports jax: jax arrays are
recognised only when the caller has imported jax already.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any

import numpy as np

from goggles_io.filters._base import Filter, State
from goggles_io.filters._concat import ConcatFilter, FilterConfig, create_concat_filter
from goggles_io.filters._outliers import RangeRejectFilter, StdRejectFilter
from goggles_io.filters._pointwise import MinMaxFilter, QuantizationFilter, ScaleFilter
from goggles_io.filters._smoothing import AverageFilter, ExpAverageFilter, MedianFilter

__all__ = [
    "AVAILABLE_FILTERS",
    "HAS_JAX",
    "Array",
    "AverageFilter",
    "ConcatFilter",
    "ExpAverageFilter",
    "Filter",
    "FilterConfig",
    "JaxArray",
    "MedianFilter",
    "MinMaxFilter",
    "QuantizationFilter",
    "RangeRejectFilter",
    "ScaleFilter",
    "State",
    "StdRejectFilter",
    "create_concat_filter",
    "get_backend",
    "is_jax_array",
]

AVAILABLE_FILTERS: dict[str, type[Filter]] = {
    cls.__name__: cls
    for cls in (
        MinMaxFilter,
        AverageFilter,
        ExpAverageFilter,
        MedianFilter,
        QuantizationFilter,
        ScaleFilter,
        RangeRejectFilter,
        StdRejectFilter,
    )
}
"""robo-goggles' table of the filters a config ``type`` may name."""

HAS_JAX: bool = importlib.util.find_spec("jax") is not None
"""Whether jax is installed (found without importing it)."""


def is_jax_array(x: Any) -> bool:
    """Whether ``x`` is a jax array; never imports jax (none can exist before the caller did)."""
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(x, jax.Array)


def get_backend(x: Any) -> ModuleType:
    """``jax.numpy`` for a jax array, ``numpy`` for anything else (it never raises)."""
    return sys.modules["jax.numpy"] if is_jax_array(x) else np


def __getattr__(name: str) -> Any:
    """``JaxArray`` and ``Array`` name jax's array type, so they import jax when first read."""
    if name in ("JaxArray", "Array"):
        if not HAS_JAX:
            return np.ndarray if name == "Array" else None
        import jax

        return jax.Array if name == "JaxArray" else np.ndarray | jax.Array
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
