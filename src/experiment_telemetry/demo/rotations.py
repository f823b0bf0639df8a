"""Quaternion helpers of the demo's simulated world (``(w, x, y, z)``, standard library only)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

__all__ = ["about", "qmul", "random_rotation"]

Quaternion = tuple[float, float, float, float]


def qmul(a: Sequence[float], b: Sequence[float]) -> Quaternion:
    """The Hamilton product ``a * b``: rotate by ``b``, then by ``a``."""
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return (
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    )


def about(axis: Sequence[float], degrees: float) -> Quaternion:
    """The rotation by ``degrees`` about ``axis``."""
    half = math.radians(degrees) / 2.0
    norm = math.sqrt(sum(v * v for v in axis)) or 1.0
    s = math.sin(half) / norm
    return (math.cos(half), axis[0] * s, axis[1] * s, axis[2] * s)


def random_rotation(rng: random.Random) -> Quaternion:
    """A uniformly random rotation (Shoemake's method)."""
    u1, u2, u3 = rng.random(), rng.random(), rng.random()
    a, b = math.sqrt(1 - u1), math.sqrt(u1)
    return (
        a * math.sin(2 * math.pi * u2),
        a * math.cos(2 * math.pi * u2),
        b * math.sin(2 * math.pi * u3),
        b * math.cos(2 * math.pi * u3),
    )
