"""The index serves what the per-line reading of the run holds, whatever the line shape (issue 44).

The reference is ``json_lines(..., by_line=True)`` (every line through the per-line rules) of
every complete line, added to a :class:`RunIndex` at once; the path under test is the
dashboard's own :class:`DirFeeder`, reading in small turns while the log grows (appends picked
up, a torn last line waiting for its end). Both indexes must serve the same points, bit for bit
(``-0.0`` stays negative, NaN and inf marked), the same summaries, and the same chart answers.
The custom-x column is written only from a metric's first custom x on (ADR 0074): a metric
without one serves NaN x, as before.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import nonfinite_json
from goggles_io._util.safe_read import MAX_LINE_BYTES
from goggles_io.runs.lines import json_lines
from goggles_io.server.ui._feed import DirFeeder
from goggles_io.server.ui._index import RunIndex
from goggles_io.server.ui._pyramid import Pyramid
from goggles_io.server.ui._series import export_rows, metric_series

NAMES = ["m0", "m1", "loss", "lr"]
VALUE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([-0.0, 0.0, 1e308]),
    st.integers(-(2**40), 2**40), st.sampled_from(["a string", None, [1.0], True]),
)  # fmt: skip


def _scalar(name: str, value: Any, step: int, when: float) -> bytes:
    """One metric a line: what ``logger.scalar`` writes through LocalStorageHandler."""
    line = {"kind": "metric", "scope": "global", "payload": {name: value}, "filepath": "t.py",
            "lineno": 3, "step": step, "timestamp": when, "logger": "train", "pid": 7}  # fmt: skip
    return nonfinite_json.dumps(line).encode()


def _dict_line(values: dict[str, Any], step: int, when: float, x: float | None) -> bytes:
    """Several metrics a line (events.jsonl), sometimes on a custom x axis."""
    extra = {} if x is None else {"x_axis": "epoch", "x": x}
    line = {"kind": "metric", "scope": "global", "step": step, "timestamp": when,
            "logger": "bench", "extra": extra, "payload": values}  # fmt: skip
    return nonfinite_json.dumps(line).encode()


@st.composite
def logs(draw: st.DrawFn) -> list[bytes]:
    lines: list[bytes] = []
    for step in range(draw(st.integers(1, 40))):
        when = 1.7e9 + step
        kind = draw(st.sampled_from(["scalars", "scalars", "dict", "odd"]))
        if kind == "scalars":  # metrics taking turns, one a line
            for name in draw(st.permutations(NAMES[:2])):
                lines.append(_scalar(name, draw(VALUE), step, when))
        elif kind == "dict":
            values = {n: draw(VALUE) for n in draw(st.lists(st.sampled_from(NAMES), max_size=3))}
            x = draw(st.one_of(st.none(), st.floats(-1e3, 1e3)))
            lines.append(_dict_line(values, step, when, x))
        else:
            lines.append(draw(st.sampled_from([b"not json", b"{", b"[1]", b"   ",
                                               b'{"kind": "log", "payload": "hi"}'])))  # fmt: skip
    return lines


def _reference(lines: list[bytes], folder: Path) -> RunIndex:
    index = RunIndex(folder, "reference")
    index.add(json_lines(lines, by_line=True), "log.jsonl")
    return index


def _bits(rows: np.ndarray) -> list[list[int]]:
    """Rows compared bit for bit (-0.0 is not 0.0), every NaN one NaN."""
    clean = np.where(np.isnan(rows), np.nan, rows)
    return clean.view(np.int64).tolist()


def _served(index: RunIndex) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, meta in sorted(index.metrics.items()):
        rows = [r for chunk in export_rows(index, name, chunk=7) for r in chunk]
        table = np.array(rows).reshape(-1, 4)
        series = [metric_series(index, name, axis, None, None, 4) for axis in ("step", "custom")]
        # not ``ends`` and ``last``: a chunk ending in NaN keeps the last finite one of earlier
        # chunks, and min/max keep the first of 0.0 and -0.0: both depend on where turns cut
        # the log (the reference is one chunk); compared by value, not by sign
        summary = (meta.count, meta.bad, meta.low, meta.high, meta.x_axis, meta.known, meta.sorted)
        out[name] = [_bits(table), json.dumps(series), summary]
    return out


def _grow(run: Path, lines: list[bytes], cuts: list[int], tmp: Path) -> DirFeeder:
    """Write the log in pieces (the last line of a piece may be torn), indexing in small turns."""
    data = b"".join(line + b"\n" for line in lines)
    feeder = DirFeeder(run, tmp / "index")
    edges = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    for a, b in itertools.pairwise(edges):
        with open(run / "log.jsonl", "ab") as fh:
            fh.write(data[a:b])
        _drain(feeder, 301)
    return feeder


def _drain(feeder: DirFeeder, budget: int) -> None:
    """Step until nothing is waiting (a torn last line waits for its end: no progress)."""
    for _ in range(100_000):
        before = dict(feeder.index.sources.get("log.jsonl") or {})
        if not feeder.step(budget) or feeder.index.sources.get("log.jsonl") == before:
            return
    raise AssertionError("indexing made no end")


@settings(max_examples=60, deadline=None)
@given(lines=logs(), cuts=st.lists(st.integers(0, 10**6), max_size=5))
def test_the_index_serves_the_per_line_reading(
    lines: list[bytes], cuts: list[int], tmp_path_factory: Any
) -> None:
    tmp = tmp_path_factory.mktemp("paths")
    run = tmp / "run"
    run.mkdir()
    feeder = _grow(run, lines, cuts, tmp)
    reference = _reference(lines, tmp / "reference")
    assert _served(feeder.index) == _served(reference)
    assert feeder.index.extra.get("skipped", 0) == json_lines(lines, by_line=True).skipped


def test_a_torn_last_line_waits_and_a_huge_line_is_counted(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    feeder = DirFeeder(run, tmp_path / "index")
    whole = _scalar("m0", -0.0, 1, 2.0)
    with open(run / "log.jsonl", "wb") as fh:
        fh.write(whole + b"\n" + whole[:20])
    _drain(feeder, 1 << 20)
    assert feeder.index.points == 1
    with open(run / "log.jsonl", "ab") as fh:
        fh.write(whole[20:] + b"\n" + b"x" * (MAX_LINE_BYTES + 10) + b"\n" + whole + b"\n")
    _drain(feeder, 1 << 20)
    assert feeder.index.points == 3
    assert feeder.index.extra["skipped"] == 1
    value = feeder.index.store("m0").column("value")
    assert [math.copysign(1.0, v) for v in value.tolist()] == [-1.0, -1.0, -1.0]


def test_custom_x_column_written_from_its_first_value(tmp_path: Path) -> None:
    """No c.f64 while every x is NaN; NaN before the first x once one comes; a NaN head torn by
    a crash is NaN again on reopening."""
    store = Pyramid(tmp_path / "m")
    nan = np.full(40, np.nan)
    store.append(np.arange(40.0), np.arange(40.0), nan, np.arange(40.0))
    assert not (tmp_path / "m" / "c.f64").exists()
    assert np.isnan(store.column("custom")).all()
    assert np.isnan(store.pick("custom", np.array([0, 39]))).all()
    torn = tmp_path / "m" / "c.f64"
    torn.write_bytes(np.full(9, np.nan).tobytes())  # a crash while writing the NaN head
    reopened = Pyramid(tmp_path / "m", 40)
    assert os.path.getsize(torn) == 40 * 8
    assert np.isnan(reopened.column("custom")).all()
    torn.unlink()
    reopened = Pyramid(tmp_path / "m", 40)
    reopened.append(np.arange(3.0), np.arange(3.0), np.array([np.nan, 1.5, -0.0]), np.ones(3))
    x = reopened.column("custom")
    assert len(x) == 43 and np.isnan(x[:41]).all() and x[41] == 1.5
    assert math.copysign(1.0, x[42]) == -1.0
