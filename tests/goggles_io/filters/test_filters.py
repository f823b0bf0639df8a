"""goggles_io.filters: numpy behaviour against naive references, both fronts, configs, bad input."""

from __future__ import annotations

import copy
import math
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goggles_io.exceptions import ConfigurationError, ConfigurationTypeError
from goggles_io.filters import (
    AverageFilter,
    ConcatFilter,
    ExpAverageFilter,
    Filter,
    FilterConfig,
    MedianFilter,
    MinMaxFilter,
    QuantizationFilter,
    RangeRejectFilter,
    ScaleFilter,
    StdRejectFilter,
    create_concat_filter,
)

values = st.lists(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
    min_size=1,
    max_size=40,
)
small_ints = st.lists(st.integers(-20, 20).map(float), min_size=1, max_size=40)
with_nans = st.lists(st.one_of(st.integers(-20, 20).map(float), st.just(math.nan)), max_size=40)
windows = st.integers(1, 8)


def run(f: Filter, xs: list[float]) -> np.ndarray:
    """Thread the pure front over a scalar series, starting from a float64 state."""
    state = f.init_state(0.0)
    out = []
    for x in xs:
        state, y = f.apply(state, x)
        out.append(float(y))
    return np.array(out)


def ref_average(xs: list[float], window: int) -> np.ndarray:
    return np.array([np.mean(xs[max(0, i - window + 1) : i + 1]) for i in range(len(xs))])


def ref_median(xs: list[float], window: int) -> np.ndarray:
    return np.array([np.median(xs[max(0, i - window + 1) : i + 1]) for i in range(len(xs))])


def ref_ema(xs: list[float], alpha: float) -> np.ndarray:
    out: list[float] = []
    for x in xs:
        out.append(x if not out else alpha * x + (1 - alpha) * out[-1])
    return np.array(out)


def ref_reject(
    xs: list[float],
    accept: Callable[[int, float], bool],
    initial: float,
    fallback: Callable[[list[float]], np.ndarray] = np.array,
) -> np.ndarray:
    """Accepted inputs pass; the fallback sees the last accepted value at every step."""
    last, fed, accepted = initial, [], []
    for i, x in enumerate(xs):
        ok = accept(i, x)
        last = x if ok else last
        fed.append(last)
        accepted.append(ok)
    substitutes = fallback(fed)
    return np.array([x if ok else s for x, ok, s in zip(xs, accepted, substitutes, strict=True)])


def std_accept(xs: list[float], factor: float, window: int) -> Callable[[int, float], bool]:
    def accept(i: int, x: float) -> bool:
        finite = np.array([v for v in xs[max(0, i - window) : i] if math.isfinite(v)])
        if i < window or not len(finite):
            return math.isfinite(x)
        return math.isfinite(x) and abs(x - finite.mean()) <= factor * finite.std()

    return accept


class TestAverageFilter:
    @given(values, windows)
    def test_matches_naive_mean_of_last_window(self, xs: list[float], window: int) -> None:
        """The output is the mean of the last `window_size` inputs seen so far."""
        np.testing.assert_allclose(ref_average(xs, window), run(AverageFilter(window), xs))

    def test_nan_propagates_while_in_window(self) -> None:
        """A NaN input makes the output NaN for exactly `window_size` steps."""
        out = run(AverageFilter(window_size=2), [1.0, math.nan, 3.0, 5.0])

        assert [False, True, True, False] == list(np.isnan(out))

    def test_vector_inputs_are_smoothed_elementwise(self) -> None:
        """Array inputs are averaged element by element."""
        f = AverageFilter(window_size=2)
        f.step(np.array([0.0, 10.0]))

        np.testing.assert_allclose([1.0, 6.0], f.step(np.array([2.0, 2.0])))

    @pytest.mark.parametrize("window_size", [0, -1, 2.5, "5", True])
    def test_bad_window_size_is_named(self, window_size: Any) -> None:
        """A window_size that is not an int >= 1 raises, naming it and showing the value."""
        with pytest.raises(
            ConfigurationError, match=f"window_size must be an int >= 1 \\(got {window_size!r}"
        ):
            AverageFilter(window_size=window_size)


