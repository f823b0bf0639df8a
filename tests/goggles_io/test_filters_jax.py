"""goggles_io.filters: the pure front under jax.jit and jax.lax.scan matches numpy."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from goggles_io.filters import (  # noqa: E402
    ExponentialMovingAverage,
    Filter,
    MedianFilter,
    MovingAverage,
    Quantize,
    RangeFilter,
    Scale,
    ZScoreFilter,
    make_filter,
)

STEPS, WIDTH = 24, 3
FILTERS = {
    "moving_average": MovingAverage(4),
    "exponential": ExponentialMovingAverage(0.25),
    "median": MedianFilter(4),
    "range": RangeFilter(-10, 10),
    "zscore": ZScoreFilter(6, 2.5, min_count=3),
    "zscore_nan": ZScoreFilter(6, 2.5, min_count=3, replace_with="nan"),
    "scale": Scale(0.5, -1.0),
    "quantize": Quantize(3.0),
    "chain": make_filter(
        [{"type": "range", "low": -15, "high": 15}, {"type": "median", "window": 3}]
    ),
}
# Integer-valued float32 series keep sums exact, so numpy and XLA agree up to rounding of the
# final division; a few NaNs exercise the NaN policy.
series = arrays(
    np.float32,
    (STEPS, WIDTH),
    elements=st.one_of(st.integers(-20, 20).map(float), st.just(math.nan)),
)


def numpy_run(f: Filter, xs: np.ndarray) -> np.ndarray:
    state = f.init_state(np.zeros(xs.shape[1:], np.float32))
    out = []
    for x in xs:
        y, state = f.apply(state, x)
        out.append(y)
    return np.stack(out)


@functools.cache
def scan_fn(name: str) -> Callable[[Any], Any]:
    f = FILTERS[name]

    @jax.jit
    def go(xs: Any) -> Any:
        def step(state: Any, x: Any) -> tuple[Any, Any]:
            y, state = f.apply(state, x)
            return state, y

        return jax.lax.scan(step, f.init_state(xs[0]), xs)[1]

    return go


@functools.cache
def step_fn(name: str) -> Callable[[Any, Any], Any]:
    return jax.jit(FILTERS[name].apply)


class TestFiltersUnderJit:
    @pytest.mark.parametrize("name", sorted(FILTERS))
    @given(xs=series)
    @settings(max_examples=25, deadline=None)
    def test_scan_matches_numpy(self, name: str, xs: np.ndarray) -> None:
        """jit(lax.scan(apply)) over a series equals the numpy pure front, NaN included."""
        expected = numpy_run(FILTERS[name], xs)

        actual = np.asarray(scan_fn(name)(jnp.asarray(xs)))

        np.testing.assert_allclose(expected, actual, rtol=1e-5, atol=1e-5, equal_nan=True)

    @pytest.mark.parametrize("name", sorted(FILTERS))
    def test_jitted_step_loop_matches_numpy(self, name: str) -> None:
        """Calling jit(apply) step by step from Python equals the numpy pure front."""
        xs = np.linspace(-12, 12, STEPS * WIDTH, dtype=np.float32).reshape(STEPS, WIDTH)
        xs[5, 1] = np.nan
        f, step = FILTERS[name], step_fn(name)
        state, out = f.init_state(jnp.zeros(WIDTH)), []
        for x in xs:
            y, state = step(state, jnp.asarray(x))
            out.append(np.asarray(y))

        np.testing.assert_allclose(numpy_run(f, xs), np.stack(out), rtol=1e-5, equal_nan=True)

    def test_state_from_jax_example_is_jax(self) -> None:
        """init_state on a jax example gives jax arrays, usable as a scan carry."""
        state = MovingAverage(3).init_state(jnp.zeros(2))

        assert all(isinstance(v, jax.Array) for v in state.values())

    def test_stateful_front_accepts_jax_arrays(self) -> None:
        """The stateful front works on jax arrays and returns jax arrays."""
        f = MovingAverage(2)
        f(jnp.asarray([1.0, 2.0]))

        y = f(jnp.asarray([3.0, 4.0]))

        assert isinstance(y, jax.Array)
        np.testing.assert_allclose([2.0, 3.0], np.asarray(y))
