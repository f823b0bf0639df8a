"""The runtime event vocabulary for sensorimotor learning systems, one module per family.

Events carry only what the runtime knows; experiment-side aggregators add targets and
episodes when they turn these into statistics.
"""

from __future__ import annotations

from runtime_telemetry.events.learning_module import (
    GraphMemoryUpdated,
    LearningModuleConclusionWithdrawn,
    LearningModuleEvent,
    LearningModuleEvidenceSnapshot,
    LearningModuleGoalStateAttempted,
    LearningModuleNoMatch,
    LearningModuleObjectRecognized,
    LearningModuleReset,
    LearningModuleStep,
    LearningModuleTimedOut,
    LearningModuleVotesReceived,
    MostLikelyHypothesis,
)
from runtime_telemetry.events.metrics import MetricsBundle
from runtime_telemetry.events.sensor import SensorPatchObserved, SensorPatchSnapshot
from runtime_telemetry.events.system import SensorimotorStep

__all__ = [
    "GraphMemoryUpdated",
    "LearningModuleConclusionWithdrawn",
    "LearningModuleEvent",
    "LearningModuleEvidenceSnapshot",
    "LearningModuleGoalStateAttempted",
    "LearningModuleNoMatch",
    "LearningModuleObjectRecognized",
    "LearningModuleReset",
    "LearningModuleStep",
    "LearningModuleTimedOut",
    "LearningModuleVotesReceived",
    "MetricsBundle",
    "MostLikelyHypothesis",
    "SensorPatchObserved",
    "SensorPatchSnapshot",
    "SensorimotorStep",
]
