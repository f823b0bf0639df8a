"""A lane's items as spool records: rows and whole lists of rows, each in its place.

A handler lane's pipe spills what its memory budget cannot hold (ADR 0025). Its items are
single rows (``offer``), lists (the socket host's ``offer_rows``) and redelivered lists; a
record is one ``Batch`` of all their rows (:mod:`goggles_io._event.spilled`: big arrays beside
it, not inside), after a short header of each item's shape, so reading it back gives the same
rows, the same lists, the same redelivered marks. Controls are refused (``TypeError``): the pipe
keeps them in memory, in order.
"""

from __future__ import annotations

import struct
import threading
from typing import TYPE_CHECKING

from goggles_io._bus.items import LaneItem, Redelivered
from goggles_io._delivery.spool import SpoolRecord
from goggles_io._event.rows import Row, is_row

if TYPE_CHECKING:
    from goggles_io._event.spilled import SpillEncoder

__all__ = ["LaneCodec"]

_HEAD = struct.Struct("<I")  # the header's length


class _Body:
    """The record after its header, with the record's blobs (what ``decode_spilled`` reads)."""

    __slots__ = ("_record", "data")

    def __init__(self, data: bytes, record: SpoolRecord) -> None:
        self.data = data
        self._record = record

    def read_blob(self, offset: int, into: memoryview) -> None:
        self._record.read_blob(offset, into)


class LaneCodec:
    """Encode a lane's items for its spool; the wire encoder is made on the first spill (it
    imports numpy and msgpack, which a lane that never spills need not)."""

    def __init__(self) -> None:
        self._encoder: SpillEncoder | None = None
        self._lock = threading.Lock()

    def encode(self, items: list[LaneItem]) -> tuple[bytes, list[memoryview]]:
        """One record of ``items``; ``TypeError`` for a control."""
        shape: list[int] = []  # 0: one row; n: a list of n; -n: a redelivered list of n
        rows: list[Row] = []
        for item in items:
            cls = item.__class__
            if is_row(item):
                shape.append(0)
                rows.append(item)  # type: ignore[arg-type]
            elif cls is list or cls is Redelivered:
                shape.append(len(item) if cls is list else -len(item))  # type: ignore[arg-type]
                rows.extend(item)  # type: ignore[arg-type]
            else:
                msg = f"a lane's {cls.__name__} item stays in memory"
                raise TypeError(msg)
        import msgpack

        head = msgpack.packb(shape)
        record, blobs = self._wire().encode(rows)
        return b"".join((_HEAD.pack(len(head)), head, record)), blobs

    def decode(self, record: SpoolRecord) -> list[LaneItem]:
        """The items of a record written by :meth:`encode`; ``ValueError`` when damaged."""
        import msgpack

        from goggles_io._event.spilled import decode_spilled

        data = record.data
        try:
            (n,) = _HEAD.unpack_from(data)
        except struct.error as exc:
            raise ValueError(str(exc)) from exc
        shape = msgpack.unpackb(data[_HEAD.size : _HEAD.size + n])
        rows = decode_spilled(_Body(data[_HEAD.size + n :], record))  # FrameError: a ValueError
        if not isinstance(shape, list) or sum(abs(s) or 1 for s in shape) != len(rows):
            msg = "a spilled record's rows do not match its header"
            raise ValueError(msg)
        items: list[LaneItem] = []
        at = 0
        for s in shape:
            if s == 0:
                items.append(rows[at])
                at += 1
            else:
                part = rows[at : at + abs(s)]
                items.append(part if s > 0 else Redelivered(part))
                at += abs(s)
        return items

    def _wire(self) -> SpillEncoder:
        if self._encoder is None:
            from goggles_io._event.spilled import SpillEncoder

            with self._lock:
                if self._encoder is None:
                    self._encoder = SpillEncoder()
        return self._encoder
