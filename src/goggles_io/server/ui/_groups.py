"""A group of runs as one line and a band: mean and median, std, stderr and min-max, with the
number of members behind every point (ADR 0064).

At each x only the members present there count: a member is interpolated (linearly) between
its own first and last points and is absent outside them, so a run that ended drops out of the
statistics instead of pulling the mean to zero, and ``count`` says how many members each point
stands on. The grid is the members' own x values when there are few of them (a single-point
member is then a point of the group, not lost between grid lines), else ``n`` even steps plus
every member's first and last x, so the count changes exactly where a member starts or ends.
Members whose typical magnitudes differ by more than ``SCALE_RATIO`` get a ``note``: their
mean follows the largest.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

__all__ = ["SCALE_RATIO", "group_band"]

SCALE_RATIO = 10.0
"""Members whose median absolute values differ by more than this factor are named in a note."""
_MAX_GRID = 4000


def _listed(values: np.ndarray) -> list[float | None]:
    """Floats for JSON, ``None`` for NaN/inf (strict JSON)."""
    return [v if v == v and v not in (np.inf, -np.inf) else None for v in values.tolist()]


def _members(parts: list[dict[str, Any]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each member's finite points, sorted by x (members with none are left out)."""
    out = []
    for part in parts:
        x = np.asarray(part["x"], dtype=np.float64)
        y = np.array([np.nan if v is None else v for v in part["y"]], dtype=np.float64)
        good = np.isfinite(x) & np.isfinite(y)
        if good.any():
            order = np.argsort(x[good], kind="stable")
            out.append((x[good][order], y[good][order]))
    return out


def _grid(members: list[tuple[np.ndarray, np.ndarray]], n: int) -> np.ndarray:
    """The x values the group is computed at (see the module's docstring)."""
    every = np.unique(np.concatenate([x for x, _ in members]))
    if len(every) <= max(n, 2):
        return every
    lo, hi = every[0], every[-1]
    ends = [v for x, _ in members for v in (x[0], x[-1])]
    return np.unique(np.concatenate([np.linspace(lo, hi, max(min(n, _MAX_GRID), 2)), ends]))


def _stack(members: list[tuple[np.ndarray, np.ndarray]], grid: np.ndarray) -> np.ndarray:
    """Members (rows) at the grid (columns): interpolated inside their own x range, else NaN."""
    stack = np.full((len(members), len(grid)), np.nan)
    for row, (x, y) in enumerate(members):
        inside = (grid >= x[0]) & (grid <= x[-1])
        stack[row, inside] = np.interp(grid[inside], x, y)
    return stack


def _scale_note(members: list[tuple[np.ndarray, np.ndarray]]) -> tuple[list[float], str | None]:
    """Each member's median absolute value, and a note when they differ by more than 10x."""
    scales = [float(np.median(np.abs(y))) for _, y in members]
    positive = [s for s in scales if s > 0]
    if len(positive) < 2:
        return scales, None
    ratio = max(positive) / min(positive)
    if ratio <= SCALE_RATIO:
        return scales, None
    note = (
        f"members' scales differ {ratio:.3g}x (median |value| {min(positive):.3g} to "
        f"{max(positive):.3g}): the mean follows the largest"
    )
    return scales, note


def group_band(parts: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """Mean, median, std, stderr, min and max across member series (each a ``metric_series``
    answer: ``x`` and ``y``) at each x, over the members present there, with their ``count``."""
    members = _members(parts)
    if not members:
        return {"x": [], "mean": [], "median": [], "std": [], "stderr": [], "lo": [], "hi": [],
                "count": [], "members": 0, "scales": [], "note": None}  # fmt: skip
    grid = _grid(members, n)
    stack = _stack(members, grid)
    present = np.isfinite(stack)
    count = present.sum(axis=0)
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # columns no member covers: NaN, a gap
        mean = np.nanmean(stack, axis=0)
        median = np.nanmedian(stack, axis=0)
        std = np.where(count > 1, np.nanstd(stack, axis=0, ddof=1), 0.0)
        std = np.where(count > 0, std, np.nan)
        stderr = std / np.sqrt(np.maximum(count, 1))
        lo = np.nanmin(stack, axis=0)
        hi = np.nanmax(stack, axis=0)
    scales, note = _scale_note(members)
    return {
        "x": grid.tolist(),
        "mean": _listed(mean),
        "median": _listed(median),
        "std": _listed(std),
        "stderr": _listed(stderr),
        "lo": _listed(lo),
        "hi": _listed(hi),
        "count": count.astype(int).tolist(),
        "members": len(members),
        "scales": scales,
        "note": note,
    }
