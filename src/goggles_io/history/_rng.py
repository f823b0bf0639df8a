"""PRNG keys for ``randn`` fields: one key for the batch, or one key per row.

``rng`` may be a single key (a typed ``jax.random.key`` scalar or a raw ``PRNGKey`` of shape
``(2,)``) or per-row keys (``(B,)`` typed, ``(B, 2)`` raw). Either way a field draws each row
from its own key, derived from ``rng`` and the field's salt, so fields never share draws.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from goggles_io.exceptions import ConfigurationError

__all__ = ["check_rng", "draw_rows", "row_keys"]


def _is_typed(rng: Any) -> bool:
    return bool(jnp.issubdtype(rng.dtype, jax.dtypes.prng_key))


def check_rng(rng: Any, batch: int) -> None:
    """Raise unless ``rng`` is one key or ``batch`` keys (shapes are static, so this is jit-safe).

    Raises:
        ConfigurationError: any other shape or dtype; the message shows what was given.
    """
    shape, dtype = getattr(rng, "shape", None), getattr(rng, "dtype", None)
    if shape is not None and dtype is not None:
        if _is_typed(rng):
            if len(shape) == 0 or tuple(shape) == (batch,):
                return
        elif np.dtype(dtype) == np.uint32 and (
            len(shape) == 1 or (len(shape) == 2 and shape[0] == batch)
        ):
            return
    msg = (
        f"rng must be a PRNGKey (jax.random.key(...) or PRNGKey(...)) or per-batch keys of "
        f"shape ({batch},) / ({batch}, 2) (got shape {shape!r}, dtype {dtype!r})."
    )
    raise ConfigurationError(msg, key="rng", value=rng)


def row_keys(rng: Any, batch: int, salt: int) -> Any:
    """``batch`` keys for one field: split from a single key, or each row's key folded with salt."""
    single = rng.ndim == (0 if _is_typed(rng) else 1)
    if single:
        return jax.random.split(jax.random.fold_in(rng, salt), batch)
    return jax.vmap(jax.random.fold_in, in_axes=(0, None))(rng, salt)


def draw_rows(keys: Any, row_shape: tuple[int, ...], dtype: Any) -> Any:
    """Standard normals of shape ``(B, *row_shape)``, row ``b`` drawn from ``keys[b]``."""
    return jax.vmap(lambda key: jax.random.normal(key, row_shape, dtype))(keys)
