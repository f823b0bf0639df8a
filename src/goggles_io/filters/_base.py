"""The filter protocol shared by every filter: a pure ``init_state/apply`` core, a stateful front.

The pure core is written once against an array namespace (numpy or ``jax.numpy``), so the same code
runs eagerly on numpy arrays and traced under ``jax.jit`` / ``jax.lax.scan``. The rules that make that
possible: fixed-size state (ring windows with a head index and a count), ``where`` instead of
branches on values, and no data-dependent shapes.
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

import numpy as np

from goggles_io.exceptions import ConfigurationError, ConfigurationTypeError

__all__ = ["FILTER_CLASSES", "Filter", "State", "get_namespace"]

FILTER_CLASSES: dict[str, type[Filter]] = {}
"""Every public filter class by name, for configs (``{"type": "AverageFilter", ...}``); filled as
each class is defined, so building from a config needs no import of the modules defining them."""

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


def ring_state(
    xp: ModuleType, window: int, shape: tuple[int, ...], dtype: Any, fill: float
) -> State:
    """An empty ring window of ``window`` slots shaped like the input, plus its head and count."""
    return {
        "buf": xp.full((window, *shape), fill, dtype=dtype),
        "head": xp.asarray(0, dtype=xp.int32),
        "count": xp.asarray(0, dtype=xp.int32),
    }


def ring_push(xp: ModuleType, state: State, x: Any, window: int) -> State:
    """Write ``x`` into the ring window; the head wraps, the count saturates at ``window``."""
    return {
        "buf": ring_write(xp, state["buf"], state["head"], x),
        "head": (state["head"] + 1) % window,
        "count": xp.minimum(state["count"] + 1, window),
    }


class Filter:
    """Base class: subclasses implement ``_init`` and ``_apply``; this adds both fronts.

    Stateful front (``step(x)``, ``f(x)``, ``reset()``): one state inside the object, created
    lazily from the first input, for plain Python loops. Pure front (``init_state(x)``,
    ``apply(state, x) -> (new_state, y)``): the caller carries the state, so it runs under
    ``jax.jit`` and as a ``jax.lax.scan`` body; it never touches the object.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_"):
            FILTER_CLASSES[cls.__name__] = cls

    def __init__(self, prefix: str = "") -> None:
        if not isinstance(prefix, str):
            msg = f"prefix must be a str (got {prefix!r})."
            raise ConfigurationTypeError(msg, key="prefix", value=prefix)
        self.prefix = prefix
        self._state: State | None = None

    @property
    def name(self) -> str:
        """``prefix`` + the class name with its parameters, e.g. ``avg/AverageFilter(window_size=3)``."""
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{self.prefix}{type(self).__name__}({args})"

    # pure API ---------------------------------------------------------------------------------
    def init_state(self, data: Any) -> State:
        """The initial state for inputs shaped like ``data`` (numpy or jax, its float dtype)."""
        xp = get_namespace(data)
        arr = xp.asarray(data)
        return self._init(xp, tuple(arr.shape), float_dtype(xp, arr.dtype))

    def apply(self, state: State, data: Any) -> tuple[State, Any]:
        """Filter one sample; return ``(new_state, output)`` and leave ``state`` untouched."""
        xp = get_namespace(state, data)
        dtype = _compute_dtype(state, xp, data)
        return self._apply(xp, state, xp.asarray(data, dtype=dtype))

    def _init(self, xp: ModuleType, shape: tuple[int, ...], dtype: Any) -> State:
        return {}

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[State, Any]:
        raise NotImplementedError

    # stateful API -----------------------------------------------------------------------------
    def step(self, data: Any) -> Any:
        """Filter one sample with the state held by this object; Python numbers give floats back."""
        if self._state is None:
            self._state = self.init_state(data)
        self._state, y = self.apply(self._state, data)
        return float(y) if _is_number(data) else y

    def __call__(self, data: Any) -> Any:
        """Same as :meth:`step`."""
        return self.step(data)

    def reset(self) -> None:
        """Forget everything seen so far; the next input starts a fresh state."""
        self._state = None

    def _params(self) -> dict[str, Any]:
        return {}

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Filter)
            and type(self) is type(other)
            and self._params() == other._params()
        )

    def __hash__(self) -> int:
        return hash((type(self), self.name))


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _leaves(state: State) -> Iterator[Any]:
    if isinstance(state, Mapping):
        for value in state.values():
            yield from _leaves(value)
    elif isinstance(state, (tuple, list)):
        for value in state:
            yield from _leaves(value)
    else:
        yield state


def _compute_dtype(state: State, xp: ModuleType, x: Any) -> Any:
    # Filters with memory compute in their state's float dtype (a scan carry must keep its dtype).
    for leaf in _leaves(state):
        if xp.issubdtype(leaf.dtype, xp.floating):
            return leaf.dtype
    return float_dtype(xp, xp.asarray(x).dtype)


def check_int(name: str, value: Any, minimum: int) -> int:
    """Validate an int parameter once, in ``__init__`` (2.5 is a bad value, hence ValueError)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        msg = f"{name} must be an int >= {minimum} (got {value!r})."
        raise ConfigurationError(msg, key=name, value=value)
    return int(value)


def check_float(name: str, value: Any, *, finite: bool = True) -> float:
    """Validate a real-number parameter once: TypeError for a non-number, ValueError if not finite."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        msg = f"{name} must be a real number (got {value!r} that is a {type(value).__name__})."
        raise ConfigurationTypeError(msg, key=name, value=value)
    number = float(value)
    if finite and not np.isfinite(number):
        msg = f"{name} must be finite (got {number!r})."
        raise ConfigurationError(msg, key=name, value=number)
    return number


def check_order(low_name: str, low: float, high_name: str, high: float, *, strict: bool) -> None:
    """Raise unless ``low < high`` (``strict``) or ``low <= high``; NaN bounds always fail."""
    ok = low < high if strict else low <= high
    if not ok:
        op = "<" if strict else "<="
        msg = f"{low_name} must be {op} {high_name} (got {low_name}={low!r}, {high_name}={high!r})."
        raise ConfigurationError(msg, key=low_name, value=low)
