"""MetricsAggregator: two cadences of windowed means/last values, and the naming warning."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from experiment_telemetry.aggregators import MetricsAggregator
from experiment_telemetry.aggregators.cadence import check_metric_name
from experiment_telemetry.exceptions import ExperimentTypeError, ExperimentValueError
from experiment_telemetry.stats import MetricWindowStats
from runtime_telemetry import get_telemetry
from runtime_telemetry.events.metrics import MetricsBundle

learner = get_telemetry("tests.runtime.learner")


@pytest.fixture
def windows() -> Iterator[tuple[MetricsAggregator, list[MetricWindowStats]]]:
    agg = MetricsAggregator(progress_every=10, diagnostic_every=4).subscribe()
    got: list[MetricWindowStats] = []
    agg.add_listener(got.append)  # type: ignore[arg-type]
    yield agg, got
    agg.close()


def bundle(step: int, **values: float) -> None:
    learner.emit(MetricsBundle(source="sac", step=step, values=values))


class TestCadences:
    def test_diagnostic_window_mean_and_last(
        self, windows: tuple[MetricsAggregator, list[MetricWindowStats]]
    ) -> None:
        """Steps 0..3 close one diagnostic window with their mean and last value."""
        _, got = windows
        for s in range(4):
            bundle(s, policy_loss=float(s))

        w = got[0]

        assert ("diagnostic", 3, 4, {"policy_loss": 1.5}, {"policy_loss": 3.0}) == (
            w.cadence, w.step, w.count, w.mean, w.last,
        )  # fmt: skip

    def test_progress_window_is_coarser(
        self, windows: tuple[MetricsAggregator, list[MetricWindowStats]]
    ) -> None:
        """Ten steps give two diagnostic windows and one progress window."""
        _, got = windows
        for s in range(10):
            bundle(s, critic_loss=1.0)

        assert ["diagnostic", "diagnostic", "progress"] == [w.cadence for w in got]

    def test_progress_metrics_filters_the_coarse_cadence(self) -> None:
        """Only the named metrics reach the progress cadence; the diagnostic one keeps all."""
        agg = MetricsAggregator(
            progress_every=2, diagnostic_every=2, progress_metrics=["reward_mean"]
        ).subscribe()
        got: list[MetricWindowStats] = []
        agg.add_listener(got.append)  # type: ignore[arg-type]
        bundle(0, reward_mean=1.0, policy_loss=2.0)
        bundle(1, reward_mean=3.0, policy_loss=2.0)

        assert {"progress": ["reward_mean"], "diagnostic": ["policy_loss", "reward_mean"]} == {
            w.cadence: sorted(w.mean) for w in got
        }
        agg.close()

    def test_skipping_past_a_window_closes_it(
        self, windows: tuple[MetricsAggregator, list[MetricWindowStats]]
    ) -> None:
        """A step beyond the open window closes it without the new bundle."""
        _, got = windows
        bundle(1, alpha=1.0)
        bundle(9, alpha=5.0)

        first = next(w for w in got if w.cadence == "diagnostic")

        assert (1, 1, {"alpha": 1.0}) == (first.step, first.count, first.mean)

    def test_metric_missing_from_some_bundles_averages_where_present(
        self, windows: tuple[MetricsAggregator, list[MetricWindowStats]]
    ) -> None:
        """A metric logged in two of four bundles is the mean of those two."""
        _, got = windows
        bundle(0, alpha=1.0)
        bundle(1, alpha=3.0, mean_q=0.5)
        bundle(2, alpha=5.0)
        bundle(3, alpha=7.0, mean_q=1.5)

        assert {"alpha": 4.0, "mean_q": 1.0} == got[0].mean

    def test_post_run_closes_open_windows(
        self, windows: tuple[MetricsAggregator, list[MetricWindowStats]]
    ) -> None:
        """The run's tail shorter than a window is still reported at the end."""
        agg, got = windows
        bundle(0, alpha=2.0)

        agg.post_run()

        assert ["diagnostic", "progress"] == sorted(w.cadence for w in got)

    def test_windows_are_per_source(
        self, windows: tuple[MetricsAggregator, list[MetricWindowStats]]
    ) -> None:
        """Two sources never share a window."""
        _, got = windows
        for s in range(4):
            learner.emit(MetricsBundle(source="a", step=s, values={"x_loss": 1.0}))
        learner.emit(MetricsBundle(source="b", step=3, values={"x_loss": 9.0}))

        assert [("a", 4), ("b", 1)] == [
            (w.source, w.count) for w in got if w.cadence == "diagnostic"
        ]


class TestNaming:
    @pytest.mark.parametrize(
        "name",
        ["policy_loss", "reward_mean", "eval_return", "eval_success_rate_reach", "loss", "alpha"],
    )
    def test_conventional_names_pass(self, name: str) -> None:
        """Names following the convention get no complaint."""
        assert None is check_metric_name(name)

    @pytest.mark.parametrize(
        ("name", "why"),
        [
            ("train/loss", "snake_case"),
            ("PolicyLoss", "snake_case"),
            ("loss_policy", "_loss"),
            ("mean_reward", "<quantity>_<stat>"),
            ("return_eval", "eval_"),
        ],
    )
    def test_unconventional_names_say_why(self, name: str, why: str) -> None:
        """Each broken rule is named in the reason."""
        assert why in (check_metric_name(name) or "")

    def test_warning_once_per_metric(
        self,
        windows: tuple[MetricsAggregator, list[MetricWindowStats]],
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """A bad name is warned about once, naming the metric, however often it is logged."""
        bundle(0, mean_reward=1.0)
        bundle(1, mean_reward=2.0)

        assert 1 == caplog.text.count("'mean_reward' breaks the naming convention")


class TestBadInput:
    def test_cadence_must_be_positive(self) -> None:
        """A zero cadence is refused, naming the parameter."""
        with pytest.raises(ExperimentValueError, match="diagnostic_every must be an int >= 1"):
            MetricsAggregator(diagnostic_every=0)

    def test_progress_metrics_bare_string_refused(self) -> None:
        """A bare str would be read as characters, so it is refused."""
        with pytest.raises(ExperimentTypeError, match="progress_metrics"):
            MetricsAggregator(progress_metrics="reward_mean")


class TestTally:
    def test_points_per_metric_and_last_seen(self) -> None:
        """total_logged, counts and last_seen follow every bundle, per (source, metric)."""
        agg = MetricsAggregator(progress_every=100, diagnostic_every=100)
        for step in range(3):
            agg.feed(
                MetricsBundle(
                    source="sac", step=step, values={"q_mean": 1.0}, timestamp=float(step)
                )
            )
        agg.feed(MetricsBundle(source="sac", step=5, values={"critic_loss": 2.0}, timestamp=9.0))

        assert 4 == agg.total_logged()
        assert {("sac", "q_mean"): 3, ("sac", "critic_loss"): 1} == agg.counts()
        assert {("sac", "q_mean"): (2, 2.0), ("sac", "critic_loss"): (5, 9.0)} == agg.last_seen()
