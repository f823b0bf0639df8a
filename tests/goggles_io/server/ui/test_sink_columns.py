"""The columns LocalStorageHandler keeps beside log.jsonl (ADR 0080): the index that takes them
holds exactly the points of the text-only reading, whatever happened to the files.

Each test builds the run's index twice, once from the run as it is (columns taken where they
hold) and once from a copy of its ``log.jsonl`` alone (the text), and compares every metric's
column files byte for byte, its media and its unreadable-line count.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import goggles_io as gg
from goggles_io.handlers import _columns as columns_module
from goggles_io.handlers._columns import CHUNK, HEADER, HEADER_BYTES, column_paths
from goggles_io.handlers.storage import LOG_FILE
from goggles_io.server.ui._feed import DirFeeder
from goggles_io.server.ui._index import RunIndex
from support import started, wait_until

SCRIPT = Path(__file__).parent / "scripts" / "column_writer.py"
SRC = Path(__file__).resolve().parents[4] / "src"
_AXES = ("x.f64", "t.f64", "c.f64", "y.f64")


def _index(run: Path, where: Path, budget: int = 2 << 20) -> DirFeeder:
    feeder = DirFeeder(run, where)
    while feeder.step(budget):
        pass
    return feeder


def _points(index: RunIndex) -> dict[str, list[bytes]]:
    out = {}
    for name, meta in index.metrics.items():
        folder = index.folder / meta.folder
        cols = []
        for axis in _AXES:
            path = folder / axis
            data = path.read_bytes()[: meta.count * 8] if path.exists() else b""
            if axis == "c.f64" and not data:
                data = np.full(meta.count, math.nan).tobytes()
            cols.append(data)
        out[name] = cols
    return out


def _text_only(run: Path, copy: Path) -> Path:
    copy.mkdir(parents=True)
    shutil.copyfile(run / LOG_FILE, copy / LOG_FILE)
    return copy


def _same_as_text(run: Path, tmp: Path, feeder: DirFeeder | None = None) -> DirFeeder:
    """Index ``run`` (or go on with ``feeder``) and its text alone; assert they are equal."""
    got = _index(run, tmp / "index-columns") if feeder is None else feeder
    while got.step(2 << 20):
        pass
    text = _index(_text_only(run, tmp / "text" / run.name), tmp / "index-text")
    assert _points(got.index) == _points(text.index)
    assert got.index.media == text.index.media
    assert got.index.extra.get("skipped", 0) == text.index.extra.get("skipped", 0)
    assert got.index.points == text.index.points
    return got


def _used(feeder: DirFeeder) -> int:
    """The chunk records the index has gone past (0: the columns were never taken)."""
    return int(feeder.index.sources[LOG_FILE].get("chunk", 0))


def _event(payload: Any, step: int | None = 0, **kw: Any) -> gg.Event:
    fields = {"kind": gg.Kind.METRIC, "scope": "global", "payload": payload, "step": step,
              "timestamp": 1e9 + (step or 0), "logger": "t", "pid": 1, **kw}  # fmt: skip
    return gg.Event(**fields)


def _write(run: Path, events: list[gg.Event], flush_every: int = 0, **kw: Any) -> None:
    handler = gg.LocalStorageHandler(run, **kw)
    handler.open()
    try:
        for i, event in enumerate(events, start=1):
            handler.handle(event)
            if flush_every and i % flush_every == 0:
                handler.flush()
    finally:
        handler.close()


def _plain_run(run: Path, lines: int = 3000) -> None:
    _write(run, [_event({f"m{i % 5}": i * 0.25}, step=i) for i in range(lines)], flush_every=97)


# -- what the sink writes is what the text says ---------------------------------------------------
_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(1 << 70), 1 << 70),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
    st.sampled_from(["NaN", "Infinity"]),
    st.lists(st.floats(allow_nan=False), max_size=2),
)
_NAMES = st.sampled_from(["a", "b", "c", "d/e", "é", "x y", "\udc80"])


@st.composite
def _events(draw: st.DrawFn) -> gg.Event:
    shape = draw(st.sampled_from(["plain", "plain", "plain", "odd", "log", "text", "x", "time"]))
    step = draw(st.one_of(st.none(), st.integers(-3, 10**6)))
    stamp = draw(st.one_of(st.floats(0, 2e9), st.integers(0, 2**40), st.just(math.nan)))
    extra: dict[str, Any] = {}
    time = None
    if shape == "log":
        return _event(draw(st.text(max_size=5)), step, kind=gg.Kind.LOG, timestamp=stamp)
    if shape == "text":
        return _event(draw(st.text(max_size=5)), step, kind=gg.Kind.TEXT, timestamp=stamp)
    if shape == "plain":
        payload = draw(st.dictionaries(_NAMES, st.floats() | st.integers(-(2**62), 2**62),
                                       max_size=4))  # fmt: skip
    else:
        payload = draw(st.dictionaries(_NAMES, _VALUES, max_size=4))
    if shape == "x":
        extra = {"x_axis": "epoch", "x": draw(st.floats(0, 10))}
    if shape == "time":
        time = draw(st.floats(0, 100))
    return _event(payload, step, timestamp=stamp, extra=extra, time=time)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=st.lists(_events(), max_size=40),
    second=st.lists(_events(), max_size=40),
    flush_every=st.integers(1, 9),
)
def test_index_with_columns_is_the_text_reading(
    tmp_path_factory: pytest.TempPathFactory,
    first: list[gg.Event],
    second: list[gg.Event],
    flush_every: int,
) -> None:
    """Any mix of lines, written in two sessions with flushes anywhere: the same index."""
    tmp = tmp_path_factory.mktemp("mix")
    run = tmp / "run"
    _write(run, first, flush_every)
    _write(run, second, flush_every)
    _same_as_text(run, tmp)


def test_a_plain_run_is_read_from_its_columns(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _plain_run(run)
    feeder = _same_as_text(run, tmp_path)
    assert _used(feeder) == (column_paths(run / LOG_FILE)[2].stat().st_size - HEADER_BYTES) // 48


def test_columns_digested_by_crc32_are_read_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where xxhash is missing the sink digests with CRC-32; the header says so."""
    monkeypatch.setattr(columns_module, "DEFAULT_DIGEST", columns_module.CRC32)
    run = tmp_path / "run"
    _plain_run(run)
    header = np.frombuffer(column_paths(run / LOG_FILE)[2].read_bytes()[:HEADER_BYTES], HEADER)
    assert int(header["digest"][0]) == columns_module.CRC32
    assert _used(_same_as_text(run, tmp_path)) > 0


