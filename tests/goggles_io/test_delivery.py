"""One handler's lane: whole lists offered at once stay bounded, counted and in order."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import ClassVar

from goggles_io import Event, Kind
from goggles_io._bus.lane import Lane
from goggles_io._delivery.policy import DeliveryPolicy
from goggles_io.handlers.base import BaseHandler
from goggles_io.testing import MemoryHandler


class _Gate(BaseHandler):
    """Blocks in handle() until its gate opens."""

    capabilities: ClassVar[frozenset[Kind]] = frozenset(Kind)

    def __init__(self) -> None:
        super().__init__(name="gate")
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.seen: list[int | None] = []

    def handle(self, event: Event) -> None:
        self.entered.set()
        self.gate.wait(30)
        self.seen.append(event.step)


def _events(start: int, n: int) -> list[Event]:
    return [
        Event(kind=Kind.METRIC, scope="global", payload={"x": 1}, step=i)
        for i in range(start, start + n)
    ]


class TestOfferMany:
    def test_lists_are_delivered_in_order(self) -> None:
        """Events offered as several lists reach the handler in order, each once."""
        handler = MemoryHandler(name="mem")
        lane = Lane(handler, async_mode=True, queue_size=100)
        lane.start()
        lane.offer_many(_events(0, 10))
        lane.offer_many(_events(10, 10))
        lane.close(30)

        assert list(range(20)) == [e.step for e in handler.events]
        assert 20 == lane.stats().delivered

    def test_backlog_counts_events_inside_lists(self) -> None:
        """backlog() counts every queued event, not the number of lists."""
        handler = _Gate()
        lane = Lane(handler, async_mode=True, queue_size=100)
        lane.start()
        lane.offer_many(_events(0, 1))
        handler.entered.wait(30)
        lane.offer_many(_events(1, 7))
        lane.offer_many(_events(8, 5))
        backlog = lane.backlog()
        handler.gate.set()
        lane.close(30)

        assert 12 == backlog

    def test_list_beyond_room_is_cut_and_the_rest_counted(self) -> None:
        """A list larger than the room left is cut: the excess is returned and counted as dropped."""
        handler = _Gate()
        lane = Lane(handler, async_mode=True, queue_size=5)
        lane.start()
        lane.offer_many(_events(0, 1))
        handler.entered.wait(30)
        dropped = lane.offer_many(_events(1, 8))
        handler.gate.set()
        lane.close(30)

        assert 3 == dropped
        assert (6, 3) == (lane.stats().delivered, lane.stats().dropped)

    def test_list_beyond_room_is_spilled_with_the_spill_policy(self, tmp_path: Path) -> None:
        """With a spill policy the excess goes to the lane's spool: nothing dropped, order kept."""
        handler = _Gate()
        policy = DeliveryPolicy(spool_dir=str(tmp_path))
        lane = Lane(handler, async_mode=True, queue_size=5, policy=policy)
        lane.start()
        lane.offer_many(_events(0, 1))
        handler.entered.wait(30)
        dropped = lane.offer_many(_events(1, 8)) + lane.offer_many(_events(9, 3))
        handler.gate.set()
        lane.close(30)

        assert (0, list(range(12))) == (dropped, handler.seen)
        assert [] == list(tmp_path.glob("p*"))

    def test_lists_spilled_from_several_threads_at_once_all_arrive(self, tmp_path: Path) -> None:
        """Four threads spilling into one lane (a host serving four producers): nothing is lost."""
        handler = _Gate()
        lane = Lane(
            handler, async_mode=True, queue_size=5, policy=DeliveryPolicy(spool_dir=str(tmp_path))
        )
        lane.start()
        lane.offer_many(_events(0, 1))
        handler.entered.wait(30)

        def offer(first: int) -> None:
            for start in range(first, first + 2000, 10):
                lane.offer_many(_events(start, 10))

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
        lane.offer_many(_events(0, 9))

        assert 9 == len(handler.events)
        assert 0 == lane.backlog()
