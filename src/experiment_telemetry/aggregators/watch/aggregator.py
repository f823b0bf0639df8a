"""``WatchAggregator``: every watch on every ``MetricsBundle``, as ``MetricAlert`` stat events.

One subscriber runs all the watches (each extra subscriber would pay stdlib logging's delivery
again). The first time a (source, metric) pair is seen, the watches that apply to the name are
resolved once into per-series state; after that a point costs a finiteness test, a counter
update and one call per applicable check. Alerts go out while the bundle is handled, so the
stats stream holds them in the order replay recomputes them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from experiment_telemetry.aggregators.base import STATS_STREAM, Aggregator
from experiment_telemetry.aggregators.tally import MetricTally, SeriesTally
from experiment_telemetry.aggregators.watch.configs import (
    NonFinite,
    Silence,
    Watch,
    default_watches,
)
from experiment_telemetry.aggregators.watch.states import Finding, Pairing, make_states
from experiment_telemetry.exceptions import ExperimentTypeError
from experiment_telemetry.stats import MetricAlert
from runtime_telemetry import receives
from runtime_telemetry.events.metrics import MetricsBundle

__all__ = ["WatchAggregator"]


class _Series:
    """One watched metric of one source."""

    __slots__ = ("bad", "non_finite", "silence", "silent", "tally", "updates")

    def __init__(self, tally: SeriesTally) -> None:
        self.tally = tally
        self.updates: list[Callable[..., Finding | None]] = []  # bound ``update`` of each state
        self.non_finite: NonFinite | None = None
        self.silence: Silence | None = None
        self.bad = False  # reported non-finite, until a finite point
        self.silent = False  # reported silent, until a point arrives


class WatchAggregator(Aggregator):
    """Watch metric series for the logging guide's failures; publish ``MetricAlert`` events.

    Args:
        watches: watch configs; for each check the first one matching a metric's name applies
            (put specific ones before the defaults). None: ``default_watches()``.
        stream: the stats stream's emitter name.

    Raises:
        ExperimentTypeError: ``watches`` holds something other than ``Watch`` configs.
    """

    def __init__(
        self, watches: Sequence[Watch] | None = None, *, stream: str = STATS_STREAM
    ) -> None:
        super().__init__(stream=stream)
        chosen = default_watches() if watches is None else list(watches)
        if isinstance(watches, (str, bytes)) or not all(isinstance(w, Watch) for w in chosen):
            msg = f"watches must be a sequence of Watch configs (got {watches!r})."
            raise ExperimentTypeError(msg, watches)
        self.watches = tuple(chosen)
        self.tally = MetricTally()
        self._hubs = [Pairing() for _ in self.watches]
        self._series: dict[str, dict[str, _Series]] = {}
        self._bundles: dict[str, int] = {}
        self._seq = 0
        self._silence_every = math.gcd(*(w.check_every for w in chosen if isinstance(w, Silence)))
        self.alerts = 0

    def total_logged(self) -> int:
        """Metric points seen so far (``MetricTally.total_logged``)."""
        return self.tally.total_logged()

    def _new_series(self, source: str, name: str, step: int, timestamp: float) -> _Series:
        series = _Series(self.tally.entry(source, name, step, timestamp))
        claimed: set[str] = set()
        for watch, hub in zip(self.watches, self._hubs, strict=True):
            check = watch.check
            if check in claimed:
                continue
            if isinstance(watch, NonFinite):
                if watch.matches(name):
                    series.non_finite = watch
                    claimed.add(check)
            elif isinstance(watch, Silence):
                if watch.matches(name):
                    series.silence = watch
                    claimed.add(check)
            else:
                states = make_states(watch, source, name, hub)
                if states:
                    claimed.add(check)
                    series.updates.extend(s.update for s in states)
        self._series.setdefault(source, {})[name] = series
        return series

    @receives(MetricsBundle)
    def _on_bundle(self, bundle: MetricsBundle) -> None:
        source, step, values = bundle.source, bundle.step, bundle.values
        self._seq += 1
        seq = self._seq
        by_name = self._series.get(source)
        if by_name is None:
            by_name = self._series[source] = {}
        timestamp = bundle.timestamp
        for name, value in values.items():
            series = by_name.get(name)
            if series is None:
                series = self._new_series(source, name, step, timestamp)
            tally = series.tally
            tally.count += 1
            tally.last_step = step
            tally.last_timestamp = timestamp
            if series.silent:
                series.silent = False
            if value - value == 0.0:  # finite: inf - inf and NaN - NaN are NaN
                if series.bad:
                    series.bad = False
                for update in series.updates:
                    found = update(seq, step, value, values)
                    if found is not None:
                        state = update.__self__  # type: ignore[attr-defined]
                        self._alert(bundle, name, state.check, state.severity, found)
            elif series.non_finite is not None and not series.bad:
                series.bad = True
                self._alert(
                    bundle,
                    name,
                    "non_finite",
                    series.non_finite.severity,
                    (f"value is {value!r}", value, None, (value,), None),
                )
        self.tally.add_points(len(values))
        count = self._bundles.get(source, 0) + 1
        self._bundles[source] = count
        if self._silence_every and not count % self._silence_every:
            self._check_silence(bundle, by_name)

    def _check_silence(self, bundle: MetricsBundle, by_name: dict[str, _Series]) -> None:
        step = bundle.step
        for name, series in by_name.items():
            watch = series.silence
            if watch is None or series.silent or series.tally.count < watch.min_points:
                continue
            if self._bundles[bundle.source] % watch.check_every:
                continue
            tally = series.tally
            gap = step - tally.last_step
            mean_gap = tally.mean_gap() or 0.0
            limit = max(watch.factor * mean_gap, watch.min_gap)
            if gap > limit:
                series.silent = True
                message = (
                    f"no point since step {tally.last_step} ({gap} steps; it usually came "
                    f"every {mean_gap:.3g}) while {bundle.source} kept logging"
                )
                found: Finding = (message, float(gap), limit, (float(tally.last_step),), None)
                self._alert(bundle, name, "silence", watch.severity, found)

    def _alert(
        self, bundle: MetricsBundle, name: str, check: str, severity: str, found: Finding
    ) -> None:
        message, observed, threshold, window, related = found
        self.alerts += 1
        self.publish(
            MetricAlert(
                timestamp=bundle.timestamp,
                check=check,
                severity=severity,
                source=bundle.source,
                metric=name,
                step=bundle.step,
                observed=observed,
                threshold=threshold,
                window=window,
                related=related,
                message=f"{check} in {bundle.source}/{name} at step {bundle.step}: {message}",
            )
        )

    def __repr__(self) -> str:
        return f"<WatchAggregator checks={sorted({w.check for w in self.watches})!r} alerts={self.alerts}>"
