"""What a history holds: per-field length, shape, dtype and initial/reset value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from goggles_io.exceptions import ConfigurationError

__all__ = ["INIT_MODES", "HistoryFieldSpec", "HistorySpec"]

INIT_MODES = ("zeros", "ones", "randn", "none")
"""``init`` values: fill with 0 / 1 / standard normal (needs ``rng``); ``none`` = zeros, never reset."""

_FIELD_KEYS = ("length", "shape", "dtype", "init")


def _bad(key: str, value: Any, expected: str) -> ConfigurationError:
    msg = f"{key} must be {expected} (got {value!r})."
    return ConfigurationError(msg, key=key, value=value)


def _to_length(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise _bad("length", value, "an int >= 1")
    return int(value)


def _to_shape(value: Any) -> tuple[int, ...]:
    dims = (value,) if isinstance(value, (int, np.integer)) else value
    try:
        shape = tuple(dims)
    except TypeError:
        raise _bad("shape", value, "a tuple of ints >= 0") from None
    if any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0 for d in shape):
        raise _bad("shape", value, "a tuple of ints >= 0")
    return tuple(int(d) for d in shape)


def _to_dtype(value: Any) -> np.dtype[Any]:
    import jax.numpy as jnp

    try:
        dtype = np.dtype(value)
    except TypeError:
        raise _bad("dtype", value, "a numeric dtype such as jnp.float32") from None
    if not (jnp.issubdtype(dtype, jnp.number) or jnp.issubdtype(dtype, jnp.bool_)):
        raise _bad("dtype", value, "a numeric dtype such as jnp.float32")
    return dtype


def _check_init(_: Any, __: Any, value: Any) -> None:
    if value not in INIT_MODES:
        raise _bad("init", value, f"one of {INIT_MODES}")


@attrs.frozen(kw_only=False)
class HistoryFieldSpec:
    """One field: a window of ``length`` entries, each of ``shape`` and ``dtype``.

    ``init`` fills the window at creation and again for rows that a ``reset_mask`` ends; with
    ``"none"`` the window starts at zeros and resets leave it alone.
    """

    length: int = attrs.field(converter=_to_length)
    shape: tuple[int, ...] = attrs.field(default=(), converter=_to_shape)
    dtype: np.dtype[Any] = attrs.field(default=np.dtype(np.float32), converter=_to_dtype)
    init: str = attrs.field(default="zeros", validator=_check_init)


@attrs.frozen
class HistorySpec:
    """The fields of a history, by name; build it with :meth:`from_config` or from field specs."""

    fields: Mapping[str, HistoryFieldSpec] = attrs.field(converter=dict)

    def __attrs_post_init__(self) -> None:
        if not self.fields:
            msg = f"a history needs at least one field (got {self.fields!r})."
            raise ConfigurationError(msg, key="fields", value=self.fields)
        for name, field in self.fields.items():
            if not isinstance(name, str) or not name:
                raise _bad("field name", name, "a non-empty str")
            if not isinstance(field, HistoryFieldSpec):
                msg = f"history field {name!r} must be a HistoryFieldSpec (got {field!r})."
                raise ConfigurationError(msg, key=name, value=field)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> HistorySpec:
        """Build a spec from ``{name: {"length": T, "shape": (...), "dtype": ..., "init": ...}}``.

        Raises:
            ConfigurationError: a field's length, shape, dtype or init is bad, or it has an
                unknown key; the message names the field and the key.
        """
        if not isinstance(config, Mapping):
            raise _bad("config", config, "a mapping of field name to field config")
        fields = {}
        for name, entry in config.items():
            if isinstance(entry, HistoryFieldSpec):
                fields[name] = entry
                continue
            if not isinstance(entry, Mapping):
                msg = (
                    f"history field {name!r} must be a mapping with {_FIELD_KEYS} (got {entry!r})."
                )
                raise ConfigurationError(msg, key=name, value=entry)
            unknown = sorted(set(entry) - set(_FIELD_KEYS), key=str)
            if unknown:
                msg = (
                    f"history field {name!r} has unknown key {unknown[0]!r}; known: {_FIELD_KEYS}."
                )
                raise ConfigurationError(msg, key=name, value=entry)
            if "length" not in entry:
                msg = f"history field {name!r} is missing 'length' (got {dict(entry)!r})."
                raise ConfigurationError(msg, key=name, value=entry)
            try:
                fields[name] = HistoryFieldSpec(**entry)
            except ConfigurationError as exc:
                msg = f"history field {name!r}: {exc}"
                raise ConfigurationError(msg, key=name, value=exc.value) from exc
        return cls(fields)
