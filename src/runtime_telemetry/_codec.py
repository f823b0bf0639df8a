"""The one cattrs converter: schemas to tagged plain dicts and JSON lines, and back."""

from __future__ import annotations

import base64
import importlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Union, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import ForbiddenExtraKeysError

import nonfinite_json
from runtime_telemetry._schema import TelemetrySchema, _lookup
from runtime_telemetry.exceptions import (
    SchemaDecodeError,
    SchemaEncodeError,
    SchemaTypeError,
    UnknownKindError,
)

__all__ = ["from_dict", "from_json", "read_jsonl", "to_dict", "to_json", "write_jsonl"]

_TAGS = ("kind", "version")
_ARRAY_KEYS = frozenset({"dtype", "shape", "data"})
_SHIPPED_VOCABULARY = "runtime_telemetry.events"
PathOrFile = Union[str, "os.PathLike[str]", IO[str]]


class _ArrayEncodeError(ValueError):
    def __init__(self, msg: str, array: Any) -> None:
        super().__init__(msg)
        self.array = array


def _is_ndarray_type(type_: Any) -> bool:
    """True for ``numpy.ndarray`` and ``NDArray[...]``, without importing numpy."""
    cls = get_origin(type_) or type_
    return getattr(cls, "__module__", None) == "numpy" and getattr(cls, "__name__", "") == "ndarray"


def _unstructure_array(array: Any) -> dict[str, Any]:
    dtype = array.dtype
    if dtype.hasobject or dtype.fields is not None:
        msg = f"arrays of dtype {dtype!r} cannot be encoded losslessly; use a plain numeric dtype."
        raise _ArrayEncodeError(msg, array)
    data = base64.b64encode(array.tobytes(order="C")).decode("ascii")
    return {"dtype": dtype.str, "shape": list(array.shape), "data": data}


def _structure_array(value: Any, _type: Any) -> Any:
    import numpy as np

    if not isinstance(value, Mapping) or set(value) != _ARRAY_KEYS:
        msg = f"expected an encoded array {{dtype, shape, data}}, got {value!r}"
        raise ValueError(msg)
    dtype, shape, data = value["dtype"], value["shape"], value["data"]
    if not isinstance(dtype, str) or not isinstance(data, str):
        msg = f"expected str dtype and data, got dtype={dtype!r}, data={type(data).__name__}"
        raise ValueError(msg)
    if not isinstance(shape, (list, tuple)) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
    ):
        msg = f"expected shape as a list of ints >= 0, got {shape!r}"
        raise ValueError(msg)
    try:
        np_dtype = np.dtype(dtype)
        raw = base64.b64decode(data, validate=True)
        array = np.frombuffer(raw, dtype=np_dtype).reshape(shape)
    except (TypeError, ValueError) as exc:
        msg = f"cannot rebuild an array of dtype {dtype!r} and shape {shape!r}: {exc}"
        raise ValueError(msg) from None
    if np_dtype.hasobject:
        msg = f"refusing to decode an object array (dtype {dtype!r})"
        raise ValueError(msg)
    return array.copy()


def _strict(expected: type, accept: tuple[type, ...]) -> Callable[[Any, Any], Any]:
    """A scalar hook that refuses lossy coercions (``"3"`` -> 3, ``True`` -> 1, ``2.5`` -> 2)."""

    def structure(value: Any, _type: Any) -> Any:
        if type(value) is expected:  # the usual case, and ``expected(value)`` would be ``value``
            return value
        if isinstance(value, bool) and expected is not bool:
            ok = False
        else:
            ok = isinstance(value, accept)
        if not ok:
            msg = f"expected {expected.__name__}, got {value!r} ({type(value).__name__})"
            raise TypeError(msg)
        return expected(value)

    structure.exact_type = expected  # type: ignore[attr-defined]  # see _make_sequence_hook
    return structure


def _is_sequence_type(type_: Any) -> bool:
    return get_origin(type_) in (tuple, list)


