"""Metric bundles: the numbers a learner computes each update (losses, means), by name.

The runtime emits what it measured, once per update; reducing bundles into windows and
checking names is the experiment side's job (``experiment_telemetry.aggregators.cadence``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs

from runtime_telemetry._schema import TelemetryEvent

__all__ = ["MetricsBundle"]


def _values(values: Mapping[str, Any]) -> dict[str, float]:
    """Store values as a plain ``{str: float}`` dict (numpy scalars included)."""
    if not isinstance(values, Mapping):
        msg = f"values must be a mapping of metric name to number (got {values!r})."
        raise TypeError(msg)
    result: dict[str, float] = {}
    for name, value in values.items():
        if not isinstance(name, str) or not name:
            msg = f"metric names must be non-empty str (got {name!r})."
            raise TypeError(msg)
        if isinstance(value, bool):
            msg = f"value of metric {name!r} must be a number, not a bool (got {value!r})."
            raise TypeError(msg)
        number = float(value)
        if math.isnan(number):
            number = math.nan  # one canonical NaN
        result[name] = number
    return result


@attrs.frozen(kw_only=True)
class MetricsBundle(TelemetryEvent):
    """One update's metrics from one source, e.g. a learner's losses after a gradient step."""

    source: str
    """Who measured: a learner, a learning module, a driver."""
    step: int
    """The source's own step counter (environment steps, updates, ...)."""
    values: dict[str, float] = attrs.field(converter=_values, hash=False)
    """Metric name -> value; names are flat snake_case (``policy_loss``, ``reward_mean``)."""
