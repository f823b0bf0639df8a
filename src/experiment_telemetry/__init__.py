"""The experiment side: aggregators, stat events, transforms, the harness and the CLI.

Names are imported on first use, so ``telemetry --version`` and runtime-only code stay cheap.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("split-telemetry")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

_LAZY = {
    "Aggregator": "experiment_telemetry.aggregators",
    "ConsoleTransform": "experiment_telemetry.transforms",
    "CsvTransform": "experiment_telemetry.transforms",
    "EpisodeContext": "experiment_telemetry.context",
    "EpisodeStats": "experiment_telemetry.stats",
    "EventRecorder": "experiment_telemetry.recorder",
    "Experiment": "experiment_telemetry.harness",
    "GogglesTransform": "experiment_telemetry.transforms",
    "LearningModuleEpisodeStats": "experiment_telemetry.stats",
    "MetricAlert": "experiment_telemetry.stats",
    "MetricWindowStats": "experiment_telemetry.stats",
    "MetricsAggregator": "experiment_telemetry.aggregators",
    "OverallStats": "experiment_telemetry.stats",
    "RecognitionAggregator": "experiment_telemetry.aggregators",
    "RunResult": "experiment_telemetry.harness",
    "StatEvent": "experiment_telemetry.stats",
    "Transform": "experiment_telemetry.transforms",
    "VERDICTS": "experiment_telemetry.stats",
    "WandbAlertTransform": "experiment_telemetry.transforms",
    "WandbTransform": "experiment_telemetry.transforms",
    "WatchAggregator": "experiment_telemetry.aggregators",
    "replay": "experiment_telemetry.replay",
    "replay_run": "experiment_telemetry.replay",
}

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        msg = f"module 'experiment_telemetry' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