def _make_sequence_hook(type_: Any, converter: cattrs.Converter) -> Callable[[Any, Any], Any]:
    """Lists and tuples, item by item; refuses strings and mappings (cattrs would iterate them)."""
    origin, args = get_origin(type_), get_args(type_)
    homogeneous = origin is list or (len(args) == 2 and args[1] is Ellipsis)
    item_types = args[:1] if homogeneous else args
    hooks = [converter.get_structure_hook(arg) for arg in item_types]
    build = list if origin is list else tuple
    # Items of scalar types (``_strict`` hooks) that already have their exact type come back
    # unchanged from their hook: such a sequence is built as it is, without a call per item.
    exact = tuple(getattr(hook, "exact_type", None) for hook in hooks)
    plain = None not in exact

    def structure(value: Any, _type: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            msg = f"expected a list, got {value!r} ({type(value).__name__})"
            raise TypeError(msg)
        if not homogeneous and len(value) != len(hooks):
            msg = f"expected {len(hooks)} items, got {len(value)}: {value!r}"
            raise ValueError(msg)
        if plain and (
            all(type(item) is exact[0] for item in value)
            if homogeneous
            else all(type(item) is want for item, want in zip(value, exact, strict=True))
        ):
            return build(value)
        items = []
        for index, item in enumerate(value):
            slot = 0 if homogeneous else index
            try:
                items.append(hooks[slot](item, item_types[slot]))
            except (TypeError, ValueError) as exc:
                msg = f"item [{index}]: {exc}"
                raise type(exc)(msg) from None
        return build(items)

    return structure


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(
        forbid_extra_keys=True, unstruct_collection_overrides={Sequence: list}
    )
    converter.register_structure_hook(int, _strict(int, (int,)))
    converter.register_structure_hook(float, _strict(float, (int, float)))
    converter.register_structure_hook(str, _strict(str, (str,)))
    converter.register_structure_hook(bool, _strict(bool, (bool,)))
    converter.register_structure_hook_factory(
        _is_sequence_type, lambda t: _make_sequence_hook(t, converter)
    )
    converter.register_unstructure_hook_func(_is_ndarray_type, _unstructure_array)
    converter.register_structure_hook_func(_is_ndarray_type, _structure_array)
    return converter


_converter = _make_converter()


def to_dict(schema: TelemetrySchema) -> dict[str, Any]:
    """Encode ``schema`` as a JSON-ready dict tagged with ``kind`` and ``version`` (first keys).

    Raises:
        SchemaTypeError: ``schema`` is not a schema instance.
        SchemaEncodeError: a field holds an array with an object or structured dtype.
    """
    cls = type(schema)
    if not isinstance(schema, TelemetrySchema) or _lookup(cls.kind) is not cls:
        msg = f"schema must be an instance of a concrete TelemetrySchema class (got {schema!r})."
        raise SchemaTypeError(msg, schema)
    try:
        fields = _converter.unstructure(schema, unstructure_as=cls)
    except _ArrayEncodeError as exc:
        name = next(
            (f.name for f in attrs.fields(cls) if getattr(schema, f.name) is exc.array), "?"
        )
        msg = f"cannot encode field {name!r} of kind {cls.kind!r}: {exc}"
        raise SchemaEncodeError(msg, cls.kind, name) from None
    return {"kind": cls.kind, "version": cls.version, **fields}


def _describe(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, ForbiddenExtraKeysError):
        return f"unexpected field(s) {sorted(exc.extra_fields)!r}"
    return str(exc) or type(exc).__name__


def _resolve(kind: Any) -> type[TelemetrySchema]:
    cls = _lookup(kind) if isinstance(kind, str) else None
    if cls is None and isinstance(kind, str):
        # The shipped vocabulary decodes without the caller importing it first.
        importlib.import_module(_SHIPPED_VOCABULARY)
        cls = _lookup(kind)
    if cls is None:
        msg = (
            f"unknown kind {kind!r}: no schema class registers it; import the module that "
            f"defines it before decoding."
        )
        raise UnknownKindError(msg, kind)
    return cls


def from_dict(data: Mapping[str, Any]) -> TelemetrySchema:
    """Decode a dict made by ``to_dict`` back into its schema class.

    Raises:
        UnknownKindError: no class is registered under ``data["kind"]``.
        SchemaDecodeError: a tag or field is missing, unexpected or ill-typed; the message and
            the ``kind``/``field`` attributes name it.
    """
    if not isinstance(data, Mapping):
        msg = f"data must be a mapping made by to_dict() (got {data!r})."
        raise SchemaTypeError(msg, data)
    for tag in _TAGS:
        if tag not in data:
            msg = f"data has no {tag!r} tag (got keys {sorted(map(str, data))!r})."
            raise SchemaDecodeError(msg, data.get("kind"), tag)
    cls = _resolve(data["kind"])
    if data["version"] != cls.version:
        msg = (
            f"kind {cls.kind!r} has version {data['version']!r} in the data, but this code "
            f"defines version {cls.version!r}."
        )
        raise SchemaDecodeError(msg, cls.kind, "version")
    fields = {k: v for k, v in data.items() if k not in _TAGS}
    try:
        return _converter.structure(fields, cls)
    except cattrs.BaseValidationError as exc:
        errors = [
            error.rpartition(" @ ")[::-2]  # (path, description)
            for error in cattrs.transform_error(exc, path="", format_exception=_describe)
        ]
        field = _first_field(exc, errors[0][0])
        details = "; ".join(f"{path.lstrip('.') or 'fields'}: {what}" for path, what in errors)
        msg = f"cannot decode kind {cls.kind!r}: {details}"
        raise SchemaDecodeError(msg, cls.kind, field) from None


def _first_field(exc: cattrs.BaseValidationError, path: str) -> str | None:
    """``.possible_matches[1]`` -> ``possible_matches``; extra keys name the first one."""
    name = re.split(r"[.\[]", path.lstrip("."), maxsplit=1)[0]
    if name:
        return name
    extra = [e for e in exc.exceptions if isinstance(e, ForbiddenExtraKeysError)]
    return sorted(extra[0].extra_fields)[0] if extra else None


def to_json(schema: TelemetrySchema) -> str:
    """One compact line (no newline) of strict JSON for ``schema``.

    A non-finite float is the string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``, and the
    line's last key ``_nonfinite`` lists where (:mod:`nonfinite_json`, the one convention of
    every file the project writes); :func:`from_json` turns exactly those back into floats.
    """
    return nonfinite_json.dumps(to_dict(schema), separators=(",", ":"))


def from_json(line: str | bytes) -> TelemetrySchema:
    """Decode one JSON line made by ``to_json`` (or by an older version: bare ``NaN`` is read).

    Raises:
        SchemaDecodeError: the line is not a JSON object, or does not decode (see ``from_dict``).
    """
    try:
        data = nonfinite_json.loads(line)
    except ValueError as exc:
        msg = f"line is not valid JSON ({exc}): {line[:80]!r}"
        raise SchemaDecodeError(msg, None, None) from None
    if not isinstance(data, dict):
        msg = f"line must hold a JSON object, got {line[:80]!r}"
        raise SchemaDecodeError(msg, None, None)
    return from_dict(data)


def write_jsonl(schemas: Iterable[TelemetrySchema], file: PathOrFile) -> int:
    """Append one JSON line per schema to ``file`` (a path or a text file); return the count."""
    if isinstance(file, (str, os.PathLike)):
        with Path(file).open("a", encoding="utf-8") as fp:
            return write_jsonl(schemas, fp)
    count = 0
    for schema in schemas:
        file.write(to_json(schema) + "\n")
        count += 1
    return count


def read_jsonl(file: PathOrFile) -> Iterator[TelemetrySchema]:
    """Yield the schemas in a JSON-lines ``file`` (path or text file), skipping blank lines.

    Raises:
        SchemaDecodeError: a line does not decode; the message gives its 1-based line number.
    """
    if isinstance(file, (str, os.PathLike)):
        with Path(file).open(encoding="utf-8") as fp:
            yield from read_jsonl(fp)
        return
    for number, line in enumerate(file, start=1):
        if not line.strip():
            continue
        try:
            yield from_json(line)
        except SchemaDecodeError as exc:
            msg = f"line {number}: {exc}"
            raise SchemaDecodeError(msg, exc.kind, exc.field) from None
        except UnknownKindError as exc:
            msg = f"line {number}: {exc}"
            raise UnknownKindError(msg, exc.kind) from None
