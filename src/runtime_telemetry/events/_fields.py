"""Converters shared by the event vocabulary: accept lists or arrays, store plain tuples."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "Quaternion",
    "Vector3",
    "floats",
    "optional_vector3",
    "quaternion",
    "quaternions",
    "strings",
    "vector3",
    "vectors",
]

Vector3 = tuple[float, float, float]
"""A location or offset ``(x, y, z)``, in the runtime's world frame."""
Quaternion = tuple[float, float, float, float]
"""A rotation as a unit quaternion ``(w, x, y, z)``."""


def strings(values: Iterable[Any]) -> tuple[str, ...]:
    """Store ids as a tuple of str, so events stay hashable and JSON-ready."""
    if isinstance(values, (str, bytes)):
        msg = f"expected a sequence of ids, got a single string {values!r}."
        raise TypeError(msg)
    return tuple(str(v) for v in values)


def floats(size: int) -> Callable[[Iterable[Any]], tuple[float, ...]]:
    """A converter to a tuple of exactly ``size`` plain floats (numpy scalars included)."""

    def convert(values: Iterable[Any]) -> tuple[float, ...]:
        result = tuple(float(v) for v in values)
        if len(result) != size:
            msg = f"expected {size} numbers, got {len(result)}: {result!r}."
            raise ValueError(msg)
        return result

    return convert


def vector3(values: Iterable[Any]) -> Vector3:
    """Store a location as a 3-tuple of plain floats (a named function, so type checkers see it)."""
    x, y, z = floats(3)(values)
    return (x, y, z)


def optional_vector3(values: Iterable[Any] | None) -> Vector3 | None:
    """Like :func:`vector3`, but ``None`` stays ``None`` (the location is unknown)."""
    return None if values is None else vector3(values)


def quaternion(values: Iterable[Any]) -> Quaternion:
    """Store a rotation as a 4-tuple of plain floats."""
    w, x, y, z = floats(4)(values)
    return (w, x, y, z)


def quaternions(values: Iterable[Iterable[Any]]) -> tuple[Quaternion, ...]:
    """Store a sequence of quaternions as a tuple of 4-tuples."""
    return tuple(quaternion(v) for v in values)


def vectors(values: Iterable[Iterable[Any]]) -> tuple[Vector3, ...]:
    """Store a sequence of locations as a tuple of 3-tuples."""
    return tuple(vector3(v) for v in values)
