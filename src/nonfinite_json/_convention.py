"""The convention's encoder and decoder (the package doc says what it is)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["NONFINITE_KEY", "dumps", "loads", "plain", "restore"]

NONFINITE_KEY = "_nonfinite"
"""The key of the list of paths where a document's non-finite numbers stood."""

_TEXT = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}

Path = list[Any]


def _marker(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def plain(
    value: Any,
    default: Callable[[Any], Any] | None = None,
    where: Path | None = None,
    found: list[Path] | None = None,
) -> tuple[Any, list[Path]]:
    """``value`` as strict-JSON builtins, and the paths where non-finite floats were replaced.

    ``default`` turns any other object into something JSON can hold (it is then converted in
    turn); without it such objects raise ``TypeError``, as in ``json.dumps``.
    """
    paths: list[Path] = [] if found is None else found
    return _plain(value, default, [] if where is None else where, paths), paths


def _plain(value: Any, default: Callable[[Any], Any] | None, where: Path, found: list[Path]) -> Any:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        found.append(list(where))
        return _marker(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v, default, [*where, str(k)], found) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, default, [*where, i], found) for i, v in enumerate(value)]
    if default is None:
        msg = f"Object of type {type(value).__name__} is not JSON serializable"
        raise TypeError(msg)
    return _plain(default(value), default, where, found)


def dumps(
    obj: Any,
    *,
    default: Callable[[Any], Any] | None = None,
    ensure_ascii: bool = True,
    separators: tuple[str, str] | None = None,
    indent: int | None = None,
) -> str:
    """``obj`` as strict JSON text, its non-finite floats in the convention (module doc).

    The ``_nonfinite`` list is the object's last key; an object that holds none has no such key.

    Raises:
        TypeError: an object JSON cannot hold, and no ``default`` for it.
        ValueError: ``obj`` already has a ``_nonfinite`` key (it would be ambiguous).
    """
    if isinstance(obj, Mapping) and NONFINITE_KEY in obj:
        msg = f"a document may not hold its own {NONFINITE_KEY!r} key (it is the convention's)"
        raise ValueError(msg)
    if default is None:
        try:  # most documents hold no NaN: the C encoder alone, no walk in Python
            return json.dumps(
                obj, ensure_ascii=ensure_ascii, separators=separators, indent=indent,
                allow_nan=False,
            )  # fmt: skip
        except ValueError:
            pass
    value, found = plain(obj, default)
    if found and isinstance(value, dict):
        value[NONFINITE_KEY] = found
    return json.dumps(
        value, ensure_ascii=ensure_ascii, separators=separators, indent=indent, allow_nan=False
    )


def restore(obj: Any) -> Any:
    """Pop ``obj``'s ``_nonfinite`` list (if ``obj`` is a dict) and put the floats back, in place.

    A path that does not lead to one of the three strings (a hand-edited line) is ignored.
    Returns ``obj``.
    """
    if not isinstance(obj, dict):
        return obj
    paths = obj.pop(NONFINITE_KEY, None)
    if not isinstance(paths, list):
        return obj
    for where in paths:
        if not isinstance(where, list) or not where:
            continue
        parent: Any = obj
        try:
            for key in where[:-1]:
                parent = parent[key]
            text = parent[where[-1]]
            if isinstance(text, str) and text in _TEXT:
                parent[where[-1]] = _TEXT[text]
        except (KeyError, IndexError, TypeError):
            continue
    return obj


def loads(text: str | bytes) -> Any:
    """Parse one document (strict JSON, or the bare ``NaN`` of older files) and :func:`restore` it.

    Raises:
        ValueError: not JSON (``json.JSONDecodeError``) or, for bytes, not UTF-8.
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    return restore(json.loads(text))
