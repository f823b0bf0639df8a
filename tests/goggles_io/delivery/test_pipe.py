"""The delivery engine (``Pipe``): every unit put is delivered or counted, in order, and a
repeat reaches the sink only in a batch marked redelivered (issue 29, ADR 0025, ADR 0029).

A real worker thread, a real spool on disk (tiny budgets make it fill), a sink that dies and
comes back while the test goes on: nothing is mocked but the sink itself.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import goggles_io as gg
from goggles_io import Event, Kind
from goggles_io._bus.lane import Lane
from goggles_io._delivery.losses import (
    KEPT_FOR_LATER,
    NOT_DELIVERED,
    REASONS,
    SPOOL_FULL,
    UNENCODABLE,
)
from goggles_io._delivery.pipe import Pipe
from goggles_io._delivery.policy import DeliveryPolicy, WhenFull
from goggles_io._delivery.spool import SpoolRecord
from goggles_io._delivery.spool_space import list_spools
from goggles_io.handlers.base import BaseHandler, register_handler
from goggles_io.testing import MemoryHandler
from support import wait_until


class IntCodec:
    """Ints (and pairs of them) as msgpack; a str is refused, as a real codec refuses objects."""

    def encode(self, items: list[Any]) -> tuple[bytes, list[bytes]]:
        if any(isinstance(i, str) for i in items):
            msg = "a str"
            raise TypeError(msg)
        return msgpack.packb(items), []

    def decode(self, record: SpoolRecord) -> list[Any]:
        return list(msgpack.unpackb(record.data))


class Sink:
    """Records each batch it is sent; while dead, every send raises (the link is down)."""

    def __init__(self) -> None:
        self.alive = True
        self.batches: list[tuple[int, list[Any], bool]] = []
        self.lock = threading.Lock()

    def send(self, seq: int, items: list[Any], redelivered: bool) -> None:
        with self.lock:
            if not self.alive:
                msg = "sink down"
                raise ConnectionError(msg)
            self.batches.append((seq, list(items), redelivered))

    def last_seq(self) -> int:
        with self.lock:
            return self.batches[-1][0] if self.batches else 0


def make_pipe(sink: Sink, folder: Path, **kw: Any) -> Pipe[Any]:
    policy = DeliveryPolicy(
        when_full=kw.pop("when_full", WhenFull.SPILL),
        spool_bytes=kw.pop("spool_bytes", 1 << 20),
        spool_dir=str(folder),
        block_timeout_s=kw.pop("block_timeout_s", 0.02),
    )
    kw.setdefault("max_bytes", 100)
    kw.setdefault("batch_items", 4)
    return Pipe(
        sink.send,
        label="t",
        policy=policy,
        codec=IntCodec(),
        backoff_s=(0.001, 0.01),
        on_loss=lambda *_: None,
        **kw,
    )


def settle(pipe: Pipe[Any], sink: Sink) -> None:
    """Acknowledge whatever the sink got until nothing is left."""

    def done() -> bool:
        pipe.ack(sink.last_seq())
        return pipe.left() == 0

    wait_until(done, timeout_s=60, what="pipe drained")


def check_delivery(sink: Sink, put: int, pipe: Pipe[Any]) -> list[int]:
    """Delivered + counted == put; repeats only when marked; first arrivals in order."""
    seen: list[int] = []
    known: set[int] = set()
    for _, items, redelivered in sink.batches:
        for item in items:
            if item in known:
                assert redelivered, f"item {item} repeated in a batch not marked redelivered"
                continue
            known.add(item)
            seen.append(item)
    losses = pipe.losses()
    assert set(losses) <= set(REASONS)
    assert put == pipe.delivered + sum(losses.values())
    assert len(seen) == pipe.delivered
    assert seen == sorted(seen)
    return seen


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(1, 40)),
        st.just(("ack", 0)),
        st.just(("ack_some", 0)),
        st.just(("die", 0)),
        st.just(("restart", 0)),
    ),
    max_size=25,
)


class TestProperties:
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        ops=OPS,
        max_bytes=st.sampled_from([30, 100, 2000]),
        spool_bytes=st.sampled_from([300, 3000, 1 << 20]),
        when_full=st.sampled_from(list(WhenFull)),
    )
    def test_any_interleaving_delivers_or_counts_every_item(
        self,
        tmp_path_factory: pytest.TempPathFactory,
        ops: list[tuple[str, int]],
        max_bytes: int,
        spool_bytes: int,
        when_full: WhenFull,
    ) -> None:
        """put / ack / sink death / restart / a full spool, in any order, while the worker
        runs: after a final drain, delivered + counted losses == put, no unmarked repeat,
        order kept, and no spool folder left."""
        folder = tmp_path_factory.mktemp("spool")
        sink = Sink()
        pipe = make_pipe(
            sink, folder, max_bytes=max_bytes, spool_bytes=spool_bytes, when_full=when_full
        )
        put = 0
        try:
            for op, n in ops:
                if op == "put":
                    for _ in range(n):
                        pipe.put(put, 10)
                        put += 1
                elif op == "ack":
                    pipe.ack(sink.last_seq())
                elif op == "ack_some":
                    pipe.ack(sink.last_seq() // 2)
                elif op == "die":
                    sink.alive = False
                    pipe.link_lost()
                else:
                    sink.alive = True
            sink.alive = True
            settle(pipe, sink)
        finally:
            pipe.close()
        check_delivery(sink, put, pipe)
        assert NOT_DELIVERED not in pipe.losses()
        assert [] == list_spools(folder)

    @settings(max_examples=20, deadline=None)
    @given(threads=st.integers(2, 4), each=st.integers(1, 300))
    def test_producers_on_many_threads_keep_their_own_order(
        self, tmp_path_factory: pytest.TempPathFactory, threads: int, each: int
    ) -> None:
        """Several threads put at once past the budget: each one's items arrive in its order."""
        sink = Sink()
        pipe = make_pipe(sink, tmp_path_factory.mktemp("spool"), ack_on_return=True)
        workers = [
            threading.Thread(target=lambda t=t: [pipe.put((t, i), 10) for i in range(each)])
            for t in range(threads)
        ]
        try:
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            assert pipe.drain(stall_s=30)
        finally:
            pipe.close()
        got = [tuple(item) for _, items, _ in sink.batches for item in items]
        for t in range(threads):
            assert [i for who, i in got if who == t] == list(range(each))
        assert threads * each == pipe.delivered


