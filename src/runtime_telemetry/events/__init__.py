"""The runtime event vocabulary for sensorimotor learning systems, one module per family.

Events carry only what the runtime knows; experiment-side aggregators add targets and
episodes when they turn these into statistics.
"""

from __future__ import annotations

from runtime_telemetry.events import learning_module
from runtime_telemetry.events.learning_module import *  # noqa: F403 (its __all__ is ours too)
from runtime_telemetry.events.metrics import MetricsBundle
from runtime_telemetry.events.sensor import SensorPatchObserved, SensorPatchSnapshot
from runtime_telemetry.events.system import SensorimotorStep

__all__ = [
    "MetricsBundle",
    "SensorPatchObserved",
    "SensorPatchSnapshot",
    "SensorimotorStep",
]
__all__ += learning_module.__all__
__all__.sort()