def test_columns_off_writes_none(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write(run, [_event({"a": 1.0})], columns=False)
    assert not any(p.exists() for p in column_paths(run / LOG_FILE))
    assert gg.LocalStorageHandler(run, columns=False).config()["columns"] is False


def test_text_between_chunks_and_an_index_started_before_the_columns(tmp_path: Path) -> None:
    """Lines written without columns (another writer, columns off) are read as text between the
    chunks; an index that read part of the log before is not confused by chunks behind it."""
    run = tmp_path / "run"
    _write(run, [_event({"a": float(i)}, step=i) for i in range(500)], flush_every=50,
           columns=False)  # fmt: skip
    feeder = _index(run, tmp_path / "index-columns", budget=4096)
    _write(run, [_event({"a": float(i)}, step=i) for i in range(500, 900)], flush_every=60)
    _write(run, [_event({"b": float(i)}, step=i) for i in range(900)], flush_every=70,
           columns=False)  # fmt: skip
    _write(run, [_event({"a": float(i), "b": 1.0}, step=i) for i in range(900, 990)],
           flush_every=9)  # fmt: skip
    assert _used(_same_as_text(run, tmp_path, feeder)) > 0


# -- damaged, stale, foreign and hostile column files ---------------------------------------------
def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def _garbage(path: Path) -> None:
    path.write_bytes(random.Random(7).randbytes(path.stat().st_size))


def _edit_text(run: Path) -> None:
    """A value digit of a line in the middle changed in place (the same length)."""
    log = run / LOG_FILE
    data = bytearray(log.read_bytes())
    at = data.index(b'"m3": ', len(data) // 2) + 7
    data[at] = ord("9") if data[at] != ord("9") else ord("8")
    log.write_bytes(bytes(data))


def _replace_log(run: Path) -> None:
    log = run / LOG_FILE
    copy = run / "log.copy"
    copy.write_bytes(log.read_bytes())  # made while the old one lives: another inode
    os.replace(copy, log)


def _cut_and_rewrite(run: Path) -> None:
    """The log cut in the middle, then other lines appended by a writer without columns."""
    log = run / LOG_FILE
    data = log.read_bytes()
    log.write_bytes(data[: data.index(b"\n", len(data) // 2) + 1])
    _write(run, [_event({"m1": -7.0}, step=i) for i in range(400)], columns=False)


def _symlink_points(run: Path) -> None:
    pts = column_paths(run / LOG_FILE)[0]
    outside = run.parent / "elsewhere.pts"
    shutil.copyfile(pts, outside)
    pts.unlink()
    pts.symlink_to(outside)


def _fifo_points(run: Path) -> None:
    pts = column_paths(run / LOG_FILE)[0]
    pts.unlink()
    os.mkfifo(pts)


def _foreign_chunks(run: Path) -> None:
    os.chown(column_paths(run / LOG_FILE)[2], 65534, 65534)


def _names(run: Path, text: bytes) -> None:
    column_paths(run / LOG_FILE)[1].write_bytes(text)


def _unknown_digest(run: Path) -> None:
    chunks = column_paths(run / LOG_FILE)[2]
    data = bytearray(chunks.read_bytes())
    data[16:24] = (7).to_bytes(8, "little")
    chunks.write_bytes(bytes(data))


DAMAGE = {
    "unknown digest": _unknown_digest,
    "chunks torn": lambda run: os.truncate(column_paths(run / LOG_FILE)[2], HEADER_BYTES + 37 * 48 + 13),
    "chunks garbage": lambda run: _garbage(column_paths(run / LOG_FILE)[2]),
    "chunk claims more": lambda run: _flip(column_paths(run / LOG_FILE)[2], HEADER_BYTES + 5 * 48 + 16),
    "points garbage": lambda run: _garbage(column_paths(run / LOG_FILE)[0]),
    "a point changed": lambda run: _flip(column_paths(run / LOG_FILE)[0], 28 * 1000 + 20),
    "points cut": lambda run: os.truncate(column_paths(run / LOG_FILE)[0], 28 * 1500 + 3),
    "points missing": lambda run: column_paths(run / LOG_FILE)[0].unlink(),
    "names garbage": lambda run: _names(run, b'"m0"\n{not json\n'),
    "names duplicated": lambda run: _names(run, b'"m0"\n"m0"\n"m2"\n"m3"\n"m4"\n'),
    "names swapped": lambda run: _names(run, b'"m1"\n"m0"\n"m2"\n"m3"\n"m4"\n'),
    "text edited": _edit_text,
    "log replaced": _replace_log,
    "log cut and rewritten": _cut_and_rewrite,
    "points a symlink out": _symlink_points,
    "points a FIFO": _fifo_points,
    "chunks of another owner": _foreign_chunks,
}  # fmt: skip


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_columns_fall_back_to_the_text(tmp_path: Path, damage: str) -> None:
    run = tmp_path / "run"
    _plain_run(run)
    DAMAGE[damage](run)
    _same_as_text(run, tmp_path)


@pytest.mark.parametrize("damage", ["points a symlink out", "points a FIFO", "log replaced",
                                    "chunks of another owner", "unknown digest"])  # fmt: skip
def test_refused_columns_are_not_read_at_all(tmp_path: Path, damage: str) -> None:
    run = tmp_path / "run"
    _plain_run(run)
    DAMAGE[damage](run)
    assert _used(_same_as_text(run, tmp_path)) == 0


def test_the_sink_cuts_its_columns_to_the_log_when_it_opens(tmp_path: Path) -> None:
    """After the log lost its end (a recovery, a user), reopening cuts the chunks that claim it,
    and what is written next gets columns again."""
    run = tmp_path / "run"
    _plain_run(run)
    log, chunks = run / LOG_FILE, column_paths(run / LOG_FILE)[2]
    size = log.stat().st_size
    os.truncate(log, size // 3)
    _write(run, [_event({"m9": float(i)}, step=i) for i in range(300)], flush_every=40)
    records = np.frombuffer(chunks.read_bytes()[HEADER_BYTES:], CHUNK)
    assert int(records["end"].max()) == log.stat().st_size
    assert np.all(records["start"][1:] >= records["end"][:-1])
    _same_as_text(run, tmp_path)


@pytest.mark.parametrize("what", ["symlink", "fifo"])
def test_the_sink_writes_no_columns_through_a_symlink_or_a_fifo(tmp_path: Path, what: str) -> None:
    """A column file that is a link or a FIFO is never written through: the log is whole, the
    columns are off (said once on stderr), the link's target untouched."""
    run = tmp_path / "run"
    run.mkdir()
    pts = column_paths(run / LOG_FILE)[0]
    column_paths(run / LOG_FILE)[2].write_bytes(b"")  # the columns exist: opened at open()
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    if what == "symlink":
        pts.symlink_to(target)
    else:
        os.mkfifo(pts)
    _plain_run(run, 500)
    assert target.read_bytes() == b"keep"
    assert len((run / LOG_FILE).read_bytes().splitlines()) == 500
    assert _used(_same_as_text(run, tmp_path)) == 0


# -- kills and two writers ------------------------------------------------------------------------
def _writer(run: Path, seed: int, producer: str = "p") -> list[str]:
    return [sys.executable, str(SCRIPT), str(run), str(seed), producer]


def test_a_writer_killed_at_random_moments_leaves_columns_the_text_agrees_with(
    tmp_path: Path,
) -> None:
    """SIGKILL at seeded random moments, each life resending the stream from its start (the
    sink skips what it holds); the index follows the run live across the deaths."""
    run = tmp_path / "run"
    rng = random.Random(44)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    feeder = DirFeeder(run, tmp_path / "index-columns")
    for life in range(6):
        grow_to = (life + 1) * rng.randint(60_000, 160_000)
        with started(_writer(run, life), stdout=subprocess.PIPE, env=env) as proc:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == b"started"
            wait_until(
                lambda grow_to=grow_to: (run / LOG_FILE).stat().st_size > grow_to,
                what="lines written",
            )
            feeder.step(rng.choice([4096, 65536, 2 << 20]))  # the index reads while it writes
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    _write(run, [])  # the last recovery, as the next host would
    assert len((run / LOG_FILE).read_bytes().splitlines()) > 1000
    assert _used(_same_as_text(run, tmp_path, feeder)) > 0


def test_two_writers_at_once_one_keeps_columns_the_other_is_text(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    with (
        started(_writer(run, 1, "p"), stdout=subprocess.PIPE, env=env) as one,
        started(_writer(run, 2, "q"), stdout=subprocess.PIPE, env=env) as two,
    ):
        for proc in (one, two):
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == b"started"
        wait_until(lambda: (run / LOG_FILE).stat().st_size > 400_000, what="lines written")
        for proc in (one, two):
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    _write(run, [], columns=False)  # the torn line cut, the columns left as they are
    assert _used(_same_as_text(run, tmp_path)) > 0
