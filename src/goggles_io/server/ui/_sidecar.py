"""The columns a sink kept beside a run's JSONL log, read instead of its text where they hold.

``LocalStorageHandler`` appends each plain metric point to ``.log.jsonl.pts`` as it writes its
line, and commits each write of the log with a chunk record (``handlers/_columns.py``, ADR 0080).
Reading them costs a small part of parsing the text. The log stays the source of truth: a chunk
is used only when it starts exactly where the index stands in the log, lies inside it, ends on
a line's end, the digest of its text is the log's, that of its points (and of the names they
use) matches, and its files are the log owner's regular files inside the run, not links. Else —
missing, torn, stale (the log cut, edited or replaced), foreign or hostile files — the log's
text is read for that part instead, so the points are those of the text either way.
"""

from __future__ import annotations

import itertools
import json
import os
import stat
from pathlib import Path

import attrs
import numpy as np

from goggles_io._util.safe_read import resolves_inside
from goggles_io.handlers._columns import (
    CHUNK,
    DIGESTS,
    HEADER,
    HEADER_BYTES,
    MAGIC,
    MAX_NAMES_BYTES,
    POINT,
    Digest,
    column_paths,
    digest,
)

__all__ = ["ArrayColumns", "SinkColumns", "Take"]

_BATCH = 256  # chunk records read at once
_MAX_CHUNKS = 1 << 14  # chunks taken in one turn at most (log lines only hold no points)
_MIN_POINT_BYTES = 4  # a point's text is at least `"a":1` plus a separator: a bound on claims
_READ = 1 << 18  # bytes of text read at once to check a chunk's digest (a write is ~64 KiB)
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@attrs.frozen
class ArrayColumns:
    """One metric's points as numpy columns (``lines.Columns``' fields, without a copy)."""

    step: np.ndarray
    time: np.ndarray
    x: np.ndarray
    value: np.ndarray
    x_axis: str | None = None

    def __len__(self) -> int:
        return len(self.value)


@attrs.frozen
class Take:
    """What the columns give from an offset of the log: points up to ``end`` (``metrics``), or
    nothing, the text to be read up to ``text_until`` (``None``: to its end)."""

    metrics: dict[str, ArrayColumns] | None = None
    end: int = 0
    hint: int = 0  # the next chunk record to look at
    text_until: int | None = None


@attrs.frozen
class _Chunk:
    start: int
    end: int
    first: int  # its first point (the previous chunk's last)
    pts: int
    names: int
    points: int  # the digest of its points
    record: int  # its record's number


