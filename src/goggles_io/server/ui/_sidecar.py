"""The columns a sink kept beside a run's JSONL log, read instead of its text where they hold.

``LocalStorageHandler`` appends each plain metric point to ``.log.jsonl.pts`` as it writes its
line, and commits each write of the log with a chunk record (``handlers/_columns.py``, ADR 0080).
Reading those records is ~40x cheaper than parsing the text. The log stays the source of truth:
a chunk is used only when it starts exactly where the index stands in the log, lies inside it,
ends on a line, the CRC-32 of its last 256 bytes matches the log's, and its points and names
are in files of the log's owner that are regular, inside the run, not links. Anything else —
missing, torn, stale (the log cut or replaced), foreign or hostile files — and the log's text
is read for that part instead, so the points are those of the text either way.
"""

from __future__ import annotations

import json
import os
import stat
import zlib
from array import array
from pathlib import Path

import attrs
import numpy as np

from goggles_io._util.safe_read import resolves_inside
from goggles_io.handlers._columns import (
    CHUNK,
    HEADER,
    HEADER_BYTES,
    MAGIC,
    MAX_NAMES_BYTES,
    POINT,
    TAIL_BYTES,
    column_paths,
)
from goggles_io.runs.lines import Columns, Parsed

__all__ = ["SinkColumns", "Take"]

_BATCH = 4096  # chunk records read at once
_MIN_POINT_BYTES = 4  # a point's text is at least `"a":1` plus a separator: a bound on claims
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@attrs.frozen
class Take:
    """What the columns give from an offset of the log: points up to ``end`` (``parsed``), or
    nothing, the text to be read up to ``text_until`` (``None``: to its end)."""

    parsed: Parsed | None = None
    end: int = 0
    hint: int = 0  # the next chunk record to look at
    text_until: int | None = None


class SinkColumns:
    """The sink's columns of one log (``path``) in ``run_dir``; names cached between turns."""

    def __init__(self, run_dir: Path, path: Path) -> None:
        self.run_dir = run_dir
        self.paths = column_paths(path)
        self._names: list[str] = []
        self._names_key: tuple[int, int] | None = None  # (inode, mtime_ns) the cache is from

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
        records = (os.fstat(chunks_fd).st_size - HEADER_BYTES) // CHUNK.itemsize
        pts_count = os.fstat(pts_fd).st_size // POINT.itemsize
        k, pts = 0, 0
        if 0 < hint <= records:  # a record's first point is where the one before it ended
            k, pts = hint, int(self._records(chunks_fd, hint - 1, 1)[0][2])
        taken: list[tuple[int, ...]] = []  # start, end, first point, end point, names
        at = offset
        while k < records and len(taken) < _BATCH:
            for start, end, end_pts, names, crc, _ in self._records(chunks_fd, k, records - k):
                first, pts = pts, end_pts
                k += 1
                if end <= at:
                    continue  # behind where the index stands
                if start != at:
                    if taken:
                        return self._points(pts_fd, taken, k - 1)
                    if start > at:
                        return Take(text_until=start)  # lines written without columns first
                    continue  # straddles the offset (read as text before): the next one
                if not (first <= end_pts <= pts_count and end <= log.st_size
                        and end_pts - first <= (end - start) // _MIN_POINT_BYTES
                        and self._holds(log_fd, start, end, crc)
                        and self._names_up_to(names_fd, names)):  # fmt: skip
                    if taken:
                        return self._points(pts_fd, taken, k - 1)
                    return Take(text_until=end)  # this chunk does not hold: its text
                taken.append((start, end, first, end_pts, names))
                at = end
                if end_pts - taken[0][2] >= max_points or len(taken) >= _BATCH:
                    return self._points(pts_fd, taken, k)
        if taken:
            return self._points(pts_fd, taken, k)
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

    @staticmethod
    def _holds(log_fd: int, start: int, end: int, crc: int) -> bool:
        """Whether the log's bytes end the chunk as the sink wrote them, on line boundaries."""
        size = min(TAIL_BYTES, end - start)
        tail = os.pread(log_fd, size, end - size)
        if len(tail) != size or tail[-1:] != b"\n" or zlib.crc32(tail) != crc:
            return False
        return start == 0 or os.pread(log_fd, 1, start - 1) == b"\n"

    def _names_up_to(self, names_fd: int, count: int) -> bool:
        """Whether the first ``count`` names are known (read again when the file changed)."""
        if count <= len(self._names):
            return True
        info = os.fstat(names_fd)
        if info.st_size > MAX_NAMES_BYTES:
            return False
        data = os.pread(names_fd, info.st_size, 0)
        try:
            names = [json.loads(line) for line in data.split(b"\n")[:-1]]
        except ValueError:
            return False
        if not all(type(n) is str for n in names) or len(set(names)) != len(names):
            return False
        self._names = names
        return count <= len(names)

    def _points(self, pts_fd: int, taken: list[tuple[int, ...]], hint: int) -> Take:
        """The points of ``taken`` (consecutive chunks) grouped by metric, in their order."""
        first, last, names = taken[0][2], taken[-1][3], taken[-1][4]
        count = last - first
        data = os.pread(pts_fd, count * POINT.itemsize, first * POINT.itemsize)
        if len(data) != count * POINT.itemsize:
            return Take(text_until=taken[0][1])
        recs = np.frombuffer(data, POINT)
        parsed = Parsed()
        if count:
            ids = recs["id"]
            if int(ids.max()) >= names:
                return Take(text_until=taken[0][1])
            order = np.argsort(ids, kind="stable")
            ordered = recs[order]
            keys = ordered["id"]
            cuts = np.flatnonzero(keys[1:] != keys[:-1]) + 1
            bounds = [0, *cuts.tolist(), count]
            step = np.ascontiguousarray(ordered["step"])
            when = np.ascontiguousarray(ordered["time"])
            value = np.ascontiguousarray(ordered["value"])
            nan = np.full(max(np.diff(bounds)), np.nan).tobytes()
            for a, b in zip(bounds[:-1], bounds[1:], strict=True):
                parsed.metrics[self._names[int(keys[a])]] = Columns(
                    step=_floats(step[a:b]), time=_floats(when[a:b]),
                    x=_floats_bytes(nan[: 8 * (b - a)]), value=_floats(value[a:b]),
                )  # fmt: skip
        return Take(parsed=parsed, end=taken[-1][1], hint=hint)


def _floats(column: np.ndarray) -> array[float]:
    out = array("d")
    out.frombytes(column.tobytes())
    return out


def _floats_bytes(data: bytes) -> array[float]:
    out = array("d")
    out.frombytes(data)
    return out
