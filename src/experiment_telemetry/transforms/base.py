"""``Transform``: a subscriber to the stats stream that maps stat events to output calls.

A transform turns one stat event into calls on a sink and keeps no running totals: anything
that needs arithmetic across episodes belongs in an aggregator, which emits it as a stat.
"""

from __future__ import annotations

from typing import TypeVar

from experiment_telemetry.aggregators.base import STATS_STREAM
from runtime_telemetry import Subscriber

__all__ = ["Transform"]

_T = TypeVar("_T", bound="Transform")


class Transform(Subscriber):
    """Base of the transforms; ``attach()`` subscribes it to the stats stream."""

    def attach(self: _T, stream: str = STATS_STREAM) -> _T:
        """Subscribe to ``telemetry.<stream>`` and return self."""
        return self.subscribe(f"telemetry.{stream}")