class TestExpAverageFilter:
    @given(values, st.floats(0.0, 1.0))
    def test_matches_naive_recursion(self, xs: list[float], alpha: float) -> None:
        """The output follows y = alpha x + (1 - alpha) y_prev, starting at the first input."""
        np.testing.assert_allclose(
            ref_ema(xs, alpha), run(ExpAverageFilter(alpha), xs), rtol=1e-9, atol=1e-6
        )

    def test_alpha_zero_holds_the_first_input(self) -> None:
        """With alpha=0 the output stays at the first input."""
        assert [4.0, 4.0, 4.0] == list(run(ExpAverageFilter(alpha=0.0), [4.0, 9.0, -1.0]))

    @pytest.mark.parametrize("alpha", [-0.01, 1.5, math.nan])
    def test_alpha_outside_unit_interval_is_rejected(self, alpha: float) -> None:
        """alpha outside [0, 1] raises a ConfigurationError naming alpha."""
        with pytest.raises(ConfigurationError, match="alpha"):
            ExpAverageFilter(alpha)


class TestMedianFilter:
    @given(values, windows)
    def test_matches_numpy_median_of_last_window(self, xs: list[float], window: int) -> None:
        """The output is np.median of the last `window_size` inputs seen so far."""
        np.testing.assert_allclose(ref_median(xs, window), run(MedianFilter(window), xs))

    def test_nan_propagates_like_numpy_median(self) -> None:
        """A NaN inside the window makes the median NaN, as np.median does."""
        out = run(MedianFilter(window_size=3), [1.0, math.nan, 2.0, 3.0, 4.0, 5.0])

        assert [False, True, True, True, False, False] == list(np.isnan(out))


class TestMinMaxFilter:
    @given(values, st.floats(-100, 0), st.floats(0.5, 100))
    def test_maps_range_onto_unit_interval(self, xs: list[float], low: float, width: float) -> None:
        """The output is (x - min_val) / (max_val - min_val), clipped to [0, 1]."""
        expected = np.clip((np.array(xs) - low) / width, 0.0, 1.0)

        np.testing.assert_allclose(expected, run(MinMaxFilter(low, low + width), xs), atol=1e-12)

    def test_nan_passes_through(self) -> None:
        """Clipping keeps NaN as NaN."""
        assert np.isnan(run(MinMaxFilter(0.0, 1.0), [math.nan])[0])

    @pytest.mark.parametrize(("low", "high"), [(1.0, 1.0), (2.0, -2.0)])
    def test_empty_range_is_rejected(self, low: float, high: float) -> None:
        """max_val must exceed min_val; the message shows both."""
        with pytest.raises(ConfigurationError, match="min_val must be < max_val"):
            MinMaxFilter(min_val=low, max_val=high)


class TestScaleFilter:
    @given(values, st.floats(-10, 10), st.floats(-10, 10))
    def test_is_affine(self, xs: list[float], scale: float, offset: float) -> None:
        """ScaleFilter computes x * scale + offset."""
        np.testing.assert_allclose(
            np.array(xs) * scale + offset, run(ScaleFilter(scale, offset=offset), xs)
        )

    @pytest.mark.parametrize("scale", ["2", None, [1.0], True])
    def test_non_number_is_a_type_error(self, scale: Any) -> None:
        """A scale that is not a real number raises a TypeError that is also a ConfigurationError."""
        with pytest.raises(ConfigurationTypeError, match="scale must be a real number") as info:
            ScaleFilter(scale=scale)

        assert isinstance(info.value, TypeError)
        assert isinstance(info.value, ConfigurationError)

    def test_infinite_scale_is_a_value_error(self) -> None:
        """A non-finite scale raises a ValueError naming scale."""
        with pytest.raises(ValueError, match="scale must be finite"):
            ScaleFilter(scale=math.inf)


