"""Reading histories (``peek_last``, ``slice_history``) and moving them between host and device.

Reads return ``{field: (B, n, *shape)}`` in time order for either layout; each field is one
jitted gather, so an eager read is one dispatch per field and a jitted read inlines. The
movers take any pytree mapping (nested values and plain Python values are fine) and touch only
the top-level ``keys`` asked for; the input is never modified.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import jax
import numpy as np

from goggles_io.exceptions import (
    ConfigurationError,
    ConfigurationTypeError,
    InvalidPayloadTypeError,
    UnknownFieldError,
)
from goggles_io.history.ring import RingHistory, ordered, ring_slice
from goggles_io.history.types import Array, History

__all__ = ["Device", "peek_last", "slice_history", "to_device", "to_host"]


class Device(Protocol):
    """What :func:`to_device` takes as a target (a ``jax.Device`` is one): robo-goggles' protocol."""

    id: int
    process_index: int
    platform: str


def peek_last(
    history: History, k: int = 1, fields: str | Sequence[str] | None = None
) -> dict[str, Array]:
    """The newest ``k`` entries of each field (or of ``fields``), as ``(B, k, *shape)``, newest last.

    Raises:
        InvalidPayloadTypeError: ``history`` is empty or not a history, or a field is not (B, T, ...).
        UnknownFieldError: a name in ``fields`` is not in the history (also a ``KeyError``).
        ConfigurationError: ``k`` is not an int in [1, T] for every field read.
    """
    lengths = _lengths(history, fields)
    _check_int("k", k)
    for name, length in lengths.items():
        if not 1 <= k <= length:
            msg = f"k must be in [1, {length}] for field {name!r} (got {k!r})."
            raise ConfigurationError(msg, key="k", value=k)
    return {name: _read(history, name, length - int(k), length) for name, length in lengths.items()}


def slice_history(
    history: History, start: int, length: int, fields: str | Sequence[str] | None = None
) -> dict[str, Array]:
    """Entries ``start`` to ``start + length`` (0 = oldest) of each field (or of ``fields``).

    Raises:
        InvalidPayloadTypeError: ``history`` is empty or not a history, or a field is not (B, T, ...).
        UnknownFieldError: a name in ``fields`` is not in the history (also a ``KeyError``).
        ConfigurationTypeError: ``start`` or ``length`` is not an int.
        ConfigurationError: ``length`` < 1, ``start`` < 0, or the window runs past T.
    """
    lengths = _lengths(history, fields)
    _check_int("start", start)
    _check_int("length", length)
    if length < 1 or start < 0:
        msg = f"slice_history needs start >= 0 and length >= 1 (got start={start!r}, length={length!r})."
        raise ConfigurationError(
            msg, key="length" if length < 1 else "start", value=(start, length)
        )
    for name, size in lengths.items():
        if start + length > size:
            msg = (
                f"slice_history window [{start}, {start + length}) runs past field {name!r} "
                f"of length {size}."
            )
            raise ConfigurationError(msg, key="length", value=(start, length))
    return {name: _read(history, name, int(start), int(start + length)) for name in lengths}


def to_host(
    history: History | Mapping[str, Any], keys: Sequence[str] | None = None
) -> dict[str, Any]:
    """Copy the history (or its top-level ``keys``) to host memory, as numpy, in one ``device_get``.

    A ring history is ordered on device first, so the result is ``{field: (B, T, *shape)}`` in
    time order. Other keys are returned as they are. Inside ``jit`` traced values are returned
    unchanged (there is no host to copy to while tracing).

    Raises:
        UnknownFieldError: a name in ``keys`` is not in the history (also a ``KeyError``).
    """
    out = ordered(history) if isinstance(history, RingHistory) else dict(history)
    chosen = _chosen(out, keys)
    leaves, treedef = jax.tree_util.tree_flatten({name: out[name] for name in chosen})
    concrete = [i for i, leaf in enumerate(leaves) if not isinstance(leaf, jax.core.Tracer)]
    fetched = jax.device_get([leaves[i] for i in concrete])
    for i, value in zip(concrete, fetched, strict=True):
        leaves[i] = value
    out.update(jax.tree_util.tree_unflatten(treedef, leaves))
    return out


