"""Thin a series to about ``n`` points for drawing, keeping every bucket's extremes.

Equal-count buckets in x order; each keeps its first, lowest, highest and last point (the M4
idea: a line drawn through them covers the same pixels as the full series), so a spike in a
million points still shows. Zoomed in far enough, a window holds fewer than ``n`` points and
is sent whole: full resolution.
"""

from __future__ import annotations

import numpy as np

__all__ = ["downsample", "window"]


def window(
    x: np.ndarray, y: np.ndarray, x0: float | None, x1: float | None
) -> tuple[np.ndarray, np.ndarray]:
    """The finite points with ``x0 <= x <= x1`` (either bound may be ``None``), in x order."""
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size > 1 and np.any(x[1:] < x[:-1]):
        order = np.argsort(x, kind="stable")
        x, y = x[order], y[order]
    lo = 0 if x0 is None else int(np.searchsorted(x, x0, side="left"))
    hi = x.size if x1 is None else int(np.searchsorted(x, x1, side="right"))
    # one point either side, so the line reaches the edges of the zoomed view
    lo, hi = max(lo - 1, 0), min(hi + 1, x.size)
    return x[lo:hi], y[lo:hi]


def downsample(x: np.ndarray, y: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """At most about ``n`` points of ``(x, y)`` (sorted by x) with each bucket's extremes kept."""
    size = x.size
    if size <= n or n < 8:
        return x, y
    buckets = max(n // 4, 1)
    per = -(-size // buckets)  # ceil
    full = size // per
    picks = []
    if full:
        seg = y[: full * per].reshape(full, per)
        base = np.arange(full) * per
        picks += [base, base + np.argmin(seg, axis=1), base + np.argmax(seg, axis=1)]
        picks.append(base + per - 1)
    if size > full * per:
        tail = y[full * per :]
        start = full * per
        picks.append(np.array([start, start + int(np.argmin(tail)), start + int(np.argmax(tail)),
                               size - 1]))  # fmt: skip
    index = np.unique(np.concatenate(picks))
    return x[index], y[index]