@pytest.fixture
def sink() -> Sink:
    return Sink()


@pytest.fixture
def pipe(sink: Sink, tmp_path: Path) -> Iterator[Pipe[Any]]:
    made = make_pipe(sink, tmp_path)
    try:
        yield made
    finally:
        made.close()


class TestAcknowledgements:
    def test_kept_batches_are_sent_again_first_and_marked(
        self, pipe: Pipe[Any], sink: Sink
    ) -> None:
        """After link_lost, every unacknowledged batch comes again, in order, marked
        redelivered, before anything newer; acknowledged ones do not."""
        for i in range(12):
            pipe.put(i, 1)
        wait_until(lambda: sum(len(b) for _, b, _ in sink.batches) == 12, what="all sent")
        first = list(sink.batches)
        pipe.ack(first[0][0])
        pipe.link_lost()
        wait_until(lambda: len(sink.batches) == 2 * len(first) - 1, what="kept ones again")
        for i in range(12, 16):
            pipe.put(i, 1)
        wait_until(lambda: len(sink.batches) == 2 * len(first), what="the new batch")
        again = sink.batches[len(first) : -1]

        assert len(first) >= 3  # at most 4 items a batch
        assert [(s, b, True) for s, b, _ in first[1:]] == again
        assert (first[-1][0] + 1, list(range(12, 16)), False) == sink.batches[-1]

    def test_a_failing_send_is_retried_and_producers_do_not_wait_on_it(
        self, pipe: Pipe[Any], sink: Sink
    ) -> None:
        """A sink that raises gets the same batch again once it is back; meanwhile a full
        memory spills at once instead of waiting out the block allowance."""
        sink.alive = False
        for i in range(200):
            pipe.put(i, 10)
        sink.alive = True
        settle(pipe, sink)

        check_delivery(sink, 200, pipe)
        assert {} == pipe.losses()

    def test_unacknowledged_batches_hold_the_memory_budget(
        self, sink: Sink, tmp_path: Path
    ) -> None:
        """With max_unacked=2 nothing more is sent until an ack; the rest waits on disk."""
        pipe = make_pipe(sink, tmp_path, max_unacked=2, max_bytes=80)
        try:
            for i in range(100):
                pipe.put(i, 10)
            wait_until(lambda: len(sink.batches) == 2, what="two batches in flight")
            assert 2 == len(sink.batches) and 100 == pipe.left()
            assert list_spools(tmp_path)  # past 80 bytes, the rest went to disk
            settle(pipe, sink)
        finally:
            pipe.close()
        check_delivery(sink, 100, pipe)


