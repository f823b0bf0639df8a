"""Chart data from the index: one metric of one run as a min-max line (groups: ``_groups.py``).

A full-range answer is about ``n`` buckets from the pyramid, each drawn through its minimum
and its maximum in the order they were logged, so the line covers the same pixels as every
point would; a window of at most ``2n`` points is sent whole (full resolution when zoomed in).
Buckets holding NaN or inf are listed under ``nan`` (the page marks them). Axes: ``step``,
``time`` (wall time, seconds) and ``custom`` (the x-axis a run declared); an axis a metric
lacks gives an empty answer with a ``note`` that says so, never a silent fallback.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

import nonfinite_json
from goggles_io._event.remote_protocol import dump_json
from goggles_io.server.ui._downsample import downsample, window
from goggles_io.server.ui._index import RunIndex

__all__ = ["export_rows", "json_rows", "metric_series"]

_UNSORTED_MAX = 5_000_000  # points sorted in memory when a metric's steps are out of order
_NOTES = {
    "time": "no wall time recorded for this metric (a metrics.csv without a time column, "
    "or a robo-goggles log.jsonl)",
    "custom": "no custom x-axis declared for this metric (logger.set_x_axis or x=)",
}


def _listed(values: np.ndarray) -> list[float | None]:
    """Floats for JSON, ``None`` for NaN/inf (strict JSON)."""
    return [v if v == v and v not in (np.inf, -np.inf) else None for v in values.tolist()]


def metric_series(
    index: RunIndex, name: str, axis: str, x0: float | None, x1: float | None, n: int
) -> dict[str, Any] | None:
    """One metric of one run on ``axis`` within ``[x0, x1]`` (``None``: unbounded), ~``n`` buckets."""
    with index.lock:
        meta = index.metrics.get(name)
        if meta is None:
            return None
        store = index.store(name)
        count = store.count
        base: dict[str, Any] = {"total": count, "x_axis": meta.x_axis if axis == "custom" else axis}
        if axis in _NOTES and not meta.known[axis]:
            return {**base, "x": [], "y": [], "nan": [], "note": _NOTES[axis]}
        use, note = axis, None
        if axis == "step" and not meta.known["step"]:
            use, note = "index", "no step recorded: drawn in the order logged"
        if use != "index" and not meta.sorted[use]:
            if count <= _UNSORTED_MAX:
                return {**base, **_unsorted(store, use, x0, x1, n)}
            use, note = "index", f"{axis} is not in order: drawn in the order logged"
        i0, i1 = _edges(store, use, x0, x1)
        out = _bucketed(store, use, i0, i1, n)
    return {**base, **out, "note": note}


def _edges(store: Any, axis: str, x0: float | None, x1: float | None) -> tuple[int, int]:
    if axis == "index":
        lo = 0 if x0 is None else int(max(np.floor(x0), 0))
        hi = store.count if x1 is None else int(min(np.ceil(x1) + 1, store.count))
    else:
        lo = 0 if x0 is None else store.bisect(axis, x0)
        hi = store.count if x1 is None else store.bisect(axis, x1, right=True)
    # one point either side, so the line reaches the edges of a zoomed view
    return max(lo - 1, 0), min(hi + 1, store.count)


def _axis_at(store: Any, axis: str, index: np.ndarray) -> np.ndarray:
    return index.astype(np.float64) if axis == "index" else store.pick(axis, index)


def _bucketed(store: Any, axis: str, i0: int, i1: int, n: int) -> dict[str, Any]:
    if i1 - i0 <= 2 * n:
        y = store.column("value", i0, i1)
        x = np.arange(i0, i1, dtype=np.float64) if axis == "index" else store.column(axis, i0, i1)
        bad = ~np.isfinite(y)
        return {"x": x.tolist(), "y": _listed(y), "nan": x[bad].tolist(), "resolution": "full"}
    got = store.buckets(i0, i1, n)
    rec = got.rec[got.rec["nfin"] > 0]
    both = np.stack([rec["imin"], rec["imax"]], axis=1)
    vals = np.stack([rec["ymin"], rec["ymax"]], axis=1)
    swap = both[:, 0] > both[:, 1]  # draw each bucket's extremes in the order they came
    both[swap], vals[swap] = both[swap][:, ::-1], vals[swap][:, ::-1]
    index = both.reshape(-1).astype(np.int64)
    flat = vals.reshape(-1)
    keep = np.ones(len(index), bool)
    keep[1:] = index[1:] != index[:-1]  # a bucket whose min and max are one point
    x = _axis_at(store, axis, index[keep])
    marked = got.start[got.rec["nbad"] > 0]
    return {
        "x": x.tolist(),
        "y": _listed(flat[keep]),
        "nan": _axis_at(store, axis, marked.astype(np.int64)).tolist(),
        "resolution": f"level {got.level}",
        "buckets": len(got.rec),
    }


def _unsorted(store: Any, axis: str, x0: float | None, x1: float | None, n: int) -> dict[str, Any]:
    """A metric whose steps go back and forth (CSV rows re-logged): sorted in memory, bounded."""
    x, y = store.column(axis), store.column("value")
    bad = ~np.isfinite(y) & np.isfinite(x)
    nan = x[bad]
    x, y = window(x, y, x0, x1)
    x, y = downsample(x, y, n)
    if x0 is not None:
        nan = nan[nan >= x0]
    if x1 is not None:
        nan = nan[nan <= x1]
    return {"x": x.tolist(), "y": _listed(y), "nan": nan.tolist(), "resolution": "sorted",
            "note": f"{axis} values are out of order in this run: shown sorted"}  # fmt: skip


def export_rows(index: RunIndex, name: str, chunk: int = 65536) -> Iterator[np.ndarray]:
    """Every point of a metric as ``(step, time, x, value)`` rows, a chunk at a time."""
    with index.lock:
        store = index.store(name)
        count = store.count
    for start in range(0, count, chunk):
        with index.lock:
            cols = [
                store.column(a, start, start + chunk) for a in ("step", "time", "custom", "value")
            ]
        yield np.stack(cols, axis=1)


def json_rows(rows: np.ndarray, base: int, found: list[list[Any]]) -> bytes:
    """``rows`` (from :func:`export_rows`, starting at row ``base``) as JSON array items.

    An unknown step, time or x (NaN in the index) is ``null``; a logged non-finite value is its
    string in the one convention (:mod:`nonfinite_json`) and its path is appended to ``found``,
    for the export's ``_nonfinite``.
    """
    listed = rows.tolist()
    for i in np.flatnonzero(~np.isfinite(rows[:, 3])).tolist():
        listed[i][3] = nonfinite_json.plain(listed[i][3])[0]
        found.append(["rows", base + i, 3])
    return dump_json(listed)[1:-1]
