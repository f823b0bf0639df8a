"""What a history holds: per-field length, shape, dtype and initial/reset value.

The two classes are plain records, as in robo-goggles: building one never raises. Values are
checked where they are used, by :meth:`HistorySpec.from_config` and ``create_history`` (through
:func:`validate_spec`), and every error names the field and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs
import jax.numpy as jnp
import numpy as np

from goggles_io.exceptions import ConfigurationError, ConfigurationTypeError

__all__ = ["INIT_MODES", "HistoryFieldSpec", "HistorySpec", "InitMode", "validate_spec"]

InitMode = Literal["zeros", "ones", "randn", "none"]
"""robo-goggles' name for the ``init`` values (:data:`INIT_MODES`)."""

INIT_MODES = ("zeros", "ones", "randn", "none")
"""``init`` values: fill with 0 / 1 / standard normal (needs ``rng``); ``none`` = zeros, never reset."""

_FLOAT32 = np.dtype(np.float32)
_FIELD_KEYS = ("length", "shape", "dtype", "init")
_REQUIRED_KEYS = ("length", "shape")


@attrs.frozen
class HistoryFieldSpec:
    """One field: a window of ``length`` entries, each of ``shape`` and ``dtype``.

    ``init`` fills the window at creation and again for rows that a ``reset_mask`` ends; with
    ``"none"`` the window starts at zeros and resets leave it alone.
    """

    length: int
    shape: tuple[int, ...]
    dtype: Any = _FLOAT32
    init: str = "zeros"


def _field_dict(fields: Mapping[str, HistoryFieldSpec]) -> dict[str, HistoryFieldSpec]:
    """A spec owns its own dict of fields (a named converter, so type checkers follow it)."""
    return dict(fields)


@attrs.frozen
class HistorySpec:
    """The fields of a history, by name; build it with :meth:`from_config` or from field specs."""

    fields: Mapping[str, HistoryFieldSpec] = attrs.field(converter=_field_dict)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> HistorySpec:
        """Build and check a spec from ``{name: {"length": T, "shape": (...), ...}}``.

        Each value is a mapping with ``length`` and ``shape`` (and optionally ``dtype`` and
        ``init``), or a :class:`HistoryFieldSpec`, which is checked the same way.

        Raises:
            ConfigurationTypeError: ``config`` or a field entry is not a mapping, a shape is not
                a tuple/list, or a dtype is not a dtype.
            ConfigurationError: a key is missing or unknown, or a length, shape dim or init is bad.
        """
        if not isinstance(config, Mapping):
            msg = (
                f"History config must be a Mapping of field name to field config (got {config!r})."
            )
            raise ConfigurationTypeError(msg, key="config", value=config)
        fields = {}
        for name, entry in config.items():
            if isinstance(entry, HistoryFieldSpec):
                fields[name] = entry
                continue
            if not isinstance(entry, Mapping):
                msg = (
                    f"History field {name!r} must be a Mapping or HistoryFieldSpec (got {entry!r})."
                )
                raise ConfigurationTypeError(msg, key=name, value=entry)
            unknown = sorted(set(entry) - set(_FIELD_KEYS), key=str)
            if unknown:
                msg = (
                    f"History field {name!r} has unknown key {unknown[0]!r}; known: {_FIELD_KEYS}."
                )
                raise ConfigurationError(msg, key=name, value=entry)
            missing = [key for key in _REQUIRED_KEYS if key not in entry]
            if missing:
                msg = (
                    f"History field {name!r} must define 'length' and 'shape' "
                    f"(missing {missing}; got {dict(entry)!r})."
                )
                raise ConfigurationError(msg, key=name, value=entry)
            fields[name] = HistoryFieldSpec(**entry)
        return validate_spec(cls(fields))


def validate_spec(spec: HistorySpec) -> HistorySpec:
    """Check every field and return the spec with shapes as tuples and dtypes as numpy dtypes.

    Raises:
        ConfigurationTypeError: ``spec`` is not a HistorySpec, or a field's shape or dtype has
            the wrong type.
        ConfigurationError: no fields, or a bad length, shape dim, init or name.
    """
    if not isinstance(spec, HistorySpec):
        msg = f"spec must be a HistorySpec (got {spec!r}); use HistorySpec.from_config(...)."
        raise ConfigurationTypeError(msg, key="spec", value=spec)
    if not spec.fields:
        msg = f"A history needs at least one field (got {dict(spec.fields)!r})."
        raise ConfigurationError(msg, key="fields", value=spec.fields)
    return HistorySpec({name: _checked(name, field) for name, field in spec.fields.items()})


def _checked(name: Any, field: Any) -> HistoryFieldSpec:
    """One field, checked and normalised; every message names the field and the key."""
    if not isinstance(name, str) or not name:
        msg = f"History field names must be non-empty str (got {name!r})."
        raise ConfigurationError(msg, key="fields", value=name)
    if not isinstance(field, HistoryFieldSpec):
        msg = f"History field {name!r} must be a Mapping or HistoryFieldSpec (got {field!r})."
        raise ConfigurationTypeError(msg, key=name, value=field)
    length, shape, dtype, init = field.length, field.shape, field.dtype, field.init
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        msg = f"Invalid history length for field {name!r}: length must be an int >= 1 (got {length!r})."
        raise ConfigurationError(msg, key=name, value=length)
    if not isinstance(shape, (tuple, list)):
        msg = f"Invalid history shape for field {name!r}: shape must be a tuple/list of ints (got {shape!r})."
        raise ConfigurationTypeError(msg, key=name, value=shape)
    if any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0 for d in shape):
        msg = (
            f"Invalid history shape for field {name!r}: shape must be a tuple of non-negative ints "
            f"(got {shape!r})."
        )
        raise ConfigurationError(msg, key=name, value=shape)
    normal_dtype = _dtype(name, dtype)
    if not isinstance(init, str) or init not in INIT_MODES:
        msg = f"Unknown init mode for field {name!r}: init must be one of {INIT_MODES} (got {init!r})."
        raise ConfigurationError(msg, key=name, value=init)
    if init == "randn" and not jnp.issubdtype(normal_dtype, jnp.floating):
        msg = f"History field {name!r} has init='randn', which needs a floating dtype (got {dtype!r})."
        raise ConfigurationError(msg, key=name, value=dtype)
    return HistoryFieldSpec(int(length), tuple(int(d) for d in shape), normal_dtype, init)


def _dtype(name: str, value: Any) -> np.dtype[Any]:
    dtype: np.dtype[Any] | None
    try:
        dtype = jnp.dtype(value)
    except (TypeError, ValueError):
        dtype = None
    if dtype is None or not (jnp.issubdtype(dtype, jnp.number) or jnp.issubdtype(dtype, jnp.bool_)):
        msg = (
            f"Invalid history dtype for field {name!r}: dtype is not a valid JAX dtype "
            f"(got {value!r}); use a numeric or bool dtype such as jnp.float32."
        )
        raise ConfigurationTypeError(msg, key=name, value=value)
    return dtype
