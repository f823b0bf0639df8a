"""``EpisodeContext``: what only the experiment knows about an episode (target, mode, pose).

Runtime code never sees it: the harness creates one per episode and hands it to each
aggregator's ``post_episode``, which is where targets meet runtime events. It is a registered
schema so the harness can record it beside the runtime events and replay can re-read it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import attrs

from experiment_telemetry._validate import check_int
from experiment_telemetry.exceptions import ExperimentTypeError, ExperimentValueError
from runtime_telemetry import TelemetrySchema

__all__ = ["MODES", "NO_LABEL", "EpisodeContext"]

MODES = ("train", "eval")
"""The two episode modes; stats are kept per mode."""
NO_LABEL = "no_label"
"""Target label of an episode whose object the experiment cannot name."""

Quaternion = tuple[float, float, float, float]
_UNIT_TOLERANCE = 1e-12
"""Dividing a unit quaternion by its norm can move the last bit, breaking round trips."""


def _check_mode(_inst: Any, _attr: Any, value: str) -> None:
    if value not in MODES:
        msg = f"mode must be one of {MODES!r} (got {value!r})."
        raise ExperimentValueError(msg, value)


def _check_count(_inst: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    check_int(attribute.name, value, 0)


def _check_label(_inst: Any, _attr: Any, value: object) -> None:
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


def _labels(values: Iterable[Any]) -> tuple[str, ...]:
    if isinstance(values, str) or not all(isinstance(v, str) for v in values):
        msg = f"consistent_child_labels must be a sequence of str (got {values!r})."
        raise ExperimentTypeError(msg, values)
    return tuple(values)


@attrs.frozen(kw_only=True)
class EpisodeContext(TelemetrySchema):
    """One episode as the experiment sees it; ``timestamp`` is when the episode started.

    Raises:
        ExperimentValueError: bad ``mode``, negative ``epoch``/``episode``, empty ``target``
            or a ``target_rotation`` that is not a non-zero 4-vector.
        ExperimentTypeError: ``consistent_child_labels`` is a bare str or holds a non-str.
    """

    kind = "episode_context"

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
    """Labels of parts the target consists of (recognising one is not a plain confusion)."""
    seed: int | None = None
    """The episode's random seed, when the experiment set one."""
