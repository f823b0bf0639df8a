"""Rotations as Monty's statistics read them: geodesic errors and Euler angles.

Quaternions are ``(w, x, y, z)`` everywhere in this project. Euler angles are Monty's
``as_euler("xyz", degrees=True)``: extrinsic rotations about x, then y, then z, in degrees.
Written out here (a few lines each) rather than depending on scipy for two formulas; the
tests check both against scipy's ``Rotation``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from experiment_telemetry.exceptions import ExperimentValueError

__all__ = ["euler_xyz", "rotation_error", "unit_quaternion"]


def unit_quaternion(q: Sequence[float], name: str = "a rotation") -> tuple[float, ...]:
    """``q`` scaled to unit length.

    Raises:
        ExperimentValueError: ``q`` is not 4 finite numbers, or has zero length.
    """
    norm = math.sqrt(sum(v * v for v in q)) if len(q) == 4 else 0.0
    if not norm or not math.isfinite(norm):  # NaN would score as 0 degrees
        msg = f"{name} must be a finite, non-zero quaternion (w, x, y, z) (got {tuple(q)!r})."
        raise ExperimentValueError(msg, q)
    return tuple(v / norm for v in q)


def rotation_error(target: Iterable[float], detected: Iterable[Iterable[float]]) -> float:
    """Smallest geodesic angle in degrees between ``target`` and any ``detected`` quaternion.

    ``q`` and ``-q`` are the same rotation, hence the absolute dot product. Rounded to 4 places,
    as Monty rounds it.

    Raises:
        ExperimentValueError: ``detected`` is empty, or a quaternion has zero length or a
            non-finite component.
    """
    t = unit_quaternion(tuple(target))
    best = math.inf
    for q in detected:
        u = unit_quaternion(tuple(q))
        dot = min(1.0, abs(sum(a * b for a, b in zip(t, u, strict=True))))
        best = min(best, math.degrees(2.0 * math.acos(dot)))
    if best == math.inf:
        msg = f"detected must hold at least one rotation (got {detected!r})."
        raise ExperimentValueError(msg, detected)
    return round(best, 4)


def euler_xyz(q: Sequence[float]) -> tuple[float, float, float]:
    """Extrinsic x-y-z Euler angles in degrees of the rotation ``q`` (w, x, y, z).

    At gimbal lock (y at +-90 degrees) the z angle is 0 and x carries the whole turn, the
    convention scipy uses.

    Raises:
        ExperimentValueError: ``q`` is not a finite, non-zero quaternion.
    """
    w, x, y, z = unit_quaternion(q)
    sin_y = max(-1.0, min(1.0, 2.0 * (w * y - x * z)))
    if abs(sin_y) > 1.0 - 1e-12:
        angle_y = math.copysign(math.pi / 2.0, sin_y)
        angle_x = 2.0 * math.atan2(x, w)
        angle_x = math.atan2(math.sin(angle_x), math.cos(angle_x))
        angle_z = 0.0
    else:
        angle_x = math.atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
        angle_y = math.asin(sin_y)
        angle_z = math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    return (math.degrees(angle_x), math.degrees(angle_y), math.degrees(angle_z))
