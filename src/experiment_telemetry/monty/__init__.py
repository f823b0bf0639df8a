"""Monty on split-telemetry: its telemetry, statistics and learning modules in this project's runs.

Three pieces, each joined to a Monty experiment by Monty's own configuration (docs/monty.md):

- ``TelemetryHandler``: Monty's telemetry stream (``tbp.monty.telemetry``) into the run's
  event log and onto the bus (``+telemetry=split_telemetry``);
- ``StatsHandler``: a ``MontyHandler`` turning each episode Monty reports into this project's
  stat events: console, CSV, W&B, watchers, dashboard (``logging=split_telemetry``);
- ``StepHook``: Monty's learning modules read after every step and said as runtime events,
  which ``RecognitionAggregator`` scores (``+step_hook=split_telemetry``).

This package is the only place that may import ``tbp.monty`` (an import-linter contract), and
it does so lazily: importing it imports nothing of Monty. A missing Monty, or a version the
adapter does not know, is one line (``MontyUnavailableError``) at the first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from experiment_telemetry.monty._version import (
    KNOWN_SERIES,
    MontyUnavailableError,
    monty_version,
    require_monty,
)

if TYPE_CHECKING:
    from experiment_telemetry.monty.events import MontyEpisodeReported, MontyTelemetryEvent
    from experiment_telemetry.monty.handler import StatsHandler
    from experiment_telemetry.monty.hook import StepHook
    from experiment_telemetry.monty.report import MontyReportAggregator
    from experiment_telemetry.monty.telemetry import TelemetryHandler

__all__ = [
    "KNOWN_SERIES",
    "MontyEpisodeReported",
    "MontyReportAggregator",
    "MontyTelemetryEvent",
    "MontyUnavailableError",
    "StatsHandler",
    "StepHook",
    "TelemetryHandler",
    "monty_version",
    "require_monty",
]

_LAZY = {
    "MontyEpisodeReported": "experiment_telemetry.monty.events",
    "MontyTelemetryEvent": "experiment_telemetry.monty.events",
    "MontyReportAggregator": "experiment_telemetry.monty.report",
    "StatsHandler": "experiment_telemetry.monty.handler",
    "StepHook": "experiment_telemetry.monty.hook",
    "TelemetryHandler": "experiment_telemetry.monty.telemetry",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
