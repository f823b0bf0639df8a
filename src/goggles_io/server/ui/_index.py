"""A run's metrics indexed on disk: one :class:`Pyramid` per metric and a manifest.

The index lives in a cache directory the dashboard owns, never in the run directory::

    manifest.json    per source file: inode, byte offset read to, CSV header;
                     per metric: folder id, point count, axes known and sorted, summary
    media.jsonl      the media items found so far, one per line
    m<id>/           the metric's columns and levels (:mod:`._pyramid`)

The manifest is replaced (``os.replace``) only after the columns it counts are written, so a
crash at any moment leaves an index that reopens at its last manifest: columns are cut back
to the counts, sources are read again from the recorded offsets.
"""

from __future__ import annotations

import math
import os
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import attrs
import numpy as np

import nonfinite_json
from goggles_io.runs.lines import Parsed
from goggles_io.server.ui._pyramid import Pyramid

__all__ = ["MANIFEST_VERSION", "Metric", "RunIndex"]

MANIFEST_VERSION = 1
_AXES = ("step", "time", "custom")


class PointColumns(Protocol):
    """One metric's new points: four float64 buffers (``lines.Columns``, the sink's columns)."""

    @property
    def step(self) -> Any: ...
    @property
    def time(self) -> Any: ...
    @property
    def x(self) -> Any: ...
    @property
    def value(self) -> Any: ...
    @property
    def x_axis(self) -> str | None: ...
    def __len__(self) -> int: ...


@attrs.define
class Metric:
    """What the index knows of one metric without reading its points."""

    name: str
    folder: str
    source: str
    count: int = 0
    x_axis: str | None = None
    sorted: dict[str, bool] = attrs.field(factory=lambda: dict.fromkeys(_AXES, True))
    known: dict[str, bool] = attrs.field(factory=lambda: dict.fromkeys(_AXES, False))
    ends: dict[str, float | None] = attrs.field(factory=dict)  # last value of each axis
    first_step: float | None = None
    last: float | None = None
    low: float | None = None
    high: float | None = None
    bad: int = 0

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Metric:
        fields = {f.name for f in attrs.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in fields})

    def absorb(self, cols: PointColumns) -> None:
        """Update the summary, the sort flags and the known axes from new points."""
        if cols.x_axis:
            self.x_axis = cols.x_axis
        for axis, column in zip(_AXES, (cols.step, cols.time, cols.x), strict=True):
            arr = np.frombuffer(column, dtype=np.float64)
            finite = np.isfinite(arr)
            if finite.any():
                self.known[axis] = True
            previous = self.ends.get(axis)
            if not finite.all() or (len(arr) > 1 and bool(np.any(arr[1:] < arr[:-1]))):
                self.sorted[axis] = False
            elif previous is not None and arr[0] < previous:
                self.sorted[axis] = False
            self.ends[axis] = float(arr[-1]) if finite[-1] else self.ends.get(axis)
        step = np.frombuffer(cols.step, dtype=np.float64)
        if self.first_step is None and np.isfinite(step[0]):
            self.first_step = float(step[0])
        y = np.frombuffer(cols.value, dtype=np.float64)
        good = y[np.isfinite(y)]
        self.bad += int(len(y) - len(good))
        if len(good):
            self.low = float(good.min()) if self.low is None else min(self.low, float(good.min()))
            self.high = (
                float(good.max()) if self.high is None else max(self.high, float(good.max()))
            )
        self.last = float(y[-1]) if math.isfinite(y[-1]) else self.last
        self.count += len(y)


