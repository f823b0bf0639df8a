"""Hypothesis strategies shared by the test suites (cf. attrs ``tests/strategies.py``)."""

from __future__ import annotations

import importlib
import pkgutil
import types
import typing
from typing import Any

import attrs
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import runtime_telemetry.events as shipped_events
from runtime_telemetry import TelemetrySchema

__all__ = [
    "SHIPPED_MODULES",
    "SHIPPED_SCHEMAS",
    "arrays",
    "json_values",
    "metric_line_values",
    "schema_instances",
    "schemas",
]

SHIPPED_MODULES: tuple[str, ...] = tuple(
    sorted(
        info.name
        for info in pkgutil.iter_modules(shipped_events.__path__, shipped_events.__name__ + ".")
        if not info.name.rpartition(".")[2].startswith("_")
    )
)
"""Every public module of ``runtime_telemetry.events``, imported or not."""

SHIPPED_SCHEMAS: tuple[type[TelemetrySchema], ...] = tuple(
    cls
    for module in map(importlib.import_module, SHIPPED_MODULES)
    for cls in vars(module).values()
    if isinstance(cls, type)
    and issubclass(cls, TelemetrySchema)
    and cls.__module__ == module.__name__
    and cls.kind  # abstract bases have an empty kind
)
"""Every concrete schema class defined in ``runtime_telemetry.events``."""

_floats = st.floats(allow_nan=False)
_dtypes = st.one_of(
    hnp.scalar_dtypes(),
    hnp.integer_dtypes(endianness=">"),
    hnp.floating_dtypes(endianness=">"),
    hnp.unicode_string_dtypes(max_len=4),
    hnp.byte_string_dtypes(max_len=4),
)


def arrays() -> st.SearchStrategy[np.ndarray]:
    """Small numpy arrays of any plain dtype and 0-3 dimensions, NaNs and -0.0 included."""
    return hnp.arrays(_dtypes, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))


json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | _floats | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)
"""Anything ``json.loads`` can return, for fuzzing decoders."""


def _for_type(tp: Any) -> st.SearchStrategy[Any]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is str:
        return st.text(max_size=12)
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers()
    if tp is float:
        return _floats
    if tp is np.ndarray:
        return arrays()
    if tp is type(None):
        return st.none()
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(_for_type(arg) for arg in args))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return st.lists(_for_type(args[0]), max_size=4).map(tuple)
    if origin is tuple:
        return st.tuples(*(_for_type(arg) for arg in args))
    if origin is dict:
        keys = st.text(min_size=1, max_size=12) if args[0] is str else _for_type(args[0])
        return st.dictionaries(keys, _for_type(args[1]), max_size=4)
    msg = f"tests/strategies.py has no strategy for field type {tp!r}; add one"
    raise NotImplementedError(msg)


def schema_instances(cls: type[TelemetrySchema]) -> st.SearchStrategy[TelemetrySchema]:
    """Instances of ``cls`` with every field drawn from its annotated type."""
    attrs.resolve_types(cls)
    fields = {f.name: _for_type(f.type) for f in attrs.fields(cls) if f.init}
    return st.builds(cls, **fields)


def schemas() -> st.SearchStrategy[TelemetrySchema]:
    """An instance of any shipped schema."""
    return st.one_of(*(schema_instances(cls) for cls in SHIPPED_SCHEMAS))


# A metric's value as a run file's line may hold it: numbers of every kind (ints past 64 bits,
# NaN, +-inf), the non-finite markers and other strings, and what is not a number at all.
metric_line_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.none(),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "text", "1.5"]),
    st.lists(st.floats(allow_nan=False), max_size=2),
)
