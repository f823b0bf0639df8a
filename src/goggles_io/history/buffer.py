"""The README API over both layouts: create, update, peek, slice, move between host and device.

The shift layout is a plain dict ``{field: (B, T, *shape)}`` with the newest entry last along T,
as robo-goggles returns it; an update concatenates, so it costs O(T). ``layout="ring"`` returns a
:class:`~goggles_io.history.ring.RingHistory` with the same reading API and O(1) updates.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from goggles_io.exceptions import ConfigurationError, InvalidNameError, InvalidPayloadError
from goggles_io.history.ring import RingHistory, ordered, ring_slice, ring_update
from goggles_io.history.spec import HistorySpec

__all__ = [
    "History",
    "create_history",
    "peek_last",
    "slice_history",
    "to_device",
    "to_host",
    "update_history",
]

Array = Any
History = dict[str, Array] | RingHistory
_LAYOUTS = ("shift", "ring")


def create_history(
    spec: HistorySpec, batch_size: int, rng: Array | None = None, *, layout: str = "shift"
) -> History:
    """Allocate every field as a ``(batch_size, length, *shape)`` device array filled per ``init``.

    Args:
        spec: The fields to allocate.
        batch_size: B, an int >= 1.
        rng: A PRNG key, needed only by ``randn`` fields.
        layout: ``"shift"`` (a dict, robo-goggles' layout) or ``"ring"`` (a ``RingHistory``).

    Raises:
        ConfigurationError: bad ``batch_size`` or ``layout``, or a ``randn`` field without ``rng``.
    """
    if not isinstance(spec, HistorySpec):
        msg = f"spec must be a HistorySpec (got {spec!r}); use HistorySpec.from_config(...)."
        raise ConfigurationError(msg, key="spec", value=spec)
    if (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, (int, np.integer))
        or batch_size < 1
    ):
        msg = f"batch_size must be an int >= 1 (got {batch_size!r})."
        raise ConfigurationError(msg, key="batch_size", value=batch_size)
    if layout not in _LAYOUTS:
        msg = f"layout must be one of {_LAYOUTS} (got {layout!r})."
        raise ConfigurationError(msg, key="layout", value=layout)
    data = {}
    for name, field in spec.fields.items():
        shape = (int(batch_size), field.length, *field.shape)
        if field.init == "randn":
            if rng is None:
                msg = f"history field {name!r} has init='randn' and needs rng (got None)."
                raise ConfigurationError(msg, key="rng", value=rng)
            rng, key = jax.random.split(rng)
            data[name] = jax.random.normal(key, shape, field.dtype)
        else:
            data[name] = jnp.full(shape, 1 if field.init == "ones" else 0, field.dtype)
    if layout == "shift":
        return data
    return RingHistory(
        data,
        head={name: jnp.zeros((), jnp.int32) for name in data},
        count={
            name: jnp.full((batch_size,), f.length, jnp.int32) for name, f in spec.fields.items()
        },
        inits={name: f.init for name, f in spec.fields.items()},
    )


def update_history(
    history: History,
    new_data: Mapping[str, Array],
    reset_mask: Array | None = None,
    *,
    spec: HistorySpec | None = None,
    rng: Array | None = None,
) -> History:
    """Append one entry per row to each field in ``new_data``; pure, jit-safe and vmap-able.

    New entries are ``(B, *shape)`` or ``(B, 1, *shape)`` and are cast to the field's dtype.
    Fields absent from ``new_data`` are left exactly as they were (not shifted, not reset).
    Where ``reset_mask`` (B,) is true, the row's window of every updated field goes back to its
    init value and that row's new entry is dropped, as in robo-goggles; other rows are untouched.
    Reset values come from ``spec`` for the shift layout (zeros without it) and from the history
    itself for the ring layout; ``randn`` resets need ``rng``.

    Raises:
        InvalidNameError: ``new_data`` names a field the history does not have.
        InvalidPayloadError: an entry or ``reset_mask`` has the wrong shape.
    """
    fields = history.data if isinstance(history, RingHistory) else history
    batch = None
    entries = {}
    for name, new in new_data.items():
        if name not in fields:
            msg = f"new_data field {name!r} is not in the history; fields: {sorted(fields)}."
            raise InvalidNameError(msg, name=name)
        entries[name] = _entry(name, fields[name], _as_array(new))
        batch = fields[name].shape[0]
    if reset_mask is not None:
        reset_mask = _as_array(reset_mask)
    if reset_mask is not None and batch is not None and tuple(np.shape(reset_mask)) != (batch,):
        msg = f"reset_mask must have shape ({batch},) (got shape {tuple(np.shape(reset_mask))!r})."
        raise InvalidPayloadError(msg, value=reset_mask)
    inits = _inits(history, spec)
    if reset_mask is not None and rng is None:
        for name in entries:
            if inits.get(name) == "randn":
                msg = f"history field {name!r} has init='randn': resetting it needs rng (got None)."
                raise ConfigurationError(msg, key="rng", value=rng)
    modes = tuple(sorted((name, inits.get(name, "zeros")) for name in entries))
    # One jitted dispatch: eager callers make no host transfers, jitted callers inline it.
    return _apply_update(history, entries, reset_mask, rng, modes)


@functools.partial(jax.jit, static_argnums=(4,))
def _apply_update(
    history: History,
    entries: dict[str, Array],
    reset_mask: Array | None,
    rng: Array | None,
    modes: tuple[tuple[str, str], ...],
) -> History:
    fields = history.data if isinstance(history, RingHistory) else history
    entries = {
        name: new.reshape((fields[name].shape[0], *fields[name].shape[2:])).astype(
            fields[name].dtype
        )
        for name, new in entries.items()
    }
    if reset_mask is not None:
        reset_mask = reset_mask.astype(bool)
    # One key per field (by its place in the sorted field names): fields never share draws.
    keys = {
        name: None if rng is None else jax.random.fold_in(rng, index)
        for index, name in enumerate(sorted(fields))
        if name in entries
    }
    if isinstance(history, RingHistory):
        return ring_update(history, entries, reset_mask, keys)
    updated = dict(history)
    for name, mode in modes:
        hist, new = history[name], entries[name]
        shifted = jnp.concatenate([hist[:, 1:], new[:, None]], axis=1)
        if reset_mask is not None and mode != "none":
            rows = reset_mask.reshape((-1,) + (1,) * (hist.ndim - 1))
            if mode == "randn":
                fill = jax.random.normal(keys[name], hist.shape, hist.dtype)
            else:
                fill = jnp.asarray(1 if mode == "ones" else 0, hist.dtype)
            shifted = jnp.where(rows, fill, shifted)
        updated[name] = shifted
    return updated


def _inits(history: History, spec: HistorySpec | None) -> dict[str, str]:
    if isinstance(history, RingHistory):
        return history.inits
    if spec is None:
        return {}
    return {name: f.init for name, f in spec.fields.items()}


def _as_array(value: Any) -> Array:
    """Lists and scalars become arrays; jax and numpy arrays (and tracers) pass through."""
    return value if isinstance(value, (jax.Array, np.ndarray)) else jnp.asarray(value)


def _entry(name: str, hist: Array, new: Array) -> Array:
    """Check one new entry's shape: ``(B, *shape)`` or ``(B, 1, *shape)``."""
    batch, item = hist.shape[0], tuple(hist.shape[2:])
    shape = tuple(np.shape(new))
    if shape not in ((batch, *item), (batch, 1, *item)):
        msg = (
            f"new_data[{name!r}] must have shape {(batch, *item)!r} or {(batch, 1, *item)!r} "
            f"(got {shape!r})."
        )
        raise InvalidPayloadError(msg, value=new)
    return new


def _field(history: History, field: str) -> Array:
    fields = history.data if isinstance(history, RingHistory) else history
    if field not in fields:
        msg = f"field {field!r} is not in the history; fields: {sorted(fields)}."
        raise InvalidNameError(msg, name=field)
    return fields[field]


def peek_last(history: History, field: str, n: int = 1) -> Array:
    """The newest ``n`` entries of ``field`` as ``(B, n, *shape)``, newest last.

    Raises:
        InvalidNameError: unknown ``field``.
        ConfigurationError: ``n`` is not an int in [1, T].
    """
    length = _field(history, field).shape[1]
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= length:
        msg = f"n must be an int in [1, {length}] for field {field!r} (got {n!r})."
        raise ConfigurationError(msg, key="n", value=n)
    if isinstance(history, RingHistory):
        return ring_slice(history, field, length - int(n), None)
    return _shift_slice(history[field], length - int(n), None)


def slice_history(history: History, field: str, start: int | None, stop: int | None) -> Array:
    """Entries ``start:stop`` of ``field`` along T (Python slice rules, 0 = oldest).

    Raises:
        InvalidNameError: unknown ``field``.
        ConfigurationError: ``start`` or ``stop`` is not an int or None.
    """
    _field(history, field)  # raises InvalidNameError for an unknown field
    for key, value in (("start", start), ("stop", stop)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, np.integer))
        ):
            msg = f"{key} must be an int or None (got {value!r})."
            raise ConfigurationError(msg, key=key, value=value)
    start = None if start is None else int(start)
    stop = None if stop is None else int(stop)
    if isinstance(history, RingHistory):
        return ring_slice(history, field, start, stop)
    return _shift_slice(history[field], start, stop)


@functools.partial(jax.jit, static_argnums=(1, 2))
def _shift_slice(window: Array, start: int | None, stop: int | None) -> Array:
    # Jitted so an eager read is one dispatch with no host-to-device transfer of the bounds.
    return window[:, start:stop]


def to_host(history: History) -> dict[str, np.ndarray]:
    """Copy the history to host memory as ``{field: np.ndarray (B, T, *shape)}`` in time order.

    One ``device_get`` for all fields; a ring history is ordered on device first.
    """
    return jax.device_get(ordered(history))


def to_device(history: History | Mapping[str, Any], device: Any = None) -> Any:
    """Put the history (either layout, or a host dict from ``to_host``) on ``device``."""
    if not isinstance(history, RingHistory):
        history = dict(history)
    return jax.device_put(history, device)
