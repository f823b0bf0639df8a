"""Text digested ahead while the server starts (ADR 0087): the index takes an answer only for the
log as it was digested, so its points are the text's whatever happened to the files before,
between or during the two readings.

Each test builds the run's index with a :class:`DigestAhead` beside it and compares it with the
index of a copy of its ``log.jsonl`` alone (the text), column files byte for byte.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import goggles_io as gg
from goggles_io.handlers._columns import CHUNK, HEADER_BYTES, column_paths
from goggles_io.handlers.storage import LOG_FILE
from goggles_io.server import Collector
from goggles_io.server.digest_ahead import DigestAhead, log_state
from goggles_io.server.ui._feed import DirFeeder
from goggles_io.server.ui._index import RunIndex
from support import started, wait_until

SCRIPT = Path(__file__).parent / "scripts" / "column_writer.py"
SRC = Path(__file__).resolve().parents[4] / "src"
_AXES = ("x.f64", "t.f64", "c.f64", "y.f64")


def _plain_run(run: Path, lines: int = 3000, first: int = 0) -> None:
    handler = gg.LocalStorageHandler(run)
    handler.open()
    try:
        for i in range(first, first + lines):
            handler.handle(gg.Event(kind=gg.Kind.METRIC, scope="global",
                                    payload={f"m{i % 5}": i * 0.25}, step=i,
                                    timestamp=1e9 + i, logger="t", pid=1))  # fmt: skip
            if i % 97 == 0:
                handler.flush()
    finally:
        handler.close()


def _records(run: Path) -> int:
    return (column_paths(run / LOG_FILE)[2].stat().st_size - HEADER_BYTES) // CHUNK.itemsize


def _ahead(root: Path) -> DigestAhead:
    ahead = DigestAhead([root]).start()
    assert ahead.join(60.0)
    return ahead


def _points(index: RunIndex) -> dict[str, list[bytes]]:
    out = {}
    for name, meta in index.metrics.items():
        cols = []
        for axis in _AXES:
            path = index.folder / meta.folder / axis
            data = path.read_bytes()[: meta.count * 8] if path.exists() else b""
            cols.append(data or np.full(meta.count, math.nan).tobytes())
        out[name] = cols
    return out


def _same_as_text(run: Path, tmp: Path, feeder: DirFeeder) -> None:
    while feeder.step(2 << 20):
        pass
    copy = tmp / "text" / run.name
    copy.mkdir(parents=True)
    shutil.copyfile(run / LOG_FILE, copy / LOG_FILE)
    text = DirFeeder(copy, tmp / "index-text")
    while text.step(2 << 20):
        pass
    assert _points(feeder.index) == _points(text.index)
    assert feeder.index.points == text.index.points > 0


def _index_with(run: Path, tmp: Path, ahead: DigestAhead) -> DirFeeder:
    feeder = DirFeeder(run, tmp / "index-columns", ahead)
    _same_as_text(run, tmp, feeder)
    return feeder


def _after_a_clock_tick(run: Path, tmp: Path) -> None:
    """Wait until a file written now gets a later time than the log's (the kernel's file clock
    is coarse): an edit made next changes the log's state."""
    probe = tmp / "probe"
    before = log_state(os.stat(run / LOG_FILE))[4]

    def later() -> bool:
        probe.write_bytes(b"x")
        return os.stat(probe).st_ctime_ns > before

    wait_until(later, what="the file clock moves on")


