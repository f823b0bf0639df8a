"""What a client pipe batch holds decides how the courier frames it (ADR 0076, 0088).

Cheap to import (no numpy, no codec): the courier asks before it loads the codec.
"""

from __future__ import annotations

from typing import Any

from goggles_io._event.records import ShmRef
from goggles_io._event.rows import Row, RowRun, is_row, payload_of

__all__ = ["plain", "runs_only", "staged_bytes"]


def staged_bytes(row: Row) -> int:
    """The array ``row`` staged in a pool, which the host copies out: the pipe counted only its
    reference (the rest of a batch is bounded by the pipe's own batch bytes)."""
    payload = payload_of(row)
    return payload.nbytes if type(payload) is ShmRef else 0


def plain(items: list[Any], staged_any: bool = True) -> bool:
    """Whether ``items`` are all rows and none staged an array: the batch is then one run of
    rows, framed without looking at each item. Without ``staged_any`` (no slot was ever staged
    in this process) the payloads are not looked at either (measured: about 370 instructions a
    row less)."""
    if sum(map(is_row, items)) != len(items):
        return False
    return not staged_any or ShmRef not in set(map(type, map(payload_of, items)))


def runs_only(items: list[Any]) -> bool:
    """Whether ``items`` are all runs of a scalar front (ADR 0088)."""
    return set(map(type, items)) == {RowRun}
