"""Filters for metric streams: smoothing, outlier rejection, scaling, quantisation, composition.

Every filter has two fronts over one implementation:

* stateful, for Python loops: ``f = MovingAverage(window=5); y = f(x)`` (or ``f.update(x)``),
  ``f.reset()``;
* pure, for jitted code: ``state = f.init_state(example); y, state = f.apply(state, x)``. It uses
  only array operations shared by numpy and ``jax.numpy`` (fixed-size ring windows, ``where``
  instead of branches), so under ``jax.jit`` and ``jax.lax.scan`` it matches numpy.

``make_filter({"type": "moving_average", "window": 5})`` builds one from config; a list builds a
``Chain``. NaN propagates through smoothing, scaling and quantisation, and is rejected (replaced)
by the outlier filters. This module never imports jax: jax arrays are recognised only when the
caller has imported jax already.
"""

from __future__ import annotations

from goggles_io.filters._base import Filter, get_namespace
from goggles_io.filters._chain import FILTER_TYPES, Chain, make_filter
from goggles_io.filters._outliers import RangeFilter, ZScoreFilter
from goggles_io.filters._pointwise import Quantize, Scale
from goggles_io.filters._smoothing import ExponentialMovingAverage, MedianFilter, MovingAverage

__all__ = [
    "FILTER_TYPES",
    "Chain",
    "ExponentialMovingAverage",
    "Filter",
    "MedianFilter",
    "MovingAverage",
    "Quantize",
    "RangeFilter",
    "Scale",
    "ZScoreFilter",
    "get_namespace",
    "make_filter",
]
