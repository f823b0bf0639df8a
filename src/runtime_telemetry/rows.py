"""Rows: schemas as a tuple of their field values, for a trusted process-to-process hop.

``to_dict``/``from_dict`` are the codec of files and untrusted input: tagged dicts, every value
checked and converted by cattrs (~2 µs to encode, ~6 µs to decode an event). Between a worker
process and its experiment the object was already built, converted and validated once, by the
runtime's own constructor, so decoding it again costs the experiment more than the runtime
paid to emit it (ADR 0054). A *row* is the schema's field values in attrs order; a *layout*
(kind, version, field names) says once per chunk what the rows of one class hold. Decoding a
row sets the values on a new instance directly (no ``__init__``: the converters and defaults
already ran in the sender), after turning the lists msgpack or JSON made of tuples back into
tuples, so the object is equal to the sender's, field types included.

Only classes whose every field has a type this restores exactly (str, int, float, bool, None,
tuples and lists of those, dicts of str to those, optional forms) and that hold nothing but
their fields have rows (:func:`row_fields`); any other class (an ``ndarray`` field, a
post-init hook) and any layout the receiving code does not define goes through
``to_dict``/``from_dict`` as before, with their checks and messages.
"""

from __future__ import annotations

import threading
import types
import typing
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any, Union

import attrs

from runtime_telemetry._schema import TelemetrySchema, _lookup

__all__ = ["RowMaker", "row_fields", "row_maker", "row_values"]

RowMaker = Callable[[Sequence[Any]], TelemetrySchema]
"""Builds a schema from one row (the values in its layout's field order)."""

_SCALARS = (str, int, float, bool, type(None))
_lock = threading.Lock()
_fields: dict[type, tuple[str, ...] | None] = {}
_getters: dict[type, Callable[[Any], tuple[Any, ...]]] = {}
_makers: dict[tuple[str, int, tuple[str, ...], int], RowMaker | None] = {}
_Restore = Callable[[Any], Any] | None  # None: the value comes back as it went


def _restore(type_: Any) -> tuple[bool, _Restore]:
    """(whether values of ``type_`` come back exactly, the function that makes them so)."""
    if type_ in _SCALARS:
        return True, None
    origin, args = typing.get_origin(type_), typing.get_args(type_)
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            return all(a in _SCALARS for a in args), None
        ok, restore = _restore(inner[0])
        if restore is None:
            return ok, None
        return ok, lambda v: None if v is None else restore(v)
    if origin is tuple:
        items = list(args[:1] if len(args) == 2 and args[1] is Ellipsis else args)
        parts = [_restore(a) for a in items]
        if not items or not all(ok for ok, _ in parts):
            return False, None
        inner_fns = [fn for _, fn in parts if fn is not None]
        if not inner_fns:
            return True, tuple
        if len(items) == 1:
            item = inner_fns[0]
            return True, lambda v: tuple(map(item, v))
        fns = [fn or (lambda x: x) for _, fn in parts]
        return True, lambda v: tuple(f(x) for f, x in zip(fns, v, strict=True))
    if origin is list:
        ok, items_fn = _restore(args[0]) if args else (False, None)
        return ok and items_fn is None, None
    if origin is dict:
        ok, values_fn = _restore(args[1]) if len(args) == 2 else (False, None)
        return ok and values_fn is None and args[0] is str, None
    return False, None


def _slots(cls: type) -> set[str]:
    return {s for klass in cls.__mro__ for s in getattr(klass, "__slots__", ())} - {"__weakref__"}


def row_fields(cls: type[TelemetrySchema]) -> tuple[str, ...] | None:
    """The field names of ``cls``'s rows, in order, or None when it has no row form."""
    try:
        return _fields[cls]
    except KeyError:
        pass
    names: tuple[str, ...] | None = None
    kind = getattr(cls, "kind", "")
    if attrs.has(cls) and kind and _lookup(kind) is cls:
        hints = typing.get_type_hints(cls)
        fields = attrs.fields(cls)
        plain = (
            all(f.init and _restore(hints.get(f.name))[0] for f in fields)
            and _slots(cls) == {f.name for f in fields}
            and not hasattr(cls, "__attrs_post_init__")
            and not hasattr(cls, "__attrs_pre_init__")
        )
        names = tuple(f.name for f in fields) if plain else None
    with _lock:
        _fields[cls] = names
    return names


def row_values(schema: TelemetrySchema) -> tuple[Any, ...]:
    """The row of ``schema`` (its class must have one: see :func:`row_fields`)."""
    cls = type(schema)
    getter = _getters.get(cls)
    if getter is None:
        names = row_fields(cls)
        if names is None:
            msg = f"{cls.__qualname__} has no row form; encode it with to_dict()."
            raise TypeError(msg)
        get = attrgetter(*names)
        getter = get if len(names) > 1 else (lambda s: (get(s),))
        with _lock:
            _getters[cls] = getter
    return getter(schema)


def _slot(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        member = klass.__dict__.get(name)
        if isinstance(member, types.MemberDescriptorType):
            return member.__set__
    msg = f"{cls.__qualname__}.{name} is not a slot"
    raise TypeError(msg)


def _build(cls: type[TelemetrySchema], names: tuple[str, ...], offset: int) -> RowMaker:
    """One function per layout: a new instance, each value restored and set in its slot."""
    hints = typing.get_type_hints(cls)
    scope: dict[str, Any] = {"new": object.__new__, "cls": cls}
    targets = "_, " * offset + "".join(f"v{i}, " for i in range(len(names)))
    lines = ["def make(row):", f"    ({targets}) = row"]
    lines.append("    obj = new(cls)")
    for i, name in enumerate(names):
        scope[f"set{i}"] = _slot(cls, name)
        restore = _restore(hints[name])[1]
        if restore is None:
            lines.append(f"    set{i}(obj, v{i})")
        else:
            scope[f"fix{i}"] = restore
            lines.append(f"    set{i}(obj, fix{i}(v{i}))")
    lines.append("    return obj")
    exec("\n".join(lines), scope)  # generated from field indices only
    return scope["make"]  # type: ignore[no-any-return]


def row_maker(
    kind: str, version: int, fields: Sequence[str], *, offset: int = 0
) -> RowMaker | None:
    """The decoder of rows in this layout, or None when this process's class of ``kind`` has
    another version or other fields (decode those through ``from_dict``, which says why).

    ``offset``: the values start at that index of the row (a sender's own tags come first).
    A row of another length raises ``ValueError``.
    """
    if not isinstance(kind, str) or not all(isinstance(f, str) for f in fields):
        return None
    key = (kind, version, tuple(fields), offset)
    try:
        return _makers[key]
    except (KeyError, TypeError):  # TypeError: an unhashable version
        pass
    cls = _lookup(kind)
    if cls is None:
        from runtime_telemetry._codec import _resolve

        try:
            cls = _resolve(kind)
        except Exception:
            cls = None
    maker = None
    if cls is not None and cls.version == version and row_fields(cls) == key[2]:
        maker = _build(cls, key[2], offset)
    if type(version) is int:
        with _lock:
            _makers[key] = maker
    return maker
