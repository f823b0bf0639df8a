"""A list redelivered after its host died: the file sinks write each event once (issue 29).

The dead host's handler wrote a head of the list (and perhaps a torn line); a new handler
instance, built from the same spec as the host builds it, gets the whole list again through
``handle_redelivered`` and must skip exactly what is on disk. Real files, real handlers; one
test kills a real writer process with SIGKILL.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import goggles_io as gg
from goggles_io._bus.bus import EventBus
from goggles_io._event.rows import row_of
from goggles_io.handlers._layout import identity, record
from goggles_io.handlers.base import handler_from_dict
from goggles_io.handlers.csv import METRICS_FILE
from goggles_io.handlers.storage import LOG_FILE, MEDIA_DIRS, read_events
from support import wait_until

SCRIPT = Path(__file__).parent / "scripts" / "redelivery_writer.py"
SRC = Path(__file__).resolve().parents[3] / "src"
_spec = importlib.util.spec_from_file_location("redelivery_writer", SCRIPT)
assert _spec is not None and _spec.loader is not None
writer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(writer)

_KINDS = ["metric", "text", "log", "image"]


def _event(i: int, kind: str, pid: int = 1000) -> gg.Event:
    """Event ``i`` of a producer: emitted now (as a logger would), so media written later."""
    common: dict[str, Any] = {"scope": "global", "step": i, "logger": "t", "pid": pid}
    common["timestamp"] = time.time()
    if kind == "metric":
        return gg.Event(kind=gg.Kind.METRIC, payload={"loss": i / 7, "nan": float("nan")}, **common)
    if kind == "log":
        return gg.Event(kind=gg.Kind.LOG, payload=f"line {i} ü", level=20, **common)
    if kind == "image":
        pixels = np.full((2, 3, 3), i % 256, dtype=np.uint8)
        return gg.Event(kind=gg.Kind.IMAGE, payload=pixels, extra={"name": "cam"}, **common)
    return gg.Event(kind=gg.Kind.TEXT, payload=f"text {i}", **common)


def _key(line: dict[str, Any]) -> tuple[Any, ...]:
    return (line["kind"], line["pid"], line["timestamp"], line["step"])


def _keys(events: list[gg.Event]) -> list[tuple[Any, ...]]:
    return [(e.kind.value, e.pid, e.timestamp, e.step) for e in events]


def _write_and_abandon(root: Path, events: list[gg.Event]) -> dict[str, Any]:
    """What a dead host's handler leaves: ``events`` written; returns its spec.

    ``close()`` only so that the test leaks no descriptor: the bytes on disk are those a
    ``flush()`` then SIGKILL leaves (the SIGKILL test below kills a real process).
    """
    handler = gg.LocalStorageHandler(root)
    handler.open()
    for event in events:
        handler.handle(event)
    handler.close()
    return handler.to_dict()


def _line_ends(path: Path) -> list[int]:
    data = path.read_bytes()
    return [i + 1 for i, b in enumerate(data) if b == 0x0A]


def _strict_json_lines(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    assert data == b"" or data.endswith(b"\n")
    return [json.loads(line) for line in data.splitlines()]


class TestLocalStorage:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        kinds=st.lists(st.sampled_from(_KINDS), min_size=1, max_size=10),
        before=st.integers(0, 3),
        data=st.data(),
    )
    def test_each_event_is_in_the_log_once_wherever_the_host_died(
        self, tmp_path_factory: pytest.TempPathFactory, kinds: list[str], before: int, data: Any
    ) -> None:
        """Whatever head was written (a lost buffer, a torn line), the rest is written once."""
        root = tmp_path_factory.mktemp("run")
        earlier = [_event(100 + i, "text") for i in range(before)]  # a list acknowledged
        resent = [_event(i, kind) for i, kind in enumerate(kinds)]
        if data.draw(st.booleans(), label="identical pair"):
            resent.insert(1, resent[0])  # two equal events (same timestamp) both logged
        head = data.draw(st.integers(0, len(resent)), label="head written")
        lost = data.draw(st.integers(0, len(resent) - head), label="then lost from the buffer")
        spec = _write_and_abandon(root, earlier + resent[: head + lost])
        log = root / LOG_FILE
        ends = [0, *_line_ends(log)]
        keep = ends[before + head]
        if lost:  # the kill cut the next line somewhere
            where = data.draw(st.integers(0, 999), label="torn at (per mille of the line)")
            keep += where * (ends[before + head + 1] - keep) // 1000
        os.truncate(log, keep)
        fresh = [_event(50, "metric", pid=2000)]  # another producer, first at the new host

        handler = handler_from_dict(spec)
        assert isinstance(handler, gg.LocalStorageHandler)
        handler.open()
        handler.handle_redelivered(list(earlier))  # resent too: fully written before
        for event in fresh:
            handler.handle(event)
        handler.handle_redelivered(list(resent))
        handler.close()

        lines = _strict_json_lines(log)
        expected = earlier + resent[:head] + fresh + resent[head:]
        assert _keys(expected) == [_key(line) for line in lines]
        assert [identity(record(e)) for e in expected] == [identity(line) for line in lines]
        assert len(earlier) + head == handler.skipped_redelivered
        for line in lines:
            if line["kind"] == "image":
                assert (root / line["payload"]).is_file()

    def test_a_list_written_whole_is_skipped_whole(self, tmp_path: Path) -> None:
        """A list the dead host wrote entirely (its acknowledgement was lost) adds nothing."""
        resent = [_event(i, "metric") for i in range(5)]
        spec = _write_and_abandon(tmp_path, resent)
        before = (tmp_path / LOG_FILE).read_bytes()

        handler = handler_from_dict(spec)
        handler.open()
        handler.handle_redelivered(list(resent))
        handler.close()

        assert before == (tmp_path / LOG_FILE).read_bytes()

    def test_a_list_resent_to_the_same_live_handler_is_skipped(self, tmp_path: Path) -> None:
        """The handler's own buffered lines count as written too."""
        handler = gg.LocalStorageHandler(tmp_path)
        handler.open()
        resent = [_event(i, "text") for i in range(4)]
        for event in resent[:3]:
            handler.handle(event)
        handler.handle_redelivered(list(resent))
        handler.close()

        assert _keys(resent) == [_key(line) for line in _strict_json_lines(tmp_path / LOG_FILE)]

    def test_the_media_file_of_a_line_never_written_is_written_over(self, tmp_path: Path) -> None:
        """An image written whose line was lost with the buffer: no ``-1`` copy beside it."""
        resent = [_event(i, "image") for i in range(3)]
        spec = _write_and_abandon(tmp_path, resent)
        log = tmp_path / LOG_FILE
        os.truncate(log, _line_ends(log)[0] + 5)  # line 0 whole, line 1 torn, line 2 lost
        images = tmp_path / MEDIA_DIRS[gg.Kind.IMAGE]
        written = max(p.stat().st_mtime for p in images.iterdir())
        wait_until(lambda: time.time() > written + 0.1, what="the new host starts later")

        handler = handler_from_dict(spec)
        handler.open()
        handler.handle_redelivered(list(resent))
        handler.close()

        lines = _strict_json_lines(log)
        assert ["images/cam_0.png", "images/cam_1.png", "images/cam_2.png"] == [
            line["payload"] for line in lines
        ]
        assert ["cam_0.png", "cam_1.png", "cam_2.png"] == sorted(p.name for p in images.iterdir())

    def test_a_file_named_by_an_earlier_line_is_never_written_over(self, tmp_path: Path) -> None:
        """Same name and step logged twice: the first file is named by its line, so it stays."""
        first, again = _event(3, "image"), _event(3, "image")
        spec = _write_and_abandon(tmp_path, [first])
        wait_until(lambda: time.time() > first.timestamp + 0.1, what="the new host starts later")

        handler = handler_from_dict(spec)
        handler.open()
        handler.handle_redelivered([again])
        handler.close()

        payloads = [line["payload"] for line in _strict_json_lines(tmp_path / LOG_FILE)]
        assert ["images/cam_3.png", "images/cam_3-1.png"] == payloads

    def test_the_bus_hands_a_redelivered_batch_to_the_hook(self, tmp_path: Path) -> None:
        """EventBus.put_rows(redelivered=True) reaches handle_redelivered through the lane."""
        resent = [_event(i, "metric") for i in range(6)]
        spec = _write_and_abandon(tmp_path, resent[:4])
        bus = EventBus()
        try:
            bus.attach(spec)
            bus.put_rows([row_of(event) for event in resent], redelivered=True)
        finally:
            report = bus.finish(60)

        assert report is not None
        lines = _strict_json_lines(tmp_path / LOG_FILE)
        assert _keys(resent) == [_key(line) for line in lines]


