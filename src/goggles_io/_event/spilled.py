"""Rows as spool records: the wire codec, with big arrays written beside it, not inside.

A spilled list of rows is one ``Batch`` message in which each array of at least 4 KiB is a reference
(``ShmRef`` with an empty segment name) to its bytes written after the message, straight from
the array's own buffer (``writev``); reading copies them straight into new arrays (``preadv``).
So spilling a 1 MiB image costs the kernel's copy and nothing else, and no large temporary
buffer is made on either side (large temporaries fragment the heap of a long-lived process).
References to the producer's shared-memory pool (a named segment) stay references.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

import numpy as np

from goggles_io._event.codec import Batch, Decoder, Encoder
from goggles_io._event.records import ShmRef
from goggles_io._event.rows import Row
from goggles_io.exceptions import FrameError

__all__ = ["BlobSource", "SpillEncoder", "decode_spilled"]

_BLOB_MIN_BYTES = 4096


class BlobSource(Protocol):
    """Where a record's blobs are read from (a :class:`~goggles_io._delivery.spool.SpoolRecord`)."""

    data: bytes

    def read_blob(self, offset: int, into: memoryview) -> None:
        """Copy ``len(into)`` blob bytes from ``offset`` into ``into``."""


class _Blobs:
    """An array pool for the encoder that keeps arrays aside as blobs, in order."""

    def __init__(self) -> None:
        self.parts: list[memoryview] = []
        self.size = 0

    def put(self, array: np.ndarray) -> ShmRef:
        a = np.ascontiguousarray(array)
        ref = ShmRef("", self.size, int(a.nbytes), a.dtype.str, tuple(a.shape))
        self.parts.append(a.reshape(-1).view(np.uint8).data)
        self.size += int(a.nbytes)
        return ref


class _BlobReader:
    """Read references back: blobs into new arrays; shared-memory ones kept as references."""

    def __init__(self, source: BlobSource) -> None:
        self.source = source

    def read(self, ref: ShmRef) -> Any:
        if ref.segment:
            return ref  # a slot of the producer's pool: the sender sends the reference on
        out = np.empty(ref.shape, dtype=np.dtype(ref.dtype))
        if out.nbytes != ref.nbytes:
            msg = f"spilled array {ref!r} does not match its shape and dtype"
            raise FrameError(msg, value=ref)
        if out.nbytes:
            self.source.read_blob(ref.offset, out.reshape(-1).view(np.uint8).data)
        return out


class SpillEncoder:
    """Encode lists for a spool, one encoder kept per spool (an encoder is costly to make, and
    its packer refers back to it: a fresh one per list would live until the cyclic GC ran,
    holding the list's arrays)."""

    def __init__(self) -> None:
        self._encoder = Encoder(_BLOB_MIN_BYTES)
        self._lock = threading.Lock()

    def encode(
        self, rows: list[Row], producer: str = "", first: int = 0
    ) -> tuple[bytes, list[memoryview]]:
        """``rows`` as one record and its blobs, numbered from ``first`` in ``producer``'s
        stream when given (ADR 0057); raises TypeError for what cannot be encoded (ValueError
        for a row of another shape)."""
        blobs = _Blobs()
        with self._lock:
            self._encoder.pool = blobs
            try:
                batch = Batch(0, rows, False, producer, first if producer else 0)
                return self._encoder.encode(batch), blobs.parts
            finally:
                self._encoder.pool = None
                self._encoder.refs = []
                self._encoder.created = []


def decode_spilled(source: BlobSource) -> list[Row]:
    """The rows of a record written by :meth:`SpillEncoder.encode`; raises FrameError if damaged."""
    message = Decoder(_BlobReader(source)).decode(source.data)
    if type(message) is not Batch:
        msg = f"a spool record holds a {type(message).__name__}, not a batch"
        raise FrameError(msg, value=type(message).__name__)
    return message.rows
