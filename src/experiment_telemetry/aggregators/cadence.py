"""``MetricsAggregator``: metric bundles reduced over two cadences, for training loops.

A coarse progress cadence (``avg_reward`` every 50,000 steps) tells that something is wrong;
a diagnostic cadence (the whole bundle every 1,000 steps) tells what. Both are windows over
the source's own step counter: a window closes at the first bundle whose step reaches the
next multiple of its cadence, and its mean and last value per metric go out as one
``MetricWindowStats``. Names are checked once each against the flat snake_case convention.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection

from experiment_telemetry._validate import check_int
from experiment_telemetry.aggregators.base import STATS_STREAM, Aggregator
from experiment_telemetry.aggregators.tally import MetricTally
from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.exceptions import ExperimentTypeError
from experiment_telemetry.stats import MetricWindowStats, StatEvent
from runtime_telemetry import receives
from runtime_telemetry.events.metrics import MetricsBundle

__all__ = ["CADENCES", "MetricsAggregator", "check_metric_name"]

CADENCES = ("progress", "diagnostic")
_logger = logging.getLogger(__name__)
_SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
_STAT_WORDS = ("mean", "avg", "std", "min", "max", "median", "sum")


def check_metric_name(name: str) -> str | None:
    """Return why ``name`` breaks the naming convention, or None when it follows it.

    The convention: flat snake_case without ``/``; a loss ends in ``_loss``; a statistic is
    ``<quantity>_<stat>`` (``reward_mean``, not ``mean_reward``); an evaluation starts with
    ``eval_``; a per-task series may append the task name.
    """
    if not _SNAKE.match(name):
        return "metric names are flat snake_case (lowercase words joined by '_', no '/')"
    words = name.split("_")
    if "loss" in words[:-1] and name != "loss":
        return f"a loss ends in '_loss' (e.g. {'_'.join(w for w in words if w != 'loss')}_loss)"
    if len(words) > 1 and words[0] in _STAT_WORDS:
        return f"a statistic is <quantity>_<stat> (e.g. {'_'.join(words[1:])}_{words[0]})"
    if "eval" in words[1:]:
        return f"an evaluation starts with 'eval_' (e.g. eval_{'_'.join(w for w in words if w != 'eval')})"
    return None


class _Window:
    __slots__ = ("count", "counts", "end", "last", "stamp", "step", "sums")

    def __init__(self, end: int) -> None:
        self.end = end
        self.count = 0
        self.counts: dict[str, int] = {}
        self.sums: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.step = 0
        self.stamp = 0.0


def _check_every(name: str, value: object) -> int:
    return check_int(name, value, 1, unit=" step")


class MetricsAggregator(Aggregator):
    """Reduce ``MetricsBundle`` events into windowed means and last values, per source.

    Args:
        progress_every: steps per progress window (the coarse cadence).
        diagnostic_every: steps per diagnostic window (the full bundle).
        progress_metrics: metrics reported at the progress cadence; None means all of them.
        stream: the stats stream's emitter name.

    Raises:
        ExperimentValueError: a cadence is not an int >= 1.
        ExperimentTypeError: ``progress_metrics`` is a bare str.
    """

    def __init__(
        self,
        *,
        progress_every: int = 50_000,
        diagnostic_every: int = 1_000,
        progress_metrics: Collection[str] | None = None,
        stream: str = STATS_STREAM,
    ) -> None:
        super().__init__(stream=stream)
        if isinstance(progress_metrics, str):
            msg = f"progress_metrics must be a collection of names, not a str (got {progress_metrics!r}); pass [{progress_metrics!r}]."
            raise ExperimentTypeError(msg, progress_metrics)
        self.every = {
            "progress": _check_every("progress_every", progress_every),
            "diagnostic": _check_every("diagnostic_every", diagnostic_every),
        }
        self.progress_metrics = None if progress_metrics is None else frozenset(progress_metrics)
        self._windows: dict[tuple[str, str], _Window] = {}
        self._checked: set[str] = set()
        self.tally = MetricTally()

    def total_logged(self) -> int:
        """Metric points received so far, every source and metric together."""
        return self.tally.total_logged()

    def counts(self) -> dict[tuple[str, str], int]:
        """(source, metric) -> points received."""
        return self.tally.counts()

    def last_seen(self) -> dict[tuple[str, str], tuple[int, float]]:
        """(source, metric) -> (step, timestamp) of its latest point."""
        return self.tally.last_seen()

    @receives(MetricsBundle)
    def _on_bundle(self, bundle: MetricsBundle) -> None:
        self.tally.observe(bundle.source, bundle.step, bundle.timestamp, bundle.values)
        for name in bundle.values:
            if name not in self._checked:
                self._checked.add(name)
                why = check_metric_name(name)
                if why is not None:
                    _logger.warning("metric %r breaks the naming convention: %s", name, why)
        for cadence in CADENCES:
            values = bundle.values
            if cadence == "progress" and self.progress_metrics is not None:
                values = {k: v for k, v in values.items() if k in self.progress_metrics}
                if not values:
                    continue
            self._add(cadence, bundle, values)

    def _add(self, cadence: str, bundle: MetricsBundle, values: dict[str, float]) -> None:
        key = (bundle.source, cadence)
        every = self.every[cadence]
        step = bundle.step
        window = self._windows.get(key)
        if window is not None and step >= window.end:  # the source skipped past the window
            self.publish(self._close(bundle.source, cadence, window))
            window = None
        if window is None:
            window = self._windows[key] = _Window((step // every + 1) * every)
        sums, counts, last = window.sums, window.counts, window.last
        for name, value in values.items():
            sums[name] = sums.get(name, 0.0) + value
            counts[name] = counts.get(name, 0) + 1
            last[name] = value
        window.count += 1
        window.step = step
        window.stamp = bundle.timestamp
        if step + 1 >= window.end:
            self.publish(self._close(bundle.source, cadence, window))

    def _close(self, source: str, cadence: str, w: _Window) -> MetricWindowStats:
        del self._windows[(source, cadence)]
        # A metric missing from some bundles is averaged over the bundles that had it.
        return MetricWindowStats(
            timestamp=w.stamp,
            source=source,
            cadence=cadence,
            step=w.step,
            count=w.count,
            mean={k: s / w.counts[k] for k, s in w.sums.items()},
            last=dict(w.last),
        )

    def score_episode(self, context: EpisodeContext) -> list[StatEvent]:
        """Windows follow steps, not episodes: nothing to score at an episode's end."""
        return []

    def score_run(self) -> list[StatEvent]:
        """Close every open window as it is (a run's tail shorter than one window)."""
        return [
            self._close(source, cadence, w)
            for (source, cadence), w in sorted(self._windows.items())
        ]

    def close(self) -> None:
        """Publish the open windows, then detach."""
        if self._windows:
            self.post_run()
        super().close()

    def __repr__(self) -> str:
        return f"<MetricsAggregator every={self.every!r}>"
