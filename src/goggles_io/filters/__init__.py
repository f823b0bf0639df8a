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

from goggles_io.filters._base import Filter
from goggles_io.filters._concat import ConcatFilter, FilterConfig, create_concat_filter
from goggles_io.filters._outliers import RangeRejectFilter, StdRejectFilter
from goggles_io.filters._pointwise import MinMaxFilter, QuantizationFilter, ScaleFilter
from goggles_io.filters._smoothing import AverageFilter, ExpAverageFilter, MedianFilter

__all__ = [
    "AverageFilter",
    "ConcatFilter",
    "ExpAverageFilter",
    "Filter",
    "FilterConfig",
    "MedianFilter",
    "MinMaxFilter",
    "QuantizationFilter",
    "RangeRejectFilter",
    "ScaleFilter",
    "StdRejectFilter",
    "create_concat_filter",
]
