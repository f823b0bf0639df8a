"""Watchers: the logging guide's "What to watch" as ``MetricAlert`` stats (ADR 0020).

One room, four modules, in the order an alert is made: ``configs`` holds the watches (which
metrics, by fnmatch pattern, and their thresholds: put specific ones before
``default_watches()``), ``blocks`` the robust block statistics and once-per-failure latch the
checks share, ``states`` what each check keeps per (source, metric) and when it fires, and
``aggregator`` the ``WatchAggregator`` that runs them on every ``MetricsBundle``.
"""

from __future__ import annotations

from experiment_telemetry.aggregators.watch.aggregator import WatchAggregator
from experiment_telemetry.aggregators.watch.configs import (
    LOSSES,
    RETURNS,
    Collapse,
    CounterStall,
    Divergence,
    Growth,
    NonFinite,
    Silence,
    Watch,
    default_watches,
)

__all__ = [
    "LOSSES",
    "RETURNS",
    "Collapse",
    "CounterStall",
    "Divergence",
    "Growth",
    "NonFinite",
    "Silence",
    "Watch",
    "WatchAggregator",
    "default_watches",
]
