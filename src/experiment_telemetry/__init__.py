"""The experiment side: aggregators, stat events, transforms, the harness and the CLI.

Names are imported on first use (``lazy_loader``), so ``telemetry --version`` and runtime-only
code stay cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import lazy_loader

if TYPE_CHECKING:  # what the lazy names are, for type checkers (imported on first use)
    from experiment_telemetry.aggregators import (
        Aggregator,
        MetricsAggregator,
        RecognitionAggregator,
        WatchAggregator,
    )
    from experiment_telemetry.context import EpisodeContext, ObjectUnderSensor
    from experiment_telemetry.harness import Experiment, RunResult
    from experiment_telemetry.recorder import EventRecorder
    from experiment_telemetry.replay import replay, replay_run
    from experiment_telemetry.stats import (
        VERDICTS,
        EpisodeStats,
        LearningModuleEpisodeStats,
        MetricAlert,
        MetricWindowStats,
        OverallStats,
        StatEvent,
    )
    from experiment_telemetry.transforms import (
        ConsoleTransform,
        CsvTransform,
        GogglesTransform,
        Transform,
        WandbAlertTransform,
        WandbTransform,
    )

_lazy = lazy_loader.attach(
    __name__,
    submod_attrs={
        "aggregators": [
            "Aggregator",
            "MetricsAggregator",
            "RecognitionAggregator",
            "WatchAggregator",
        ],
        "context": ["EpisodeContext", "ObjectUnderSensor"],
        "harness": ["Experiment", "RunResult"],
        "recorder": ["EventRecorder"],
        "replay": ["replay", "replay_run"],
        "stats": [
            "VERDICTS",
            "EpisodeStats",
            "LearningModuleEpisodeStats",
            "MetricAlert",
            "MetricWindowStats",
            "OverallStats",
            "StatEvent",
        ],
        "transforms": [
            "ConsoleTransform",
            "CsvTransform",
            "GogglesTransform",
            "Transform",
            "WandbAlertTransform",
            "WandbTransform",
        ],
    },
)[0]

__all__ = [
    "VERDICTS",
    "Aggregator",
    "ConsoleTransform",
    "CsvTransform",
    "EpisodeContext",
    "EpisodeStats",
    "EventRecorder",
    "Experiment",
    "GogglesTransform",
    "LearningModuleEpisodeStats",
    "MetricAlert",
    "MetricWindowStats",
    "MetricsAggregator",
    "ObjectUnderSensor",
    "OverallStats",
    "RecognitionAggregator",
    "RunResult",
    "StatEvent",
    "Transform",
    "WandbAlertTransform",
    "WandbTransform",
    "WatchAggregator",
    "__version__",
    "replay",
    "replay_run",
]


def __dir__() -> list[str]:
    # lazy_loader's own __dir__ lists only the lazy names; keep the module's globals too.
    return sorted(set(globals()) | set(__all__))


def __getattr__(name: str) -> Any:
    """``__version__`` read from the package metadata on first use (``importlib.metadata``
    costs ~10 ms: ``telemetry ui`` starts without it, ADR 0082); the lazy names likewise."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("split-telemetry")
        except PackageNotFoundError:  # running from a source tree that was never installed
            found = "0+unknown"
        globals()["__version__"] = found
        return found
    return _lazy(name)
