"""The standard aggregators of a run, configured from its recorded config.

The harness attaches them to a live run and ``replay`` builds the same ones from the run's
``config.yaml``, so both compute the same stats.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from experiment_telemetry.aggregators.base import Aggregator
from experiment_telemetry.aggregators.cadence import MetricsAggregator
from experiment_telemetry.aggregators.verdicts import RecognitionAggregator
from experiment_telemetry.aggregators.watch import (
    CounterStall,
    Watch,
    WatchAggregator,
    default_watches,
)

__all__ = ["make_aggregators", "make_watches"]


def make_watches(config: Mapping[str, Any]) -> list[Watch]:
    """The default watches; ``watch.train_steps_per_step`` sets the counter's expected ratio."""
    watches = default_watches()
    ratio = config.get("watch.train_steps_per_step")
    if ratio is not None:
        watches = [
            CounterStall(expected_ratio=float(ratio)) if isinstance(w, CounterStall) else w
            for w in watches
        ]
    return watches


def _pairs(value: Any) -> Any:
    """``["patch_0=lm_0", ...]`` as a mapping; anything else is passed on to be checked there."""
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) and "=" in v for v in value):
        return dict(v.split("=", 1) for v in value)
    return value


def make_aggregators(config: Mapping[str, Any]) -> list[Aggregator]:
    """The standard aggregators, configured from a run's recorded config (replay uses this).

    Recognition verdicts and the watchers run unless the config says
    ``recognition.enabled: false`` / ``watch.enabled: false``; ``recognition.sensor_to_lm``
    ties sensors to modules for ``ObjectUnderSensor`` ground truth, as a list of
    ``"sensor=lm"`` strings (a run's config holds scalars and lists) or a mapping.
    ``monty.report.enabled: true`` (a Monty run without the step hook) scores episodes with
    the statistics Monty reported (``experiment_telemetry.monty.report``, no Monty needed).
    """
    aggregators: list[Aggregator] = []
    if config.get("monty.report.enabled", False):
        from experiment_telemetry.monty.report import MontyReportAggregator

        aggregators.append(MontyReportAggregator())
    if config.get("recognition.enabled", True):
        aggregators.append(
            RecognitionAggregator(
                sensor_to_lm=_pairs(config.get("recognition.sensor_to_lm")),
                learn_labels_in=tuple(config.get("recognition.learn_labels_in", ("train",))),
            )
        )
    aggregators.append(
        MetricsAggregator(
            progress_every=int(config.get("metrics.progress_every", 50_000)),
            diagnostic_every=int(config.get("metrics.diagnostic_every", 1_000)),
        )
    )
    if config.get("watch.enabled", True):
        aggregators.append(WatchAggregator(make_watches(config)))
    return aggregators
