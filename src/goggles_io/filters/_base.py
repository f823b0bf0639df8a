"""The filter protocol shared by every filter: a pure ``init_state/apply`` core, a stateful front.

The pure core is written once against an array namespace (numpy or ``jax.numpy``), so the same code
runs eagerly on numpy arrays and traced under ``jax.jit`` / ``jax.lax.scan``. The rules that make that
possible: fixed-size state (ring windows with a head index and a count), ``where`` instead of
branches on values, and no data-dependent shapes.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import numpy as np

from goggles_io.exceptions import ConfigurationError

__all__ = ["Filter", "State", "get_namespace"]

State = Any
"""A filter state: a pytree (dict / tuple) of arrays, carried by the caller in the pure API."""


def get_namespace(*values: Any) -> ModuleType:
    """Return ``jax.numpy`` when any value (or pytree leaf) is a jax array, else ``numpy``.

    jax is only looked up in ``sys.modules``: if the caller never imported jax, its arrays cannot
    exist, so this never imports it (``import goggles_io`` stays jax-free).
    """
    jax = sys.modules.get("jax")
    if jax is None:
        return np
    for leaf in jax.tree_util.tree_leaves(values):
        if isinstance(leaf, jax.Array):
            return sys.modules["jax.numpy"]
    return np


def float_dtype(xp: ModuleType, dtype: Any) -> Any:
    """The floating dtype filters compute in: the input's own float dtype, else the default float."""
    if xp.issubdtype(dtype, xp.floating):
        return dtype
    return xp.result_type(dtype, xp.float32)


def ring_write(xp: ModuleType, buf: Any, head: Any, x: Any) -> Any:
    """Return ``buf`` with slot ``head`` (axis 0) replaced by ``x``, without mutating anything."""
    slots = xp.arange(buf.shape[0]).reshape((-1,) + (1,) * (buf.ndim - 1))
    return xp.where(slots == head, x[None], buf)


def ring_valid(xp: ModuleType, window: int, head: Any, count: Any, ndim: int) -> Any:
    """Mask of the slots that hold one of the last ``count`` writes, ``head`` being the next slot."""
    slots = xp.arange(window)
    age = (head - 1 - slots) % window  # 0 = newest
    return (age < count).reshape((-1,) + (1,) * ndim)


class Filter:
    """Base class: subclasses implement ``init_state`` and ``apply``; this adds the stateful front.

    The stateful front (``f(x)``, ``f.update(x)``, ``f.reset()``) keeps one state inside the
    object, created lazily from the first input, so it fits plain Python loops; the pure front is
    for jitted code, where the caller carries the state.
    """

    type_name: str = ""

    def __init__(self) -> None:
        self._state: State | None = None

    # pure API ---------------------------------------------------------------------------------
    def init_state(self, example_or_shape: Any = (), dtype: Any = None) -> State:
        """Build the initial state for inputs shaped like ``example_or_shape``.

        Pass an example array (numpy or jax) to get a state of the same namespace and float dtype,
        or a shape tuple (plus ``dtype``) for a numpy state.
        """
        xp, shape, fdtype = _resolve_example(example_or_shape, dtype)
        return self._init(xp, shape, fdtype)

    def apply(self, state: State, x: Any) -> tuple[Any, State]:
        """Filter one sample ``x``; return ``(y, new_state)`` and leave ``state`` untouched."""
        xp = get_namespace(state, x)
        dtype = _state_dtype(state, xp, x)
        return self._apply(xp, state, xp.asarray(x, dtype=dtype))

    def _init(self, xp: ModuleType, shape: tuple[int, ...], dtype: Any) -> State:
        return {}

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[Any, State]:
        raise NotImplementedError

    # stateful API -----------------------------------------------------------------------------
    def update(self, x: Any) -> Any:
        """Filter one sample with the state held by this object; Python numbers give floats back."""
        if self._state is None:
            self._state = self.init_state(np.asarray(x) if _is_number(x) else x)
        y, self._state = self.apply(self._state, x)
        if _is_number(x):
            return float(y)
        return y

    __call__ = update

    def reset(self) -> None:
        """Forget everything seen so far; the next input starts a fresh state."""
        self._state = None

    def to_config(self) -> dict[str, Any]:
        """The config mapping that ``make_filter`` turns back into an equal filter."""
        return {"type": self.type_name, **self._params()}

    def _params(self) -> dict[str, Any]:
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._params() == other._params()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), repr(self)))


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _resolve_example(example_or_shape: Any, dtype: Any) -> tuple[ModuleType, tuple[int, ...], Any]:
    if isinstance(example_or_shape, (tuple, list)) and all(
        isinstance(d, int) for d in example_or_shape
    ):
        return np, tuple(example_or_shape), float_dtype(np, np.dtype(dtype or np.float64))
    xp = get_namespace(example_or_shape)
    arr = xp.asarray(example_or_shape)
    return xp, tuple(arr.shape), float_dtype(xp, dtype or arr.dtype)


def _state_dtype(state: State, xp: ModuleType, x: Any) -> Any:
    # Filters with memory compute in their state's float dtype (a scan carry must keep its dtype).
    if isinstance(state, Mapping):
        for leaf in state.values():
            if xp.issubdtype(leaf.dtype, xp.floating):
                return leaf.dtype
    return float_dtype(xp, xp.asarray(x).dtype)


def check_int(name: str, value: Any, minimum: int) -> int:
    """Validate an int parameter once, in ``__init__``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        msg = f"{name} must be an int >= {minimum} (got {value!r})."
        raise ConfigurationError(msg, key=name, value=value)
    return int(value)


def check_float(name: str, value: Any, *, positive: bool = False, finite: bool = True) -> float:
    """Validate a float parameter once, in ``__init__``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        msg = f"{name} must be a number (got {value!r})."
        raise ConfigurationError(msg, key=name, value=value)
    value = float(value)
    if finite and not np.isfinite(value):
        msg = f"{name} must be finite (got {value!r})."
        raise ConfigurationError(msg, key=name, value=value)
    if positive and not value > 0:
        msg = f"{name} must be > 0 (got {value!r})."
        raise ConfigurationError(msg, key=name, value=value)
    return value
