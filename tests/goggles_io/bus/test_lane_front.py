"""An asynchronous lane's scalar front in-process (ADR 0088): the same promises as a row's way.

Every scalar put is handled once or counted (logged = delivered + dropped + failed + not in
time), in each thread's order with other rows, flushes and calls between; a give-up, a full
queue and a close that races the producers count exactly.
"""

from __future__ import annotations

import random
import threading
from typing import ClassVar

import pytest

import goggles_io as gg
from goggles_io import Event, Kind
from goggles_io._bus.bus import EventBus
from goggles_io.handlers.base import BaseHandler
from goggles_io.testing import MemoryHandler
from support import wait_until


def _scalar(name: str, step: int) -> tuple[object, ...]:
    return ("metric", "global", name, None, step, 1.5, "t", 7, "f.py", 3, None, None, 0.25,
            "", 0)  # fmt: skip


def _text(message: str, step: int) -> tuple[object, ...]:
    return ("log", "global", message, 20, step, 1.5, "t", 7, "f.py", 3, None, None, None, "", 0)


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


def test_scalars_text_and_flushes_from_threads_arrive_once_in_each_threads_order() -> None:
    bus = EventBus(async_mode=True)
    sink = MemoryHandler(name="mem")
    bus.attach(sink)
    rng = random.Random(7)
    flushes = [rng.randrange(3_000) for _ in range(5)]

    def produce(k: int) -> None:
        for i in range(3_000):
            bus.put_scalar(_scalar(f"t{k}", i), 384)
            if i % 97 == 0:
                bus.put_row(_text(f"t{k}", i), 400)
            if k == 0 and i in flushes:
                bus.flush(30)

    threads = [threading.Thread(target=produce, args=(k,)) for k in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report = bus.finish()
    stats = report.handlers["mem"]
    texts = 3 * len(range(0, 3_000, 97))
    assert (stats.logged, stats.delivered, stats.dropped) == (9_000 + texts,) * 2 + (0,)
    for k in range(3):
        seen = [
            ("m" if e.kind is Kind.METRIC else "l", e.step)
            for e in sink.events
            if f"t{k}" in e.payload
        ]
        want = []
        for i in range(3_000):
            want.append(("m", i))
            if i % 97 == 0:
                want.append(("l", i))
        assert seen == want


def test_a_give_up_counts_the_scalars_left_in_the_front_and_the_pipe_exactly() -> None:
    bus = EventBus(async_mode=True, stall_s=0.5)
    sink = _Stalls("stuck", 300)
    bus.attach(sink)
    try:
        for step in range(2_000):
            bus.put_scalar(_scalar("loss", step), 384)
        report = bus.finish()
    finally:
        sink.release.set()
    stats = report.handlers["stuck"]
    assert (stats.logged, stats.delivered, stats.not_in_time) == (2_000, 300, 1_700)


def test_a_full_queue_drops_and_counts_each_scalar(monkeypatch: pytest.MonkeyPatch) -> None:
    """A queue of 256 events, drop when full, a handler that stalls: every scalar past the
    queue is dropped and counted; the rest are delivered once released."""
    monkeypatch.setenv("GOGGLES_QUEUE_SIZE", "256")
    monkeypatch.setenv("GOGGLES_WHEN_FULL", "drop")
    sink = _Stalls("slow", 0)
    gg.attach(sink)
    log = gg.get_logger("t", with_metrics=True)
    try:
        for step in range(5_000):
            log.scalar("loss", 0.5, step=step)
    finally:
        sink.release.set()
    report = gg.finish(timeout=30)
    stats = report.handlers["slow"]
    assert stats.logged == 5_000
    assert stats.delivered + stats.dropped == 5_000
    assert stats.dropped >= 5_000 - 2 * 256
    assert stats.delivered == sink.handled


def test_producers_racing_a_finish_lose_nothing_silently() -> None:
    """Threads keep logging while ``finish`` closes the lanes: every scalar put is delivered
    or counted (a put after the close re-opens the bus, as robo-goggles does)."""
    for seed in range(3):
        bus = EventBus(async_mode=True)
        sink = MemoryHandler(name="mem")
        bus.attach(sink)
        stop = threading.Event()
        put = [0, 0]

        def produce(
            k: int, bus: EventBus = bus, stop: threading.Event = stop, put: list[int] = put
        ) -> None:
            i = 0
            while not stop.is_set():
                bus.put_scalar(_scalar(f"t{k}", i), 384)
                put[k] += 1
                i += 1

        threads = [threading.Thread(target=produce, args=(k,)) for k in range(2)]
        for thread in threads:
            thread.start()
        wait_until(lambda put=put, n=2_000 * (seed + 1): put[0] > n, what="producers running")
        first = bus.finish()
        stop.set()
        for thread in threads:
            thread.join()
        first_stats = first.handlers["mem"]
        assert first_stats.delivered + first_stats.dropped == first_stats.logged
        stats = bus.finish().handlers["mem"]  # the run's whole tally: puts after the close too
        assert stats.logged == sum(put)
        assert stats.delivered + stats.dropped + stats.failed == stats.logged
        assert stats.delivered == len(sink.events)


def test_a_scalar_row_that_makes_no_event_is_a_counted_failure_and_the_run_goes_on() -> None:
    bus = EventBus(async_mode=True)
    sink = MemoryHandler(name="mem")
    bus.attach(sink)
    bus.put_scalar(_scalar("loss", 0), 384)  # caches the lane's front for the scope
    for step in range(1, 200):
        row = _scalar("loss", step)
        if step == 100:
            row = ("no such kind", *row[1:])
        bus.put_scalar(row, 384)
    stats = bus.finish().handlers["mem"]
    assert (stats.logged, stats.delivered, stats.failed) == (200, 199, 1)
    assert [event.step for event in sink.events] == [s for s in range(200) if s != 100]
