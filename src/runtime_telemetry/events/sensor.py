"""Events a sensor module knows about itself: where its patch was, what it saw."""

from __future__ import annotations

import attrs
import numpy as np

from runtime_telemetry._schema import TelemetryEvent, TelemetrySnapshot, array_eq_key

__all__ = ["SensorPatchObserved", "SensorPatchSnapshot"]


@attrs.frozen(kw_only=True)
class SensorPatchObserved(TelemetryEvent):
    """One observation by a sensor patch, and whether the patch was on an object."""

    sensor_id: str
    """Which sensor module observed."""
    step: int
    """The sensor's own step counter."""
    on_object: bool
    """Whether the patch's centre was on an object (not background)."""


@attrs.frozen(kw_only=True)
class SensorPatchSnapshot(TelemetrySnapshot):
    """The raw patch a sensor saw, for live views; emit with ``snapshot()``."""

    sensor_id: str
    """Which sensor module observed."""
    step: int
    """The sensor's own step counter."""
    rgba: np.ndarray = attrs.field(eq=array_eq_key)
    """Colour patch, shape ``(h, w, 4)``, usually ``uint8``."""
    depth: np.ndarray = attrs.field(eq=array_eq_key)
    """Depth patch in metres, shape ``(h, w)``."""
