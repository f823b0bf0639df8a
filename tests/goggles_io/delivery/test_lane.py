"""The engine's user in one process, a handler lane (``_bus/lane.py``), and the same lanes
through the bus: lists, spilling, redelivered marks, blocking and dropping per handler.

The engine's own suite (``test_pipe.py``) runs every user's pipe, the lane's included, through
the same property tests; these are what only a lane does around its pipe.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import goggles_io as gg
from goggles_io import Event, Kind
from goggles_io._bus.lane import Lane
from goggles_io._delivery.policy import DeliveryPolicy, WhenFull
from goggles_io._delivery.spool_space import list_spools
from goggles_io._event.rows import nbytes, row_of, rows_nbytes
from goggles_io.handlers.base import BaseHandler, register_handler
from goggles_io.testing import MemoryHandler
from support import wait_until


# -- the engine's user in one process: a handler lane (``_bus/lane.py``) ------------------------
class Gate(BaseHandler):
    """Blocks in handle() until its gate opens; keeps the steps (and image sums) it saw."""

    capabilities: ClassVar[frozenset[Kind]] = frozenset(Kind)

    def __init__(self, name: str = "gate", when_full: str | None = None) -> None:
        super().__init__(name=name)
        self.when_full = when_full
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.seen: list[int | None] = []
        self.sums: list[float] = []

    def handle(self, event: Event) -> None:
        self.entered.set()
        self.gate.wait(60)
        self.seen.append(event.step)
        if isinstance(event.payload, np.ndarray):
            self.sums.append(float(event.payload.sum()))


register_handler(Gate)


def _events(start: int, n: int) -> list[Event]:
    return [
        Event(kind=Kind.METRIC, scope="global", payload={"x": 1}, step=i)
        for i in range(start, start + n)
    ]


def _offer_many(lane: Lane, events: list[Event], *, redelivered: bool = False) -> int:
    """Offer ``events`` as the socket host does: one list of their rows (ADR 0071)."""
    rows = [row_of(event) for event in events]
    return lane.offer_rows(rows, rows_nbytes(rows), redelivered=redelivered)


def _offer(lane: Lane, event: Event) -> None:
    """Offer one event as a log call does: its row."""
    row = row_of(event)
    lane.offer(row, nbytes(row))


class Resuming(Gate):
    """A gate that also takes redelivered lists (as the built-in file sinks do)."""

    def __init__(self) -> None:
        super().__init__(name="resuming")
        self.again: list[int | None] = []

    def handle_redelivered(self, events: list[Event]) -> None:
        self.again.extend(e.step for e in events)


def _gated_lane(
    folder: Path | None = None, handler: Gate | None = None, **kw: Any
) -> tuple[Lane, Gate]:
    """A lane whose handler is inside handle() with event 0 and waits for its gate."""
    handler = handler or Gate()
    policy = DeliveryPolicy(spool_dir=str(folder)) if folder is not None else None
    lane = Lane(handler, async_mode=True, policy=policy, **kw)
    lane.start()
    _offer_many(lane, _events(0, 1))
    wait_until(handler.entered.is_set, what="the worker inside handle()")
    return lane, handler


class TestLane:
    def test_lists_are_delivered_in_order(self) -> None:
        """Events offered as several lists reach the handler in order, each once."""
        handler = MemoryHandler(name="mem")
        lane = Lane(handler, async_mode=True, queue_size=100)
        lane.start()
        _offer_many(lane, _events(0, 10))
        _offer_many(lane, _events(10, 10))
        lane.close(30)

        assert list(range(20)) == [e.step for e in handler.events]
        assert 20 == lane.stats().delivered

    def test_backlog_counts_events_not_lists(self) -> None:
        """backlog() (the host's backpressure) counts events offered and not yet handled,
        the one in the handler's hands included, not the number of lists."""
        lane, handler = _gated_lane(queue_size=100)
        _offer_many(lane, _events(1, 7))
        _offer_many(lane, _events(8, 5))
        backlog = lane.backlog()
        handler.gate.set()
        lane.close(30)

        assert 13 == backlog and 0 == lane.backlog()

    def test_a_list_that_finds_the_pipe_full_is_dropped_whole_and_counted(self) -> None:
        """With 'drop', a list past the bound is refused at once: every event counted."""
        lane, handler = _gated_lane(queue_size=2)
        dropped = [_offer_many(lane, _events(start, 3)) for start in (1, 4, 7)]
        handler.gate.set()
        lane.close(30)

        assert [0, 0, 3] == dropped
        assert (7, 3, 10) == (lane.stats().delivered, lane.stats().dropped, lane.stats().logged)

    def test_lists_past_the_bound_are_spilled_in_order(self, tmp_path: Path) -> None:
        """With the spill policy the excess goes to the lane's spool: nothing dropped, order
        kept (lists and single events, in one record), the spool removed at close."""
        lane, handler = _gated_lane(tmp_path, queue_size=5)
        dropped = 0
        for start in range(1, 3001, 10):
            dropped += _offer_many(lane, _events(start, 9))
            _offer(lane, _events(start + 9, 1)[0])
        spilled = bool(list_spools(tmp_path))
        handler.gate.set()
        lane.close(30)

        assert (0, list(range(3001))) == (dropped, handler.seen)
        assert spilled and [] == list_spools(tmp_path)

    def test_redelivered_lists_keep_their_mark_through_the_spool(self, tmp_path: Path) -> None:
        """A redelivered list read back from the spool still reaches handle_redelivered."""
        lane, handler = _gated_lane(tmp_path, queue_size=2, handler=Resuming())
        for start in range(1, 2001, 4):
            _offer_many(lane, _events(start, 4), redelivered=start % 8 == 1)
        handler.gate.set()
        lane.close(30)

        assert [s for s in range(1, 2001) if (s - 1) % 8 < 4] == handler.again
        assert list(range(2001)) == sorted(handler.seen + handler.again)
        assert (2001, 0) == (lane.stats().delivered, lane.stats().dropped)

    def test_lists_spilled_from_several_threads_at_once_all_arrive(self, tmp_path: Path) -> None:
        """Four threads spilling into one lane (a host serving four producers): nothing lost."""
        lane, handler = _gated_lane(tmp_path, queue_size=5)

        def offer(first: int) -> None:
            for start in range(first, first + 2000, 10):
                _offer_many(lane, _events(start, 10))

        threads = [threading.Thread(target=offer, args=(1 + 2000 * k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        handler.gate.set()
        lane.close(60)

        assert (0, list(range(8001))) == (lane.stats().dropped, sorted(handler.seen))

    def test_sync_lane_handles_the_list_in_the_caller(self) -> None:
        """Without a worker thread the whole list is handled before offer_many returns."""
        handler = MemoryHandler(name="mem")
        lane = Lane(handler, async_mode=False, queue_size=5)
        lane.start()
        _offer_many(lane, _events(0, 9))

        assert 9 == len(handler.events)
        assert 0 == lane.backlog()

    def test_a_forked_child_lane_delivers_its_own_events(self) -> None:
        """restart_after_fork(): the child's lane has its own pipe and worker; the parent's
        still works."""
        handler = MemoryHandler(name="mem")
        lane = Lane(handler, async_mode=True, queue_size=100)
        lane.start()
        _offer_many(lane, _events(0, 5))
        assert lane.flush(30)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                lane.restart_after_fork()
                _offer_many(lane, _events(100, 10))
                ok = lane.close(30)
                got = [e.step for e in handler.events]
                code = 0 if ok and got == [*range(5), *range(100, 110)] else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        _offer_many(lane, _events(5, 5))
        assert lane.close(30)
        assert 0 == os.waitstatus_to_exitcode(status)
        assert list(range(10)) == [e.step for e in handler.events]

    def test_a_subscriber_lane_never_blocks_its_producer(self) -> None:
        """backpressure=False (a live subscriber): 'block' drops at once instead of waiting."""
        policy = DeliveryPolicy(when_full=WhenFull.BLOCK, block_timeout_s=30.0)
        handler = Gate()
        lane = Lane(handler, async_mode=True, queue_size=2, backpressure=False, policy=policy)
        lane.start()
        _offer(lane, _events(0, 1)[0])
        wait_until(handler.entered.is_set, what="the worker inside handle()")
        started = time.monotonic()
        for event in _events(1, 20):
            _offer(lane, event)
        waited = time.monotonic() - started
        handler.gate.set()
        lane.close(30)

        assert waited < 5.0 and not lane.congested(1)
        assert (3, 18) == (lane.stats().delivered, lane.stats().dropped)


# -- the same through the bus (``gg.attach``), settings from the environment ---------------
def _blocked(name: str = "gate", **kw: str) -> Gate:
    gate = Gate(name=name, **kw)
    gg.attach(gate)
    gg.get_logger("t", with_metrics=True).scalar("warm", 0.0, step=0)
    wait_until(gate.entered.is_set, what="worker inside handle()")
    return gate


def _spool_files(spool_dir: Path) -> list[Path]:
    return list(spool_dir.rglob("*.seg"))


class TestLanesOfTheBus:
    def test_burst_past_the_queue_is_spilled_and_delivered_in_order(
        self, monkeypatch: pytest.MonkeyPatch, spool_dir: Path
    ) -> None:
        """Queue of 4, handler blocked, 3,000 scalars: all arrive, in order, via the spool."""
        monkeypatch.setenv("GOGGLES_QUEUE_SIZE", "4")
        gate = _blocked()
        log = gg.get_logger("t", with_metrics=True)
        for step in range(1, 3001):
            log.scalar("loss", 0.5, step=step)
        spilled = bool(_spool_files(spool_dir))
        gate.gate.set()
        report = gg.finish(timeout=30)

        assert spilled
        assert list(range(3001)) == gate.seen
        assert (3001, 0) == (report.handlers["gate"].delivered, report.dropped)
        assert [] == list(spool_dir.glob("p*"))  # finish() removed the spool

    def test_images_past_the_byte_budget_keep_their_pixels(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A 1 MiB byte budget and 40 images of 256 KiB: every image comes back from disk whole."""
        monkeypatch.setenv("GOGGLES_QUEUE_BYTES", str(1 << 20))
        gate = _blocked()
        log = gg.get_logger("t", with_metrics=True)
        images = [np.full((512, 512), i, dtype=np.uint8) for i in range(40)]
        for step, image in enumerate(images, start=1):
            log.image(image, name="img", step=step)
        gate.gate.set()
        gg.finish(timeout=30)

        assert [float(im.sum()) for im in images] == gate.sums

    def test_block_waits_for_room_and_loses_nothing(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """GOGGLES_WHEN_FULL=block: the producer waits while the handler is slow, nothing drops."""
        monkeypatch.setenv("GOGGLES_QUEUE_SIZE", "4")
        monkeypatch.setenv("GOGGLES_WHEN_FULL", "block")
        gate = _blocked()
        threading.Timer(0.3, gate.gate.set).start()
        start = time.monotonic()
        for step in range(1, 21):
            gg.get_logger("t", with_metrics=True).scalar("loss", 0.5, step=step)
        waited = time.monotonic() - start
        report = gg.finish(timeout=30)

        assert waited >= 0.25
        assert (list(range(21)), 0) == (gate.seen, report.dropped)

    def test_block_is_bounded_per_burst_then_drops(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A stuck handler: the burst waits GOGGLES_BLOCK_TIMEOUT in all, then drops and counts."""
        monkeypatch.setenv("GOGGLES_QUEUE_SIZE", "4")
        monkeypatch.setenv("GOGGLES_WHEN_FULL", "block")
        monkeypatch.setenv("GOGGLES_BLOCK_TIMEOUT", "0.3")
        gate = _blocked()
        start = time.monotonic()
        for step in range(1, 101):
            gg.get_logger("t", with_metrics=True).scalar("loss", 0.5, step=step)
        waited = time.monotonic() - start
        gate.gate.set()
        report = gg.finish(timeout=30)

        assert 0.25 <= waited < 5.0
        assert 101 == report.handlers["gate"].delivered + report.handlers["gate"].dropped
        assert 96 == report.handlers["gate"].dropped

    def test_full_spool_falls_back_to_block_then_drop(
        self, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
    ) -> None:
        """64 KiB of spool and of memory: spill, then wait, then drop; logged == delivered +
        dropped, and what arrives is in order."""
        monkeypatch.setenv("GOGGLES_QUEUE_SIZE", "4")
        monkeypatch.setenv("GOGGLES_QUEUE_BYTES", str(64 * 1024))
        monkeypatch.setenv("GOGGLES_SPOOL_BYTES", str(64 * 1024))
        monkeypatch.setenv("GOGGLES_BLOCK_TIMEOUT", "0.2")
        gate = _blocked()
        log = gg.get_logger("t", with_metrics=True)
        for step in range(1, 20_001):
            log.scalar("loss", 0.5, step=step)
        gate.gate.set()
        report = gg.finish(timeout=60)
        stats = report.handlers["gate"]

        assert 0 < stats.dropped < 20_000 and 20_001 == stats.delivered + stats.dropped
        assert gate.seen == sorted(gate.seen)
        assert "spool budget full" in capfd.readouterr().err

    def test_handler_may_ask_for_drop_for_its_own_lane(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """when_full='drop' on the handler: its lane drops while another spills."""
        monkeypatch.setenv("GOGGLES_QUEUE_SIZE", "4")
        strict = _blocked("strict", when_full="drop")
        spilling = _blocked("spilling")
        for step in range(1, 21):
            gg.get_logger("t", with_metrics=True).scalar("loss", 0.5, step=step)
        strict.gate.set()
        spilling.gate.set()
        report = gg.finish(timeout=30)

        assert 0 < report.handlers["strict"].dropped
        assert (0, 21) == (
            report.handlers["spilling"].dropped,
            report.handlers["spilling"].delivered,
        )
