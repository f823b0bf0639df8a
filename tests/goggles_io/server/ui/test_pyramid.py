"""The dashboard's on-disk metric store, property-tested against a naive reference."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from goggles_io.server.ui._pyramid import BASE, Pyramid

values = st.lists(
    st.one_of(st.floats(-1e6, 1e6), st.sampled_from([np.nan, np.inf, -np.inf])),
    min_size=1,
    max_size=5000,
)


def build(folder: Path, ys: list[float], cuts: list[int]) -> Pyramid:
    store = Pyramid(folder)
    y = np.array(ys, dtype=float)
    edges = sorted({0, len(y), *(c % (len(y) + 1) for c in cuts)})
    for a, b in itertools.pairwise(edges):
        step = np.arange(a, b, dtype=float)
        store.append(step, step * 0.5, np.full(b - a, np.nan), y[a:b])
    return store


def reference(y: np.ndarray, a: int, b: int) -> tuple[float, float, float, int, int]:
    part = y[a:b]
    good = part[np.isfinite(part)]
    low = good.min() if len(good) else np.inf
    high = good.max() if len(good) else -np.inf
    return low, high, float(good.sum()), len(good), len(part) - len(good)


class TestPyramid:
    @settings(max_examples=80, deadline=None)
    @given(values, st.lists(st.integers(0, 5000), max_size=4), st.integers(0, 5000),
           st.integers(0, 5000), st.integers(2, 300))  # fmt: skip
    def test_buckets_match_naive_aggregates(
        self, ys: list[float], cuts: list[int], a: int, b: int, n: int
    ) -> None:
        """Every bucket's min, max, sum and counts equal a naive pass over its points."""
        y = np.array(ys, dtype=float)
        i0, i1 = sorted((a % (len(y) + 1), b % (len(y) + 1)))
        with tempfile.TemporaryDirectory() as tmp:
            store = build(Path(tmp), ys, cuts)
            if i1 == i0:
                return
            got = store.buckets(i0, i1, n)
        ends = [*got.start[1:].tolist(), i1]
        expected = [reference(y, int(s), int(e)) for s, e in zip(got.start, ends, strict=True)]
        actual = [
            (r["ymin"], r["ymax"], r["ysum"], int(r["nfin"]), int(r["nbad"])) for r in got.rec
        ]

        assert len(expected) == len(actual)
        for (lo, hi, total, fin, bad), (glo, ghi, gtotal, gfin, gbad) in zip(
            expected, actual, strict=True
        ):
            assert (lo, hi, fin, bad) == (glo, ghi, gfin, gbad)
            assert np.isclose(total, gtotal, rtol=1e-9, atol=1e-6)

    @settings(max_examples=40, deadline=None)
    @given(values, st.integers(2, 200))
    def test_extreme_indexes_point_at_extreme_values(self, ys: list[float], n: int) -> None:
        """A bucket's min and max indexes hold its min and max values."""
        y = np.array(ys, dtype=float)
        with tempfile.TemporaryDirectory() as tmp:
            store = build(Path(tmp), ys, [])
            got = store.buckets(0, len(y), n)
        finite = got.rec[got.rec["nfin"] > 0]

        assert np.array_equal(y[finite["imin"].astype(int)], finite["ymin"])
        assert np.array_equal(y[finite["imax"].astype(int)], finite["ymax"])

    def test_reopening_cuts_files_back_to_the_trusted_count(self, tmp_path: Path) -> None:
        """Points written after the last trusted count (a crash) are dropped on reopening."""
        store = Pyramid(tmp_path)
        step = np.arange(1000, dtype=float)
        store.append(step, step, step, step)
        again = Pyramid(tmp_path, count=600)

        assert (600, [600 // BASE, 600 // BASE**2]) == (again.count, again.levels)
        assert 599.0 == again.column("value")[-1]

    def test_spike_in_a_million_points_is_in_every_answer(self, tmp_path: Path) -> None:
        """One spike among a million points is the maximum of the full-range answer."""
        step = np.arange(1_000_000, dtype=float)
        y = np.sin(step / 5000.0)
        y[333_333] = 3.0
        store = Pyramid(tmp_path)
        store.append(step, step, step, y)
        got = store.buckets(0, store.count, 1000)

        assert (3.0, 333_333.0) == (
            got.rec["ymax"].max(),
            got.rec["imax"][got.rec["ymax"].argmax()],
        )
        assert got.level >= 2 and len(got.rec) <= 1001

    def test_bisect_finds_window_edges(self, tmp_path: Path) -> None:
        """bisect gives the first index at or after a value, or after it with right=True."""
        step = np.repeat(np.arange(100, dtype=float), 2)
        store = Pyramid(tmp_path)
        store.append(step, step, step, step)

        assert (20, 22, 0, 200) == (store.bisect("step", 10), store.bisect("step", 10, right=True),
                                    store.bisect("step", -5), store.bisect("step", 500))  # fmt: skip

    @settings(max_examples=60, deadline=None)
    @given(values, st.lists(st.integers(0, 5000), max_size=6), st.integers(0, 5000))
    def test_levels_equal_one_build_however_appended_and_reopened(
        self, ys: list[float], cuts: list[int], reopen_at: int
    ) -> None:
        """Level files written append by append (items kept between appends, a reopen in the
        middle reading them back) are byte for byte those of one append of every point."""
        y = np.array(ys, dtype=float)
        edges = sorted({0, len(y), *(c % (len(y) + 1) for c in cuts)})
        with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as many:
            whole = Pyramid(Path(one))
            whole.append(y, y, y, y)
            store = Pyramid(Path(many))
            for a, b in itertools.pairwise(edges):
                if a <= reopen_at % (len(y) + 1) < b:
                    store = Pyramid(Path(many), store.count)
                store.append(y[a:b], y[a:b], y[a:b], y[a:b])
            assert store.levels == whole.levels
            for level in range(1, len(whole.levels) + 1):
                name = f"L{level}.blk"
                assert (Path(many) / name).read_bytes() == (Path(one) / name).read_bytes()