class RunIndex:
    """One run's index folder: metrics by name, media items, and the sources' read state.

    All reads and writes of the folder's pyramids go through :attr:`lock`; a query and an
    append never interleave.
    """

    def __init__(self, folder: Path, owner: str) -> None:
        self.folder = folder
        self.owner = owner
        self.lock = threading.RLock()
        self.metrics: dict[str, Metric] = {}
        self.sources: dict[str, dict[str, Any]] = {}
        self.media: list[dict[str, Any]] = []
        self.extra: dict[str, Any] = {}
        self._stores: dict[str, Pyramid] = {}
        self._next = 0
        folder.mkdir(parents=True, exist_ok=True)
        self._load()

    # -- the manifest -------------------------------------------------------------------------
    def _load(self) -> None:
        path = self.folder / "manifest.json"
        try:
            data = nonfinite_json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        if (
            not isinstance(data, dict)
            or data.get("version") != MANIFEST_VERSION
            or data.get("owner") != self.owner
        ):
            self._wipe()  # no index yet, an older format, or another run's (hash collision)
            return
        self.metrics = {n: Metric.from_json(m) for n, m in data.get("metrics", {}).items()}
        self.sources = data.get("sources", {})
        self.extra = data.get("extra", {})
        self._next = int(data.get("next", len(self.metrics)))
        media_count = int(data.get("media", 0))
        try:
            lines = (self.folder / "media.jsonl").read_bytes().split(b"\n")[:media_count]
            self.media = [nonfinite_json.loads(line) for line in lines if line.strip()]
        except (OSError, ValueError):
            self.media = []
        self._rewrite_media()  # drops lines written after the manifest (a crash)

    def _wipe(self) -> None:
        for child in self.folder.iterdir():
            if child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
        self.metrics, self.sources, self.media, self.extra = {}, {}, [], {}
        self._stores, self._next = {}, 0

    def _rewrite_media(self) -> None:
        text = "".join(nonfinite_json.dumps(m) + "\n" for m in self.media)
        (self.folder / "media.jsonl").write_text(text, encoding="utf-8")

    def save(self) -> None:
        """Write the manifest after the data it counts (atomic replace)."""
        with self.lock:
            data = {
                "version": MANIFEST_VERSION,
                "owner": self.owner,
                "next": self._next,
                "media": len(self.media),
                "sources": self.sources,
                "extra": self.extra,
                "metrics": {n: m.to_json() for n, m in self.metrics.items()},
            }
            tmp = self.folder / f".manifest.{os.getpid()}.tmp"
            tmp.write_text(nonfinite_json.dumps(data), encoding="utf-8")
            os.replace(tmp, self.folder / "manifest.json")

    # -- writing ------------------------------------------------------------------------------
    def store(self, name: str) -> Pyramid:
        """The pyramid of metric ``name`` (opened once, cut to the manifest's count)."""
        meta = self.metrics[name]
        found = self._stores.get(name)
        if found is None:
            found = self._stores[name] = Pyramid(self.folder / meta.folder, meta.count)
        return found

    def add(self, parsed: Parsed, source: str) -> int:
        """Append what ``source`` yielded: its own metrics (names first seen in an earlier
        source are skipped, so a point logged to two files counts once) and its media.

        Returns how many points were added.
        """
        with self.lock:
            added = self.add_columns(parsed.metrics, source)
            for item in parsed.media:
                item["source"] = source
            if parsed.media:
                with open(self.folder / "media.jsonl", "a", encoding="utf-8") as fh:
                    fh.write("".join(nonfinite_json.dumps(m) + "\n" for m in parsed.media))
                self.media += parsed.media
        return added

    def add_columns(self, metrics: Mapping[str, PointColumns], source: str) -> int:
        """Append the points of ``metrics`` that ``source`` owns (see :meth:`add`); how many."""
        added = 0
        with self.lock:
            for name, cols in metrics.items():
                meta = self.metrics.get(name)
                if meta is None:
                    meta = self.metrics[name] = Metric(
                        name=name, folder=f"m{self._next}", source=source
                    )
                    self._next += 1
                if meta.source != source or not len(cols):
                    continue
                arrays = [
                    np.frombuffer(c, dtype=np.float64)
                    for c in (cols.step, cols.time, cols.x, cols.value)
                ]
                self.store(name).append(*arrays)
                meta.absorb(cols)
                added += len(cols)
        return added

    def drop_source(self, source: str) -> None:
        """Forget a source that was replaced (a rewritten CSV): its metrics are read again."""
        with self.lock:
            for name in [n for n, m in self.metrics.items() if m.source == source]:
                meta = self.metrics.pop(name)
                self._stores.pop(name, None)
                shutil.rmtree(self.folder / meta.folder, ignore_errors=True)
            self.sources.pop(source, None)
            kept = [m for m in self.media if m.get("source") != source]
            if len(kept) != len(self.media):
                self.media = kept
                self._rewrite_media()

    @property
    def points(self) -> int:
        """Points indexed so far, over every metric."""
        return sum(m.count for m in self.metrics.values())