def to_device(
    history: History | Mapping[str, Any],
    devices: Any = None,
    keys: Sequence[str] | None = None,
) -> Any:
    """Put the history (or its top-level ``keys``) on a device; jit-safe and pure.

    Args:
        devices: None (the default device), one ``jax.Device``, or a sequence of them: the
            chosen keys go to them round-robin, in key order.
        keys: Top-level keys (fields) to move; the others are returned as they are.

    Returns:
        The same kind of container: a ``RingHistory`` for a ring history, else a dict.

    Raises:
        UnknownFieldError: a name in ``keys`` is not in the history (also a ``KeyError``).
        ConfigurationTypeError: ``devices`` is an empty sequence or holds something else.
    """
    targets = _devices(devices)
    if isinstance(history, RingHistory):
        parts = {
            name: (history.data[name], history.head[name], history.count[name])
            for name in history.data
        }
        moved = _move(parts, _chosen(parts, keys), targets)
        return RingHistory(
            {name: p[0] for name, p in moved.items()},
            {name: p[1] for name, p in moved.items()},
            {name: p[2] for name, p in moved.items()},
            history.inits,
        )
    out = dict(history)
    return _move(out, _chosen(out, keys), targets)


def _move(out: dict[str, Any], chosen: list[str], targets: list[Any]) -> dict[str, Any]:
    for index, name in enumerate(chosen):
        device = targets[index % len(targets)] if targets else None
        out[name] = jax.device_put(out[name], device)
    return out


def _devices(devices: Any) -> list[Any]:
    if devices is None:
        return []
    if isinstance(devices, jax.Device):
        return [devices]
    targets = list(devices) if isinstance(devices, Sequence) else None
    if not targets or not all(isinstance(d, jax.Device) for d in targets):
        msg = (
            f"devices must be None, a jax.Device or a non-empty sequence of them (got {devices!r})."
        )
        raise ConfigurationTypeError(msg, key="devices", value=devices)
    return targets


def _chosen(history: Mapping[str, Any], keys: Sequence[str] | str | None) -> list[str]:
    """The selected top-level names, in the given order; unknown names raise."""
    if keys is None:
        return list(history)
    names = [keys] if isinstance(keys, str) else list(keys)
    for name in names:
        if name not in history:
            msg = f"History has no field {name!r}; its fields are {sorted(history)}."
            raise UnknownFieldError(msg, name=name)
    return names


def _lengths(history: Any, fields: str | Sequence[str] | None) -> dict[str, int]:
    """T of each field read; checks the container, the names and each window's rank."""
    storage = history.data if isinstance(history, RingHistory) else history
    if not isinstance(storage, Mapping) or not storage:
        msg = f"history must be a non-empty mapping of field name to (B, T, *shape) array (got {history!r})."
        raise InvalidPayloadTypeError(msg, value=history)
    lengths = {}
    for name in _chosen(storage, fields):
        shape = np.shape(storage[name]) if hasattr(storage[name], "shape") else None
        if shape is None or len(shape) < 2:
            msg = f"History field {name!r} must be an array of shape (B, T, *shape) (got shape {shape!r})."
            raise InvalidPayloadTypeError(msg, value=storage[name])
        lengths[name] = int(shape[1])
    return lengths


def _check_int(key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        msg = f"{key} must be an int (got {value!r})."
        raise ConfigurationTypeError(msg, key=key, value=value)


def _read(history: History, field: str, start: int, stop: int) -> Array:
    if isinstance(history, RingHistory):
        return ring_slice(history, field, start, stop)
    window: Array = _window(history[field], start, stop)  # jax.jit drops the return type
    return window


@functools.partial(jax.jit, static_argnums=(1, 2))
def _window(window: Array, start: int, stop: int) -> Array:
    # Jitted so an eager read is one dispatch with no host-to-device transfer of the bounds.
    return window[:, start:stop]
