"""Aggregators: runtime subscribers that turn one episode's events into stat events."""

from __future__ import annotations

from experiment_telemetry.aggregators.base import STATS_STREAM, Aggregator
from experiment_telemetry.aggregators.cadence import MetricsAggregator
from experiment_telemetry.aggregators.tally import MetricTally
from experiment_telemetry.aggregators.verdicts import RecognitionAggregator
from experiment_telemetry.aggregators.watch import WatchAggregator

__all__ = [
    "STATS_STREAM",
    "Aggregator",
    "MetricTally",
    "MetricsAggregator",
    "RecognitionAggregator",
    "WatchAggregator",
]
