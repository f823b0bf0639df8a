"""The experiment side: aggregators, stat events, transforms, the harness and the CLI.

Names are imported on first use (``lazy_loader``), so ``telemetry --version`` and runtime-only
code stay cheap.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

import lazy_loader

try:
    __version__ = version("split-telemetry")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

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

__getattr__ = lazy_loader.attach(
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