class TestLosses:
    def test_full_spool_drops_and_counts_then_recovers(self, sink: Sink, tmp_path: Path) -> None:
        """Sink dead, 30-byte memory, 300-byte spool: the excess is counted 'spool full';
        everything else arrives once the sink is back, in order."""
        pipe = make_pipe(sink, tmp_path, max_bytes=30, spool_bytes=300)
        sink.alive = False
        pipe.link_lost()
        try:
            for i in range(500):
                pipe.put(i, 10)
            sink.alive = True
            settle(pipe, sink)
        finally:
            pipe.close()
        check_delivery(sink, 500, pipe)
        assert 0 < pipe.losses()[SPOOL_FULL] < 500

    def test_unencodable_items_are_counted_and_the_rest_spilled(
        self, pipe: Pipe[Any], sink: Sink
    ) -> None:
        """An item the codec refuses, once spilling, is dropped and counted; the others stay."""
        sink.alive = False
        pipe.link_lost()
        items = [i if i % 7 else f"bad{i}" for i in range(100)]
        for item in items:
            pipe.put(item, 10)
        sink.alive = True
        settle(pipe, sink)
        got = [x for _, batch, _ in sink.batches for x in batch]

        assert 0 < pipe.losses()[UNENCODABLE] < 15
        assert pipe.delivered + pipe.losses()[UNENCODABLE] == 100
        assert [x for x in items if x in got] == got

    def test_close_counts_what_is_left_and_removes_the_spool(
        self, sink: Sink, tmp_path: Path
    ) -> None:
        """Closing with the sink down: every item still held is counted 'not delivered'."""
        pipe = make_pipe(sink, tmp_path)
        sink.alive = False
        pipe.link_lost()
        for i in range(300):
            pipe.put(i, 10)
        assert not pipe.drain(stall_s=0.2)
        left = pipe.left()
        pipe.close()

        assert left == pipe.losses()[NOT_DELIVERED] == 300
        assert [] == list_spools(tmp_path)
        assert not pipe.put(1, 10) and 301 == pipe.losses()[NOT_DELIVERED]

    def test_close_hands_what_is_left_to_keep_in_order(self, sink: Sink, tmp_path: Path) -> None:
        """``close(keep=...)``: what is left comes out in order (sent and not acknowledged first,
        then memory, then the spool read back), counted 'kept for later', never 'not delivered'."""
        pipe = make_pipe(sink, tmp_path)
        for i in range(8):
            pipe.put(i, 10)
        wait_until(lambda: sum(len(b[1]) for b in sink.batches) == 8, what="two batches sent")
        pipe.ack(1)  # the first batch was taken; the second is sent and kept
        sink.alive = False
        pipe.link_lost()
        for i in range(8, 300):
            pipe.put(i, 10)  # past the 100-byte budget: spilled
        got: list[tuple[list[Any], bool]] = []

        def keep(chunks: Iterator[tuple[list[Any], bool]]) -> bool:
            got.extend(chunks)
            return True

        assert 296 == pipe.close(keep=keep)
        assert list(range(4, 300)) == [i for items, _ in got for i in items]
        assert [True] + [False] * (len(got) - 1) == [sent for _, sent in got]
        assert {KEPT_FOR_LATER: 296} == pipe.losses()
        assert [] == list_spools(tmp_path)

    def test_forced_items_are_never_dropped(self, sink: Sink, tmp_path: Path) -> None:
        """``force`` keeps control items in order past every budget (spilling off)."""
        pipe = make_pipe(sink, tmp_path, when_full=WhenFull.DROP, max_bytes=20)
        sink.alive = False
        pipe.link_lost()
        try:
            for i in range(50):
                pipe.put(i, 10, force=i % 10 == 0)
            sink.alive = True
            settle(pipe, sink)
        finally:
            pipe.close()
        got = check_delivery(sink, 50, pipe)
        assert {0, 10, 20, 30, 40} <= set(got)

    def test_units_count_what_an_item_holds(self, sink: Sink, tmp_path: Path) -> None:
        """With ``units``, losses, left() and delivered count points, not messages."""
        pipe = make_pipe(sink, tmp_path, units=len, when_full=WhenFull.DROP, max_bytes=20)
        sink.alive = False
        pipe.link_lost()
        for _ in range(5):
            pipe.put([1, 2, 3], 10)
        assert 6 == pipe.left() and {"queue full": 9} == pipe.losses()
        sink.alive = True
        settle(pipe, sink)
        pipe.close()
        assert 6 == pipe.delivered


