"""Metric lines gathered by shape and turned into columns a block at a time.

Why: a run logs the same dict of metrics every step, so most metric lines share their payload's
keys. Appending each point to four Python arrays cost ~0.5 µs a point (the indexer's profile,
docs/benchmarks.md, issue 35); here a line costs one ``tuple`` of its keys and one ``list`` of
its values, and ``numpy`` converts a whole block of same-shaped rows to float columns at once.

The result is the per-point reading of :func:`goggles_io.runs.lines.json_lines` exactly: a block
whose values are not all plain numbers (a ``"NaN"`` marker, a string, a list, ``None``, an int
beyond 64 bits) is converted point by point by the same rules. Each metric keeps its points in
line order: a line whose keys meet those of another waiting shape, or a line the caller reads
point by point, first flushes every waiting block.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from itertools import chain
from typing import Any, Protocol

import numpy as np

__all__ = ["MetricRows"]

_NAN = math.nan
_NUMERIC_KINDS = frozenset("fiub")  # float, int, unsigned, bool: float64 without surprises


class _Column(Protocol):
    """What a block is written into (``lines.Columns``; named here so neither imports the other)."""

    step: array[float]
    time: array[float]
    x: array[float]
    value: array[float]
    x_axis: str | None

    def add(self, step: float, when: float, x: float, value: float) -> None: ...


class _Block:
    """Rows of one shape: the axes of each line and its payload values in key order."""

    __slots__ = ("axes", "keys", "values", "x_axis")

    def __init__(self, keys: tuple[str, ...], x_axis: str | None) -> None:
        self.keys = keys
        self.x_axis = x_axis
        self.axes: list[float] = []  # step, wall time, custom x of each line, flat
        self.values: list[Any] = []  # flat, row after row: no container per line


class MetricRows:
    """Collects metric lines into :class:`_Block` s and writes them into columns.

    ``column(name)`` gives the metric's columns (``Parsed.column``); ``number`` is the per-point
    rule for a value.
    """

    def __init__(
        self, column: Callable[[str], _Column], number: Callable[[Any], float | None]
    ) -> None:
        self._column = column
        self._number = number
        self._blocks: dict[tuple[tuple[str, ...], str | None], _Block] = {}
        self._waiting: set[str] = set()  # the keys of every waiting block

    def add(
        self, payload: dict[str, Any], step: float, when: float, x: float, x_axis: str | None
    ) -> None:
        """Keep one line's points for its block (the line's axes shared by its points)."""
        keys = tuple(payload)
        block = self._blocks.get((keys, x_axis))
        if block is None:
            if not self._waiting.isdisjoint(keys):
                self.flush()  # another shape holds some of these metrics: keep their order
            block = self._blocks[(keys, x_axis)] = _Block(keys, x_axis)
            self._waiting.update(keys)
        block.axes.extend((step, when, x))
        block.values.extend(payload.values())

    def add_block(
        self,
        keys: tuple[str, ...],
        payloads: list[dict[str, Any]],
        step: np.ndarray,
        when: np.ndarray,
    ) -> None:
        """Consecutive lines of one shape (``keys``), no custom x axis, their step and wall time
        already columns: written at once when every value is a plain number, else line by
        line through :meth:`add` (the per-point rules)."""
        if not self._waiting.isdisjoint(keys):
            self.flush()  # earlier lines of these metrics are waiting: they go first
        values = _as_floats(list(chain.from_iterable(map(dict.values, payloads))), len(keys))
        if values is None:
            for payload, line_step, line_when in zip(
                payloads, step.tolist(), when.tolist(), strict=True
            ):
                self.add(payload, line_step, line_when, _NAN, None)
            return
        steps, times = step.tobytes(), when.tobytes()
        xs = np.full(len(payloads), _NAN).tobytes()
        for position, name in enumerate(keys):
            column = self._column(name)
            column.step.frombytes(steps)
            column.time.frombytes(times)
            column.x.frombytes(xs)
            column.value.frombytes(np.ascontiguousarray(values[:, position]).tobytes())

    def flush(self) -> None:
        """Write every waiting block into the columns, in the order the blocks began."""
        for block in self._blocks.values():
            self._write(block)
        self._blocks.clear()
        self._waiting.clear()

    def _write(self, block: _Block) -> None:
        values = _as_floats(block.values, len(block.keys))
        if values is None:
            self._write_by_point(block)
            return
        axes = np.asarray(block.axes, dtype=np.float64).reshape(-1, 3)
        steps, times, xs = (np.ascontiguousarray(axes[:, i]).tobytes() for i in range(3))
        for position, name in enumerate(block.keys):
            column = self._column(name)
            if block.x_axis is not None:
                column.x_axis = block.x_axis
            column.step.frombytes(steps)
            column.time.frombytes(times)
            column.x.frombytes(xs)
            column.value.frombytes(np.ascontiguousarray(values[:, position]).tobytes())

    def _write_by_point(self, block: _Block) -> None:
        """The per-point rules for a block holding something other than plain numbers."""
        number, width = self._number, len(block.keys)
        for line, start in enumerate(range(0, len(block.values), max(width, 1))):
            step, when, x = block.axes[3 * line : 3 * line + 3]
            for name, raw_value in zip(
                block.keys, block.values[start : start + width], strict=True
            ):
                value = number(raw_value)
                if value is None:
                    continue  # a list or a string: not a scalar point
                column = self._column(name)
                if block.x_axis is not None:
                    column.x_axis = block.x_axis
                column.add(step, when, x, value)


def _as_floats(values: list[Any], width: int) -> np.ndarray | None:
    """``values`` as a float64 matrix of ``width`` columns when every one is a plain number,
    else ``None``."""
    try:
        flat = np.array(values)
    except (ValueError, TypeError, OverflowError):  # ragged: lists of several lengths
        return None
    if flat.ndim != 1 or flat.dtype.kind not in _NUMERIC_KINDS:
        return None  # a string, None, a list, an int beyond 64 bits
    return flat.astype(np.float64, copy=False).reshape(-1, max(width, 1))
