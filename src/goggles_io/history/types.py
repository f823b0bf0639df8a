"""Type aliases shared by the history modules, under robo-goggles' names."""

from __future__ import annotations

from typing import TypeAlias

import jax

from goggles_io.history.ring import RingHistory

__all__ = ["Array", "History", "PRNGKey"]

Array: TypeAlias = jax.Array
"""A device array (or a tracer of one, inside ``jit``/``vmap``)."""

PRNGKey: TypeAlias = jax.Array
"""A ``jax.random.key`` (or raw ``PRNGKey``), or per-batch keys of shape ``(B,)`` / ``(B, 2)``."""

History: TypeAlias = dict[str, Array] | RingHistory
"""A history: a dict of ``(B, T, *shape)`` windows (shift layout) or a :class:`RingHistory`."""