class TestWorker:
    def test_idle_hook_paces_the_worker_and_can_park_it(self, sink: Sink, tmp_path: Path) -> None:
        """on_idle runs when there is nothing to send; returning None parks the worker."""
        calls: list[int] = []

        def idle() -> float | None:
            calls.append(1)
            return 0.001 if len(calls) < 5 else None

        pipe = make_pipe(sink, tmp_path, on_idle=idle, ack_on_return=True)
        pipe.put(1, 1)
        wait_until(lambda: len(calls) >= 5, what="idle calls")
        parked = len(calls)
        pipe.put(2, 1)
        assert pipe.drain(stall_s=10)
        pipe.close()
        assert parked <= len(calls) <= parked + 2

    def test_drain_gives_up_on_a_stall_and_wake_ends_a_wait(
        self, pipe: Pipe[Any], sink: Sink
    ) -> None:
        """No acknowledgement for stall_s: drain returns False; wake() ends wait_progress."""
        pipe.put(1, 1)
        wait_until(lambda: sink.batches, what="sent")
        assert not pipe.drain(stall_s=0.1)
        threading.Timer(0.05, pipe.wake).start()
        assert pipe.wait_progress(30.0)

    def test_forked_child_starts_empty_and_delivers_its_own(
        self, pipe: Pipe[Any], sink: Sink
    ) -> None:
        """after_fork(): the child neither sends nor counts the parent's items."""
        sink.alive = False
        pipe.link_lost()
        for i in range(50):
            pipe.put(i, 10)
        pid = os.fork()
        if pid == 0:  # the child: a fresh worker, its own items only
            code = 1
            try:
                pipe.after_fork()
                sink.alive = True
                sink.batches = []
                for i in range(1000, 1010):
                    pipe.put(i, 1)
                settle(pipe, sink)
                got = [x for _, b, _ in sink.batches for x in b]
                code = 0 if got == list(range(1000, 1010)) and pipe.losses() == {} else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert 0 == os.waitstatus_to_exitcode(status)
        assert 50 == pipe.left()


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
    lane.offer_many(_events(0, 1))
    wait_until(handler.entered.is_set, what="the worker inside handle()")
    return lane, handler


class TestLane:
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

    def test_backlog_counts_events_not_lists(self) -> None:
        """backlog() (the host's backpressure) counts events offered and not yet handled,
        the one in the handler's hands included, not the number of lists."""
        lane, handler = _gated_lane(queue_size=100)
        lane.offer_many(_events(1, 7))
        lane.offer_many(_events(8, 5))
        backlog = lane.backlog()
        handler.gate.set()
        lane.close(30)

        assert 13 == backlog and 0 == lane.backlog()

    def test_a_list_that_finds_the_pipe_full_is_dropped_whole_and_counted(self) -> None:
        """With 'drop', a list past the bound is refused at once: every event counted."""
        lane, handler = _gated_lane(queue_size=2)
        dropped = [lane.offer_many(_events(start, 3)) for start in (1, 4, 7)]
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
            dropped += lane.offer_many(_events(start, 9))
            lane.offer(_events(start + 9, 1)[0])
        spilled = bool(list_spools(tmp_path))
        handler.gate.set()
        lane.close(30)

        assert (0, list(range(3001))) == (dropped, handler.seen)
        assert spilled and [] == list_spools(tmp_path)

    def test_redelivered_lists_keep_their_mark_through_the_spool(self, tmp_path: Path) -> None:
        """A redelivered list read back from the spool still reaches handle_redelivered."""
        lane, handler = _gated_lane(tmp_path, queue_size=2, handler=Resuming())
        for start in range(1, 2001, 4):
            lane.offer_many(_events(start, 4), redelivered=start % 8 == 1)
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

    def test_a_forked_child_lane_delivers_its_own_events(self) -> None:
        """restart_after_fork(): the child's lane has its own pipe and worker; the parent's
        still works."""
        handler = MemoryHandler(name="mem")
        lane = Lane(handler, async_mode=True, queue_size=100)
        lane.start()
        lane.offer_many(_events(0, 5))
        assert lane.flush(30)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                lane.restart_after_fork()
                lane.offer_many(_events(100, 10))
                ok = lane.close(30)
                got = [e.step for e in handler.events]
                code = 0 if ok and got == [*range(5), *range(100, 110)] else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        lane.offer_many(_events(5, 5))
        assert lane.close(30)
        assert 0 == os.waitstatus_to_exitcode(status)
        assert list(range(10)) == [e.step for e in handler.events]

    def test_a_subscriber_lane_never_blocks_its_producer(self) -> None:
        """backpressure=False (a live subscriber): 'block' drops at once instead of waiting."""
        policy = DeliveryPolicy(when_full=WhenFull.BLOCK, block_timeout_s=30.0)
        handler = Gate()
        lane = Lane(handler, async_mode=True, queue_size=2, backpressure=False, policy=policy)
        lane.start()
        lane.offer(_events(0, 1)[0])
        wait_until(handler.entered.is_set, what="the worker inside handle()")
        started = time.monotonic()
        for event in _events(1, 20):
            lane.offer(event)
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