class TestQuantizationFilter:
    @given(values, st.sampled_from([0.1, 0.5, 1.0, 4.0]))
    def test_rounds_to_step_then_clips(self, xs: list[float], step: float) -> None:
        """The output is the nearest multiple of step_size (ties to even), clipped to the range."""
        expected = np.clip(np.round(np.array(xs) / step) * step, -50.0, 50.0)

        np.testing.assert_allclose(expected, run(QuantizationFilter(-50.0, 50.0, step), xs))

    @given(values)
    def test_output_stays_in_range_with_off_grid_bounds(self, xs: list[float]) -> None:
        """Bounds that are not multiples of the step still bound the output."""
        out = run(QuantizationFilter(min_value=-0.35, max_value=0.35, step_size=0.2), xs)

        assert np.all((out >= -0.35) & (out <= 0.35))

    @pytest.mark.parametrize("step", [0.0, -0.1])
    def test_non_positive_step_is_rejected(self, step: float) -> None:
        """step_size <= 0 raises a ConfigurationError naming step_size."""
        with pytest.raises(ConfigurationError, match="step_size must be > 0"):
            QuantizationFilter(min_value=0.0, max_value=1.0, step_size=step)

    def test_inverted_range_is_rejected(self) -> None:
        """min_value > max_value raises, naming both."""
        with pytest.raises(ConfigurationError, match="min_value must be <= max_value"):
            QuantizationFilter(min_value=1.0, max_value=0.0, step_size=0.1)


class TestRangeRejectFilter:
    @given(with_nans, st.integers(-10, 0), st.integers(0, 10))
    def test_without_fallback_repeats_last_accepted(
        self, xs: list[float], low: int, high: int
    ) -> None:
        """Out-of-range and NaN inputs repeat the last accepted value (the midpoint before any)."""
        expected = ref_reject(xs, lambda _, x: low <= x <= high, (low + high) / 2)

        np.testing.assert_array_equal(expected, run(RangeRejectFilter(low, high), xs))

    @given(small_ints, windows)
    def test_fallback_is_fed_the_last_accepted_value(self, xs: list[float], window: int) -> None:
        """A smoothing fallback smooths the held values, stepped on every input."""
        f = RangeRejectFilter(-5.0, 5.0, fallback_filter=[AverageFilter(window_size=window)])
        expected = ref_reject(
            xs, lambda _, x: -5 <= x <= 5, 0.0, lambda fed: ref_average(fed, window)
        )

        np.testing.assert_allclose(expected, run(f, xs))

    def test_constant_replacement_through_scale_offset(self) -> None:
        """ScaleFilter(scale=0, offset=c) as fallback replaces rejected inputs by c."""
        f = RangeRejectFilter(0.0, 2.0, fallback_filter=[ScaleFilter(scale=0.0, offset=-1.0)])

        assert [1.0, -1.0, -1.0] == list(run(f, [1.0, 5.0, math.inf]))

    @pytest.mark.parametrize(
        ("low", "high", "initial"),
        [(2.0, math.inf, 2.0), (-math.inf, -3.0, -3.0), (-math.inf, math.inf, 0.0)],
    )
    def test_initial_value_of_open_ranges(self, low: float, high: float, initial: float) -> None:
        """Before anything is accepted, a half-open range holds its finite bound, an open one 0."""
        assert initial == run(RangeRejectFilter(low, high), [math.nan])[0]

    def test_inverted_range_is_rejected(self) -> None:
        """min_value > max_value raises a ConfigurationError naming both."""
        with pytest.raises(ConfigurationError, match="min_value must be <= max_value"):
            RangeRejectFilter(min_value=2.0, max_value=1.0)

    def test_single_fallback_filter_is_accepted(self) -> None:
        """fallback_filter may be one filter instead of a list."""
        f = RangeRejectFilter(0.0, 1.0, fallback_filter=ScaleFilter(scale=0.0, offset=7.0))

        assert [7.0] == list(run(f, [3.0]))


