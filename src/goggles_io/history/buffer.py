"""Create and update histories, in either layout.

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

from goggles_io.exceptions import (
    ConfigurationError,
    ConfigurationTypeError,
    InvalidPayloadError,
    UnknownFieldError,
)
from goggles_io.history._rng import check_rng, draw_rows, row_keys
from goggles_io.history.ring import RingHistory, ring_update
from goggles_io.history.spec import INIT_MODES, HistorySpec, validate_spec
from goggles_io.history.types import Array, History, PRNGKey

__all__ = ["create_history", "update_history"]

_LAYOUTS = ("shift", "ring")


def create_history(
    spec: HistorySpec, batch_size: int, rng: PRNGKey | None = None, *, layout: str = "shift"
) -> History:
    """Allocate every field as a ``(batch_size, length, *shape)`` device array filled per ``init``.

    Jit-safe with ``batch_size`` static. ``randn`` fields draw each row from its own key.

    Args:
        spec: The fields to allocate; checked as ``HistorySpec.from_config`` checks it.
        batch_size: B, an int > 0.
        rng: A PRNG key, or per-batch keys; needed only by ``randn`` fields.
        layout: ``"shift"`` (a dict, robo-goggles' layout) or ``"ring"`` (a ``RingHistory``).

    Raises:
        ConfigurationTypeError: ``spec`` is not a HistorySpec or ``batch_size`` is not an int.
        ConfigurationError: a bad field, ``batch_size`` <= 0, unknown ``layout``, a ``randn``
            field without ``rng``, or ``rng`` of the wrong shape.
    """
    spec = validate_spec(spec)
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        msg = f"batch_size must be an int > 0 (got {batch_size!r})."
        raise ConfigurationTypeError(msg, key="batch_size", value=batch_size)
    if batch_size < 1:
        msg = f"batch_size must be > 0 (got {batch_size!r})."
        raise ConfigurationError(msg, key="batch_size", value=batch_size)
    if layout not in _LAYOUTS:
        msg = f"layout must be one of {_LAYOUTS} (got {layout!r})."
        raise ConfigurationError(msg, key="layout", value=layout)
    batch = int(batch_size)
    if rng is not None:
        check_rng(rng, batch)
    data = {}
    for salt, (name, field) in enumerate(sorted(spec.fields.items())):
        shape = (batch, field.length, *field.shape)
        if field.init == "randn":
            if rng is None:
                msg = f"History field {name!r} has init='randn' and requires rng (got None)."
                raise ConfigurationError(msg, key="rng", value=rng)
            data[name] = draw_rows(row_keys(rng, batch, salt), shape[1:], field.dtype)
        else:
            data[name] = jnp.full(shape, 1 if field.init == "ones" else 0, field.dtype)
    data = {name: data[name] for name in spec.fields}  # the spec's order, not sorted
    if layout == "shift":
        return data
    return RingHistory(
        data,
        head={name: jnp.zeros((), jnp.int32) for name in data},
        count={name: jnp.full((batch,), f.length, jnp.int32) for name, f in spec.fields.items()},
        inits={name: f.init for name, f in spec.fields.items()},
    )


def update_history(
    history: History,
    new_data: Mapping[str, Any],
    reset_mask: Array | None = None,
    spec: HistorySpec | None = None,
    rng: PRNGKey | None = None,
) -> History:
    """Append one entry per row to each field in ``new_data``; pure, jit-safe and vmap-able.

    Each entry is ``(B, 1, *shape)`` with the field's dtype (a Python list is converted to it).
    Fields absent from ``new_data`` are left exactly as they were (not shifted, not reset).
    Where ``reset_mask`` ``(B,)`` is true, the row's window of every updated field goes back to
    its init value and that row's new entry is dropped; other rows are untouched. Init modes
    come from ``spec`` for the shift layout (zeros without it) and from the history itself for
    the ring layout; ``init="none"`` fields are never reset. Resetting a ``randn`` field (any
    call with a ``reset_mask``) requires ``rng``: one key, or per-batch keys ``(B,)``/``(B, 2)``.

    Raises:
        UnknownFieldError: ``new_data`` names a field the history does not have ("Missing new
            data field ...").
        InvalidPayloadError: an entry's rank, batch, append length, shape or dtype is wrong, or
            ``reset_mask`` is not ``(B,)``.
        ConfigurationError: unknown init mode in ``spec``, a ``randn`` reset without ``rng``, or
            ``rng`` of the wrong shape.
    """
    fields = history.data if isinstance(history, RingHistory) else history
    entries = {}
    for name, new in new_data.items():
        if name not in fields:
            msg = (
                f"Missing new data field {name!r} in the history; its fields are {sorted(fields)}."
            )
            raise UnknownFieldError(msg, name=name)
        entries[name] = _entry(name, fields[name], new)
    batch = next(iter(fields.values())).shape[0] if fields else 0
    if reset_mask is not None:
        reset_mask = _as_array(reset_mask, None)
        if tuple(np.shape(reset_mask)) != (batch,):
            msg = (
                f"Invalid reset_mask shape: expected ({batch},) "
                f"(got {tuple(np.shape(reset_mask))!r})."
            )
            raise InvalidPayloadError(msg, value=reset_mask)
    modes = _modes(history, spec, entries)
    if rng is not None:
        check_rng(rng, batch)
    elif reset_mask is not None:
        for name, mode in modes:
            if mode == "randn":
                msg = f"History field {name!r} has init='randn': a reset requires rng (got None)."
                raise ConfigurationError(msg, key="rng", value=rng)
    # One jitted dispatch: eager callers make no host transfers, jitted callers inline it.
    updated: History = _apply_update(history, entries, reset_mask, rng, modes)  # jit: Any
    return updated


def _modes(
    history: History, spec: HistorySpec | None, entries: Mapping[str, Any]
) -> tuple[tuple[str, str], ...]:
    """``(field, init mode)`` of each updated field, sorted; unknown modes raise."""
    if isinstance(history, RingHistory):
        inits = history.inits
    else:
        inits = {} if spec is None else {name: f.init for name, f in spec.fields.items()}
    modes = tuple(sorted((name, inits.get(name, "zeros")) for name in entries))
    for name, mode in modes:
        if not isinstance(mode, str) or mode not in INIT_MODES:
            msg = f"Unknown init mode for field {name!r}: init must be one of {INIT_MODES} (got {mode!r})."
            raise ConfigurationError(msg, key=name, value=mode)
    return modes


@functools.partial(jax.jit, static_argnums=(4,))
def _apply_update(
    history: History,
    entries: dict[str, Array],
    reset_mask: Array | None,
    rng: PRNGKey | None,
    modes: tuple[tuple[str, str], ...],
) -> History:
    fields = history.data if isinstance(history, RingHistory) else history
    if reset_mask is not None:
        reset_mask = reset_mask.astype(bool)
    batch = next(iter(fields.values())).shape[0] if fields else 0
    # Per-row keys for each field, salted by its place among the sorted field names.
    salts = {name: index for index, name in enumerate(sorted(fields))}
    keys = {
        name: None if rng is None or mode != "randn" else row_keys(rng, batch, salts[name])
        for name, mode in modes
    }
    if isinstance(history, RingHistory):
        return ring_update(history, entries, reset_mask, keys)
    updated = dict(history)
    for name, mode in modes:
        hist = history[name]
        shifted = jnp.concatenate([hist[:, 1:], entries[name]], axis=1)
        if reset_mask is not None and mode != "none":
            rows = reset_mask.reshape((-1,) + (1,) * (hist.ndim - 1))
            if mode == "randn":
                fill = draw_rows(keys[name], hist.shape[1:], hist.dtype)
            else:
                fill = jnp.asarray(1 if mode == "ones" else 0, hist.dtype)
            shifted = jnp.where(rows, fill, shifted)
        updated[name] = shifted
    return updated


def _as_array(value: Any, dtype: Any) -> Any:
    """Lists and scalars become arrays (of ``dtype`` when given); arrays and tracers pass through."""
    return value if isinstance(value, (jax.Array, np.ndarray)) else jnp.asarray(value, dtype)


def _entry(name: str, hist: Array, new: Any) -> Any:
    """Check one new entry: ``(B, 1, *shape)`` of the field's dtype; errors name both shapes."""
    new = _as_array(new, hist.dtype)
    want = (hist.shape[0], 1, *hist.shape[2:])
    got = tuple(np.shape(new))
    problem = None
    if len(got) != len(want):
        problem = "Dim mismatch"
    elif got[0] != want[0]:
        problem = "Batch size mismatch"
    elif got[1] != 1:
        problem = "Append length must be 1"
    elif got[2:] != want[2:]:
        problem = "Shape mismatch"
    if problem is not None:
        msg = f"{problem}: new_data[{name!r}] must have shape {want!r} (got {got!r})."
        raise InvalidPayloadError(msg, value=new)
    if new.dtype != hist.dtype:
        msg = (
            f"Dtype mismatch: new_data[{name!r}] must have dtype {hist.dtype} "
            f"(got {new.dtype}); cast it with .astype(...)."
        )
        raise InvalidPayloadError(msg, value=new)
    return new
