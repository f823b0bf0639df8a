"""The ring layout: one slot written per update, read through ordered views.

Each field keeps its window ``(B, T, *shape)`` in storage order, a head index (the slot the next
update writes; scalar, shared by the batch) and a per-row count of entries written since the
last reset. An update writes one slot with ``dynamic_update_slice`` and bumps two tiny arrays,
so under ``jit`` with a donated history its cost does not depend on T. A reset sets the row's
count to 0 instead of clearing T slots; readers show slots older than the count as the field's
init value. ``randn`` fields are the exception: their reset redraws the row (O(T), under a
``lax.cond`` so steps without resets do not pay). See docs/adr/0006-ring-history-layout.md.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

from goggles_io.history._rng import draw_rows

__all__ = ["RingHistory", "ordered", "ring_slice", "ring_update"]


@jax.tree_util.register_pytree_node_class
class RingHistory:
    """A history in ring layout: a pytree of ``data``, ``head`` and ``count`` dicts.

    ``inits`` (field name -> init mode) is static pytree metadata, so ``jit``, ``vmap``,
    ``device_put`` and donation all see only the arrays. Read it with :func:`ordered`,
    ``peek_last`` or ``slice_history``; ``history.data`` is in storage order, not time order.
    """

    __slots__ = ("count", "data", "head", "inits")

    def __init__(
        self,
        data: Mapping[str, Array],
        head: Mapping[str, Array],
        count: Mapping[str, Array],
        inits: Mapping[str, str],
    ) -> None:
        self.data = dict(data)
        self.head = dict(head)
        self.count = dict(count)
        self.inits = dict(inits)

    def tree_flatten(self) -> tuple[tuple[Any, ...], tuple[tuple[str, str], ...]]:
        return (self.data, self.head, self.count), tuple(sorted(self.inits.items()))

    @classmethod
    def tree_unflatten(cls, aux: tuple[tuple[str, str], ...], children: Any) -> RingHistory:
        data, head, count = children
        return cls(data, head, count, dict(aux))

    def __getitem__(self, field: str) -> Array:
        """The field's window in time order (oldest first), like the shift layout's dict."""
        return ring_slice(self, field, None, None)

    def keys(self) -> Any:
        return self.data.keys()

    def __contains__(self, field: object) -> bool:
        return field in self.data

    def __repr__(self) -> str:
        shapes = {k: tuple(v.shape) for k, v in self.data.items()}
        return f"RingHistory({shapes})"


def ring_slice(hist: RingHistory, field: str, start: int | None, stop: int | None) -> Array:
    """Entries ``start:stop`` of ``field`` in time order (0 = oldest), as ``(B, n, *shape)``."""
    window: Array = _window(  # jax.jit drops the return type
        hist.data[field],
        hist.head[field],
        hist.count[field],
        init=hist.inits[field],
        start=start,
        stop=stop,
    )
    return window


@functools.partial(jax.jit, static_argnames=("init", "start", "stop"))
def _window(
    data: Array, head: Array, count: Array, *, init: str, start: int | None, stop: int | None
) -> Array:
    # One compiled gather per (field shape, slice): eager reads are a single dispatch.
    length = data.shape[1]
    positions = jnp.arange(length)[start:stop]
    taken = jnp.take(data, (head + positions) % length, axis=1)
    live = positions[None, :] >= length - count[:, None]  # (B, n): written since the last reset
    live = live.reshape(live.shape + (1,) * (data.ndim - 2))
    return jnp.where(live, taken, jnp.asarray(1 if init == "ones" else 0, data.dtype))


def ordered(hist: RingHistory | Mapping[str, Array]) -> dict[str, Array]:
    """The history as a dict of ``(B, T, *shape)`` windows in time order (newest last).

    For a ring history this gathers every field (O(T)); a shift-layout dict is returned as is.
    """
    if not isinstance(hist, RingHistory):
        return dict(hist)
    return {field: ring_slice(hist, field, None, None) for field in hist.data}


def ring_update(
    hist: RingHistory,
    new_data: Mapping[str, Array],
    reset_mask: Array | None,
    keys: Mapping[str, Array | None],
) -> RingHistory:
    """Write one slot per field in ``new_data`` (already shaped ``(B, 1, *shape)``); O(1) in T.

    ``keys`` holds each field's per-row PRNG keys for ``randn`` resets (None where no rng).
    """
    data, head, count = dict(hist.data), dict(hist.head), dict(hist.count)
    for field, new in new_data.items():
        buf = data[field]
        length = buf.shape[1]
        start = (jnp.zeros((), head[field].dtype), head[field]) + (0,) * (buf.ndim - 2)
        buf = jax.lax.dynamic_update_slice(buf, new, start)
        head[field] = (head[field] + 1) % length
        grown = jnp.minimum(count[field] + 1, length)
        mode = hist.inits[field]
        if reset_mask is not None and mode in ("zeros", "ones"):
            grown = jnp.where(reset_mask, 0, grown)
        elif reset_mask is not None and mode == "randn":
            key = keys[field]
            assert key is not None, "update() requires rng for a randn reset"
            buf = _redraw(buf, reset_mask, key)
        data[field], count[field] = buf, grown
    return RingHistory(data, head, count, hist.inits)


def _redraw(buf: Array, reset_mask: Array, keys: Array) -> Array:
    """Refill the reset rows of a ``randn`` field with fresh normals, only when a row reset."""
    rows = reset_mask.reshape((-1,) + (1,) * (buf.ndim - 1))

    def redraw(b: Array) -> Array:
        return jnp.where(rows, draw_rows(keys, b.shape[1:], b.dtype), b)

    redrawn: Array = jax.lax.cond(jnp.any(reset_mask), redraw, lambda b: b, buf)
    return redrawn
