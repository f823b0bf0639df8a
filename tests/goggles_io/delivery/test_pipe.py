"""The delivery engine (``Pipe``): every unit put is delivered or counted, in order, and a
repeat reaches the sink only in a batch marked redelivered (issue 29, ADR 0025, ADR 0029).

One suite for the engine and its four users (as OpenTelemetry tests its BatchProcessor once
for both signals): the property and spill round-trip tests run over the socket client, a
handler lane, the remote sink and the broker forwarder (``pipe_users.py``), each pipe built by
the user's own factory, with the user's codec, units and item types; the unit tests below use
plain ints. A real worker thread, a real spool on disk (tiny budgets make it fill), a sink that
dies and comes back while the test goes on: nothing is mocked but the sink itself.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

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
from pipe_users import USERS, PipeUser
from support import wait_until

_FAST = (0.001, 0.01)  # retry backoff: the users' 50 ms .. 1 s would make each example wait


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
        backoff_s=_FAST,
        on_loss=lambda *_: None,
        **kw,
    )


def make_user_pipe(
    user: PipeUser, sink: Sink, folder: Path, max_bytes: int, spool_bytes: int, when_full: WhenFull
) -> Pipe[Any]:
    """The pipe ``user`` makes, on the fake sink, with a fast retry."""
    policy = DeliveryPolicy(
        when_full=when_full, spool_bytes=spool_bytes, spool_dir=str(folder), block_timeout_s=0.02
    )
    pipe = user.build(sink.send, policy, max_bytes)
    pipe.backoff_s = _FAST
    return pipe


def put_item(user: PipeUser, pipe: Pipe[Any], i: int) -> tuple[int, bool]:
    """Put ``user``'s ``i``-th item as the user does; its units, and whether it was forced."""
    item, force = user.item(i)
    pipe.put(item, user.size(item), force=force)
    return user.units(item), force


def settle(pipe: Pipe[Any], sink: Sink) -> None:
    """Acknowledge whatever the sink got until nothing is held (items of no units too)."""

    def done() -> bool:
        pipe.ack(sink.last_seq())
        return pipe.left() == 0 and pipe.drain(stall_s=0.0)  # no wait: is anything held?

    wait_until(done, timeout_s=60, what="pipe drained")


def check_delivery(
    sink: Sink,
    put: int,
    pipe: Pipe[Any],
    ident: Callable[[Any], int] = int,
    units: Callable[[Any], int] = lambda _: 1,
) -> list[int]:
    """Delivered + counted == put (in units); repeats only when marked; first arrivals in
    order. Returns the ``ident`` of each item, as first delivered."""
    seen: list[int] = []
    known: set[int] = set()
    got = 0
    for _, items, redelivered in sink.batches:
        for item in items:
            i = ident(item)
            if i in known:
                assert redelivered, f"item {i} repeated in a batch not marked redelivered"
                continue
            known.add(i)
            seen.append(i)
            got += units(item)
    losses = pipe.losses()
    assert set(losses) <= set(REASONS)
    assert put == pipe.delivered + sum(losses.values())
    assert got == pipe.delivered
    assert seen == sorted(seen)
    return seen


def check_contents(user: PipeUser, sink: Sink) -> None:
    """Every item the sink got equals the one put (arrays, lists and marks through the spool)."""
    for _, items, _ in sink.batches:
        for item in items:
            assert user.plain(item) == user.plain(user.item(user.ident(item))[0])


@pytest.fixture(params=USERS, ids=str, scope="module")
def user(request: pytest.FixtureRequest) -> PipeUser:
    """Each of the engine's users in turn."""
    return request.param


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
    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        ops=OPS,
        memory=st.sampled_from([3, 10, 200]),
        spool=st.sampled_from([0.05, 2.0, 1000.0]),
        when_full=st.sampled_from([WhenFull.SPILL, WhenFull.SPILL, WhenFull.BLOCK, WhenFull.DROP]),
    )
    def test_any_interleaving_delivers_or_counts_every_unit(
        self,
        user: PipeUser,
        tmp_path_factory: pytest.TempPathFactory,
        ops: list[tuple[str, int]],
        memory: int,
        spool: float,
        when_full: WhenFull,
    ) -> None:
        """put / ack / partial ack / sink death / restart / a full spool, in any order, while
        the worker runs, on each user's pipe: after a final drain, delivered + counted losses
        == put in the user's units, no unmarked repeat, order kept, forced items never lost,
        items intact, and no spool folder left.

        Sizes follow the user's: memory holds ``memory`` typical items, the spool ``spool``
        of the user's batches (a record is one batch: 0.05 holds none), and each put step
        puts an eighth of a batch (a few steps fill a record)."""
        folder = tmp_path_factory.mktemp("spool")
        sink = Sink()
        typical = user.typical_size()
        batch = user.batch_items()
        record = batch * typical
        pipe = make_user_pipe(user, sink, folder, memory * typical, int(spool * record), when_full)
        put = 0
        forced: list[int] = []
        n = 0
        on_disk = False
        try:
            for op, count in ops:
                if op == "put":
                    for _ in range(count * max(1, batch // 8)):
                        units, force = put_item(user, pipe, n)
                        put += units
                        if force:
                            forced.append(n)
                        n += 1
                    on_disk = on_disk or bool(list_spools(folder))
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
        seen = check_delivery(sink, put, pipe, user.ident, user.units)
        check_contents(user, sink)
        assert NOT_DELIVERED not in pipe.losses()
        assert set(forced) <= set(seen), "a forced item was lost"
        assert [] == list_spools(folder)
        for reason in pipe.losses():
            event(f"{user}: lost to {reason!r}")
        if any(again for _, _, again in sink.batches):
            event(f"{user}: redelivered")
        if on_disk:
            event(f"{user}: spilled to disk")

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


class TestSpillRoundTrip:
    def test_what_spills_comes_back_whole_and_in_order(
        self, user: PipeUser, tmp_path: Path
    ) -> None:
        """The sink down and memory for three items: the rest goes through the user's codec
        to disk (a record per batch) and back; every item arrives once, equal to what was put
        (arrays, lists, redelivered marks), forced items in their place, nothing lost."""
        sink = Sink()
        pipe = make_user_pipe(
            user, sink, tmp_path, 3 * user.typical_size(), 1 << 30, WhenFull.SPILL
        )
        sink.alive = False
        pipe.link_lost()
        n = 4 * user.batch_items() + 7  # four records on disk, and a part left in memory
        put = 0
        try:
            for i in range(n):
                put += put_item(user, pipe, i)[0]
            spilled = list_spools(tmp_path)
            sink.alive = True
            settle(pipe, sink)
        finally:
            pipe.close()
        seen = check_delivery(sink, put, pipe, user.ident, user.units)
        check_contents(user, sink)
        assert spilled
        assert (list(range(n)), {}) == (seen, pipe.losses())
        assert [] == list_spools(tmp_path)


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
        got: list[tuple[list[Any], bool, int]] = []

        def keep(chunks: Iterator[tuple[list[Any], bool, int]]) -> bool:
            got.extend(chunks)
            return True

        assert 296 == pipe.close(keep=keep)
        assert list(range(4, 300)) == [i for items, _, _ in got for i in items]
        assert [True] + [False] * (len(got) - 1) == [sent for _, sent, _ in got]
        assert [2] + [0] * (len(got) - 1) == [seq for _, _, seq in got]  # the batch's number
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
        pipe = make_pipe(
            sink,
            tmp_path,
            units=lambda items: sum(map(len, items)),
            when_full=WhenFull.DROP,
            max_bytes=20,
        )
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
