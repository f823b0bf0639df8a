"""``Pipe[T]``: the one delivery engine between producers and a sink (the project's BatchProcessor).

Over 400 lines, one piece: the engine's states (put, batch, send, ack, spill, close) move under
one lock; kept.py, waiting.py and tally.py hold the parts that need no lock of their own.

Producers :meth:`~Pipe.put` from any thread; one worker takes items in order as numbered batches
and calls ``send(seq, items, redelivered)``. A batch is then kept (counted in memory) until the
sink acknowledges it (:meth:`~Pipe.ack`, cumulative): ADR 0029's sent → kept → released. After
:meth:`~Pipe.link_lost` every kept batch is sent again, in order, before anything newer, marked
``redelivered`` (a ``send`` may read :attr:`~Pipe.sending_gen`, the count of lost links its batch
was picked under, and refuse a batch picked before the latest loss: ADR 0057); a ``send`` that raises (the sink is down) is retried with backoff. A full memory
budget spills to the spool (later items follow, so order holds), then blocks the producer for a
bounded time per burst (never while the sink is known down), then drops and counts by reason
(ADR 0025). For each unit put: delivered (acknowledged) or one counted loss, once closed.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from goggles_io._delivery.kept import Batch, Kept
from goggles_io._delivery.losses import (
    KEPT_FOR_LATER,
    NOT_DELIVERED,
    QUEUE_FULL,
    SPOOL_FULL,
    SPOOL_UNREADABLE,
    UNENCODABLE,
    LossReport,
    PipeCodec,
)
from goggles_io._delivery.policy import BlockAllowance, DeliveryPolicy
from goggles_io._delivery.tally import Tally
from goggles_io._delivery.waiting import Keep, Part, Waiting, left_in_order

__all__ = ["Pipe"]

T = TypeVar("T")
_LINGER_S = 0.002  # how long the worker waits for more before it asks to be woken


def _nothing() -> None:
    """The default ``on_put``."""


class Pipe(Generic[T]):
    """Sequenced, acknowledged batches of ``T`` within a memory budget, then the spool.

    Args:
        send: called on the worker thread with ``(seq, items, redelivered)``; raising means
            the sink is down (the same batch is retried after a backoff).
        label: names the spool folder and the stderr lines.
        policy: spill / block / drop and the spool's budget.
        max_items: items waiting in memory (not yet batched) at most.
        max_bytes: bytes (as given to ``put``) in memory, waiting or kept, at most.
        batch_items, batch_bytes: the most one batch holds (and one spool record).
        codec: encodes a list of items for the spool; without one, nothing spills.
        units: what a list of items counts for in ``losses()``, ``delivered`` and ``left()``
            (default: its length); called once per batch, so a user counts in C where it
            can (``rows.count_rows``: a row one, a control item none).
        max_unacked: batches sent and not acknowledged at most (``None``: bytes only).
        ack_on_return: a ``send`` that returns acknowledges its batch (synchronous sinks).
        on_idle: called by the worker before it sleeps; returns how long it may sleep
            (``None``: until woken). Heartbeats and polls for acknowledgements go here.
        on_loss: told ``(reason, units, detail)`` of a loss; default: once per reason on stderr.
        on_put: called first by every :meth:`put_one` (a lane's count of the rows offered to it:
            a C counter, so the in-process hot path is one Python frame here).
        run_extra: the units beyond one per item of a list (the runs :meth:`put_run` queues
            count their rows against ``max_items``); needed only where ``put_run`` is used.
        refill: called by the worker when it lingered and found nothing to batch; puts what a
            front gathered (:meth:`put_run`) and says whether it put anything (ADR 0088).
        name: the worker thread's name.
    """

    def __init__(
        self,
        send: Callable[[int, list[T], bool], object],
        *,
        label: str,
        policy: DeliveryPolicy,
        max_bytes: int,
        max_items: int = 1 << 62,
        batch_items: int = 512,
        batch_bytes: int = 1 << 20,
        codec: PipeCodec[T] | None = None,
        units: Callable[[list[T]], int] | None = None,
        max_unacked: int | None = None,
        ack_on_return: bool = False,
        on_idle: Callable[[], float | None] | None = None,
        on_loss: Callable[[str, int, str], object] | None = None,
        on_put: Callable[[], object] | None = None,
        run_extra: Callable[[list[T]], int] | None = None,
        refill: Callable[[], bool] | None = None,
        backoff_s: tuple[float, float] = (0.05, 1.0),
        name: str = "goggles_io:pipe",
    ) -> None:
        self.label = label
        self.policy = policy
        self.max_bytes = max_bytes
        self.max_items = max_items
        self.batch_items = batch_items
        self.batch_bytes = batch_bytes
        self.max_unacked = max_unacked
        self.backoff_s = backoff_s  # first and longest wait before a failed send is retried
        self._send = send
        self._codec = codec
        self._units = units
        self._ack_on_return = ack_on_return
        self._on_idle = on_idle
        self._on_loss = on_loss or LossReport(label)
        self._on_put = on_put or _nothing
        self._run_extra = run_extra
        self.refill = refill
        self._name = name
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Event()
        # The worker sleeps until woken: a producer that puts wakes it (read without the lock;
        # a front reads it too, ADR 0088).
        self.sleeping = False
        # Put, not yet batched: the items, and their bytes in a deque of their own (appended
        # first, popped after), so a queued item is not wrapped in a tuple the GC tracks.
        self._queue: deque[T] = deque()
        self._sizes: deque[int] = deque()
        self._limit = -1  # max_items; -1 sends put() to the slow path (spilling, closed, cold)
        # Units queued beyond one per item (runs of rows, put_run): the fast paths compare the
        # queue's length with ``_limit = max_items - _extra``.
        self._extra = 0
        self._bytes_in = 0  # bytes ever put in memory (producers)
        self._bytes_out = 0  # bytes ever released (acked, or taken out of memory)
        self._waiting = self._new_waiting()  # behind the queue once spilled, in order
        self._kept: Kept[T] = Kept()  # made, not yet acknowledged
        # The link generation (lost links so far) of the batch the worker is sending now.
        self.sending_gen = 0
        self._down = False  # the sink is known down: producers do not block
        self._closed = False
        self._thread: threading.Thread | None = None
        self._allowance = BlockAllowance(self.policy.block_timeout_s)
        self._tally = Tally(self._lock, self._on_loss)

    def _new_waiting(self) -> Waiting[T]:
        return Waiting(self.label, self.policy, self._codec, self._count)

    # -- producers --------------------------------------------------------------------------
    def put(self, item: T, size: int, *, force: bool = False) -> bool:
        """Queue ``item`` (``size`` bytes against the budget); ``False`` when it was dropped
        (counted in :meth:`losses`). ``force``: never dropped, kept in memory past the budget
        (control messages, markers)."""
        queue = self._queue
        if len(queue) >= self._limit or self._bytes_in - self._bytes_out + size > self.max_bytes:
            return self._put_slow(item, size, force)
        self._bytes_in += size
        self._sizes.append(size)
        queue.append(item)
        if self.sleeping:
            self._wake.set()
        return True

    def put_one(self, item: T, size: int) -> bool:
        """:meth:`put` (not forced) after calling ``on_put``: what a lane's row offer is, in one
        frame (the in-process bus calls it straight from its route cache)."""
        self._on_put()
        queue = self._queue  # the fast path of put(), repeated: a call less per row
        if len(queue) >= self._limit or self._bytes_in - self._bytes_out + size > self.max_bytes:
            return self._put_slow(item, size, False)
        self._bytes_in += size
        self._sizes.append(size)
        queue.append(item)
        if self.sleeping:
            self._wake.set()
        return True

    def put_many(self, items: list[T], sizes: list[int]) -> int:
        """:meth:`put` each of ``items`` (``sizes`` bytes each), in order; how many were dropped.

        When they all fit in memory they go in with one ``extend`` (a sink fed whole lists, such
        as the broker forwarder, pays per list, not per item); otherwise item by item, each
        spilled, blocked or dropped and counted as :meth:`put` would."""
        queue, n = self._queue, len(items)
        total = sum(sizes)
        if (
            n
            and len(queue) + n <= self._limit
            and (self._bytes_in - self._bytes_out + total <= self.max_bytes)
        ):
            self._bytes_in += total
            self._sizes.extend(sizes)  # sizes first, as in put(): the worker pops items first
            queue.extend(items)
            if self.sleeping:
                self._wake.set()
            return 0
        put = self.put
        return sum(not put(item, size) for item, size in zip(items, sizes, strict=True))

    def put_run(self, item: T, size: int, units: int) -> bool:
        """Queue ``item`` that holds ``units`` units (a run of rows) when it fits in memory as it
        is; ``False``, and nothing queued, when it does not (spilling, full, closed, not
        started): the caller then puts its units one by one (ADR 0088)."""
        with self._lock:
            queue = self._queue
            if (
                len(queue) + units > self._limit
                or self._bytes_in - self._bytes_out + size > self.max_bytes
            ):
                return False
            self._extra += units - 1
            self._limit -= units - 1
            self._bytes_in += size
            self._sizes.append(size)
            queue.append(item)
        if self.sleeping:
            self._wake.set()
        return True

    def nudge(self) -> None:
        """Wake the worker now, even while it lingers for more items: someone waits for room."""
        self._wake.set()

    def _put_slow(self, item: T, size: int, force: bool) -> bool:
        with self._lock:
            if self._closed:
                self._tally.lose_locked(NOT_DELIVERED, self._count([item]), "put after close")
                return False
            if self._thread is None:
                self._start_locked()
            why = self._place_locked(item, size, force)
            blocks = self.policy.blocks and not self._down
        if not why:
            if self.sleeping:
                self._wake.set()
            return True
        if blocks:
            self._wake.set()
            placed = self._allowance.wait(
                lambda: self._try_place(item, size), give_up=lambda: self._down or self._closed
            )
            if placed:
                return True
        with self._lock:
            reason = NOT_DELIVERED if self._closed else why
            self._tally.lose_locked(reason, self._count([item]), self._waiting.failure)
        return False

    def _try_place(self, item: T, size: int) -> bool:
        with self._lock:
            placed = not self._closed and not self._place_locked(item, size, False)
        if placed:
            self._wake.set()
        return placed

    def _place_locked(self, item: T, size: int, force: bool) -> str:
        """Put ``item`` in memory or behind what is spilled; the loss reason when it cannot.
        An item over the whole budget goes alone into empty memory (else it never fits)."""
        waiting = self._waiting
        if not waiting.active:
            held = self._bytes_in - self._bytes_out
            fits = held + size <= self.max_bytes or (held == 0 and not self._queue)
            if force or (len(self._queue) + self._extra < self.max_items and fits):
                self._bytes_in += size
                self._sizes.append(size)
                self._queue.append(item)
                return ""
            if not waiting.can_spill:
                return QUEUE_FULL
            waiting.active = True
            self._limit = -1
        if waiting.chunk_full(self.batch_items, self.batch_bytes):
            sealed, refused = waiting.seal(self._charge_locked)
            for bad in refused:
                self._tally.lose_locked(UNENCODABLE, self._count([bad]), repr(bad)[:200])
            if not sealed and not force:
                return SPOOL_FULL
        waiting.add(item, size, 1 if self._units is None else self._units([item]), force)
        return ""

    def _charge_locked(self, nbytes: int, force: bool) -> bool:
        """Count ``nbytes`` more in memory if they fit (or ``force``); whether they were."""
        if not force and self._bytes_in - self._bytes_out + nbytes > self.max_bytes:
            return False
        self._bytes_out -= nbytes
        return True

    def ack(self, seq: int) -> int:
        """Batches up to ``seq`` were taken by the sink: release them; the units released."""
        with self._lock:
            n, units, nbytes = self._kept.release(seq)
            if not n:
                return 0
            self._bytes_out += nbytes
            self._tally.delivered_locked(units)
        if self.sleeping:
            self._wake.set()
        return units

    def link_lost(self) -> None:
        """The other side died: every kept batch is sent again, in order, before newer ones."""
        with self._lock:
            self._kept.link_lost()
            self._down = True
        self._wake.set()

    def _start_locked(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        if not self._closed and not self._waiting.active:
            self._limit = self.max_items - self._extra

    def _run(self) -> None:
        backoff = self.backoff_s[0]
        refill_due = False  # after each linger or sleep, a front is asked once for its rows
        while True:
            with self._lock:
                batch, part = self._pick_locked()
                if batch is None and part is None and self._closed:
                    return
                # The link it is picked for, read with the pick: a link lost after this makes
                # it due again, and a sink that checks ``sending_gen`` refuses it (it would
                # overtake the batches sent again).
                gen = self.sending_gen = self._kept.gen
            if part is not None:
                self.sleeping = False
                self._read_back(part)  # kept as a new batch; picked in order next time round
                continue
            if batch is None:
                if refill_due and self.refill is not None:
                    refill_due = False
                    if self.refill():
                        continue
                self._sleep()
                refill_due = True
                continue
            self.sleeping = False
            again = batch.attempts > 0
            batch.attempts += 1
            try:
                self._send(batch.seq, batch.items, again)
            except Exception:
                with self._lock:
                    self._down = True
                self._wake.wait(backoff)
                self._wake.clear()
                backoff = min(backoff * 2, self.backoff_s[1])
                continue
            backoff = self.backoff_s[0]
            with self._lock:
                batch.sent_gen = gen  # if the link was lost meanwhile, it is due again
                self._down = False
            if self._ack_on_return:
                self.ack(batch.seq)

    def _sleep(self) -> None:
        if not self.sleeping:
            # Linger a moment unannounced (producers in a burst then never pay for a wake-up),
            # then look once more with the flag up: no wake-up is missed.
            self._wake.wait(_LINGER_S)
            self._wake.clear()
            self.sleeping = True
            return
        timeout = None
        if self._on_idle is not None:
            try:
                timeout = self._on_idle()
            except Exception:
                timeout = self.backoff_s[1]
        self._wake.wait(timeout)
        self._wake.clear()
        self.sleeping = False

    def _pick_locked(self) -> tuple[Batch[T] | None, Part[T] | None]:
        """The next batch to send: a kept one due again, else a new one (queue, then what is
        spilled); or a spool part to read back outside the lock."""
        if self._closed:
            return None, None
        kept = self._kept
        due = kept.due()
        if due is not None:
            return due, None
        if self.max_unacked is not None and len(kept) >= self.max_unacked:
            return None, None
        if self._queue:
            batch = self._kept.add_from(
                self._queue, self._sizes, self.batch_items, self.batch_bytes, self._count
            )
            if self._extra and self._run_extra is not None:
                extra = self._run_extra(batch.items)
                self._extra -= extra
                if self._limit != -1:
                    self._limit += extra
            return batch, None
        waiting = self._waiting
        part = waiting.take(lambda nbytes: self._charge_locked(nbytes, not kept))
        if waiting.active and waiting.empty():
            waiting.active = False  # all spilled was taken: new items go to memory again
            self._limit = self.max_items - self._extra
        if part is None:
            if waiting.empty() and self._bytes_in - self._bytes_out <= self.max_bytes // 2:
                self._allowance.refill()  # drained (kept batches too): the next burst may wait
            return None, None
        if part.items is None:
            return None, part  # read back outside the lock
        return self._kept.add(part.items, part.units, part.nbytes), None

    def _read_back(self, part: Part[T]) -> None:
        """Read a spilled record (outside the lock: the producers go on)."""
        items = self._waiting.read(safely=True)
        with self._lock:
            if self._closed:  # close() counted it
                return
            self._waiting.done_reading()
            if items is None or len(items) != part.n:
                self._bytes_out += part.nbytes
                self._tally.lose_locked(SPOOL_UNREADABLE, part.units, "a record could not be read")
                return
            self._kept.add(items, part.units, part.nbytes)

    def _count(self, items: list[T]) -> int:
        return len(items) if self._units is None else self._units(items)

    @property
    def delivered(self) -> int:
        """Units acknowledged by the sink."""
        return self._tally.delivered

    def losses(self) -> dict[str, int]:
        """Units not delivered, by reason (:mod:`goggles_io._delivery.losses`)."""
        with self._lock:
            return dict(self._tally.losses)

    def left(self) -> int:
        """Units put and neither acknowledged nor counted lost (memory, spool, kept)."""
        with self._lock:
            return self._left_locked()

    def _left_locked(self) -> int:
        queued = list(self._queue.copy())  # atomic: producers append without the lock
        return self._count(queued) + self._waiting.units + self._kept.units

    def memory_bytes(self) -> int:
        """Bytes in memory now (queued or kept), read without the lock: for backpressure."""
        return self._bytes_in - self._bytes_out

    def queued(self) -> bool:
        """Whether items wait in memory to be batched, read without the lock: the worker then
        makes another batch before it sleeps (only the worker takes them)."""
        return bool(self._queue)

    def idle(self) -> bool:
        """Whether nothing waits to be batched (memory or spool), read without the lock."""
        return not self._queue and not self._waiting.active

    def wait_progress(self, timeout_s: float) -> bool:
        """Wait until a batch is acknowledged or a loss counted (or :meth:`wake`); ``True``
        when something progressed."""
        with self._lock:
            return self._tally.wait_locked(timeout_s)

    def wake(self) -> None:
        """End every :meth:`wait_progress` and :meth:`drain` wait now (Ctrl-C, a new deadline)."""
        with self._lock:
            self._tally.wake_locked()

    def drain(self, stall_s: float, timeout_s: float | None = None) -> bool:
        """Wait while any item is held (even one of no units) and delivery progresses (an ack
        or a counted loss at least every ``stall_s``), at most ``timeout_s`` in all; ``True``
        once nothing is held."""
        with self._lock:
            return self._tally.drain_locked(self._held_locked, stall_s, timeout_s)

    def _held_locked(self) -> bool:
        return not self._closed and bool(self._queue or self._waiting.busy() or self._kept)

    # -- lifecycle --------------------------------------------------------------------------
    def close(self, join_s: float = 1.0, keep: Keep[T] | None = None) -> int:
        """Stop the worker; count what is left ``not delivered`` and remove the spool; return it.

        ``keep`` (finish gave up) gets what is left, in order, as ``(items, sent)`` lists
        (:func:`~goggles_io._delivery.waiting.left_in_order`); when it stored them all, they
        are counted ``kept for later`` instead."""
        with self._lock:
            if self._closed:
                return 0
            self._closed = True
            self._limit = -1
            thread = self._thread
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(join_s)
        with self._lock:
            left = self._left_locked()
            batches = self._kept.take()
            queued = list(self._queue)
            self._queue.clear()
            self._sizes.clear()
            self._extra = 0
            waiting, self._waiting = self._waiting, self._new_waiting()
        kept = keep is not None and left > 0 and keep(left_in_order(batches, queued, waiting))
        with self._lock:
            if kept:
                self._tally.set_aside_locked(KEPT_FOR_LATER, left)
            else:
                self._tally.lose_locked(NOT_DELIVERED, left)
        waiting.close()
        return left

    def after_fork(self) -> None:
        """In a forked child: the parent's items, spool and thread are the parent's; start
        empty (the worker starts with the first ``put``)."""
        self._reset()
