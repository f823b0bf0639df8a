"""One metric on disk: append-only float64 columns plus a min-max pyramid, read in O(buckets).

Keeping every point in server memory made the dashboard's memory grow with the run (36 MB per
million points) and its start wait for a full parse. Here the points stay on disk and memory
does not depend on their number (ADR 0028)::

    x.f64 t.f64 c.f64 y.f64    step, wall time (s), custom x, value: one float64 per point,
                               in arrival order (NaN where unknown); c.f64 only from the
                               first custom x on (absent: every point's x is NaN, ADR 0074)
    L1.blk, L2.blk, ...        level l, record j summarises points [j*16**l, (j+1)*16**l):
                               index and value of the minimum and maximum finite value, sum
                               and count of finite values, count of NaN/inf (56 bytes)

Only whole blocks are written, so a level is ``count // 16**l`` records long; a partial block
is recomputed from the level below when a query reaches it. A query of ``n`` buckets reads
about ``16 * n`` records of one level, wherever the window is: a spike in 100 M points is in
every answer. Files are read with ``np.fromfile(offset=...)`` (preads) and short-lived maps,
so no page stays mapped between requests.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import attrs
import numpy as np

__all__ = ["AXES", "BASE", "REC", "Buckets", "Pyramid"]

BASE = 16
AXES = {"step": "x.f64", "time": "t.f64", "custom": "c.f64", "value": "y.f64"}
REC = np.dtype(
    [("imin", "f8"), ("imax", "f8"), ("ymin", "f8"), ("ymax", "f8"),
     ("ysum", "f8"), ("nfin", "f8"), ("nbad", "f8")]
)  # fmt: skip
_CHUNK = 1 << 20  # points (or records) reduced per step when building levels
_KEEP = 1 << 16  # items of one level kept in memory during a build at most (else read back)
_LAZY = "c.f64"  # written from the first custom x on: most metrics never have one (ADR 0074)


def _reduce_values(y: np.ndarray, k: int, base: int) -> np.ndarray:
    """Records of consecutive groups of ``k`` raw values (the last group may be short)."""
    groups = -(-len(y) // k)
    pad = groups * k - len(y)
    if pad:
        y = np.concatenate([y, np.full(pad, np.nan)])
    y = y.reshape(groups, k)
    bad = ~np.isfinite(y)
    if bad.any():
        low = np.where(bad, np.inf, y)
        high = np.where(bad, -np.inf, y)
        finite = np.where(bad, 0.0, y)
    else:  # the common case: no copies with the non-finite values masked out
        low = high = finite = y
    amin, amax = low.argmin(1), high.argmax(1)
    rows = np.arange(groups)
    out = np.empty(groups, REC)
    out["imin"] = base + rows * k + amin
    out["imax"] = base + rows * k + amax
    out["ymin"], out["ymax"] = low[rows, amin], high[rows, amax]
    out["ysum"] = finite.sum(1)
    nbad = bad.sum(1)
    if pad:
        nbad[-1] -= pad
    out["nbad"] = nbad
    out["nfin"] = k - bad.sum(1)
    return out


def _reduce_records(rec: np.ndarray, k: int) -> np.ndarray:
    """Groups of ``k`` consecutive records merged into one each (the last may be short)."""
    groups = -(-len(rec) // k)
    pad = groups * k - len(rec)
    if pad:
        fill = np.zeros(pad, REC)
        fill["ymin"], fill["ymax"] = np.inf, -np.inf
        rec = np.concatenate([rec, fill])
    rec = rec.reshape(groups, k)
    amin, amax = rec["ymin"].argmin(1), rec["ymax"].argmax(1)
    rows = np.arange(groups)
    out = np.empty(groups, REC)
    out["imin"], out["ymin"] = rec["imin"][rows, amin], rec["ymin"][rows, amin]
    out["imax"], out["ymax"] = rec["imax"][rows, amax], rec["ymax"][rows, amax]
    for field in ("ysum", "nfin", "nbad"):
        out[field] = rec[field].sum(1)
    return out


def _append_bytes(path: Path, data: memoryview) -> None:
    """Append ``data`` to ``path`` (created if missing) with plain system calls."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        view = memoryview(data).cast("B")
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


@attrs.frozen
class Buckets:
    """A window ``[i0, i1)`` as consecutive buckets: each one's first index and its record."""

    start: np.ndarray
    rec: np.ndarray
    level: int