class TestStdRejectFilter:
    @given(with_nans, st.integers(1, 6), st.sampled_from([1.3, 2.1, 2.7]))
    def test_matches_naive_reference(self, xs: list[float], window: int, factor: float) -> None:
        """Acceptance follows |x - mean| <= std_factor * std over the window's finite values."""
        expected = ref_reject(xs, std_accept(xs, factor, window), 0.0)

        np.testing.assert_allclose(expected, run(StdRejectFilter(factor, window), xs))

    def test_level_shift_is_accepted_once_it_fills_the_window(self) -> None:
        """Rejected inputs still enter the window, so a lasting new level is eventually accepted."""
        out = run(StdRejectFilter(std_factor=2.0, window_size=3), [0.0, 1.0, 0.0, 9.0, 9.0, 9.0])

        assert [0.0, 1.0, 0.0, 0.0, 9.0, 9.0] == list(out)

    def test_nan_does_not_restart_the_warm_up(self) -> None:
        """After a NaN, a spike is judged against the finite values still in the window."""
        out = run(
            StdRejectFilter(std_factor=3.0, window_size=4), [1.0, 1.2, 0.8, 1.0, math.nan, 50.0]
        )

        assert 1.0 == out[-1]

    @pytest.mark.parametrize(("factor", "window"), [(0.0, 3), (-1.0, 3), (1.0, 0), (1.0, 1.5)])
    def test_bad_parameters_are_rejected(self, factor: float, window: Any) -> None:
        """std_factor <= 0 or a window_size that is not an int >= 1 raises a ValueError."""
        with pytest.raises(ValueError, match=r"std_factor|window_size"):
            StdRejectFilter(std_factor=factor, window_size=window)


class TestConcatFilter:
    @given(small_ints, windows)
    def test_equals_manual_composition(self, xs: list[float], window: int) -> None:
        """A chain gives the same output as applying its members one after the other."""
        manual = run(AverageFilter(window), list(run(RangeRejectFilter(-5, 5), xs)))
        chain = ConcatFilter(filters=[RangeRejectFilter(-5, 5), AverageFilter(window)])

        np.testing.assert_allclose(manual, run(chain, xs))

    @given(values)
    def test_no_filters_is_the_identity(self, xs: list[float]) -> None:
        """An empty chain returns its input."""
        np.testing.assert_array_equal(xs, run(ConcatFilter(filters=[]), xs))

    def test_one_member_in_two_chains_keeps_separate_states(self) -> None:
        """A member filter shared by two chains does not mix their histories."""
        shared = AverageFilter(window_size=2)
        a, b = ConcatFilter([shared]), ConcatFilter([shared])
        a.step(100.0)

        assert 1.0 == b.step(1.0)

    def test_a_bare_filter_is_rejected(self) -> None:
        """filters must be a list; a single filter raises, naming filters."""
        with pytest.raises(ConfigurationError, match="filters must be a list"):
            ConcatFilter(filters=AverageFilter(window_size=2))  # type: ignore[arg-type]


