"""Columns a JSONL sink keeps beside its file, so that the dashboard indexes a run without
parsing its text (ADR 0080).

Parsing ``log.jsonl`` costs the dashboard ~1 µs a point for ``logger.scalar``'s one metric a
line (ADR 0074); the sink that writes the line already holds each point's name, step, time and
value. Beside ``log.jsonl`` it also appends::

    .log.jsonl.pts      one 28-byte record a point: metric id (u4), step, time, value (f8)
    .log.jsonl.names    the metric names, one JSON string a line (the id is the line number)
    .log.jsonl.chunks   a 32-byte header (magic, the log's inode, the digest), then one 48-byte
                        record a write of the log: its bytes [start, end), the points and names
                        it ends with, the digest of its text and that of its points (seeded
                        with the digest of the names it may use)

The digest is XXH3-64 (``xxhash``, ~20x faster than CRC-32 here: the reader digests every byte
of text it takes as columns) when it is installed, else CRC-32 (``zlib``); the header says which.

A chunk is written after its text, its points and its names: it is the commit. Only writes whose
every line is a plain metric (a dict of int/float values, no custom x axis, no caller-given time)
or a log line get a chunk; any other write is a gap the reader parses as text. The text stays
the source of truth: on open, after the log's own recovery (a torn line cut, a write the
sequence log says did not land), chunks that reach past the log's end are cut, and points and
names past the last chunk with them. The reader (``server/ui/_sidecar.py``) checks everything
again and falls back to the text for whatever does not hold.

One writer at a time keeps columns: it holds an ``flock`` on the chunks file; another sink
writing the same log (a second process) writes text only, its lines are gaps. A chunk records
where its write landed (the descriptor's offset after one ``O_APPEND`` write), never where it
was expected to land.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import struct
import zlib
from array import array
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from goggles_io._event.records import Event, Kind
from goggles_io._util.append_file import open_regular_fd, write_all
from goggles_io._util.report import report
from goggles_io.handlers._column_rows import POINT, point_records

__all__ = [
    "CHUNK",
    "CRC32",
    "DEFAULT_DIGEST",
    "DIGESTS",
    "HEADER",
    "HEADER_BYTES",
    "MAGIC",
    "MAX_NAMES_BYTES",
    "POINT",
    "XXH3",
    "ColumnWriter",
    "Digest",
    "column_paths",
    "digest",
]

MAGIC = b"STCOLS01"
HEADER = np.dtype([("magic", "S8"), ("ino", "<u8"), ("digest", "<u8"), ("reserved", "<u8")])
HEADER_BYTES = HEADER.itemsize  # 32
CHUNK = np.dtype(
    [("start", "<u8"), ("end", "<u8"), ("pts", "<u8"), ("names", "<u8"), ("text", "<u8"),
     ("points", "<u8")]
)  # fmt: skip
_CHUNK_RECORD = struct.Struct("<6Q")  # CHUNK, packed without numpy (one a write)
assert _CHUNK_RECORD.size == CHUNK.itemsize
CRC32, XXH3 = 1, 2  # the header's digest
MAX_NAMES_BYTES = 64 << 20  # a longer names file is not ours
MAX_CHUNKS_BYTES = 256 << 20  # 48 bytes a write of >= 64 KiB: a 350 GB log
_NAN = math.nan


class Digest:
    """A running digest of a byte stream (:func:`digest` of all of it so far)."""

    def __init__(self, kind: int) -> None:
        self.kind = kind
        self.value = 0
        self._xxh = _xxh3_state() if kind == XXH3 else None

    def update(self, data: bytes | memoryview) -> int:
        if self._xxh is not None:
            self._xxh.update(data)
            self.value = self._xxh.intdigest()
        else:
            self.value = zlib.crc32(data, self.value)
        return self.value


def digest(kind: int, data: bytes | memoryview, seed: int = 0) -> int:
    """The digest ``kind`` of ``data`` (XXH3-64 with ``seed``, or CRC-32 continuing ``seed``)."""
    if kind == XXH3:
        return _xxh3_digest(data, seed)
    return zlib.crc32(data, seed & 0xFFFFFFFF)


def _xxh3() -> tuple[Callable[..., int] | None, Callable[[], Any] | None]:
    try:  # a dependency of the [ui] and [wandb] extras; CRC-32 where it is missing
        import xxhash
    except ImportError:  # pragma: no cover - depends on the environment
        return None, None
    return xxhash.xxh3_64_intdigest, xxhash.xxh3_64


_XXH3_FN, _XXH3_STATE = _xxh3()
DEFAULT_DIGEST = XXH3 if _XXH3_FN is not None else CRC32
DIGESTS = frozenset({CRC32, XXH3} if _XXH3_FN is not None else {CRC32})
"""The digests this process can check."""


def _xxh3_digest(data: bytes | memoryview, seed: int) -> int:
    assert _XXH3_FN is not None
    return _XXH3_FN(data, seed)


def _xxh3_state() -> Any:
    assert _XXH3_STATE is not None
    return _XXH3_STATE()


def column_paths(data: Path) -> tuple[Path, Path, Path]:
    """``(points, names, chunks)`` beside ``data``."""
    return tuple(data.with_name(f".{data.name}.{ext}") for ext in ("pts", "names", "chunks"))  # type: ignore[return-value]


class ColumnWriter:
    """The columns of one JSONL file, written with its writes (see the module doc).

    Use: :meth:`open` after the log's recovery, :meth:`add` for each event before its line is
    buffered, :meth:`landed` after a write of the log, :meth:`discard` after a failed one.
    Failures of the column files are reported once and turn the columns off: the text is whole.
    """

    def __init__(self, data: Path, owner: str) -> None:
        self.data = data
        self.owner = owner
        self.pts_path, self.names_path, self.chunks_path = column_paths(data)
        self.active = False
        self._deferred = False  # the files are made at the first write with points
        self._data_fd = -1
        self._fds: tuple[int, int, int] | None = None
        self._ids: dict[str, int] = {}
        self._pts = 0  # points in the points file
        self._names = Digest(DEFAULT_DIGEST)  # of the names file's bytes
        self._new_names: list[bytes] = []
        self._dirty = False
        self._payloads: list[dict[str, Any]] = []  # of the events with points, in order
        self._axes: array[float] = array("d")  # step, time of each of them

    # -- open / close -------------------------------------------------------------------------
    def open(self, data_fd: int) -> None:
        """Take the columns' lock and make them hold no more than the log (open as ``data_fd``);
        columns that do not exist yet are made at the first write that has any."""
        self.close()
        self._data_fd = data_fd
        self.active = True
        if not os.path.lexists(self.chunks_path):
            self._deferred = True  # nothing to recover: no file before there is a point
            return
        self._open_files()

    def _open_files(self) -> None:
        self._deferred = False
        fds: list[int] = []
        try:
            for path in (self.pts_path, self.names_path, self.chunks_path):
                fds.append(open_regular_fd(path, os.O_RDWR | os.O_CREAT))
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            self._off(f"cannot open its column files ({exc.strerror or exc})")
            return
        try:
            fcntl.flock(fds[2], fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another writer keeps them: our lines are text only
            for fd in fds:
                os.close(fd)
            self.active = False
            return
        self._fds = (fds[0], fds[1], fds[2])
        try:
            self._recover(os.fstat(self._data_fd))
        except OSError as exc:
            self._off(f"cannot recover its column files ({exc.strerror or exc})")
            return

    def _recover(self, info: os.stat_result) -> None:
        assert self._fds is not None
        pts_fd, names_fd, chunks_fd = self._fds
        head = os.pread(chunks_fd, HEADER_BYTES, 0)
        header = np.frombuffer(head, HEADER) if len(head) == HEADER_BYTES else None
        if (
            header is None
            or header["magic"][0] != MAGIC
            or int(header["ino"][0]) != info.st_ino
            or int(header["digest"][0]) not in DIGESTS
        ):
            self._reset(info.st_ino)  # absent, foreign, or another log's (the log was replaced)
            return
        size = os.fstat(chunks_fd).st_size - HEADER_BYTES
        if size > MAX_CHUNKS_BYTES:
            self._reset(info.st_ino)
            return
        records = size // CHUNK.itemsize
        chunks = np.frombuffer(os.pread(chunks_fd, records * CHUNK.itemsize, HEADER_BYTES), CHUNK)
        try:
            names = self._read_names(names_fd)
            ids = {json.loads(n): i for i, n in enumerate(names)}
        except ValueError:  # not ours, or damaged: the columns start again from here
            self._reset(info.st_ino)
            return
        if len(ids) != len(names) or not all(type(n) is str for n in ids):
            self._reset(info.st_ino)
            return
        keep, last_end, pts, have_names = 0, 0, 0, 0
        pts_size = os.fstat(pts_fd).st_size // POINT.itemsize
        for rec in chunks.tolist():
            start, end, rec_pts, rec_names = rec[0], rec[1], rec[2], rec[3]
            if not (last_end <= start < end <= info.st_size and pts <= rec_pts <= pts_size
                    and have_names <= rec_names <= len(names)):  # fmt: skip
                break
            keep, last_end, pts, have_names = keep + 1, end, rec_pts, rec_names
        os.ftruncate(chunks_fd, HEADER_BYTES + keep * CHUNK.itemsize)
        os.ftruncate(pts_fd, pts * POINT.itemsize)
        names = names[:have_names]
        os.ftruncate(names_fd, sum(len(n) for n in names))
        self._names = Digest(int(header["digest"][0]))
        self._names.update(b"".join(names))
        self._ids = {n: i for n, i in ids.items() if i < have_names}
        self._pts = pts

    def _read_names(self, fd: int) -> list[bytes]:
        size = os.fstat(fd).st_size
        if size > MAX_NAMES_BYTES:
            raise ValueError("the names file is too long to be ours")
        data = os.pread(fd, size, 0)
        lines = data.split(b"\n")[:-1]  # the last piece is empty or torn
        return [line + b"\n" for line in lines]

    def _reset(self, ino: int) -> None:
        assert self._fds is not None
        for fd in self._fds:
            os.ftruncate(fd, 0)
        header = np.zeros(1, HEADER)
        header["magic"], header["ino"], header["digest"] = MAGIC, ino, DEFAULT_DIGEST
        os.pwrite(self._fds[2], header.tobytes(), 0)
        self._ids, self._pts, self._names = {}, 0, Digest(DEFAULT_DIGEST)

    def close(self) -> None:
        """Close the column files (their lock goes with them)."""
        self.discard()
        self.active = self._deferred = False
        fds, self._fds = self._fds, None
        for fd in fds or ():
            os.close(fd)

    def _off(self, why: str) -> None:
        self.close()
        report(f"{self.owner}: {why}; the dashboard reads {self.data} as text")

    # -- writes -------------------------------------------------------------------------------
    def add(self, event: Event) -> None:
        """Keep ``event``'s points for the next write; an event that is not a plain metric (or a
        log line) makes that write text only."""
        if not self.active or self._dirty:
            return
        kind = event.kind
        if kind is not Kind.METRIC:
            if kind is not Kind.LOG:
                self._dirty = True
            return
        payload, stamp, extra = event.payload, event.timestamp, event.extra
        if (
            type(payload) is not dict
            or event.time is not None
            or (type(stamp) is not float and type(stamp) is not int)
            or (extra and _custom_x(extra))
        ):
            self._dirty = True
            return
        if payload:
            step = event.step
            self._payloads.append(payload)
            self._axes.append(float(step) if type(step) is int else _NAN)
            self._axes.append(stamp)

    def _ids_of(self, keys: tuple[Any, ...]) -> list[int] | None:
        """The ids of ``keys`` (new names given one), ``None`` when one cannot be kept."""
        ids = self._ids
        got = [ids.get(key, -1) for key in keys]
        if -1 in got:
            got = [self._name(key) if i < 0 else i for key, i in zip(keys, got, strict=True)]
            if -1 in got:
                return None
        return got

    def _name(self, name: Any) -> int:
        if type(name) is not str:
            return -1
        try:
            name.encode("utf-8")  # a lone surrogate reads back otherwise: text
        except UnicodeEncodeError:
            return -1
        key = len(self._ids)
        self._ids[name] = key
        self._new_names.append((json.dumps(name) + "\n").encode("ascii"))
        return key

    def discard(self) -> None:
        """Forget what was kept for a write (it failed, or holds other lines)."""
        if self._new_names:  # names given ids but never written: forget them too
            for _ in self._new_names:
                self._ids.popitem()
            self._new_names = []
        self._dirty = False
        if self._payloads:  # a new array: numpy may still view the old one
            self._payloads, self._axes = [], array("d")

    def landed(self, end: int | None, data: bytes) -> None:
        """The write of ``data`` ended at offset ``end`` of the log (``None``: unknown, written in
        pieces): commit its chunk when every line of it was kept as columns."""
        if self._deferred and self.active and not self._dirty and end is not None:
            self._open_files()
        if not self.active or self._dirty or end is None or self._fds is None:
            self.discard()
            return
        pts_fd, names_fd, chunks_fd = self._fds
        count, points = 0, b""
        if self._payloads:
            axes = np.frombuffer(self._axes, np.float64).reshape(-1, 2)
            records = point_records(self._payloads, axes, self._ids_of)
            del axes
            if records is None:
                self.discard()  # a value the text reads by its own rules: this write is text
                return
            count, points = len(records), records.tobytes()
        try:
            if count:
                os.lseek(pts_fd, self._pts * POINT.itemsize, os.SEEK_SET)
                write_all(pts_fd, points)
            if self._new_names:
                added = b"".join(self._new_names)
                os.lseek(names_fd, 0, os.SEEK_END)
                write_all(names_fd, added)
                self._names.update(added)
            self._new_names = []
            kind = self._names.kind
            chunk = _CHUNK_RECORD.pack(
                end - len(data), end, self._pts + count, len(self._ids),
                digest(kind, data), digest(kind, points, self._names.value),
            )  # fmt: skip
            os.lseek(chunks_fd, 0, os.SEEK_END)
            write_all(chunks_fd, chunk)
        except OSError as exc:
            self._off(f"cannot write its column files ({exc.strerror or exc})")
            return
        self._pts += count
        self.discard()


def _custom_x(extra: Mapping[str, Any]) -> bool:
    """Whether a custom x axis may be named (the text reader then reads the line by its rules)."""
    if "x_axis" in extra:
        return True
    bound = extra.get("bound")
    return isinstance(bound, Mapping) and "x_axis" in bound
