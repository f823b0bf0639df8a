"""finish() waits while a handler makes progress and counts exactly what a stalled one left.

In-process bus, real worker threads, real handlers: a sink costing ~60 µs an event gets all
200,000 events however long that takes; a sink that stops taking is given up after ``stall_s``
and delivered + dropped + failed == logged, to the event.
"""

from __future__ import annotations

import threading
import time
from typing import ClassVar

import pytest

from goggles_io import Event, Kind
from goggles_io._bus.bus import EventBus
from goggles_io._bus.lane import Lane
from goggles_io._delivery.policy import DeliveryPolicy, WhenFull
from goggles_io._event.rows import row_of, rows_nbytes
from goggles_io.handlers.base import BaseHandler
from support import ctrl_c_reaches_us


class _Costly(BaseHandler):
    """Spends ``cost_s`` of CPU on every event (a W&B-like sink); can be made to stall."""

    capabilities: ClassVar[frozenset[Kind]] = frozenset(Kind)

    def __init__(self, name: str, cost_s: float) -> None:
        super().__init__(name=name)
        self.cost_s = cost_s
        self.handled = 0
        self.closed = False
        self.stall_after: int | None = None
        self.release = threading.Event()

    def handle(self, event: Event) -> None:
        if self.stall_after is not None and self.handled >= self.stall_after:
            self.release.wait(60)
        end = time.perf_counter() + self.cost_s
        while time.perf_counter() < end:
            pass
        self.handled += 1

    def close(self) -> None:
        self.closed = True


class _Raises(BaseHandler):
    capabilities: ClassVar[frozenset[Kind]] = frozenset(Kind)

    def handle(self, event: Event) -> None:
        if event.step is not None and event.step % 3 == 0:
            raise ValueError("every third")


def _metric(step: int) -> Event:
    return Event(kind=Kind.METRIC, scope="global", payload={"loss": 0.5}, step=step)


def _offer_many(lane: Lane, events: list[Event]) -> int:
    """Offer ``events`` as the socket host does: one list of their rows (ADR 0071)."""
    rows = [row_of(event) for event in events]
    return lane.offer_rows(rows, rows_nbytes(rows))


def _bus(stall_s: float) -> EventBus:
    return EventBus(
        async_mode=True,
        queue_size=65_536,
        policy=DeliveryPolicy(when_full=WhenFull.SPILL),
        stall_s=stall_s,
    )


def test_a_slow_sink_gets_every_event_and_finish_reports_its_time(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """200,000 events into a 60 µs/event sink: minutes of work for a total deadline of
    seconds, yet finish waits (progress every few seconds on stderr) and nothing is lost."""
    n = 200_000
    sink = _Costly("slow_sink", 60e-6)
    bus = _bus(stall_s=5.0)
    try:
        bus.attach(sink)
        for step in range(n):
            bus.emit(_metric(step))
        report = bus.finish()
    finally:
        sink.release.set()
    stats = report.handlers["slow_sink"]
    assert sink.handled == n and sink.closed
    assert (stats.logged, stats.delivered, stats.dropped, stats.failed) == (n, n, 0, 0)
    assert not report.timed_out and report.missing == 0
    assert report.elapsed_s > 0
    print(f"finish waited {report.elapsed_s:.1f} s for the 60 µs sink")


def test_a_stalled_sink_is_given_up_after_stall_s_with_exact_counts() -> None:
    n = 20_000
    sink = _Costly("stuck", 0.0)
    sink.stall_after = 5_000
    bus = _bus(stall_s=0.5)
    try:
        bus.attach(sink)
        for step in range(n):
            bus.emit(_metric(step))
        start = time.monotonic()
        report = bus.finish()
        waited = time.monotonic() - start
        stats = report.handlers["stuck"]
        # The sink comes back after the give-up: nothing it does now changes the tally.
        sink.release.set()
        deadline = time.monotonic() + 30
        while sink.handled < 5_001 and time.monotonic() < deadline:
            time.sleep(0.01)
        after = bus.stats()["stuck"]
    finally:
        sink.release.set()
    assert report.timed_out and not report.abandoned
    assert 0.5 <= waited < 20
    assert stats.logged == n
    assert stats.delivered == 5_000
    assert stats.dropped == stats.not_in_time == n - 5_000
    assert stats.delivered + stats.dropped + stats.failed == stats.logged
    assert after == stats
    assert sink.handled <= 5_001  # at most the event it was inside of
    assert report.missing == n - 5_000
    assert "not handled in time" in report.summary()


def test_events_a_handler_raises_on_are_counted_as_failed() -> None:
    bus = _bus(stall_s=5.0)
    bus.attach(_Raises(name="raises"))
    for step in range(30):
        bus.emit(_metric(step))
    stats = bus.finish().handlers["raises"]
    assert (stats.logged, stats.delivered, stats.failed, stats.dropped) == (30, 20, 10, 0)


def test_a_lane_reopened_after_a_give_up_counts_on_from_the_frozen_tally() -> None:
    sink = _Costly("again", 0.0)
    sink.stall_after = 10
    lane = Lane(sink, async_mode=True, queue_size=1_000, stall_s=0.3)
    try:
        lane.start()
        _offer_many(lane, [_metric(i) for i in range(50)])
        assert not lane.close()
        first = lane.stats()
        assert (first.logged, first.delivered, first.dropped) == (50, 10, 40)
        sink.stall_after = None
        sink.release.set()
        lane.start()
        _offer_many(lane, [_metric(i) for i in range(50, 60)])
        assert lane.close(30)
        second = lane.stats()
    finally:
        sink.release.set()
    assert (second.logged, second.delivered, second.dropped) == (60, 20, 40)


def test_the_threads_the_host_offers_from_are_counted_exactly() -> None:
    """The socket host offers lists from one thread per connection: ``logged`` stays exact."""
    sink = _Costly("many", 0.0)
    bus = _bus(stall_s=5.0)
    bus.attach(sink)

    def produce(base: int) -> None:
        for i in range(200):
            bus.put_rows([row_of(_metric(base + i * 10 + j)) for j in range(10)])

    threads = [threading.Thread(target=produce, args=(k * 10_000,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    stats = bus.finish().handlers["many"]
    assert (stats.logged, stats.delivered, stats.dropped) == (8_000, 8_000, 0)
    assert sink.handled == 8_000


def test_ctrl_c_abandons_finish_at_once_with_exact_counts() -> None:
    """A real SIGINT while finish waits on a stuck sink: no traceback, the counts exact."""
    import os
    import signal

    sink = _Costly("ctrl_c", 0.0)
    sink.stall_after = 100
    bus = _bus(stall_s=60.0)
    try:
        bus.attach(sink)
        for step in range(1_000):
            bus.emit(_metric(step))
        with ctrl_c_reaches_us():
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
            start = time.monotonic()
            report = bus.finish()
            waited = time.monotonic() - start
    finally:
        sink.release.set()
    stats = report.handlers["ctrl_c"]
    assert report.abandoned and report.timed_out and waited < 30
    assert (stats.logged, stats.delivered, stats.not_in_time) == (1_000, 100, 900)
