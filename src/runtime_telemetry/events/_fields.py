"""Converters shared by the event vocabulary: accept lists or arrays, store plain tuples."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "Quaternion",
    "Vector3",
    "floats",
    "optional_floats",
    "quaternions",
    "strings",
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


_quaternion = floats(4)


def quaternions(values: Iterable[Iterable[Any]]) -> tuple[Quaternion, ...]:
    """Store a sequence of quaternions as a tuple of 4-tuples."""
    return tuple(_quaternion(v) for v in values)  # type: ignore[misc]


_vector = floats(3)


def vectors(values: Iterable[Iterable[Any]]) -> tuple[Vector3, ...]:
    """Store a sequence of locations as a tuple of 3-tuples."""
    return tuple(_vector(v) for v in values)  # type: ignore[misc]


def optional_floats(size: int) -> Callable[[Iterable[Any] | None], tuple[float, ...] | None]:
    """Like ``floats(size)``, but ``None`` stays ``None`` (the value is unknown)."""
    convert = floats(size)

    def optional(values: Iterable[Any] | None) -> tuple[float, ...] | None:
        return None if values is None else convert(values)

    return optional
