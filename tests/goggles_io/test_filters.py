"""goggles_io.filters: numpy behaviour against naive references, both fronts, config, bad input."""

from __future__ import annotations

import math
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goggles_io.exceptions import ConfigurationError
from goggles_io.filters import (
    FILTER_TYPES,
    Chain,
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

values = st.lists(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
    min_size=1,
    max_size=40,
)
small_ints = st.lists(st.integers(-20, 20).map(float), min_size=1, max_size=40)
windows = st.integers(1, 8)


def run(f: Filter, xs: list[float]) -> np.ndarray:
    """Run the pure front over a scalar series, starting from a float64 state."""
    state = f.init_state((), np.float64)
    out = []
    for x in xs:
        y, state = f.apply(state, x)
        out.append(float(y))
    return np.array(out)


def ref_moving_average(xs: list[float], window: int) -> np.ndarray:
    return np.array([np.mean(xs[max(0, i - window + 1) : i + 1]) for i in range(len(xs))])


def ref_median(xs: list[float], window: int) -> np.ndarray:
    return np.array([np.median(xs[max(0, i - window + 1) : i + 1]) for i in range(len(xs))])


def ref_ema(xs: list[float], alpha: float) -> np.ndarray:
    out: list[float] = []
    for x in xs:
        out.append(x if not out else alpha * x + (1 - alpha) * out[-1])
    return np.array(out)


def ref_zscore(xs: list[float], window: int, threshold: float, min_count: int) -> np.ndarray:
    out, last = [], math.nan
    for i, x in enumerate(xs):
        recent = np.array([v for v in xs[max(0, i - window) : i] if math.isfinite(v)])
        accept = math.isfinite(x) and (
            len(recent) < min_count or abs(x - recent.mean()) <= threshold * recent.std()
        )
        if accept:
            last = x
        out.append(x if accept else last)
    return np.array(out)


class TestMovingAverage:
    @given(values, windows)
    def test_matches_naive_mean_of_last_window(self, xs: list[float], window: int) -> None:
        """The output is the mean of the last `window` inputs seen so far."""
        np.testing.assert_allclose(ref_moving_average(xs, window), run(MovingAverage(window), xs))

    def test_nan_propagates_while_in_window(self) -> None:
        """A NaN input makes the output NaN for exactly `window` steps."""
        out = run(MovingAverage(2), [1.0, math.nan, 3.0, 5.0])

        assert [False, True, True, False] == list(np.isnan(out))

    def test_vector_inputs_are_smoothed_elementwise(self) -> None:
        """Array inputs are averaged element by element."""
        f = MovingAverage(2)
        f(np.array([0.0, 10.0]))

        np.testing.assert_allclose([1.0, 6.0], f(np.array([2.0, 2.0])))


class TestExponentialMovingAverage:
    @given(values, st.floats(0.01, 1.0))
    def test_matches_naive_recursion(self, xs: list[float], alpha: float) -> None:
        """The output follows y = alpha x + (1 - alpha) y_prev, starting at the first input."""
        np.testing.assert_allclose(
            ref_ema(xs, alpha), run(ExponentialMovingAverage(alpha), xs), rtol=1e-9, atol=1e-6
        )

    def test_alpha_above_one_is_rejected(self) -> None:
        """alpha > 1 raises a ConfigurationError naming alpha."""
        with pytest.raises(ConfigurationError, match="alpha"):
            ExponentialMovingAverage(1.5)


class TestMedianFilter:
    @given(values, windows)
    def test_matches_numpy_median_of_last_window(self, xs: list[float], window: int) -> None:
        """The output is np.median of the last `window` inputs seen so far."""
        np.testing.assert_allclose(ref_median(xs, window), run(MedianFilter(window), xs))

    def test_nan_propagates_like_numpy_median(self) -> None:
        """A NaN inside the window makes the median NaN, as np.median does."""
        out = run(MedianFilter(3), [1.0, math.nan, 2.0, 3.0, 4.0, 5.0])

        assert [False, True, True, True, False, False] == list(np.isnan(out))


class TestRangeFilter:
    @given(small_ints, st.integers(-10, 0), st.integers(0, 10))
    def test_out_of_range_inputs_repeat_last_accepted(
        self, xs: list[float], low: int, high: int
    ) -> None:
        """Inputs outside [low, high] are replaced by the last accepted value (NaN before any)."""
        expected, last = [], math.nan
        for x in xs:
            last = x if low <= x <= high else last
            expected.append(last)

        np.testing.assert_array_equal(expected, run(RangeFilter(low, high), xs))

    def test_nan_is_rejected(self) -> None:
        """NaN counts as out of range and is replaced."""
        assert [1.0, 1.0] == list(run(RangeFilter(0, 2), [1.0, math.nan]))

    def test_replace_with_number(self) -> None:
        """A numeric replace_with is emitted for rejected inputs."""
        assert [1.0, -1.0] == list(run(RangeFilter(0, 2, replace_with=-1.0), [1.0, 5.0]))

    def test_replace_with_nan(self) -> None:
        """replace_with='nan' emits NaN for rejected inputs."""
        assert np.isnan(run(RangeFilter(0, 2, replace_with="nan"), [1.0, 5.0])[1])

    def test_low_above_high_is_rejected(self) -> None:
        """low > high raises a ConfigurationError naming low."""
        with pytest.raises(ConfigurationError, match="low must be <= high"):
            RangeFilter(2, 1)

    def test_unknown_replace_mode_is_rejected(self) -> None:
        """An unknown replace_with string raises, naming the parameter."""
        with pytest.raises(ConfigurationError, match="replace_with"):
            RangeFilter(0, 1, replace_with="previous")


class TestZScoreFilter:
    @given(
        st.lists(st.one_of(st.integers(-20, 20).map(float), st.just(math.nan)), max_size=40),
        st.integers(2, 8),
        st.sampled_from([1.5, 2.5, 3.0]),
    )
    def test_matches_naive_reference(self, xs: list[float], window: int, thr: float) -> None:
        """Acceptance follows the z-score of the input against the last `window` finite inputs."""
        f = ZScoreFilter(window, thr, min_count=2)

        np.testing.assert_allclose(ref_zscore(xs, window, thr, 2), run(f, xs), equal_nan=True)

    def test_spike_is_replaced(self) -> None:
        """A spike far from a noisy plateau is replaced by the last accepted value."""
        out = run(ZScoreFilter(5, 3.0), [1.0, 1.1, 0.9, 1.0, 1.05, 100.0])

        assert 1.05 == out[-1]

    def test_min_count_above_window_is_rejected(self) -> None:
        """min_count > window raises, naming min_count."""
        with pytest.raises(ConfigurationError, match="min_count"):
            ZScoreFilter(window=3, min_count=4)


class TestPointwise:
    @given(values, st.floats(-10, 10), st.floats(-10, 10))
    def test_scale_is_affine(self, xs: list[float], scale: float, offset: float) -> None:
        """Scale computes x * scale + offset."""
        np.testing.assert_allclose(np.array(xs) * scale + offset, run(Scale(scale, offset), xs))

    @given(values, st.sampled_from([0.1, 0.5, 1.0, 4.0]))
    def test_quantize_rounds_to_step(self, xs: list[float], step: float) -> None:
        """Quantize rounds to the nearest multiple of step, ties to even."""
        np.testing.assert_allclose(np.round(np.array(xs) / step) * step, run(Quantize(step), xs))

    def test_quantize_rejects_zero_step(self) -> None:
        """step=0 raises a ConfigurationError naming step."""
        with pytest.raises(ConfigurationError, match="step must be > 0"):
            Quantize(0)


class TestChain:
    @given(small_ints, windows)
    def test_chain_equals_manual_composition(self, xs: list[float], window: int) -> None:
        """A chain gives the same output as applying its members one after the other."""
        manual = run(MovingAverage(window), list(run(RangeFilter(-5, 5), xs)))

        np.testing.assert_allclose(
            manual, run(Chain([RangeFilter(-5, 5), MovingAverage(window)]), xs)
        )

    def test_empty_chain_is_rejected(self) -> None:
        """A chain with no filters raises, naming filters."""
        with pytest.raises(ConfigurationError, match="filters"):
            Chain([])


def all_filters() -> list[Filter]:
    return [
        MovingAverage(3),
        ExponentialMovingAverage(0.3),
        MedianFilter(4),
        RangeFilter(-5, 5),
        ZScoreFilter(6, 2.0),
        Scale(2.0, 1.0),
        Quantize(0.5),
        make_filter([{"type": "range", "low": -8, "high": 8}, {"type": "median", "window": 3}]),
    ]


class TestStatefulFront:
    @pytest.mark.parametrize("f", all_filters(), ids=repr)
    @given(xs=small_ints)
    @settings(max_examples=30)
    def test_stateful_equals_pure(self, f: Filter, xs: list[float]) -> None:
        """f(x) over a series gives the same outputs as threading the pure state."""
        f.reset()
        stateful = [f(x) for x in xs]

        np.testing.assert_array_equal(run(f, xs), stateful)

    def test_python_number_gives_float(self) -> None:
        """A Python number in gives a Python float out."""
        assert isinstance(MovingAverage(2)(1), float)

    def test_reset_forgets_history(self) -> None:
        """After reset() the next input starts a fresh window."""
        f = MovingAverage(3)
        f(10.0)
        f.reset()

        assert 1.0 == f(1.0)

    def test_update_is_call(self) -> None:
        """update(x) and f(x) share one state."""
        f = MovingAverage(2)
        f.update(1.0)

        assert 2.0 == f(3.0)

    def test_float32_arrays_stay_float32(self) -> None:
        """A float32 array input yields a float32 output."""
        assert np.float32 == MovingAverage(2)(np.ones(3, np.float32)).dtype

    def test_pure_apply_does_not_mutate_state(self) -> None:
        """apply returns a new state and leaves the old one as it was."""
        f = MovingAverage(2)
        state = f.init_state(np.zeros(()))
        before = {k: np.copy(v) for k, v in state.items()}
        f.apply(state, 5.0)

        for key, value in before.items():
            np.testing.assert_array_equal(value, state[key])


class TestMakeFilter:
    @pytest.mark.parametrize("f", all_filters(), ids=repr)
    def test_to_config_round_trips(self, f: Filter) -> None:
        """make_filter(f.to_config()) builds an equal filter."""
        assert f == make_filter(f.to_config())

    def test_mapping_builds_filter(self) -> None:
        """A mapping with a type builds that filter with the other keys as arguments."""
        assert MovingAverage(window=5) == make_filter({"type": "moving_average", "window": 5})

    def test_list_builds_chain(self) -> None:
        """A list of configs builds a Chain in order."""
        chain = make_filter([{"type": "scale", "scale": 2.0}, {"type": "quantize"}])

        assert Chain([Scale(2.0), Quantize()]) == chain

    def test_aliases_are_known(self) -> None:
        """ema and stddev are aliases of exponential and zscore."""
        assert FILTER_TYPES["ema"] is FILTER_TYPES["exponential"]

    def test_unknown_type_is_named(self) -> None:
        """An unknown type raises a ConfigurationError naming it."""
        with pytest.raises(ConfigurationError, match="'kalman'"):
            make_filter({"type": "kalman"})

    def test_missing_type_is_named(self) -> None:
        """A config without a type raises, naming the type key."""
        with pytest.raises(ConfigurationError, match="unknown filter type None"):
            make_filter({"window": 3})

    def test_unknown_parameter_is_named(self) -> None:
        """A misspelt parameter raises a ConfigurationError naming it."""
        with pytest.raises(ConfigurationError, match="'windw'") as info:
            make_filter({"type": "moving_average", "windw": 5})

        assert "windw" == info.value.key

    def test_unknown_chain_parameter_is_named(self) -> None:
        """A chain config with a key other than filters raises instead of ignoring it."""
        with pytest.raises(ConfigurationError, match="'window' for filter type 'chain'"):
            make_filter({"type": "chain", "filters": [{"type": "scale"}], "window": 3})

    @pytest.mark.parametrize("window", [0, -1, 2.5, "5", True])
    def test_bad_window_is_named(self, window: Any) -> None:
        """A window that is not an int >= 1 raises, naming window and showing the value."""
        with pytest.raises(
            ConfigurationError, match=f"window must be an int >= 1 \\(got {window!r}"
        ):
            make_filter({"type": "moving_average", "window": window})

    def test_non_mapping_config_is_rejected(self) -> None:
        """A config that is neither a mapping nor a list raises."""
        with pytest.raises(ConfigurationError, match="mapping"):
            make_filter("moving_average")

    def test_error_is_a_value_error(self) -> None:
        """Config errors can be caught as ValueError."""
        with pytest.raises(ValueError):
            make_filter({"type": "scale", "scale": math.inf})


class TestImport:
    def test_importing_filters_does_not_import_jax(self) -> None:
        """import goggles_io.filters leaves jax unimported."""
        code = "import sys, goggles_io.filters; print('jax' in sys.modules)"
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )

        assert "False" == out.stdout.strip()
