"""``Pipe.put_many`` (issue 35): a list in one step when it fits, else what ``put`` does item by
item; either way every item is delivered or counted, in order."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from goggles_io._delivery.pipe import Pipe
from goggles_io._delivery.policy import DeliveryPolicy, WhenFull
from support import wait_until


class _Sink:
    def __init__(self) -> None:
        self.alive = True
        self.items: list[Any] = []
        self.last = 0
        self.seen: set[int] = set()  # batches taken: a redelivery of one never taken counts
        self.lock = threading.Lock()

    def send(self, seq: int, items: list[Any], redelivered: bool) -> None:
        with self.lock:
            if not self.alive:
                msg = "sink down"
                raise ConnectionError(msg)
            if seq not in self.seen:
                self.seen.add(seq)
                self.items += items
            self.last = seq


def _pipe(sink: _Sink, folder: Path, max_bytes: int) -> Pipe[Any]:
    policy = DeliveryPolicy(when_full=WhenFull.DROP, spool_dir=str(folder), block_timeout_s=0.02)
    return Pipe(
        sink.send,
        label="t",
        policy=policy,
        max_bytes=max_bytes,
        batch_items=16,
        backoff_s=(0.001, 0.01),
        on_loss=lambda *_: None,
    )


def _settle(pipe: Pipe[Any], sink: _Sink) -> None:
    def done() -> bool:
        with sink.lock:
            pipe.ack(sink.last)
        return pipe.left() == 0

    wait_until(done, timeout_s=30, what="pipe drained")


class TestPutMany:
    def test_lists_that_fit_arrive_whole_and_in_order_between_single_puts(
        self, tmp_path: Path
    ) -> None:
        sink = _Sink()
        pipe = _pipe(sink, tmp_path, max_bytes=1 << 20)
        try:
            dropped = 0
            for start in range(0, 1000, 100):
                pipe.put(start, 10)
                items = list(range(start + 1, start + 100))
                dropped += pipe.put_many(items, [10] * len(items))
            _settle(pipe, sink)
        finally:
            pipe.close()
        assert (0, list(range(1000)), 1000) == (dropped, sink.items, pipe.delivered)
        assert {} == pipe.losses()

    def test_past_the_budget_each_item_is_dropped_and_counted_as_put_would(
        self, tmp_path: Path
    ) -> None:
        sink = _Sink()
        pipe = _pipe(sink, tmp_path, max_bytes=100)
        sink.alive = False
        pipe.link_lost()  # the sink is down: nothing leaves memory, nothing blocks
        try:
            dropped = pipe.put_many(list(range(25)), [10] * 25)
            assert (15, {"queue full": 15}, 10) == (dropped, pipe.losses(), pipe.left())
            sink.alive = True
            _settle(pipe, sink)
        finally:
            pipe.close()
        assert (list(range(10)), 10) == (sink.items, pipe.delivered)
