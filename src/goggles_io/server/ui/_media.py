"""Media a run logged, made small enough to draw: histograms, trajectories, vector fields.

Images, videos and artifacts are served as their files; the arrays behind histograms,
trajectories and vector fields (``.npy``, read with ``allow_pickle=False`` and memory-mapped,
so a large file costs no memory) are reduced here to what a canvas draws: bin counts, at most
64 trajectories of 500 points, a field of at most 32 x 32 arrows. Every path is checked to stay
inside the run directory first (:func:`inside`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MAX_ARRAY_BYTES", "array_view", "histogram_steps", "inside", "text_preview"]

MAX_ARRAY_BYTES = 256 * 1024 * 1024  # larger .npy files are offered for download, not drawn
_BINS = 40
_MAX_TRAJ, _MAX_LEN, _MAX_GRID = 64, 500, 32
_MAX_STEPS = 200  # histograms over time: at most this many steps, evenly spread
_TEXT_BYTES = 64 * 1024


def inside(run_dir: Path, relative: str) -> Path | None:
    """``run_dir / relative`` when it is a file inside ``run_dir`` (no ``..``, no symlink out)."""
    base = run_dir.resolve()
    try:
        target = (base / relative).resolve()
    except (OSError, ValueError):
        return None
    if target != base and base in target.parents and target.is_file():
        return target
    return None


def _load(path: Path) -> np.ndarray:
    if path.stat().st_size > MAX_ARRAY_BYTES:
        msg = f"{path.name} is {path.stat().st_size:,} bytes: too large to draw; download it"
        raise ValueError(msg)
    array: np.ndarray = np.load(path, mmap_mode="r", allow_pickle=False)
    if not np.issubdtype(array.dtype, np.number) and array.dtype != bool:
        msg = f"{path.name} holds {array.dtype} values, not numbers"
        raise ValueError(msg)
    return array


def _finite(values: np.ndarray) -> np.ndarray:
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    return flat[np.isfinite(flat)]


def array_view(path: Path, kind: str) -> dict[str, Any]:
    """What the page draws for one ``.npy`` of ``kind`` (histogram, trajectories, vector_field).

    Raises:
        ValueError: the file is not a numeric array of a drawable shape (the message says why).
    """
    array = _load(path)
    if kind == "histogram":
        values = _finite(array)
        counts, edges = (
            np.histogram(values, bins=_BINS) if len(values) else (np.zeros(0), np.zeros(1))
        )
        return {"kind": kind, "counts": counts.tolist(), "edges": edges.tolist(), "n": int(array.size),
                "finite": len(values)}  # fmt: skip
    if kind == "trajectories":
        data = np.asarray(array, dtype=np.float64)
        if data.ndim == 2:
            data = data[None]
        if data.ndim != 3 or data.shape[-1] < 2:
            msg = f"trajectories must be (T, D) or (N, T, D) with D >= 2 (got shape {array.shape})"
            raise ValueError(msg)
        stride = max(1, -(-data.shape[1] // _MAX_LEN))
        kept = data[:_MAX_TRAJ, ::stride, :2]
        return {"kind": kind, "lines": np.where(np.isfinite(kept), kept, np.nan).tolist(),
                "shape": list(array.shape), "shown": len(kept)}  # fmt: skip
    if kind == "vector_field":
        if array.ndim < 3 or array.shape[-1] < 2:
            msg = f"a vector field must be (H, W, 2) (got shape {array.shape})"
            raise ValueError(msg)
        field = np.asarray(
            array.reshape(array.shape[0], array.shape[1], -1)[..., :2], dtype=np.float64
        )
        sy = max(1, -(-field.shape[0] // _MAX_GRID))
        sx = max(1, -(-field.shape[1] // _MAX_GRID))
        small = np.nan_to_num(field[::sy, ::sx])
        return {"kind": kind, "u": small[..., 0].tolist(), "v": small[..., 1].tolist(),
                "shape": list(array.shape)}  # fmt: skip
    msg = f"no drawing for media kind {kind!r}"
    raise ValueError(msg)


def histogram_steps(files: list[tuple[int | None, Path]]) -> dict[str, Any]:
    """One histogram name over its steps on common bins: the distribution view's heat map."""
    if len(files) > _MAX_STEPS:
        keep = np.linspace(0, len(files) - 1, _MAX_STEPS).round().astype(int)
        files = [files[i] for i in sorted(set(keep.tolist()))]
    samples = []
    for step, path in files:
        try:
            samples.append((step, _finite(_load(path))))
        except (OSError, ValueError):
            continue
    present = [s for _, s in samples if len(s)]
    if not present:
        return {"steps": [], "edges": [], "counts": [], "quantiles": []}
    lo = min(float(s.min()) for s in present)
    hi = max(float(s.max()) for s in present)
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, _BINS + 1)
    counts, quantiles = [], []
    for _, values in samples:
        counts.append(np.histogram(values, bins=edges)[0].tolist())
        qs = np.quantile(values, [0.05, 0.25, 0.5, 0.75, 0.95]).tolist() if len(values) else []
        quantiles.append(qs)
    return {"steps": [s for s, _ in samples], "edges": edges.tolist(), "counts": counts,
            "quantiles": quantiles}  # fmt: skip


def text_preview(path: Path) -> dict[str, Any]:
    """The first 64 KiB of an artifact as text, or a note that it is binary."""
    with open(path, "rb") as fh:
        head = fh.read(_TEXT_BYTES + 1)
    size = path.stat().st_size
    try:
        text = head[:_TEXT_BYTES].decode("utf-8")
    except UnicodeDecodeError:
        return {"text": None, "bytes": size, "note": "binary file: download it"}
    return {"text": text, "bytes": size, "truncated": size > _TEXT_BYTES}