def _run_writer(kind: str, folder: Path, grown: Any) -> None:
    """Start the writer, wait until ``grown()`` holds, SIGKILL it (always stopped)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), *sys.path])}
    proc = subprocess.Popen([sys.executable, str(SCRIPT), kind, str(folder)], env=env)
    try:
        wait_until(grown, timeout_s=60, what="the writer wrote")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)


class TestSigkilledWriter:
    def test_storage_after_a_real_kill(self, tmp_path: Path) -> None:
        """A writer SIGKILLed mid-run; the producer resends its last lists: one line each."""
        log = tmp_path / LOG_FILE
        _run_writer("storage", tmp_path, lambda: log.exists() and log.stat().st_size > 200_000)
        handler = handler_from_dict(writer.handler("storage", str(tmp_path)).to_dict())
        handler.open()  # cuts a torn line
        whole = len(_strict_json_lines(log))
        start, end = max(whole // 10 - 3, 0) * 10, (whole // 10 + 3) * 10
        for first in range(start, end, 10):  # the unacknowledged lists, in order
            handler.handle_redelivered([writer.event(i) for i in range(first, first + 10)])
        handler.close()

        log_read = read_events(tmp_path)
        assert 0 == log_read.skipped
        assert list(range(end)) == [line["step"] for line in log_read.events]
        assert whole - start == handler.skipped_redelivered

    def test_csv_after_a_real_kill(self, tmp_path: Path) -> None:
        """No CSV row, nor value, twice; the rows pending in the dead writer come back."""
        table = tmp_path / METRICS_FILE
        _run_writer("csv", tmp_path, lambda: table.exists() and table.stat().st_size > 100_000)
        handler = handler_from_dict(writer.handler("csv", str(tmp_path)).to_dict())
        handler.open()
        with open(table, encoding="utf-8", newline="") as rows:
            written = len(list(csv.reader(rows))) - 1
        start, end = max(written // 10 - 3, 0) * 10, (written // 10 + 3) * 10
        for first in range(start, end, 10):
            handler.handle_redelivered([writer.event(i) for i in range(first, first + 10)])
        handler.close()

        with open(table, encoding="utf-8", newline="") as rows:
            read = list(csv.DictReader(rows))
        assert [str(i) for i in range(end)] == [row["step"] for row in read]
        assert [repr(1.0 / (i + 1)) for i in range(end)] == [row["loss"] for row in read]


def _metric(step: int, values: dict[str, float]) -> gg.Event:
    return gg.Event(kind=gg.Kind.METRIC, scope="global", payload=values, step=step)


def _cells(table: Path) -> list[tuple[str, str, str]]:
    """Every non-empty value cell as (step, column, value)."""
    with open(table, encoding="utf-8", newline="") as rows:
        read = list(csv.DictReader(rows))
    return [(r["step"], c, v) for r in read for c, v in r.items() if c != "step" and v]


class TestCsv:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        logged=st.lists(
            st.tuples(st.integers(0, 6), st.sampled_from(["loss", "acc", "step"])),
            min_size=1,
            max_size=14,
        ),
        rows_per_batch=st.integers(1, 4),
        data=st.data(),
    )
    def test_no_value_is_written_twice_wherever_the_host_died(
        self,
        tmp_path_factory: pytest.TempPathFactory,
        logged: list[tuple[int, str]],
        rows_per_batch: int,
        data: Any,
    ) -> None:
        """Each logged value is one cell of the table, once, whatever head was written."""
        folder = tmp_path_factory.mktemp("run")
        resent = [_metric(step, {name: float(i)}) for i, (step, name) in enumerate(logged)]
        head = data.draw(st.integers(0, len(resent)), label="head written")
        handler = gg.CsvHandler(folder, rows_per_batch=rows_per_batch)
        handler.open()
        for event in resent[:head]:
            handler.handle(event)
        handler.close()  # the rows are on disk (a flush, then the kill)

        again = handler_from_dict(handler.to_dict())
        again.open()
        again.handle_redelivered(list(resent))
        again.close()

        column = {"step": "step (metric)"}
        want = sorted((str(s), column.get(n, n), repr(float(i))) for i, (s, n) in enumerate(logged))
        assert want == sorted(_cells(folder / METRICS_FILE))
        assert head == again.skipped_redelivered

    def test_a_row_written_whole_is_not_written_again(self, tmp_path: Path) -> None:
        """The plain case: the dead host wrote steps 0..3; 0..5 come again; 6 rows in all."""
        resent = [_metric(step, {"loss": step / 2, "acc": 1.0}) for step in range(6)]
        handler = gg.CsvHandler(tmp_path, rows_per_batch=2)
        handler.open()
        for event in resent[:4]:
            handler.handle(event)
        handler.close()

        again = handler_from_dict(handler.to_dict())
        again.open()
        again.handle_redelivered(list(resent))
        again.close()

        with open(tmp_path / METRICS_FILE, encoding="utf-8", newline="") as rows:
            read = list(csv.reader(rows))
        assert ["step", "wall_time", "loss", "acc"] == read[0]
        assert [[str(s), "", repr(s / 2), "1.0"] for s in range(6)] == read[1:]  # no timestamp

    def test_rows_are_found_after_a_new_column_rewrote_the_table(self, tmp_path: Path) -> None:
        """A fresh metric rewrites the file before the redelivered list arrives: still once."""
        resent = [_metric(step, {"loss": float(step)}) for step in range(4)]
        handler = gg.CsvHandler(tmp_path, rows_per_batch=1)
        handler.open()
        for event in resent[:2]:
            handler.handle(event)
        handler.close()

        again = handler_from_dict(handler.to_dict())
        again.open()
        again.handle(_metric(9, {"lr": 0.5}))  # another producer's first event, a new column
        again.flush()
        again.handle_redelivered(list(resent))
        again.close()

        want = [("0", "loss", "0.0"), ("1", "loss", "1.0"), ("2", "loss", "2.0")]
        want += [("3", "loss", "3.0"), ("9", "lr", "0.5")]
        assert sorted(want) == sorted(_cells(tmp_path / METRICS_FILE))
