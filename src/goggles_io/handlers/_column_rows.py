"""The points of one write of ``log.jsonl`` as column records, built a payload shape at a time.

Why: converting each value in Python as the event arrives cost the sink ~1 µs an event of 10
metrics (ADR 0080). Here an event costs one append; at the write, each run of payloads with the
same keys — or the whole write, when metrics take turns — is one numpy conversion, by the
rule the text reader applies to a block of lines (``runs/_metric_rows.py``: plain numbers only,
else the write is read as text).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain
from typing import Any

import numpy as np

__all__ = ["POINT", "point_records"]

POINT = np.dtype([("id", "<u4"), ("step", "<f8"), ("time", "<f8"), ("value", "<f8")], align=False)
_NUMERIC_KINDS = frozenset("fiub")  # float, int, unsigned, bool: what the text reads as numbers


def point_records(
    payloads: list[dict[str, Any]],
    axes: np.ndarray,
    ids_of: Callable[[tuple[Any, ...]], list[int] | None],
) -> np.ndarray | None:
    """The records of ``payloads`` (non-empty dicts) in event order, each event's points in key
    order; ``axes``: each event's step and time (n x 2). ``None`` when a value is not a plain
    number or a name cannot be kept (``ids_of`` says ``None``): the write is then text only.
    Converting a whole write at once may refuse more than the text reader's blocks would
    (a string anywhere), never less."""
    count = len(payloads)
    first = list(payloads[0])
    keys = list(chain.from_iterable(payloads))
    values = _floats(list(chain.from_iterable(map(dict.values, payloads))))
    if values is None:
        return None
    out = np.empty(len(keys), POINT)
    if keys == first * count:  # a dict logged whole every step: its ids once
        ids = ids_of(tuple(first))
        if ids is None:
            return None
        out["id"] = np.tile(np.asarray(ids, dtype=np.uint32), count)
        widths: Any = len(first)
    else:  # metrics taking turns, or mixed shapes: one look-up a point
        distinct = tuple(dict.fromkeys(keys))
        ids = ids_of(distinct)
        if ids is None:
            return None
        out["id"] = np.fromiter(map(dict(zip(distinct, ids, strict=True)).__getitem__, keys),
                                dtype=np.uint32, count=len(keys))  # fmt: skip
        widths = list(map(len, payloads))
    out["value"] = values
    out["step"] = np.repeat(_canonical(axes[:, 0]), widths)
    out["time"] = np.repeat(_canonical(axes[:, 1]), widths)
    return out


def _floats(values: list[Any]) -> np.ndarray | None:
    """``values`` as float64 when every one is a plain number (as the text reads a block of
    them), else ``None``."""
    try:
        flat = np.array(values)
    except (ValueError, TypeError, OverflowError):
        return None
    if flat.ndim != 1 or flat.dtype.kind not in _NUMERIC_KINDS:
        return None  # a string, None, a list, an int beyond 64 bits: the text's rules
    return _canonical(flat.astype(np.float64))


def _canonical(values: np.ndarray) -> np.ndarray:
    """NaN as the text reads it back (``"NaN"``: the one quiet NaN), whatever its bits were."""
    nan = np.isnan(values)
    if nan.any():
        values = np.where(nan, np.nan, values)
    return values
