"""WatchAggregator: each watch fires on its failure, stays silent on healthy noisy series, and
fires within the documented number of points of the onset."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from experiment_telemetry.aggregators import WatchAggregator
from experiment_telemetry.aggregators.watch import (
    Collapse,
    CounterStall,
    Divergence,
    Growth,
    NonFinite,
    Silence,
    Watch,
    default_watches,
)
from experiment_telemetry.exceptions import ExperimentTypeError, ExperimentValueError
from experiment_telemetry.stats import MetricAlert
from runtime_telemetry import get_telemetry
from runtime_telemetry.events.metrics import MetricsBundle

Point = tuple[str, int, dict[str, float]]  # (source, step, values)


def watch(points: Iterable[Point], watches: list[Watch] | None = None) -> list[MetricAlert]:
    """Feed ``points`` to a fresh aggregator; return its alerts."""
    agg = WatchAggregator(watches)
    alerts: list[MetricAlert] = []
    agg.add_listener(alerts.append)  # type: ignore[arg-type]
    for i, (source, step, values) in enumerate(points):
        agg.feed(MetricsBundle(source=source, step=step, values=values, timestamp=float(i)))
    return alerts


def series(name: str, values: Iterable[float], source: str = "learner") -> Iterator[Point]:
    for step, value in enumerate(values):
        yield source, step, {name: value}


def noisy(rng: random.Random, level: float, sd: float) -> float:
    return level + rng.gauss(0.0, sd)


seeds = st.integers(0, 2**32 - 1)


class TestNonFinite:
    def test_fires_on_the_first_nan_and_rearms_after_a_finite_value(self) -> None:
        """NaN at step 3 fires at step 3; the following NaN does not; a NaN after 1.0 fires again."""
        values = [1.0, 2.0, 1.5, math.nan, math.nan, 1.0, math.inf]

        alerts = watch(series("critic_loss", values))

        assert [("non_finite", 3, "error"), ("non_finite", 6, "error")] == [
            (a.check, a.step, a.severity) for a in alerts
        ]

    @given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), max_size=200))
    @settings(max_examples=50, deadline=None)
    def test_finite_series_never_fire(self, values: list[float]) -> None:
        """Any finite series gives no non_finite alert."""
        alerts = watch(series("x_loss", values), [NonFinite()])

        assert [] == alerts


class TestGrowth:
    def explosion(self, seed: int, onset: int, rate: float) -> list[float]:
        rng = random.Random(seed)
        values, q = [], 10.0
        for t in range(onset + 200):
            if t >= onset:
                q *= rate
            values.append(q * (1 + rng.gauss(0, 0.05)))
        return values

    def test_fires_on_value_explosion_within_96_points(self) -> None:
        """mean_q doubling every 16 points from step 100 fires by step 196, as a value_explosion."""
        alerts = watch(series("mean_q", self.explosion(0, 100, 2 ** (1 / 16))))

        assert ["value_explosion"] == [a.check for a in alerts]
        assert 100 <= alerts[0].step <= 196
        assert alerts[0].window[-1] > alerts[0].window[0] * 2

    @given(
        seed=seeds,
        level=st.floats(0.01, 1e4),
        rel_sd=st.floats(0.0, 0.5),
        shape=st.sampled_from(["flat", "saturating", "ramp", "ramp_from_zero", "sine"]),
        length=st.integers(50, 600),
    )
    @settings(max_examples=150, deadline=None)
    def test_healthy_series_never_fire(
        self, seed: int, level: float, rel_sd: float, shape: str, length: int
    ) -> None:
        """Flat, saturating, linear (also from zero) and oscillating q values give no alert."""
        rng = random.Random(seed)
        shapes: dict[str, Callable[[int], float]] = {
            "flat": lambda t: level,
            "saturating": lambda t: level * (1 - math.exp(-t / 50.0)),
            "ramp": lambda t: level + level * t / 20.0,
            "ramp_from_zero": lambda t: max(0.0, t - length / 3) * level / 10.0,
            "sine": lambda t: level * (2 + math.sin(t / 15.0)),
        }
        f = shapes[shape]
        values = [f(t) + rng.gauss(0, rel_sd * level) for t in range(length)]

        assert [] == watch(series("mean_q", values), [Growth()])

    def test_a_lasting_explosion_fires_once(self) -> None:
        """Growth that goes on for 400 points gives one alert, not one per block."""
        alerts = watch(series("q_mean", self.explosion(1, 50, 1.05)[:450]))

        assert 1 == len(alerts)

    def test_configured_metric_name(self) -> None:
        """A metric outside the defaults is watched when a Growth names it."""
        values = self.explosion(2, 50, 1.06)

        assert [] == watch(series("critic_value", values))
        assert ["value_explosion"] == [
            a.check for a in watch(series("critic_value", values), [Growth(metrics=("critic_*",))])
        ]


class TestCollapse:
    def curve(self, seed: int, onset: int, sd: float = 3.0) -> list[float]:
        rng = random.Random(seed)
        return [
            noisy(rng, 100 * (1 - math.exp(-t / 30)) * (0.2 if t >= onset else 1.0), sd)
            for t in range(onset + 60)
        ]

    def test_fires_on_collapse_after_progress_within_16_points(self) -> None:
        """eval_return climbing to 100 then dropping to 20 at point 150 fires by point 166."""
        alerts = watch(series("eval_return", self.curve(0, 150)))

        assert ["collapse"] == [a.check for a in alerts]
        assert 150 <= alerts[0].step <= 166
        assert alerts[0].observed is not None and alerts[0].observed > 0.5

    @given(
        seed=seeds,
        start=st.floats(-1e3, 1e3),
        gain=st.floats(0.0, 1e3),
        sd=st.floats(0.01, 50.0),
        shape=st.sampled_from(["flat", "saturating", "linear"]),
        length=st.integers(30, 800),
    )
    @settings(max_examples=150, deadline=None)
    @example(seed=230, start=0.0, gain=1.0, sd=1.0, shape="saturating", length=208)
    def test_healthy_series_never_fire(
        self, seed: int, start: float, gain: float, sd: float, shape: str, length: int
    ) -> None:
        """Flat, saturating and steadily rising noisy returns give no alert (seed 230: one lucky
        block 4 sigmas up, and the 8 latest blocks' spread half the true one, once did)."""
        rng = random.Random(seed)
        shapes: dict[str, Callable[[int], float]] = {
            "flat": lambda t: start,
            "saturating": lambda t: start + gain * (1 - math.exp(-t / 40.0)),
            "linear": lambda t: start + gain * t / length,
        }
        f = shapes[shape]
        values = [noisy(rng, f(t), sd) for t in range(length)]

        assert [] == watch(series("episode_return", values), [Collapse()])

    def test_losses_are_not_watched_for_collapse(self) -> None:
        """eval_loss matches eval_* but is excluded as a loss (lower is better)."""
        assert [] == watch(series("eval_loss", self.curve(3, 150)))

    def test_lower_is_better(self) -> None:
        """higher_is_better=False watches a metric whose rise is the collapse."""
        values = [-v for v in self.curve(4, 150)]

        alerts = watch(
            series("error_rate", values),
            [Collapse(metrics=("error_rate",), higher_is_better=False)],
        )

        assert ["collapse"] == [a.check for a in alerts]


class TestDivergence:
    def run(self, seed: int, returns: Callable[[int], float], n: int = 200) -> list[Point]:
        rng = random.Random(seed)
        points: list[Point] = []
        for t in range(n):
            for k in range(4):  # four learner updates per episode
                step = 4 * t + k
                loss = 2.0 * math.exp(-step / 300.0) + 0.05 + abs(rng.gauss(0, 0.01))
                points.append(("learner", step, {"critic_loss": loss}))
            points.append(("actor", 4 * t, {"episode_return": noisy(rng, returns(t), 2.0)}))
        return points

    def test_fires_when_the_loss_falls_and_the_return_stays_flat(self) -> None:
        """A falling critic_loss against a flat return fires within 72 return points."""
        alerts = watch(self.run(0, lambda t: 5.0))

        assert ["divergence"] == [a.check for a in alerts][:1]
        assert alerts[0].related == "learner/critic_loss"
        assert alerts[0].step <= 4 * 72

    @given(seed=seeds, gain=st.floats(30.0, 200.0), tau=st.floats(10.0, 80.0))
    @settings(max_examples=40, deadline=None)
    def test_rising_or_plateaued_return_never_fires(
        self, seed: int, gain: float, tau: float
    ) -> None:
        """A return that rises (and then sits at its ceiling) while the loss falls gives no alert."""
        points = self.run(seed, lambda t: gain * (1 - math.exp(-t / tau)))

        assert [] == watch(points, [Divergence()])

    def test_paired_within_each_trainers_prefix(self) -> None:
        """Two trainers in one run, each under its own prefix: trainer a's loss falls while its
        return stays flat, trainer b's return climbs. b's progress does not hide a's failure,
        and a's alert names a's loss (b's loss fell too, but it is not a's)."""
        rng = random.Random(3)
        points: list[Point] = []
        for t in range(200):
            for k in range(4):
                step = 4 * t + k
                for trainer in ("a", "b"):
                    loss = 2.0 * math.exp(-step / 300.0) + 0.05 + abs(rng.gauss(0, 0.01))
                    points.append(("learner", step, {f"{trainer}/critic_loss": loss}))
            points.append(("actor", 4 * t, {"a/episode_return": noisy(rng, 5.0, 2.0)}))
            points.append(
                (
                    "actor",
                    4 * t,
                    {"b/episode_return": noisy(rng, 100 * (1 - math.exp(-t / 30)), 2.0)},
                )
            )

        alerts = watch(points, [Divergence()])

        assert [("divergence", "a/episode_return", "learner/a/critic_loss")] == [
            (a.check, a.metric, a.related) for a in alerts
        ]

    def test_flat_loss_and_flat_return_never_fire(self) -> None:
        """A converged run (nothing moves) is not a divergence."""
        rng = random.Random(5)
        points: list[Point] = [
            p
            for t in range(300)
            for p in (
                ("learner", t, {"policy_loss": noisy(rng, 0.3, 0.01)}),
                ("learner", t, {"eval_return": noisy(rng, 50.0, 2.0)}),
            )
        ]

        assert [] == watch(points, [Divergence()])


class TestCounterStall:
    def points(self, seed: int, ratio: float, onset: int | None, n: int = 400) -> list[Point]:
        rng = random.Random(seed)
        step, counter, points = 0, 0.0, []
        for t in range(n):
            step += rng.randint(1, 3)
            counter += (rng.randint(1, 3) if onset is None or t < onset else 0) * ratio
            points.append(("driver", step, {"train_steps": math.floor(counter)}))
        return points

    def test_fires_when_train_steps_stop_within_64_points(self) -> None:
        """train_steps stopping at point 200 fires by point 264."""
        alerts = watch(self.points(0, 1.0, 200))

        assert ["counter_stall"] == [a.check for a in alerts]
        assert 200 <= alerts[0].timestamp <= 264  # the point index
        assert alerts[0].observed < alerts[0].threshold  # type: ignore[operator]
        assert alerts[0].related == "step"

    def test_expected_ratio_finds_a_wrong_ratio_from_the_start(self) -> None:
        """32x fewer updates than the configured ratio fires in the first windows."""
        rng = random.Random(1)
        points = [
            ("driver", t, {"train_steps": t // 32, "env_steps": float(t)}) for t in range(200)
        ]
        del rng

        alerts = watch(points, [CounterStall(reference="env_steps", expected_ratio=1.0)])

        assert ["counter_stall"] == [a.check for a in alerts]
        assert alerts[0].related == "env_steps"
        assert alerts[0].step < 64

    @given(seed=seeds, ratio=st.floats(0.1, 8.0), n=st.integers(10, 600))
    @settings(max_examples=100, deadline=None)
    def test_steady_counters_never_fire(self, seed: int, ratio: float, n: int) -> None:
        """A counter advancing at any steady ratio, with jitter, gives no alert."""
        assert [] == watch(self.points(seed, ratio, None, n), [CounterStall()])


class TestSilence:
    def test_fires_when_a_metric_stops_within_24_bundles(self) -> None:
        """critic_loss stopping at step 100 while q_mean goes on fires by step 124."""
        points: list[Point] = [
            ("learner", t, {"q_mean": 1.0, **({"critic_loss": 0.5} if t < 100 else {})})
            for t in range(200)
        ]

        alerts = watch(points)

        assert [("silence", "critic_loss")] == [(a.check, a.metric) for a in alerts]
        assert 100 < alerts[0].step <= 124

    def test_fires_once_and_again_after_the_metric_came_back(self) -> None:
        """Two gaps give two alerts."""
        points: list[Point] = [
            (
                "learner",
                t,
                {"q_mean": 1.0, **({"x_loss": 0.5} if t < 100 or 200 <= t < 300 else {})},
            )
            for t in range(400)
        ]

        assert 2 == len([a for a in watch(points) if a.check == "silence"])

    @given(seed=seeds, every=st.integers(1, 10), n=st.integers(10, 800))
    @settings(max_examples=100, deadline=None)
    def test_regular_cadence_never_fires(self, seed: int, every: int, n: int) -> None:
        """A metric logged every ``every`` bundles (+-1) gives no alert."""
        rng = random.Random(seed)
        next_at, points = 0, []
        for t in range(n):
            values = {"q_mean": 1.0}
            if t >= next_at:
                values["eval_return"] = 1.0
                next_at = t + max(1, every + rng.randint(-1, 1))
            points.append(("learner", t, values))

        assert [] == watch(points, [Silence()])


class TestWatchAggregator:
    def test_live_through_logging(self) -> None:
        """Bundles emitted through runtime_telemetry reach a subscribed aggregator."""
        agg = WatchAggregator().subscribe()
        alerts: list[MetricAlert] = []
        agg.add_listener(alerts.append)  # type: ignore[arg-type]
        emitter = get_telemetry("tests.runtime.learner")
        emitter.emit(MetricsBundle(source="sac", step=1, values={"critic_loss": math.nan}))
        agg.close()

        assert ["non_finite"] == [a.check for a in alerts]
        assert 1 == agg.total_logged()

    def test_first_matching_watch_of_a_check_wins(self) -> None:
        """A specific Growth before the defaults configures mean_q; the default one is not added."""
        agg = WatchAggregator([Growth(metrics=("mean_q",), min_ratio=100.0), *default_watches()])
        values = TestGrowth().explosion(0, 50, 1.06)
        alerts: list[MetricAlert] = []
        agg.add_listener(alerts.append)  # type: ignore[arg-type]
        for step, v in enumerate(values):
            agg.feed(MetricsBundle(source="s", step=step, values={"mean_q": v}, timestamp=0.0))

        assert [] == alerts

    def test_bad_watches_raise(self) -> None:
        """A non-Watch entry is a caller bug."""
        with pytest.raises(ExperimentTypeError, match="watches must be"):
            WatchAggregator(["mean_q"])  # type: ignore[list-item]

    @pytest.mark.parametrize(
        ("make", "match"),
        [
            (lambda: Growth(block=1), "block must be an int >= 2"),
            (lambda: Collapse(fraction=1.5), "fraction must be in"),
            (lambda: CounterStall(expected_ratio=-1.0), "expected_ratio must be a number > 0"),
            (lambda: NonFinite(severity="fatal"), "severity must be one of"),
            (lambda: Silence(check_every=0), "check_every must be an int >= 1"),
        ],
    )
    def test_bad_config_raises(self, make: Callable[[], Watch], match: str) -> None:
        """Out-of-range thresholds name the field and the value."""
        with pytest.raises(ExperimentValueError, match=match):
            make()

    def test_bare_string_pattern_raises(self) -> None:
        """metrics="mean_q" would match per character; it is refused."""
        with pytest.raises(ExperimentTypeError, match="not a bare str"):
            Growth(metrics="mean_q")  # type: ignore[arg-type]


class TestGuideNaming:
    """The defaults watch the metric names the logging guide prescribes."""

    def flat_return_and_falling_loss(self, name: str) -> list[Point]:
        rng = random.Random(7)
        points: list[Point] = []
        for t in range(200):
            for k in range(4):
                step = 4 * t + k
                loss = 2.0 * math.exp(-step / 300.0) + 0.05 + abs(rng.gauss(0, 0.01))
                points.append(("learner", step, {"critic_loss": loss}))
            points.append(("driver", 4 * t, {name: noisy(rng, 5.0, 2.0)}))
        return points

    @pytest.mark.parametrize("name", ["avg_reward", "eval_return", "episode_return"])
    def test_loss_descending_while_the_guides_return_stays_flat_is_reported(
        self, name: str
    ) -> None:
        """critic_loss falling against a flat return under any of the guide's names is a divergence."""
        alerts = watch(self.flat_return_and_falling_loss(name))

        assert "divergence" in [a.check for a in alerts]
        assert f"the return it is paired with, {name}, stayed flat" in alerts[0].message

    @pytest.mark.parametrize("name", ["reward_mean", "action_abs_mean", "reward_std"])
    def test_a_batch_statistic_is_not_a_return(self, name: str) -> None:
        """``<quantity>_<stat>`` (a replay batch's reward_mean) is not paired with losses: a
        healthy SAC's policy loss falls while it barely moves (issue 31's 57 false alarms)."""
        assert [] == watch(self.flat_return_and_falling_loss(name))

    def test_the_pairing_is_configurable(self) -> None:
        """Divergence(metrics=...) names the returns a falling loss is compared with."""
        points = self.flat_return_and_falling_loss("success")

        alerts = watch(points, [Divergence(metrics=("success",))])

        assert ["divergence"] == [a.check for a in alerts]
        assert ("success", "learner/critic_loss") == (alerts[0].metric, alerts[0].related)

    def test_a_return_that_progressed_clears_a_flat_one(self) -> None:
        """A noisy eval_return that looks flat is not a divergence while avg_reward climbs."""
        rng = random.Random(11)
        points: list[Point] = []
        for t in range(200):
            for k in range(4):
                step = 4 * t + k
                loss = 2.0 * math.exp(-step / 300.0) + 0.05 + abs(rng.gauss(0, 0.01))
                points.append(("learner", step, {"critic_loss": loss}))
            climb = 100.0 * (1 - math.exp(-t / 40.0))
            points.append(("driver", 4 * t, {"avg_reward": noisy(rng, climb, 2.0)}))
            points.append(("driver", 4 * t, {"eval_return": noisy(rng, 5.0, 2.0)}))

        assert [] == watch(points, [Divergence()])
        assert ["divergence"] == [a.check for a in watch(points, [Divergence(metrics=("eval_*",))])]

    @pytest.mark.parametrize("name", ["avg_reward", "episode_return", "eval_success_rate_pick"])
    def test_collapse_of_the_guides_progress_names_is_reported(self, name: str) -> None:
        """A return under the guide's names that loses its progress is a collapse."""
        rng = random.Random(3)
        values = [
            noisy(rng, 100 * (1 - math.exp(-t / 30)) * (0.2 if t >= 150 else 1.0), 3.0)
            for t in range(210)
        ]

        assert "collapse" in [a.check for a in watch(series(name, values, source="driver"))]

    def test_a_batch_statistic_is_not_watched_for_collapse(self) -> None:
        """reward_mean (a replay batch's statistic) falling is not a return collapse."""
        values = [
            noisy(random.Random(3), 100 * (1 - math.exp(-t / 30)) * (0.2 if t >= 150 else 1.0), 3.0)
            for t in range(210)
        ]

        assert [] == watch(series("reward_mean", values, source="learner"))

    def test_reward_loss_is_a_loss_not_a_return(self) -> None:
        """MuZero's reward_loss matches *reward* but is a loss: never a collapse or progress metric."""
        values = [2.0 * math.exp(-t / 50.0) for t in range(300)]

        assert [] == watch(series("reward_loss", values))


class TestOncePerFailure:
    """An ongoing failure gives one alert, whatever noise runs through it."""

    @given(
        seed=seeds,
        rate=st.floats(1.6, 3.0),
        rel_sd=st.floats(0.0, 0.6),
        blocks=st.integers(6, 30),
    )
    @settings(max_examples=150, deadline=None)
    def test_an_ongoing_explosion_with_noise_never_alerts_twice(
        self, seed: int, rate: float, rel_sd: float, blocks: int
    ) -> None:
        """|q| growing by `rate` per 16 points for up to 30 blocks, with noise, alerts at most once."""
        rng = random.Random(seed)
        per_point = rate ** (1 / 16)
        values = [
            10.0 * per_point**t * max(0.05, 1 + rng.gauss(0, rel_sd)) for t in range(16 * blocks)
        ]

        assert 1 >= len(watch(series("mean_q", values), [Growth()]))

    @given(seed=seeds, sd=st.floats(0.5, 6.0), length=st.integers(100, 500))
    @settings(max_examples=60, deadline=None)
    def test_an_ongoing_divergence_with_noise_never_alerts_twice(
        self, seed: int, sd: float, length: int
    ) -> None:
        """A loss that keeps falling against a return that stays flat (noisy) alerts at most once."""
        rng = random.Random(seed)
        points: list[Point] = []
        for t in range(length):
            for k in range(4):
                step = 4 * t + k
                loss = 2.0 * math.exp(-step / 600.0) + 0.05 + abs(rng.gauss(0, 0.01))
                points.append(("learner", step, {"critic_loss": loss}))
            points.append(("actor", 4 * t, {"episode_return": noisy(rng, 5.0, sd)}))

        assert 1 >= len(watch(points, [Divergence()]))

    @given(seed=seeds, jitter=st.integers(0, 3), n=st.integers(100, 600))
    @settings(max_examples=80, deadline=None)
    def test_an_ongoing_stall_with_noise_never_alerts_twice(
        self, seed: int, jitter: int, n: int
    ) -> None:
        """train_steps that stop at point 50 and then creep (jitter, never back to rate) alert once."""
        rng = random.Random(seed)
        step, counter, points = 0, 0.0, []
        for t in range(n):
            step += rng.randint(1, 3)
            counter += rng.randint(1, 3) if t < 50 else (rng.random() < 0.05) * jitter
            points.append(("driver", step, {"train_steps": math.floor(counter)}))

        assert 1 >= len(watch(points, [CounterStall()]))