class TestConfigs:
    def test_mapping_and_filterconfig_build_equal_filters(self) -> None:
        """{"type", "parameters"} mappings, FilterConfigs and instances all build the same chain."""
        as_mapping = create_concat_filter(
            [{"type": "AverageFilter", "parameters": {"window_size": 4}}]
        )
        as_config = create_concat_filter(
            [FilterConfig(type="AverageFilter", parameters={"window_size": 4})]
        )

        assert as_mapping == as_config == ConcatFilter([AverageFilter(window_size=4)])

    def test_nested_configs_build_fallbacks_and_chains(self) -> None:
        """Configs nest: a fallback list and a ConcatFilter's filters may hold configs."""
        chain = create_concat_filter(
            [
                {
                    "type": "RangeRejectFilter",
                    "parameters": {
                        "min_value": 0,
                        "max_value": 1,
                        "fallback_filter": [
                            {"type": "MedianFilter", "parameters": {"window_size": 3}}
                        ],
                    },
                },
                {
                    "type": "ConcatFilter",
                    "parameters": {
                        "filters": [{"type": "ScaleFilter", "parameters": {"scale": 2}}]
                    },
                },
            ]
        )

        assert isinstance(chain.filters[0].fallback_filter.filters[0], MedianFilter)
        assert [1.0] == list(run(chain, [0.5]))

    def test_unknown_type_is_named(self) -> None:
        """An unknown type raises a ConfigurationError naming it and listing the known ones."""
        with pytest.raises(ConfigurationError, match=r"'KalmanFilter'.*AverageFilter"):
            create_concat_filter([FilterConfig(type="KalmanFilter")])

    def test_unknown_parameter_is_named(self) -> None:
        """A misspelt parameter raises a ConfigurationError naming it."""
        with pytest.raises(ConfigurationError, match="windw"):
            create_concat_filter([{"type": "AverageFilter", "parameters": {"windw": 5}}])

    def test_missing_parameter_is_named(self) -> None:
        """A required parameter left out raises a ConfigurationError naming it."""
        with pytest.raises(ConfigurationError, match="max_val"):
            create_concat_filter([{"type": "MinMaxFilter", "parameters": {"min_val": 0}}])

    def test_bad_value_raises_the_filters_own_error(self) -> None:
        """A bad value raises the filter's own check, a ValueError."""
        with pytest.raises(ValueError, match="min_val must be < max_val"):
            create_concat_filter(
                [{"type": "MinMaxFilter", "parameters": {"min_val": 1, "max_val": 0}}]
            )

    def test_unknown_mapping_key_is_named(self) -> None:
        """A config mapping with a key other than type and parameters raises, naming it."""
        with pytest.raises(ConfigurationError, match="'window_size'"):
            create_concat_filter([{"type": "AverageFilter", "window_size": 3}])

    @pytest.mark.parametrize("item", ["AverageFilter", 3, None])
    def test_non_config_item_is_rejected(self, item: Any) -> None:
        """Items that are neither filters nor configs raise a ConfigurationError."""
        with pytest.raises(ConfigurationError, match="a filter must be"):
            create_concat_filter([item])

    def test_filterconfig_checks_its_fields(self) -> None:
        """FilterConfig needs a str type and a mapping of parameters."""
        with pytest.raises(ConfigurationError, match="type must be"):
            FilterConfig(type=3)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match="parameters must be a mapping"):
            FilterConfig(type="AverageFilter", parameters=[3])  # type: ignore[arg-type]


def all_filters() -> list[Filter]:
    return [
        AverageFilter(3),
        ExpAverageFilter(0.3),
        MedianFilter(4),
        MinMaxFilter(-10.0, 10.0),
        ScaleFilter(2.0, offset=1.0),
        QuantizationFilter(-8.0, 8.0, 0.5),
        RangeRejectFilter(-5, 5, fallback_filter=[ExpAverageFilter(0.5)]),
        StdRejectFilter(2.0, 6),
        create_concat_filter(
            [
                FilterConfig(
                    type="RangeRejectFilter", parameters={"min_value": -8, "max_value": 8}
                ),
                MedianFilter(3),
            ]
        ),
    ]