class Pyramid:
    """One metric's columns and levels in ``folder``, trusted up to ``count`` points.

    Files longer than ``count`` (a crash between writing columns and the manifest) are cut
    back to it; missing level records are rebuilt from the level below.
    """

    def __init__(self, folder: Path, count: int = 0) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.count = count
        for name in AXES.values():
            if name != _LAZY or (folder / name).exists():
                self._cut(folder / name, count * 8)
        self.levels: list[int] = []
        size = count // BASE
        while size:
            path = self._level_path(len(self.levels) + 1)
            have = min(self._size(path) // REC.itemsize, size)
            self._cut(path, have * REC.itemsize)
            self.levels.append(have)
            size //= BASE
        # Per level (0: the raw values), the items not yet summarised one level up, as they were
        # written: the next append reduces them without reading them back (None: read the file).
        self._tails: list[tuple[int, np.ndarray] | None] = []
        self._build()

    @staticmethod
    def _size(path: Path) -> int:
        try:
            return path.stat().st_size
        except FileNotFoundError:
            return 0

    def _cut(self, path: Path, size: int) -> None:
        have = self._size(path)
        if have > size:
            os.truncate(path, size)
        elif not path.exists():
            path.touch()
        elif have < size and path.name == _LAZY:  # its NaN head torn by a crash: NaN again
            self._fill_nan(path, have // 8, size // 8)
            os.truncate(path, size)

    def _fill_nan(self, path: Path, start: int, stop: int) -> None:
        """Points [start, stop) of a column as NaN, written in bounded pieces."""
        with open(path, "r+b" if path.exists() else "wb") as fh:
            fh.seek(start * 8)
            for at in range(start, stop, _CHUNK):
                fh.write(np.full(min(_CHUNK, stop - at), np.nan, dtype="<f8").tobytes())

    def _level_path(self, level: int) -> Path:
        return self.folder / f"L{level}.blk"

    # -- writing ------------------------------------------------------------------------------
    def append(self, step: np.ndarray, time: np.ndarray, x: np.ndarray, value: np.ndarray) -> None:
        """Append points (equal-length float64 arrays), then every level block now whole."""
        if not len(value):
            return
        value = np.ascontiguousarray(value, dtype="<f8")
        for name, column in zip(AXES.values(), (step, time, x, value), strict=True):
            path = self.folder / name
            if name == _LAZY and not path.exists():
                if np.isnan(column).all():
                    continue  # no custom x yet: nothing to write (24 bytes a point, not 32)
                self._fill_nan(path, 0, self.count)  # the points before the first custom x
            _append_bytes(path, np.ascontiguousarray(column, dtype="<f8").data)
        self._remember(0, self.count, value)
        self.count += len(value)
        self._build()

    def _remember(self, level: int, start: int, items: np.ndarray) -> None:
        """Keep ``items`` (level ``level``'s, from index ``start``) for the next reduction."""
        while len(self._tails) <= level:
            self._tails.append(None)
        tail = self._tails[level]
        if tail is not None and tail[0] + len(tail[1]) == start:
            tail = (tail[0], np.concatenate([tail[1], items]))
        else:
            tail = (start, items)
        self._tails[level] = tail if len(tail[1]) <= _KEEP else None  # a rebuild: from the files

    def _items(self, level: int, start: int, size: int) -> np.ndarray:
        """Level ``level``'s items [start, start + size): kept ones, else read from the file."""
        tail = self._tails[level] if level < len(self._tails) else None
        if tail is not None and tail[0] <= start and start + size <= tail[0] + len(tail[1]):
            return tail[1][start - tail[0] : start - tail[0] + size]
        if level == 0:
            return self._read("y.f64", start, size)
        return self._records(level, start, size)

    def _build(self) -> None:
        """Write every level record whose block is whole and not yet written."""
        below = self.count
        level = 1
        while below // BASE:
            whole = below // BASE
            if len(self.levels) < level:
                self.levels.append(0)
            while self.levels[level - 1] < whole:
                have = self.levels[level - 1]
                take = min(whole - have, _CHUNK)
                items = self._items(level - 1, have * BASE, take * BASE)
                if level == 1:
                    rec = _reduce_values(items, BASE, have * BASE)
                else:
                    rec = _reduce_records(items, BASE)
                _append_bytes(self._level_path(level), rec.data)
                self._remember(level, have, rec)
                self.levels[level - 1] += take
            self._forget(level - 1, self.levels[level - 1] * BASE)
            below = whole
            level += 1
        self._forget(level - 1, 0)  # the top level: nothing above summarises it yet

    def _forget(self, level: int, start: int) -> None:
        """Drop kept items of ``level`` before ``start`` (summarised one level up): at most
        ``BASE - 1`` items a level stay in memory between appends."""
        tail = self._tails[level] if level < len(self._tails) else None
        if tail is not None:
            first, items = tail
            self._tails[level] = (start, items[start - first :].copy()) if start >= first else None

    # -- reading ------------------------------------------------------------------------------
    def _read(self, name: str, start: int, size: int) -> np.ndarray:
        if name == _LAZY and not (self.folder / name).exists():
            return np.full(size, np.nan)
        return np.fromfile(self.folder / name, dtype="<f8", count=size, offset=start * 8)

    def _records(self, level: int, start: int, size: int) -> np.ndarray:
        path = self._level_path(level)
        return np.fromfile(path, dtype=REC, count=size, offset=start * REC.itemsize)

    def column(self, axis: str, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Raw values of ``axis`` (``step``/``time``/``custom``/``value``) for points [start, stop)."""
        stop = self.count if stop is None else min(stop, self.count)
        return self._read(AXES[axis], start, max(stop - start, 0))

    def pick(self, axis: str, index: np.ndarray) -> np.ndarray:
        """``axis`` at scattered point indexes, through a map closed before returning."""
        if not len(index) or not self.count:
            return np.empty(0)
        if AXES[axis] == _LAZY and not (self.folder / _LAZY).exists():
            return np.full(len(index), np.nan)
        with (
            open(self.folder / AXES[axis], "rb") as fh,
            mmap.mmap(fh.fileno(), self.count * 8, access=mmap.ACCESS_READ) as mapped,
        ):
            view = np.frombuffer(mapped, dtype="<f8", count=self.count)
            out: np.ndarray = view[np.asarray(index, dtype=np.int64)].copy()
            del view  # release the buffer before the map closes
        return out

    def bisect(self, axis: str, value: float, right: bool = False) -> int:
        """First index whose ``axis`` value is ``>= value`` (``> value`` if ``right``); the
        column must be non-decreasing. O(log n) reads of 8 bytes."""
        lo, hi = 0, self.count
        name = AXES[axis]
        if name == _LAZY and not (self.folder / name).exists():
            return 0  # every x is NaN: no value is >= anything
        with open(self.folder / name, "rb") as fh:
            while lo < hi:
                mid = (lo + hi) // 2
                fh.seek(mid * 8)
                got = float(np.frombuffer(fh.read(8), dtype="<f8")[0])
                if got < value or (right and got == value):
                    lo = mid + 1
                else:
                    hi = mid
        return lo

    def buckets(self, i0: int, i1: int, n: int) -> Buckets:
        """About ``n`` buckets over points [i0, i1), from the deepest level that gives them.

        The first bucket may start before ``i0`` (snapped to its level's block); the last
        covers the partial block at the end from the levels below.
        """
        i0, i1 = max(i0, 0), min(i1, self.count)
        per = max((i1 - i0) / max(n, 1), 1.0)
        level = 0
        while level < len(self.levels) and self.levels[level] and BASE ** (level + 1) <= per:
            level += 1
        if level == 0:
            k = max(int(np.ceil(per)), 1)
            rec = _reduce_values(self.column("value", i0, i1), k, i0)
            return Buckets(start=i0 + np.arange(len(rec)) * k, rec=rec, level=0)
        size = BASE**level
        b0, b1 = i0 // size, min(-(-i1 // size), self.levels[level - 1])
        k = max(-(-(b1 - b0) // n), 1)
        rec = _reduce_records(self._records(level, b0, b1 - b0), k)
        start = (b0 + np.arange(len(rec)) * k) * size
        tail_from = b1 * size
        if tail_from < i1:
            rec = np.concatenate([rec, self._summary(tail_from, i1, level - 1)])
            start = np.append(start, tail_from)
        return Buckets(start=start, rec=rec, level=level)

    def _summary(self, pos: int, stop: int, top: int) -> np.ndarray:
        """One record for points [pos, stop), ``pos`` aligned to ``16**top``: whole blocks of
        each level downwards, then the last few raw points."""
        parts = []
        for level in range(top, 0, -1):
            size = BASE**level
            blocks = (stop - pos) // size
            if blocks:
                parts.append(self._records(level, pos // size, blocks))
                pos += blocks * size
        if pos < stop:
            parts.append(_reduce_values(self.column("value", pos, stop), stop - pos, pos))
        merged = np.concatenate(parts)
        return _reduce_records(merged, len(merged))