class SinkColumns:
    """The sink's columns of one log (``path``) in ``run_dir``; names cached between turns."""

    def __init__(self, run_dir: Path, path: Path) -> None:
        self.run_dir = run_dir
        self.paths = column_paths(path)
        self._names: list[str] = []
        self._raw = b""  # the names file as read
        self._reload = False  # read the names again at the next look (a digest did not match)
        self._ends: list[int] = [0]  # where each name's line ends in it
        self._digests: dict[int, int] = {}  # the digest of its first n lines, by n
        self._running: tuple[int, Digest] | None = None  # lines digested so far, the digest
        self._kind = 0  # the header's digest
        self._buffer = bytearray(_READ)  # the text being checked (one, kept: no allocation)

    def take(self, log_fd: int, offset: int, hint: int, max_points: int) -> Take:
        """The points of the chunks from ``offset`` on (about ``max_points``), if they hold."""
        log = os.fstat(log_fd)
        fds = self._open(log)
        if fds is None:
            return Take()
        try:
            return self._take(log_fd, log, fds, offset, hint, max_points)
        except (OSError, ValueError):
            return Take()
        finally:
            for fd in fds:
                os.close(fd)

    def _open(self, log: os.stat_result) -> tuple[int, int, int] | None:
        """The three files, each regular, inside the run, not a link, of the log's owner."""
        fds: list[int] = []
        try:
            for path in self.paths:
                if not resolves_inside(self.run_dir, path):
                    raise OSError(f"{path} resolves outside the run")
                fd = os.open(path, _FLAGS)
                fds.append(fd)
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode) or info.st_uid != log.st_uid:
                    raise OSError(f"{path} is not a regular file of the log's owner")
        except OSError:
            for fd in fds:
                os.close(fd)
            return None
        return fds[0], fds[1], fds[2]

    def _take(
        self,
        log_fd: int,
        log: os.stat_result,
        fds: tuple[int, int, int],
        offset: int,
        hint: int,
        max_points: int,
    ) -> Take:
        pts_fd, names_fd, chunks_fd = fds
        head = os.pread(chunks_fd, HEADER_BYTES, 0)
        if len(head) != HEADER_BYTES:
            return Take()
        header = np.frombuffer(head, HEADER)
        if header["magic"][0] != MAGIC or int(header["ino"][0]) != log.st_ino:
            return Take()  # another log's columns (this one was replaced): stale
        kind = int(header["digest"][0])
        if kind not in DIGESTS:
            return Take()  # a digest this process cannot check
        if kind != self._kind:
            self._kind, self._digests, self._running = kind, {}, None
        records = (os.fstat(chunks_fd).st_size - HEADER_BYTES) // CHUNK.itemsize
        pts_count = os.fstat(pts_fd).st_size // POINT.itemsize
        k, pts = 0, 0
        if 0 < hint <= records:  # a record's first point is where the one before it ended
            k, pts = hint, int(self._records(chunks_fd, hint - 1, 1)[0][2])
        taken: list[_Chunk] = []
        at = offset
        while k < records:
            for start, end, end_pts, names, text, points in self._records(
                chunks_fd, k, records - k
            ):
                first, pts = pts, end_pts
                k += 1
                if end <= at:
                    continue  # behind where the index stands
                if start != at:
                    if taken:
                        return self._points(pts_fd, taken)
                    if start > at:
                        return Take(text_until=start)  # lines written without columns first
                    continue  # straddles the offset (read as text before): the next one
                if not (first <= end_pts <= pts_count and end <= log.st_size
                        and end_pts - first <= (end - start) // _MIN_POINT_BYTES
                        and self._names_up_to(names_fd, names)
                        and self._text_digest(log_fd, start, end) == text):  # fmt: skip
                    if taken:
                        return self._points(pts_fd, taken)
                    return Take(text_until=end)  # this chunk does not hold: its text
                taken.append(_Chunk(start, end, first, end_pts, names, points, k))
                at = end
                if end_pts - taken[0].first >= max_points or len(taken) >= _MAX_CHUNKS:
                    return self._points(pts_fd, taken)
        if taken:
            return self._points(pts_fd, taken)
        return Take()

    @staticmethod
    def _records(fd: int, k: int, most: int) -> list[tuple[int, int, int, int, int, int]]:
        """Chunk records ``k``.. (at most ``_BATCH`` of them, ``most`` at most)."""
        count = min(_BATCH, most)
        data = os.pread(fd, count * CHUNK.itemsize, HEADER_BYTES + k * CHUNK.itemsize)
        got: list[tuple[int, int, int, int, int, int]] = np.frombuffer(
            data[: len(data) // CHUNK.itemsize * CHUNK.itemsize], CHUNK
        ).tolist()
        return got

    def _names_up_to(self, names_fd: int, count: int) -> bool:
        """Whether the first ``count`` names are known (read again when the file grew)."""
        if count <= len(self._names) and not self._reload:
            return True
        self._reload = False
        info = os.fstat(names_fd)
        if info.st_size > MAX_NAMES_BYTES:
            return False
        data = os.pread(names_fd, info.st_size, 0)
        lines = data.split(b"\n")[:-1]
        try:
            names = [json.loads(line) for line in lines]
        except ValueError:
            return False
        if not all(type(n) is str for n in names) or len(set(names)) != len(names):
            return False
        self._names = names
        self._raw = data
        self._ends = [0]
        for line in lines:
            self._ends.append(self._ends[-1] + len(line) + 1)
        self._digests, self._running = {}, None
        return count <= len(names)

    def _names_digest(self, count: int) -> int:
        """The digest of the names file's first ``count`` lines, as the sink seeds a chunk's."""
        found = self._digests.get(count)
        if found is None:
            done, running = self._running or (0, Digest(self._kind))
            if count < done:
                done, running = 0, Digest(self._kind)
            running.update(memoryview(self._raw)[self._ends[done] : self._ends[count]])
            self._running = (count, running)
            found = self._digests[count] = running.value
        return found

    def _text_digest(self, fd: int, start: int, end: int) -> int:
        """The digest of the log's bytes [start, end), read into one kept buffer (-1: the log
        is shorter)."""
        view = memoryview(self._buffer)
        if end - start <= _READ:
            got = os.preadv(fd, [view[: end - start]], start)
            return digest(self._kind, view[:got]) if got == end - start else -1
        running = Digest(self._kind)
        while start < end:
            got = os.preadv(fd, [view[: min(_READ, end - start)]], start)
            if not got:
                return -1
            running.update(view[:got])
            start += got
        return running.value

    def _points(self, pts_fd: int, taken: list[_Chunk]) -> Take:
        """The points of ``taken`` (consecutive chunks) grouped by metric, in their order; the
        chunks from the first whose points do not match their CRC are left to the text."""
        base = taken[0].first
        data = os.pread(pts_fd, (taken[-1].pts - base) * POINT.itemsize, base * POINT.itemsize)
        view = memoryview(data)
        good = 0
        for chunk in taken:
            part = view[(chunk.first - base) * POINT.itemsize : (chunk.pts - base) * POINT.itemsize]
            if (
                len(part) != (chunk.pts - chunk.first) * POINT.itemsize
                or digest(self._kind, part, self._names_digest(chunk.names)) != chunk.points
            ):
                break
            good += 1
        if good < len(taken):
            self._reload = True  # maybe names of columns made afresh since: read them again
        if not good:
            return Take(text_until=taken[0].end)
        last = taken[good - 1]
        count = last.pts - base
        recs = np.frombuffer(data, POINT, count=count)
        metrics: dict[str, ArrayColumns] = {}
        if count:
            ids = recs["id"]
            if int(ids.max()) >= last.names:
                return Take(text_until=taken[0].end)
            small = ids.astype(np.uint16) if last.names <= 1 << 16 else ids  # radix-sorted
            order = np.argsort(small, kind="stable")
            keys = np.take(ids, order)
            cuts = np.flatnonzero(keys[1:] != keys[:-1]) + 1
            bounds = [0, *cuts.tolist(), count]
            step, when, value = (np.take(recs[f], order) for f in ("step", "time", "value"))
            nan = np.full(max(np.diff(bounds)), np.nan)
            for a, b in itertools.pairwise(bounds):
                metrics[self._names[int(keys[a])]] = ArrayColumns(
                    step[a:b], when[a:b], nan[: b - a], value[a:b]
                )
        return Take(metrics=metrics, end=last.end, hint=last.record)
