"""The bus's cached route putters (ADR 0076): a row reaches its one lane's pipe in one frame,
and never a lane that is no longer the route's.

Each test fills the cache by logging first, then changes what the route is (detach, another
handler, a level, finish and re-open, a second lane) and checks who gets the next rows and that
every tally still adds up.
"""

from __future__ import annotations

import random
import threading
from typing import ClassVar

from tests.support import wait_until

import goggles_io as gg
from goggles_io import Event, Kind
from goggles_io._bus.bus import EventBus
from goggles_io.handlers.base import BaseHandler
from goggles_io.testing import MemoryHandler


def _bus() -> EventBus:
    return EventBus(async_mode=True)


def _row(step: int, kind: str = "metric", level: int | None = None) -> tuple[object, ...]:
    payload = "loss" if kind == "metric" else "text"
    value = 0.5 if kind == "metric" else None
    return (kind, "global", payload, level, step, 1.0, "t", 7, None, None, None, None, value,
            "", 0)  # fmt: skip


def _steps(sink: MemoryHandler) -> list[int | None]:
    return [e.step for e in sink.events]


def test_a_detached_handler_gets_nothing_after_its_detach() -> None:
    bus, old, new = _bus(), MemoryHandler(name="old"), MemoryHandler(name="new")
    bus.attach(old)
    try:
        bus.put_row(_row(0), 384)
        bus.put_row(_row(1), 384)  # through the cached putter
        bus.detach("old", "global")
        bus.attach(new)
        bus.put_row(_row(2), 384)
        bus.put_row(_row(3), 384)
        bus.flush()
        assert [0, 1] == _steps(old)
        assert [2, 3] == _steps(new)
        assert 2 == bus.stats()["new"].delivered
    finally:
        bus.finish()


def test_a_second_lane_on_the_route_gets_every_row_after_it_came() -> None:
    bus, first, second = _bus(), MemoryHandler(name="first"), MemoryHandler(name="second")
    bus.attach(first)
    try:
        bus.put_row(_row(0), 384)
        bus.put_row(_row(1), 384)
        bus.attach(second)
        bus.put_row(_row(2), 384)
        bus.flush()
        assert [0, 1, 2] == _steps(first)
        assert [2] == _steps(second)
    finally:
        bus.finish()


def test_a_handlers_level_filters_log_rows_sent_after_metrics_filled_the_cache() -> None:
    """A metric route to a level-30 lane is cached; the log route of that lane never is."""
    bus, sink = _bus(), MemoryHandler(name="warn", level=30)
    bus.attach(sink)
    try:
        for step in range(3):
            bus.put_row(_row(step), 384)
            bus.put_row(_row(step, "log", level=20), 384)
            bus.put_row(_row(step, "log", level=40), 384)
        bus.flush()
        kinds = [(e.kind, e.level) for e in sink.events]
        assert [(Kind.METRIC, None), (Kind.LOG, 40)] * 3 == kinds
    finally:
        bus.finish()


def test_finish_then_a_row_reopens_and_is_delivered_to_the_new_pipe() -> None:
    bus, sink = _bus(), MemoryHandler(name="mem")
    bus.attach(sink)
    bus.put_row(_row(0), 384)
    bus.put_row(_row(1), 384)
    first = bus.finish()
    bus.put_row(_row(2), 384)  # the cache was emptied: the routed way re-opens the bus
    bus.put_row(_row(3), 384)
    second = bus.finish()
    assert [0, 1, 2, 3] == _steps(sink)
    assert 2 == first.handlers["mem"].delivered
    assert 4 == second.handlers["mem"].delivered and not second.missing


def test_a_synchronous_bus_hands_rows_over_before_put_row_returns() -> None:
    """No pipe, no putter: each row takes the routed way and is handled at once."""
    bus, sink = EventBus(async_mode=False), MemoryHandler(name="mem")
    bus.attach(sink)
    for step in range(3):
        bus.put_row(_row(step), 384)
        assert step + 1 == len(sink.events)
    assert not bus._putters
    bus.finish()


class _Slow(BaseHandler):
    capabilities: ClassVar[frozenset[Kind]] = frozenset(Kind)

    def __init__(self, name: str) -> None:
        super().__init__(name=name)
        self.steps: list[int | None] = []

    def handle(self, event: Event) -> None:
        self.steps.append(event.step)


def test_rows_from_threads_while_handlers_come_and_go_are_each_counted_once() -> None:
    """Producers put rows while another thread attaches and detaches handlers at seeded random
    moments: every handler's tally adds up, and each handler got its rows in order."""
    rng = random.Random(44)
    bus = _bus()
    keeper = _Slow("keeper")
    bus.attach(keeper)
    stop = threading.Event()
    per_thread = 3000

    def produce(base: int) -> None:
        for i in range(per_thread):
            bus.put_row(_row(base + i), 384)

    def churn() -> None:
        n = 0
        while not stop.is_set():
            name = f"churn-{n % 3}"
            bus.attach(_Slow(name))
            stop.wait(rng.random() / 500)
            bus.detach(name, "global", missing_ok=True)
            n += 1

    churner = threading.Thread(target=churn)
    producers = [threading.Thread(target=produce, args=(k * 10**6,)) for k in range(2)]
    try:
        churner.start()
        for p in producers:
            p.start()
        for p in producers:
            p.join(60)
        stop.set()
        churner.join(60)
        wait_until(lambda: len(keeper.steps) == 2 * per_thread, timeout_s=60)
        for k in range(2):  # each producer's rows in its order
            mine = [s for s in keeper.steps if s is not None and s // 10**6 == k]
            assert sorted(mine) == mine and len(mine) == per_thread
    finally:
        report = bus.finish()
    for name, stats in report.handlers.items():
        assert stats.logged == stats.delivered + stats.dropped + stats.failed, name
    assert 2 * per_thread == report.handlers["keeper"].delivered


def test_the_logger_path_uses_the_cache_and_delivers_everything() -> None:
    sink = MemoryHandler(name="mem")
    gg.attach(sink)
    log = gg.get_logger("t", with_metrics=True)
    for step in range(100):
        log.scalar("loss", float(step), step=step)
    bus = gg.get_bus()
    assert isinstance(bus, EventBus) and (("global", "metric") in bus._putters)
    gg.flush()
    assert list(range(100)) == _steps(sink)
