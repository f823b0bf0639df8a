"""A bounded on-disk FIFO of byte records: where a full buffer spills (ADR 0025).

Each :class:`Spool` is a folder of segment files (``00000001.seg``...) holding records as
``u32 record length | u64 blob length | record | blobs``; a segment is unlinked once read to its
end. Every spool of a process lives in that process's folder and shares its byte budget
(:mod:`goggles_io._delivery.spool_space`). A spool is memory relief, not a durable log: records are
written with ``writev`` (no fsync) and the reader's position lives in memory; what survives a
host's death is described in ``docs/transport.md``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import struct
import threading
from collections.abc import Sequence
from pathlib import Path

from goggles_io._delivery.policy import DeliveryPolicy
from goggles_io._delivery.spool_space import (
    create_segment_file,
    remove_own_tree,
    remove_segment_file,
    spool_space,
)

__all__ = ["Blob", "Spool", "SpoolRecord"]

_HEAD = struct.Struct(">IQ")  # record bytes, blob bytes after it
Blob = bytes | bytearray | memoryview
_SEGMENT_BYTES = 8 * 1024 * 1024


class SpoolRecord:
    """One record taken from a spool: its bytes, and its blobs still on disk behind it."""

    __slots__ = ("_at", "_fd", "blob_bytes", "data")

    def __init__(self, data: bytes, fd: int, at: int, blob_bytes: int) -> None:
        self.data = data
        self.blob_bytes = blob_bytes
        self._fd = fd
        self._at = at

    def read_blob(self, offset: int, into: memoryview) -> None:
        """Copy ``len(into)`` bytes of the blobs, from ``offset``, straight into ``into``."""
        if offset < 0 or offset + len(into) > self.blob_bytes:
            msg = f"blob range {offset}+{len(into)} outside the record's {self.blob_bytes} bytes"
            raise ValueError(msg)
        done = 0
        while done < len(into):
            got = os.preadv(self._fd, [into[done:]], self._at + offset + done)
            if got <= 0:
                msg = "spool segment ended inside a blob"
                raise OSError(msg)
            done += got


class _Segment:
    __slots__ = ("fd", "path", "read_at", "reserved", "size")

    def __init__(self, path: Path, reserved: int) -> None:
        self.path = path
        self.fd = create_segment_file(path)
        self.reserved = reserved
        self.size = 0
        self.read_at = 0

    def remove(self) -> None:
        remove_segment_file(self.fd, self.path)


class Spool:
    """A FIFO of byte records on disk, created lazily on the first :meth:`append`.

    Thread-safe: producers append, one consumer pops. ``append`` returns ``False`` when the
    budget or the disk has no room (``failure`` says which); the caller then blocks or drops.
    """

    def __init__(self, label: str, policy: DeliveryPolicy) -> None:
        self.label = label
        self.policy = policy
        self.failure = ""
        self.records = 0  # records waiting
        self.nbytes = 0  # their bytes
        self._space = spool_space(policy)
        self._dir: Path | None = None
        self._segments: list[_Segment] = []
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.records

    def append(self, record: bytes | bytearray | memoryview, blobs: Sequence[Blob] = ()) -> bool:
        """Write ``record`` (and ``blobs`` after it, straight from their buffers) after the
        others; ``False`` (nothing written) when there is no room."""
        blob_bytes = sum(len(b) for b in blobs)
        need = _HEAD.size + len(record) + blob_bytes
        with self._lock:
            seg = self._segments[-1] if self._segments else None
            if seg is None or seg.size + need > seg.reserved:
                seg = self._new_segment(need)
                if seg is None:
                    return False
            head = _HEAD.pack(len(record), blob_bytes)
            try:
                _write_all(seg.fd, [head, record, *blobs])
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(seg.fd, seg.size)  # never a torn record
                self.failure = f"disk full or failing ({exc.strerror or exc})"
                return False
            seg.size += need
            self.records += 1
            self.nbytes += len(record) + blob_bytes
            return True

    def _new_segment(self, need: int) -> _Segment | None:
        if not self.policy.spills:
            self.failure = "spilling is off"
            return None
        try:
            if self._dir is None:
                folder = self._space.folder()
                self._dir = folder / f"{self.label}-{self._space.next_id()}"
                self._dir.mkdir(mode=0o700)
                self._space.opened_one()
            grant = self._space.reserve_segment(need, _SEGMENT_BYTES, self._dir)
            if grant is None:
                self.failure = (
                    f"spool budget full ({self._space.used} of {self._space.limit_bytes} bytes, "
                    f"at most a quarter of the free space)"
                )
                return None
            path = self._dir / f"{next(self._counter):08d}.seg"
            seg = _Segment(path, grant)
        except OSError as exc:
            self.failure = f"spool folder unusable ({exc})"
            return None
        self._segments.append(seg)
        return seg

    def pop(self) -> bytes | None:
        """The oldest record (without its blobs), or ``None`` when the spool is empty."""
        found = self.pop_record()
        return None if found is None else found.data

    def pop_record(self) -> SpoolRecord | None:
        """The oldest record with a way to read its blobs (valid until the next pop)."""
        with self._lock:
            while self._segments:
                seg = self._segments[0]
                if seg.read_at < seg.size:
                    n, blob_bytes = _HEAD.unpack(os.pread(seg.fd, _HEAD.size, seg.read_at))
                    data = _read_all(seg.fd, n, seg.read_at + _HEAD.size)
                    blobs_at = seg.read_at + _HEAD.size + n
                    seg.read_at = blobs_at + blob_bytes
                    self.records -= 1
                    self.nbytes -= n + blob_bytes
                    return SpoolRecord(data, seg.fd, blobs_at, blob_bytes)
                if len(self._segments) == 1:
                    # The only segment, read to its end: start it over instead of a new file.
                    os.ftruncate(seg.fd, 0)
                    seg.size = seg.read_at = 0
                    return None
                self._segments.pop(0)
                seg.remove()
                self._space.release(seg.reserved)
            return None

    def clear(self) -> int:
        """Forget every record (counted by the caller as not delivered); return how many."""
        with self._lock:
            n = self.records
            for seg in self._segments:
                seg.remove()
                self._space.release(seg.reserved)
            self._segments = []
            self.records = self.nbytes = 0
            return n

    def close(self) -> int:
        """Remove the spool's files and folder; return the records that were still waiting."""
        n = self.clear()
        with self._lock:
            folder, self._dir = self._dir, None
        if folder is not None:
            remove_own_tree(folder)
            self._space.closed_one()
        return n

    @property
    def path(self) -> Path | None:
        """The spool's folder, once something was spilled."""
        return self._dir


def _write_all(fd: int, parts: list[Blob]) -> None:
    """Write every part in order with as few calls as the kernel allows (``writev``)."""
    views = [memoryview(p).cast("B") for p in parts if len(p)]
    while views:
        written = os.writev(fd, views)
        if written <= 0:
            raise OSError(28, "short write")
        while views and written >= len(views[0]):
            written -= len(views[0])
            views.pop(0)
        if views and written:
            views[0] = views[0][written:]


def _read_all(fd: int, n: int, offset: int) -> bytes:
    data = os.pread(fd, n, offset)
    if len(data) == n:
        return data
    parts = [data]
    got = len(data)
    while got < n:
        more = os.pread(fd, n - got, offset + got)
        if not more:
            msg = f"spool segment ended inside a record ({got} of {n} bytes)"
            raise OSError(msg)
        parts.append(more)
        got += len(more)
    return b"".join(parts)
