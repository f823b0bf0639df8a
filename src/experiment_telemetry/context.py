"""``EpisodeContext``: what only the experiment knows about an episode (target, mode, pose).

Runtime code never sees it: the harness creates one per episode and hands it to each
aggregator's ``post_episode``, which is where targets meet runtime events. It is a registered
schema so the harness can record it beside the runtime events and replay can re-read it.

``ObjectUnderSensor`` is the experiment's other piece of ground truth: what object a sensor
is looking at, step by step, for scenes with more than one object (Monty's stepwise target).
The experiment's environment emits it; runtime code never does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import attrs

from experiment_telemetry._validate import check_int
from experiment_telemetry.exceptions import ExperimentTypeError, ExperimentValueError
from experiment_telemetry.geometry import euler_xyz
from runtime_telemetry import TelemetryEvent, TelemetrySchema

__all__ = ["GROUND_TRUTH_STREAM", "MODES", "NO_LABEL", "EpisodeContext", "ObjectUnderSensor"]

MODES = ("train", "eval")
"""The two episode modes; stats are kept per mode."""
NO_LABEL = "no_label"
"""Target label of an episode whose object the experiment cannot name."""
GROUND_TRUTH_STREAM = "experiment_telemetry.ground_truth"
"""Emitter name for ``ObjectUnderSensor`` events (any ``telemetry.*`` logger works)."""

Quaternion = tuple[float, float, float, float]
Vector3 = tuple[float, float, float]
_UNIT_TOLERANCE = 1e-12
"""Dividing a unit quaternion by its norm can move the last bit, breaking round trips."""


def _check_mode(_inst: Any, _attr: Any, value: str) -> None:
    if value not in MODES:
        msg = f"mode must be one of {MODES!r} (got {value!r})."
        raise ExperimentValueError(msg, value)


def _check_count(_inst: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    check_int(attribute.name, value, 0)


def _check_label(_inst: Any, _attr: Any, value: str) -> None:
    if not isinstance(value, str) or not value:
        msg = f"target must be a non-empty str label, or {NO_LABEL!r} (got {value!r})."
        raise ExperimentValueError(msg, value)


def _quaternion(value: Iterable[Any]) -> Quaternion:
    """A unit quaternion ``(w, x, y, z)``, normalised here so rotation errors compare poses."""
    try:
        q = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        q = ()
    norm = math.sqrt(sum(v * v for v in q)) if len(q) == 4 else 0.0
    if not norm or not math.isfinite(norm):
        msg = (
            f"target_rotation must be 4 finite numbers (w, x, y, z), not all zero (got {value!r})."
        )
        raise ExperimentValueError(msg, value)
    if abs(norm - 1.0) <= _UNIT_TOLERANCE:  # already unit: keep it, so decoding is exact
        return (q[0], q[1], q[2], q[3])
    return (q[0] / norm, q[1] / norm, q[2] / norm, q[3] / norm)


def _finite(value: Iterable[Any], size: int, name: str) -> tuple[float, ...]:
    try:
        numbers = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        numbers = ()
    if len(numbers) != size or not all(math.isfinite(v) for v in numbers):
        msg = f"{name} must be {size} finite numbers (got {value!r})."
        raise ExperimentValueError(msg, value)
    return numbers


def _target_position(value: Iterable[Any]) -> Vector3:
    x, y, z = _finite(value, 3, "target_position")
    return (x, y, z)


def _optional_euler(value: Iterable[Any] | None) -> Vector3 | None:
    if value is None:
        return None
    x, y, z = _finite(value, 3, "target_euler")
    return (x, y, z)


def _scale(value: Any) -> float:
    number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
    if not number > 0 or not math.isfinite(number):
        msg = f"target_scale must be a finite number > 0 (got {value!r})."
        raise ExperimentValueError(msg, value)
    return number


def _check_sensor_label(_inst: Any, _attr: Any, value: str) -> None:
    if not isinstance(value, str) or not value:
        msg = f"label must be a non-empty str, or {NO_LABEL!r} (got {value!r})."
        raise ExperimentValueError(msg, value)


def _check_stepwise(_inst: Any, _attr: Any, value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        msg = f"stepwise_target must be a non-empty str label or None (got {value!r})."
        raise ExperimentValueError(msg, value)


def _labels(values: Iterable[Any]) -> tuple[str, ...]:
    if isinstance(values, str) or not all(isinstance(v, str) for v in values):
        msg = f"consistent_child_labels must be a sequence of str (got {values!r})."
        raise ExperimentTypeError(msg, values)
    return tuple(values)


@attrs.frozen(kw_only=True)
class EpisodeContext(TelemetrySchema):
    """One episode as the experiment sees it; ``timestamp`` is when the episode started.

    Version 2 (ADR 0026) adds the target's position, Euler angles and scale and the stepwise
    target, which Monty's statistics report.

    Raises:
        ExperimentValueError: bad ``mode``, negative ``epoch``/``episode``, empty ``target``
            or ``stepwise_target``, a ``target_rotation`` that is not a non-zero 4-vector, a
            position or Euler angles that are not 3 finite numbers, a scale that is not > 0.
        ExperimentTypeError: ``consistent_child_labels`` is a bare str or holds a non-str.
    """

    kind = "episode_context"
    version = 2

    mode: str = attrs.field(validator=_check_mode)
    """``"train"`` or ``"eval"``."""
    epoch: int = attrs.field(validator=_check_count)
    """Epoch index, from 0."""
    episode: int = attrs.field(validator=_check_count)
    """Run-wide episode index, from 0 (both modes share it, so it is a valid x-axis)."""
    target: str = attrs.field(validator=_check_label)
    """Primary target label, or ``"no_label"``."""
    target_rotation: Quaternion = attrs.field(default=(1.0, 0.0, 0.0, 0.0), converter=_quaternion)
    """The object's true rotation ``(w, x, y, z)``."""
    consistent_child_labels: tuple[str, ...] = attrs.field(default=(), converter=_labels)
    """Labels of parts the target consists of (Monty's ``consistent_child_objects``)."""
    seed: int | None = None
    """The episode's random seed, when the experiment set one."""
    target_position: Vector3 = attrs.field(default=(0.0, 0.0, 0.0), converter=_target_position)
    """Where the object was placed ``(x, y, z)``."""
    target_euler: Vector3 | None = attrs.field(default=None, converter=_optional_euler)
    """The object's rotation as the environment states it in Euler angles (degrees); None:
    derived from ``target_rotation`` (extrinsic x-y-z, see ``euler()``)."""
    target_scale: float = attrs.field(default=1.0, converter=_scale)
    """The object's (uniform) scale."""
    stepwise_target: str | None = attrs.field(default=None, validator=_check_stepwise)
    """The label of the object the sensors were on, when the scene holds one object (it may
    differ from ``target``, e.g. an object shown but not named: ``target`` is ``no_label``).
    None: ``ObjectUnderSensor`` events say it per sensor, else it is ``no_label``."""

    def euler(self) -> Vector3:
        """``target_euler``, or the Euler angles of ``target_rotation`` when it is None."""
        return (
            self.target_euler if self.target_euler is not None else euler_xyz(self.target_rotation)
        )


@attrs.frozen(kw_only=True)
class ObjectUnderSensor(TelemetryEvent):
    """Ground truth from the experiment's environment: the object under a sensor at a step.

    The aggregator keeps the last label per sensor and gives each learning module (through
    ``sensor_to_lm``) the label its sensor saw at the module's last input: Monty's
    ``stepwise_target_object``. Emitted by experiment code only, like ``EpisodeContext``.
    """

    sensor_id: str
    """The sensor (as in ``SensorPatchObserved``)."""
    step: int
    """The sensor's own step counter."""
    label: str = attrs.field(validator=_check_sensor_label)
    """The object's label, or ``"no_label"`` for background or an unnamed object."""