class TestStatefulFront:
    @pytest.mark.parametrize("f", all_filters(), ids=repr)
    @given(xs=with_nans)
    @settings(max_examples=30)
    def test_step_equals_pure_front(self, f: Filter, xs: list[float]) -> None:
        """step(x) over a series gives the outputs of threading the pure state."""
        f.reset()
        stateful = [f.step(x) for x in xs]

        np.testing.assert_array_equal(run(f, xs), stateful)

    def test_call_is_step(self) -> None:
        """f(x) and f.step(x) share one state."""
        f = AverageFilter(window_size=2)
        f.step(1.0)

        assert 2.0 == f(3.0)

    def test_python_number_gives_float(self) -> None:
        """A Python number in gives a Python float out."""
        assert isinstance(AverageFilter(window_size=2).step(1), float)

    def test_reset_forgets_history(self) -> None:
        """After reset() the next input starts a fresh window."""
        f = AverageFilter(window_size=3)
        f.step(10.0)
        f.reset()

        assert 1.0 == f.step(1.0)

    def test_float32_arrays_stay_float32(self) -> None:
        """A float32 array input yields a float32 output."""
        assert np.float32 == AverageFilter(window_size=2).step(np.ones(3, np.float32)).dtype

    @pytest.mark.parametrize("f", all_filters(), ids=repr)
    def test_apply_leaves_state_and_filter_alone(self, f: Filter) -> None:
        """apply returns a new state; the old state and the filter's own state are unchanged."""
        f.reset()
        f.step(np.array([1.0, 2.0]))
        twin = copy.deepcopy(f)
        state = f.init_state(np.zeros(2))
        before = [np.copy(leaf) for leaf in _leaves(state)]

        f.apply(state, np.array([9.0, -9.0]))

        for old, now in zip(before, _leaves(state), strict=True):
            np.testing.assert_array_equal(old, now)
        np.testing.assert_array_equal(twin.step(np.array([3.0, 3.0])), f.step(np.array([3.0, 3.0])))


def _leaves(state: Any) -> list[Any]:
    if isinstance(state, dict):
        return [leaf for value in state.values() for leaf in _leaves(value)]
    if isinstance(state, tuple):
        return [leaf for value in state for leaf in _leaves(value)]
    return [state]


class TestName:
    @pytest.mark.parametrize("f", all_filters(), ids=repr)
    def test_name_is_class_and_parameters(self, f: Filter) -> None:
        """name starts with the class name and is also the repr."""
        assert f.name.startswith(type(f).__name__ + "(")
        assert repr(f) == f.name

    def test_chain_name_holds_member_names(self) -> None:
        """A chain's name shows each member's name."""
        members = [MinMaxFilter(0, 1), AverageFilter(window_size=3)]

        name = ConcatFilter(members).name

        assert all(m.name in name for m in members)


class TestImport:
    def test_importing_filters_does_not_import_jax(self) -> None:
        """import goggles_io.filters leaves jax unimported."""
        code = "import sys, goggles_io.filters; print('jax' in sys.modules)"
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )

        assert "False" == out.stdout.strip()


class TestRoboGogglesFilterNames:
    def test_prefix_goes_before_the_name(self) -> None:
        """prefix="avg/" labels a filter's name, as robo-goggles' debugging prefix does."""
        from goggles_io.filters import AverageFilter

        assert "avg/AverageFilter(window_size=3)" == AverageFilter(3, prefix="avg/").name

    def test_filter_config_round_trips_through_dict(self) -> None:
        """FilterConfig.from_config(c.to_dict()) == c; a config without type raises."""
        from goggles_io.exceptions import ConfigurationError
        from goggles_io.filters import FilterConfig

        config = FilterConfig(type="MedianFilter", parameters={"window_size": 5})

        assert config == FilterConfig.from_config(config.to_dict())
        with pytest.raises(ConfigurationError, match="type"):
            FilterConfig.from_config({"parameters": {}})

    def test_available_filters_limit_what_a_config_may_name(self) -> None:
        """create_concat_filter(..., available_filters=) refuses a type not in the table."""
        from goggles_io.exceptions import ConfigurationError
        from goggles_io.filters import AVAILABLE_FILTERS, ScaleFilter, create_concat_filter

        configs = [{"type": "ScaleFilter", "parameters": {"scale": 2.0}}]
        chain = create_concat_filter(configs, available_filters=AVAILABLE_FILTERS)

        assert 4.0 == chain.step(2.0)
        with pytest.raises(ConfigurationError, match="ScaleFilter"):
            create_concat_filter(configs, available_filters={"Other": ScaleFilter})

    def test_backend_is_numpy_without_jax_arrays(self) -> None:
        """get_backend gives numpy for lists, floats and numpy arrays; is_jax_array is False."""
        from goggles_io.filters import get_backend, is_jax_array

        assert [np, np, np] == [get_backend(x) for x in ([1], 2.0, np.zeros(2))]
        assert not is_jax_array(np.zeros(2))