def test_a_plain_run_takes_every_text_digest_from_ahead(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "run"
    _plain_run(run)
    ahead = _ahead(tmp_path / "runs")
    assert ahead.digested == (run / LOG_FILE).stat().st_size
    _index_with(run, tmp_path, ahead)
    assert ahead.used == _records(run) > 10


def test_an_index_kept_from_an_earlier_start_is_not_read_again(tmp_path: Path) -> None:
    """A restart: what the kept index holds is not digested ahead; lines appended since are."""
    run = tmp_path / "runs" / "run"
    _plain_run(run)
    feeder = DirFeeder(run, tmp_path / "index-columns")
    while feeder.step(2 << 20):
        pass
    ahead = DigestAhead([tmp_path / "runs"], tmp_path / "index-columns").start()
    assert ahead.join(60.0)
    assert ahead.digested == 0
    held = (run / LOG_FILE).stat().st_size
    _plain_run(run, 500, first=3000)
    ahead = _ahead_kept(tmp_path)
    assert 0 < ahead.digested <= (run / LOG_FILE).stat().st_size - held
    _same_as_text(run, tmp_path, DirFeeder(run, tmp_path / "index-columns", ahead))
    assert ahead.used > 0


def _ahead_kept(tmp_path: Path) -> DigestAhead:
    ahead = DigestAhead([tmp_path / "runs"], tmp_path / "index-columns").start()
    assert ahead.join(60.0)
    return ahead


def _edit_in_place(run: Path) -> None:
    log = run / LOG_FILE
    data = bytearray(log.read_bytes())
    at = data.index(b'"m3": ', len(data) // 2) + 7
    data[at] = ord("9") if data[at] != ord("9") else ord("8")
    with open(log, "r+b") as fh:  # the same inode and size: only the times say it changed
        fh.write(bytes(data))


def _replace(run: Path) -> None:
    log = run / LOG_FILE
    (run / "copy").write_bytes(log.read_bytes())
    os.replace(run / "copy", log)


def _cut(run: Path) -> None:
    log = run / LOG_FILE
    data = log.read_bytes()
    os.truncate(log, data.index(b"\n", len(data) // 2) + 1)  # at a line's end


CHANGES = {
    "text edited in place": _edit_in_place,
    "log replaced": _replace,
    "log cut": _cut,
    "lines appended": lambda run: _plain_run(run, 500, first=3000),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_log_changed_after_its_digests_is_read_again(tmp_path: Path, change: str) -> None:
    """Digested ahead, then changed: no answer is taken, the points are the text's."""
    run = tmp_path / "runs" / "run"
    _plain_run(run)
    ahead = _ahead(tmp_path / "runs")
    assert ahead.digested > 0
    _after_a_clock_tick(run, tmp_path)
    CHANGES[change](run)
    _index_with(run, tmp_path, ahead)
    assert ahead.used == 0


def _hostile_chunks(run: Path) -> None:
    """Records claiming the whole log over and over, past its end, backwards and empty."""
    chunks = column_paths(run / LOG_FILE)[2]
    size = (run / LOG_FILE).stat().st_size
    claims = [(0, size), (0, size), (size, size * 4), (10, 5), (7, 7), (1 << 62, 1 << 63)] * 5000
    records = np.zeros(len(claims), CHUNK)
    records["start"], records["end"] = zip(*claims, strict=True)
    with open(chunks, "r+b") as fh:
        fh.seek(HEADER_BYTES)
        fh.write(records.tobytes())


def _fifo_log(run: Path) -> None:
    log = run / LOG_FILE
    log.unlink()
    os.mkfifo(log)


def _symlinked_log(run: Path) -> None:
    log = run / LOG_FILE
    outside = run.parent.parent / "outside.jsonl"
    os.replace(log, outside)
    log.symlink_to(outside)


def test_hostile_chunk_records_cost_at_most_one_read_of_the_log(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "run"
    _plain_run(run)
    _hostile_chunks(run)
    ahead = _ahead(tmp_path / "runs")
    assert ahead.digested <= (run / LOG_FILE).stat().st_size
    _index_with(run, tmp_path, ahead)


@pytest.mark.parametrize("damage", [_fifo_log, _symlinked_log])
def test_a_fifo_or_a_link_out_is_never_read_ahead(tmp_path: Path, damage: Any) -> None:
    run = tmp_path / "runs" / "run"
    _plain_run(run)
    damage(run)
    ahead = _ahead(tmp_path / "runs")  # a FIFO opened for reading would block: it returns
    assert (ahead.digested, ahead.used) == (0, 0)
    ahead.close()


def _writer(run: Path, seed: int) -> list[str]:
    return [sys.executable, str(SCRIPT), str(run), str(seed), "p"]


def test_a_writer_killed_at_random_moments_while_digests_are_taken_ahead(tmp_path: Path) -> None:
    """A live run: a writer SIGKILLed at seeded moments, and at each of its lives a server
    start (a fresh ahead digesting while it appends, an index reopened from the last one's
    folder) stepping beside it; the index follows the text throughout."""
    run = tmp_path / "runs" / "run"
    rng = random.Random(87)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    for life in range(5):
        grow_to = (life + 1) * rng.randint(60_000, 160_000)
        with started(_writer(run, life), stdout=subprocess.PIPE, env=env) as proc:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == b"started"
            ahead = DigestAhead([tmp_path / "runs"]).start()
            try:
                feeder = DirFeeder(run, tmp_path / "index-columns", ahead)
                wait_until(
                    lambda grow_to=grow_to: (run / LOG_FILE).stat().st_size > grow_to,
                    what="lines written",
                )
                feeder.step(rng.choice([4096, 65536, 2 << 20]))
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
                feeder.step(rng.choice([65536, 2 << 20]))
            finally:
                ahead.close()
    handler = gg.LocalStorageHandler(run)
    handler.open()  # the last recovery, as the next host would
    handler.close()
    final = _ahead(tmp_path / "runs")
    _same_as_text(run, tmp_path, DirFeeder(run, tmp_path / "index-columns", final))


def test_the_collector_digests_its_runs_ahead_and_stops_at_close(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "run"
    _plain_run(run)
    with Collector(run_dirs=[tmp_path / "runs"], index_dir=tmp_path / "index") as collector:
        catalog = collector._ui.state.catalog
        ahead = catalog.ahead
        assert ahead is not None
        wait_until(
            lambda: sum(r.feeder.index.points for r in catalog.dirs.values()) == 3000,
            what="every point indexed",
        )
        threads = [t for t in threading.enumerate() if t.name == "telemetry-ui-digest-ahead"]
    assert not any(t.is_alive() for t in threads)
    assert ahead._logs == {}  # closed with the catalog: every answer forgotten
