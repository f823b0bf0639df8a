"""The points of one write of ``log.jsonl`` as column records, built a payload shape at a time.

Why: converting each value in Python as the event arrives cost the sink ~1 µs an event of 10
metrics (ADR 0080). Here an event costs one append; at the write, each run of payloads with the
same keys becomes one numpy conversion, by the rule the text reader applies to a block of the
same lines (``runs/_metric_rows.py``: plain numbers only, else the write is read as text).
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
    number or a name cannot be kept (``ids_of`` says ``None``): the write is then text only."""
    shapes = list(map(tuple, payloads))
    kinds = list(dict.fromkeys(shapes))
    if len(kinds) == 1:
        return _block(kinds[0], payloads, axes, ids_of, None)
    code = {shape: i for i, shape in enumerate(kinds)}
    ids = np.fromiter(map(code.__getitem__, shapes), dtype=np.intp, count=len(shapes))
    order = np.argsort(ids, kind="stable")
    bounds = np.searchsorted(ids[order], np.arange(len(kinds) + 1)).tolist()
    picked = order.tolist()
    blocks = []
    for k, shape in enumerate(kinds):
        events = picked[bounds[k] : bounds[k + 1]]
        block = _block(shape, [payloads[i] for i in events], axes[events], ids_of, events)
        if block is None:
            return None
        blocks.append(block)
    records = np.concatenate([b[0] for b in blocks])
    event = np.concatenate([b[1] for b in blocks])
    return records[np.argsort(event, kind="stable")]  # event order; key order within an event


def _block(
    keys: tuple[Any, ...],
    payloads: list[dict[str, Any]],
    axes: np.ndarray,
    ids_of: Callable[[tuple[Any, ...]], list[int] | None],
    events: list[int] | None,
) -> Any:
    ids = ids_of(keys)
    if ids is None:
        return None
    width, count = len(keys), len(payloads)
    try:
        flat = np.array(list(chain.from_iterable(map(dict.values, payloads))))
    except (ValueError, TypeError, OverflowError):
        return None
    if flat.ndim != 1 or flat.dtype.kind not in _NUMERIC_KINDS:
        return None  # a string, None, a list, an int beyond 64 bits: the text's rules
    out = np.empty(count * width, POINT)
    out["id"] = np.tile(np.asarray(ids, dtype=np.uint32), count)
    out["value"] = _canonical(flat.astype(np.float64))
    out["step"] = np.repeat(_canonical(axes[:, 0]), width)
    out["time"] = np.repeat(_canonical(axes[:, 1]), width)
    if events is None:
        return out
    return out, np.repeat(np.asarray(events, dtype=np.intp), width)


def _canonical(values: np.ndarray) -> np.ndarray:
    """NaN as the text reads it back (``"NaN"``: the one quiet NaN), whatever its bits were."""
    nan = np.isnan(values)
    if nan.any():
        values = np.where(nan, np.nan, values)
    return values
