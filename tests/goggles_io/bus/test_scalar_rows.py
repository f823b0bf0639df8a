"""A logger's scalars on the in-process bus travel as rows (``EventBus.put_row``, issue 35).

The caller's thread queues a tuple; each lane's worker builds the handler's ``Event`` (ADR
0071: the only place one is built). What a handler sees, what the tally counts and what a
give-up counts must be what they were when the logger built the ``Event`` itself.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import ClassVar

import pytest

import goggles_io as gg
from goggles_io import Event, Kind
from goggles_io._api.state import STATE
from goggles_io._bus.bus import EventBus
from goggles_io._bus.transport import Transport
from goggles_io._event.rows import events_of, row_of
from goggles_io.handlers.base import BaseHandler
from goggles_io.testing import MemoryHandler


class _Stalls(BaseHandler):
    """Takes ``stall_after`` events, then waits for ``release``."""

    capabilities: ClassVar[frozenset[Kind]] = frozenset(Kind)

    def __init__(self, name: str, stall_after: int) -> None:
        super().__init__(name=name)
        self.stall_after = stall_after
        self.handled = 0
        self.release = threading.Event()

    def handle(self, event: Event) -> None:
        if self.handled >= self.stall_after:
            self.release.wait(60)
        self.handled += 1


def _row(step: int, extra: dict[str, object] | None = None) -> tuple[object, ...]:
    return ("metric", "global", "loss", None, step, 1.5, "t", 7, "f.py", 3, extra, None, 0.25,
            "", 0)  # fmt: skip


def test_the_in_process_bus_takes_rows() -> None:
    """``put_row`` is the Transport's (no getattr): the in-process bus has it, as the client."""
    gg.get_logger("t", with_metrics=True).scalar("loss", 1.0, step=0)
    assert isinstance(STATE.transport, EventBus)
    assert "put_row" in Transport.__dict__ and callable(STATE.transport.put_row)


def test_a_handler_gets_the_event_the_logger_used_to_build() -> None:
    sink = MemoryHandler(name="mem")
    gg.attach(sink)
    log = gg.get_logger("t", with_metrics=True)
    before = time.time()
    log.scalar("loss", 0.5, step=3)
    log.scalar("acc", float("nan"), step=4, split="val", time=2.0)
    gg.flush()

    first, second = sink.events
    assert first == Event(
        Kind.METRIC,
        "global",
        {"loss": 0.5},
        None,
        3,
        first.timestamp,
        "t",
        STATE.pid,
        __file__,
        first.lineno,
        {},
        None,
    )
    assert first.kind is Kind.METRIC and before <= first.timestamp <= time.time()
    assert second.payload.keys() == {"acc"} and second.time == 2.0
    assert second.extra == {"split": "val", "nonfinite": ["acc"], "x": 2.0, "x_axis": "time"}


def test_each_lane_builds_its_own_equal_event_and_kinds_still_filter() -> None:
    metrics, other, logs = MemoryHandler(name="a"), MemoryHandler(name="b"), MemoryHandler(name="c")
    logs.capabilities = frozenset({Kind.LOG})
    for sink in (metrics, other, logs):
        gg.attach(sink)
    gg.get_logger("t", with_metrics=True).scalar("loss", 0.5, step=1)
    gg.flush()
    assert metrics.events == other.events and len(metrics.events) == 1
    assert metrics.events[0] is not other.events[0]
    assert logs.events == []


def test_a_scalar_row_makes_the_event_its_twelve_field_form_makes() -> None:
    (event,) = events_of([_row(5, {"k": 1})])
    assert events_of([row_of(event)]) == [event]
    assert (event.kind, event.payload, event.step, event.extra) == (
        Kind.METRIC,
        {"loss": 0.25},
        5,
        {"k": 1},
    )
    assert events_of([_row(5)])[0].extra == {}


def test_rows_from_many_threads_are_counted_exactly() -> None:
    """The lane counts rows without a lock: 4 threads x 5,000 rows are 20,000 logged."""
    bus = EventBus(async_mode=True)  # lanes with their own thread, as get_bus() builds it
    sink = MemoryHandler(name="mem")
    bus.attach(sink)

    def produce() -> None:
        for step in range(5_000):
            bus.put_row(_row(step), 384)
            if step % 500 == 0:
                bus.stats()  # readers take counter steps too

    threads = [threading.Thread(target=produce) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report = bus.finish()
    stats = report.handlers["mem"]
    assert (stats.logged, stats.delivered, stats.dropped) == (20_000, 20_000, 0)
    assert len(sink.events) == 20_000


def test_a_give_up_counts_the_rows_left_exactly() -> None:
    """A sink that stops after 300 of 2,000 rows: 300 delivered, 1,700 not handled in time,
    and the sink coming back later changes nothing."""
    bus = EventBus(async_mode=True, stall_s=0.5)
    sink = _Stalls("stuck", 300)
    bus.attach(sink)
    try:
        for step in range(2_000):
            bus.put_row(_row(step), 384)
        report = bus.finish()
        sink.release.set()
        deadline = time.monotonic() + 10
        while sink.handled < 301 and time.monotonic() < deadline:
            time.sleep(0.01)
        after = bus.stats()["stuck"]
    finally:
        sink.release.set()
    stats = report.handlers["stuck"]
    assert (stats.logged, stats.delivered, stats.not_in_time) == (2_000, 300, 1_700)
    assert after == stats


def test_rows_past_the_byte_budget_spill_and_come_back_as_events(
    monkeypatch: pytest.MonkeyPatch, spool_dir: Path
) -> None:
    """Each row counts its bytes against the lane's budget: past it, rows go to the spool and
    reach the handler as events, in order."""
    monkeypatch.setenv("GOGGLES_QUEUE_BYTES", "4096")
    sink = _Stalls("slow", 1)
    gg.attach(sink)
    seen: list[int | None] = []
    original = sink.handle

    def record(event: Event) -> None:
        original(event)
        seen.append(event.step)

    sink.handle = record  # type: ignore[method-assign]
    log = gg.get_logger("t", with_metrics=True)
    for step in range(3_000):
        log.scalar("loss", 0.5, step=step)
    spilled = bool(list(spool_dir.rglob("*.seg")))
    sink.release.set()
    report = gg.finish(timeout=30)
    assert spilled
    assert seen == list(range(3_000))
    assert (report.handlers["slow"].delivered, report.dropped) == (3_000, 0)


def test_a_row_that_makes_no_event_is_a_counted_failure() -> None:
    """A malformed row fails like a raising handler: counted, the worker goes on."""
    bus = EventBus(async_mode=True)  # lanes with their own thread, as get_bus() builds it
    sink = MemoryHandler(name="mem")
    bus.attach(sink)
    bus.put_row(("metric", "global", "loss", None, 1), 384)
    bus.put_row(_row(2), 384)
    stats = bus.finish().handlers["mem"]
    assert (stats.logged, stats.delivered, stats.failed) == (2, 1, 1)
    assert [event.step for event in sink.events] == [2]
