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
    AverageFilter,
    ExpAverageFilter,
    Filter,
    MedianFilter,
    MinMaxFilter,
    QuantizationFilter,
    RangeRejectFilter,
    ScaleFilter,
    StdRejectFilter,
    create_concat_filter,
)

STEPS, WIDTH = 24, 3
FILTERS = {
    "average": AverageFilter(4),
    "exp_average": ExpAverageFilter(0.25),
    "median": MedianFilter(4),
    "minmax": MinMaxFilter(-10.0, 10.0),
    "scale": ScaleFilter(0.5, offset=-1.0),
    "quantization": QuantizationFilter(-12.0, 12.0, 3.0),
    "range_reject": RangeRejectFilter(-10, 10, fallback_filter=[AverageFilter(3)]),
    "std_reject": StdRejectFilter(2.7, 6),
    "std_reject_ema": StdRejectFilter(2.1, 4, fallback_filter=[ExpAverageFilter(0.5)]),
    "concat": create_concat_filter(
        [
            {"type": "RangeRejectFilter", "parameters": {"min_value": -15, "max_value": 15}},
            {"type": "MedianFilter", "parameters": {"window_size": 3}},
        ]
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
        state, y = f.apply(state, x)
        out.append(y)
    return np.stack(out)


@functools.cache
def scan_fn(name: str) -> Callable[[Any], Any]:
    f = FILTERS[name]

    @jax.jit
    def go(xs: Any) -> Any:
        # apply returns (new_state, output), the (carry, y) pair a scan body returns.
        return jax.lax.scan(f.apply, f.init_state(xs[0]), xs)[1]

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
            state, y = step(state, jnp.asarray(x))
            out.append(np.asarray(y))

        np.testing.assert_allclose(numpy_run(f, xs), np.stack(out), rtol=1e-5, equal_nan=True)

    def test_state_from_jax_example_is_jax(self) -> None:
        """init_state on a jax example gives jax arrays, usable as a scan carry."""
        state = StdRejectFilter(2.0, 3, fallback_filter=[AverageFilter(2)]).init_state(jnp.zeros(2))

        assert all(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(state))

    def test_stateful_front_accepts_jax_arrays(self) -> None:
        """The stateful front works on jax arrays and returns jax arrays."""
        f = AverageFilter(window_size=2)
        f.step(jnp.asarray([1.0, 2.0]))

        y = f.step(jnp.asarray([3.0, 4.0]))

        assert isinstance(y, jax.Array)
        np.testing.assert_allclose([2.0, 3.0], np.asarray(y))


def test_backend_of_a_jax_array_is_jax_numpy() -> None:
    """get_backend gives jax.numpy for a jax array, and is_jax_array says so."""
    from goggles_io.filters import get_backend, is_jax_array

    x = jnp.zeros(3)

    assert (jnp, True) == (get_backend(x), is_jax_array(x))
