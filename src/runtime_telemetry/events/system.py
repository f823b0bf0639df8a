"""Events of the whole sensorimotor system: one per turn of its sense-learn-act loop."""

from __future__ import annotations

import attrs

from runtime_telemetry._schema import TelemetryEvent
from runtime_telemetry.events._fields import strings

__all__ = ["SensorimotorStep"]


@attrs.frozen(kw_only=True)
class SensorimotorStep(TelemetryEvent):
    """One step of the whole system: sensors observed, modules maybe processed, motors moved.

    Emit it once per step, including steps in which no learning module got input, so the
    experiment can count every step and the steps that fed the modules.
    """

    step: int
    """Steps the system has taken since its modules were last reset, this one included."""
    exploring: bool = False
    """True while the system explores (learning a known object) rather than matches."""
    modules_processed: tuple[str, ...] = attrs.field(default=(), converter=strings)
    """The learning modules (``lm_id``) that processed input in this step."""
