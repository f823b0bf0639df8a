"""``MetricTally``: how many points each metric had, and when it was last seen.

robo-goggles' ``total_logged()`` answers "did anything arrive"; the silence watcher needs the
same per metric: a series that stops while its source keeps logging is found by comparing the
source's step with the metric's last step and its usual gap. Both ``MetricsAggregator`` and
``WatchAggregator`` keep one.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["MetricTally", "SeriesTally"]


class SeriesTally:
    """Points of one metric of one source: how many, first and last step, last timestamp."""

    __slots__ = ("count", "first_step", "last_step", "last_timestamp")

    def __init__(self, step: int, timestamp: float) -> None:
        self.count = 0
        self.first_step = step
        self.last_step = step
        self.last_timestamp = timestamp

    def mean_gap(self) -> float | None:
        """Average source steps between two points of this metric (None below two points)."""
        if self.count < 2:
            return None
        return (self.last_step - self.first_step) / (self.count - 1)

    def __repr__(self) -> str:
        return f"<SeriesTally count={self.count} steps={self.first_step}..{self.last_step}>"


class MetricTally:
    """Per-(source, metric) counters, updated once per bundle."""

    def __init__(self) -> None:
        self._sources: dict[str, dict[str, SeriesTally]] = {}
        self._total = 0

    def observe(
        self, source: str, step: int, timestamp: float, values: Mapping[str, float]
    ) -> None:
        """Count one bundle's values."""
        series = self._sources.get(source)
        if series is None:
            series = self._sources[source] = {}
        for name in values:
            entry = series.get(name)
            if entry is None:
                entry = series[name] = SeriesTally(step, timestamp)
            entry.count += 1
            entry.last_step = step
            entry.last_timestamp = timestamp
        self._total += len(values)

    def entry(self, source: str, name: str, step: int, timestamp: float) -> SeriesTally:
        """The tally of ``name`` in ``source``, created (with no points) when new."""
        series = self._sources.get(source)
        if series is None:
            series = self._sources[source] = {}
        entry = series.get(name)
        if entry is None:
            entry = series[name] = SeriesTally(step, timestamp)
        return entry

    def add_points(self, count: int) -> None:
        """Add to ``total_logged()`` the points counted through ``entry`` objects."""
        self._total += count

    def total_logged(self) -> int:
        """Metric points seen so far, all sources together."""
        return self._total

    def counts(self) -> dict[tuple[str, str], int]:
        """(source, metric) -> points seen."""
        return {(s, n): e.count for s, series in self._sources.items() for n, e in series.items()}

    def last_seen(self) -> dict[tuple[str, str], tuple[int, float]]:
        """(source, metric) -> (step, timestamp) of its latest point."""
        return {
            (s, n): (e.last_step, e.last_timestamp)
            for s, series in self._sources.items()
            for n, e in series.items()
        }

    def series(self, source: str) -> Mapping[str, SeriesTally]:
        """The tallies of ``source``'s metrics (empty when it never logged)."""
        return self._sources.get(source, {})
