"""One handler's delivery lane: a bounded queue drained by its own worker thread.

One lane per handler means a slow handler only ever delays itself. The queue is a C
``SimpleQueue`` (cheap ``put``, blocking ``get``) bounded in events and bytes by checks before the
put. When it is full the lane follows the delivery policy (ADR 0025): the events go to the lane's
spool (:mod:`goggles_io._bus.overflow`), a mark keeping their place in the queue; with no room
there the caller waits (bounded per burst; only callers that may: the in-process bus), then the
events are dropped and counted. The socket host offers whole lists (:meth:`Lane.offer_many`):
one put per batch, counted per event.
"""

from __future__ import annotations

import math
import re
import threading
from queue import SimpleQueue
from typing import Any

from goggles_io._bus.calls import HandlerCalls
from goggles_io._bus.items import (
    Call,
    Control,
    HeldTickets,
    Redelivered,
    Ticket,
    handler_kinds,
    optional_method,
)
from goggles_io._bus.overflow import SPOOLED, Overflow
from goggles_io._bus.tally import NOT_HANDLED_IN_TIME, LaneTally
from goggles_io._bus.transport import HandlerStats, handler_losses
from goggles_io._delivery.drain import DrainOutcome, wait_while_progressing
from goggles_io._delivery.policy import DeliveryPolicy, WhenFull, advice, check_when_full
from goggles_io._event.records import (
    EVENT_OVERHEAD_BYTES,
    METRIC_ENTRY_BYTES,
    Event,
    approx_nbytes,
)
from goggles_io._util.report import ReportOnce
from goggles_io.handlers.base import Handler

__all__ = ["Lane", "handler_kinds"]

_LABEL = re.compile(r"[^A-Za-z0-9_.-]+")


class Lane:
    """Deliver events to one handler, asynchronously (own thread) or synchronously (caller)."""

    def __init__(
        self,
        handler: Handler,
        *,
        async_mode: bool,
        queue_size: int,
        queue_bytes: int = 1 << 62,
        backpressure: bool = True,
        policy: DeliveryPolicy | None = None,
        stall_s: float = math.inf,
    ) -> None:
        self.handler = handler
        self.stall_s = stall_s  # close/flush give up after this long without progress
        self.queue_bytes = queue_bytes
        # False for live subscribers: a stalled reader must never make the host stop reading.
        self.backpressure = backpressure
        self._bytes_in = 0  # bytes queued, ever (producer side)
        self._bytes_out = 0  # bytes taken by the worker, ever
        self.name: str = handler.name
        self.kinds = handler_kinds(handler)
        # Only ``name`` and ``handle`` are required; the rest of the lifecycle is optional.
        self._open_handler = optional_method(handler, "open")
        self._flush_handler = optional_method(handler, "flush")
        self._close_handler = optional_method(handler, "close")
        self.level: int = int(getattr(handler, "level", 0) or 0)
        self.scopes: set[str] = set()
        self.async_mode = async_mode
        self.queue_size = queue_size
        base = policy or DeliveryPolicy(when_full=WhenFull.DROP)
        try:  # a handler may pick a stricter policy for its own lane
            own = check_when_full(getattr(handler, "when_full", None))
        except ValueError:
            own = None
        self.policy = base.stricter(own)
        self.overflow = Overflow(f"lane-{_LABEL.sub('_', self.name)[:40]}", self.policy)
        self.tally = LaneTally()
        self.last_wait: DrainOutcome | None = None  # how the last close or flush wait ended
        self.broken = False  # open() failed: every event is a counted drop
        self._queue: SimpleQueue[Any] = SimpleQueue()
        self._batched = 0  # events queued inside lists, beyond the one item each list counts as
        self._marks = 0  # SPOOLED marks in the queue (not events held in memory)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._report_once = ReportOnce()
        self._calls = calls = HandlerCalls(handler, self.name, self.tally, self._report_once)
        self._deliver, self._deliver_many = calls.one, calls.many
        self._deliver_redelivered, self._invoke, self._safe = (
            calls.redelivered,
            calls.invoke,
            calls.safe,
        )
        self._held = HeldTickets(lambda: self._safe(self._flush_handler))

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> bool:
        """Open the handler and start the worker; ``False`` (reported once) if open() fails."""
        try:
            self._open_handler()
        except Exception as exc:
            self.broken = True
            self._report_once(
                "open",
                f"handler {self.name!r} could not be opened ({exc!r}); "
                "its events are dropped and counted",
            )
            return False
        self.broken = False
        self.tally.reopen()
        if self.async_mode:
            self._fresh_queue()
        return True

    def _fresh_queue(self) -> None:
        self._queue = SimpleQueue()
        self._batched = self._marks = 0
        self._bytes_in = self._bytes_out = 0
        self._thread = threading.Thread(
            target=self._run, name=f"goggles_io:{self.name}", daemon=True
        )
        self._thread.start()

    def restart_after_fork(self) -> None:
        """Give the child its own lock, queue, spool and thread (the parent's are not copied)."""
        self._lock = threading.Lock()
        self.tally.after_fork()
        self._thread = None
        self.overflow.forget_after_fork()
        if self.async_mode and not self.broken:
            self._fresh_queue()

    def flush(self, timeout_s: float | None = None, *, stall_s: float | None = None) -> bool:
        """Wait until every event offered so far was handled and the handler flushed.

        Waits while the handler makes progress; gives up after ``stall_s`` seconds without it
        (default: the lane's) or after ``timeout_s`` in all. ``False`` when it gave up.
        """
        return self._control(close=False, timeout_s=timeout_s, stall_s=stall_s).drained

    def close(self, timeout_s: float | None = None, *, stall_s: float | None = None) -> bool:
        """Deliver what is queued (spool included), flush and close the handler, stop the worker.

        Waits like :meth:`flush`. When it gives up, what the handler did not take is counted
        once, as dropped ``not handled in time``, and the worker stops handling and counting.
        """
        outcome = self._control(close=True, timeout_s=timeout_s, stall_s=stall_s)
        thread = self._thread
        if outcome.drained and thread is not None:
            thread.join(timeout_s)
        # What is still not settled: left by a worker given up on, or offered behind the close.
        if (not outcome.drained or self.tally.pending()) and thread is not None:
            self._calls.orphans = self._calls.orphans | {thread}
            pending = self.tally.give_up(handler_losses(self.handler))
            if pending:
                if outcome.stalled:
                    why = f"it took nothing for {self.stall_s if stall_s is None else stall_s:g} s"
                elif outcome.abandoned:
                    why = "the wait for it was cut short"
                else:
                    why = "they came after it closed"
                self._report_once(
                    "close",
                    f"handler {self.name!r}: {pending} events counted as lost "
                    f"({NOT_HANDLED_IN_TIME}: {why})",
                )
        self.overflow.close()
        self._thread = None
        return outcome.drained

    def _control(
        self, *, close: bool, timeout_s: float | None, stall_s: float | None
    ) -> DrainOutcome:
        if self.broken:
            return DrainOutcome(left=0, elapsed_s=0.0)
        if self._thread is None or not self.async_mode:
            with self._lock:
                self._safe(self._flush_handler)
                if close:
                    self._safe(self._close_handler)
            return DrainOutcome(left=0, elapsed_s=0.0)
        request = Control(close)
        self._queue.put(request)
        done = request.done.is_set
        tally = self.tally
        outcome = wait_while_progressing(
            lambda: tally.pending() + (not done()),  # the flush or close itself is one more
            stall_s=self.stall_s if stall_s is None else stall_s,
            what=self.name,
            done=done,
            taken=tally.taken,
            limit_s=timeout_s,
        )
        if done():  # its work is done; events offered behind it are a close's to count
            outcome = DrainOutcome(left=0, elapsed_s=outcome.elapsed_s)
        self.last_wait = outcome
        return outcome

    # -- hot path ---------------------------------------------------------------------------
    def offer(self, event: Event) -> None:
        """Queue (async) or handle (sync) one event; a full queue spills, waits or drops."""
        self.tally.offer()
        if self._thread is not None:
            payload = event.payload
            # A metric's dict is the hot case: its estimate inline, the rest via approx_nbytes.
            if payload.__class__ is dict:
                size = EVENT_OVERHEAD_BYTES + METRIC_ENTRY_BYTES * len(payload)
            else:
                size = approx_nbytes(event)
            if (
                self._queue.qsize() - self._marks >= self.queue_size
                or self._bytes_in - self._bytes_out + size > self.queue_bytes
            ):
                self._full([event], may_block=self.backpressure)
                return
            self._bytes_in += size
            self._queue.put((event, size))
        elif self.broken:
            self._drop("handler could not be opened")
        else:
            with self._lock:
                self._deliver(event)

    def backlog(self) -> int:
        """Events queued in memory and not yet taken by the worker (0 for a synchronous lane)."""
        return self._queue.qsize() + self._batched - self._marks

    def backlog_bytes(self) -> int:
        """Approximate bytes queued in memory and not yet taken by the worker."""
        return self._bytes_in - self._bytes_out

    def congested(self, room: int) -> bool:
        """Whether this lane is within ``room`` events (or half its bytes) of full and cannot
        spill: the socket host then stops reading producers for a while (backpressure)."""
        if not self.backpressure or self._thread is None:
            return False
        room = min(room, self.queue_size // 2)  # a queue smaller than a batch: half of it
        full = self.backlog() > self.queue_size - room or (
            self.backlog_bytes() > self.queue_bytes // 2
        )
        return full and not self.overflow.can_spill()

    def offer_many(self, events: list[Event], *, redelivered: bool = False) -> int:
        """Queue a whole list as one item (async) or handle it now (sync); spill what has no room.

        Returns how many of ``events`` were dropped (and counted). The lane owns ``events``
        afterwards: the caller must not reuse the list. ``redelivered``: the list was sent before
        to a host that died (the handler's ``handle_redelivered`` gets it, when it has one).
        """
        if not events:
            return 0
        self.tally.offer(len(events))
        if self._thread is not None:
            rest = self._queue_what_fits(events, redelivered)
            return self._full(rest, self.backpressure, redelivered) if rest else 0
        if self.broken:
            self._drop("handler could not be opened", len(events))
            return len(events)
        with self._lock:
            if redelivered:
                self._deliver_redelivered(Redelivered(events))
            else:
                self._deliver_many(events)
        return 0

    def offer_ticket(self, ticket: Ticket) -> None:
        """Settle ``ticket`` once the worker got past everything offered before it."""
        if self._thread is not None:
            ticket.hold()
            self._queue.put(ticket)

    def _queue_what_fits(self, events: list[Event], redelivered: bool = False) -> list[Event]:
        """Queue the longest head of ``events`` that fits the bounds; return the rest."""
        room = max(self.queue_size - self.backlog(), 0)
        rest: list[Event] = events[room:]
        events = events[:room]
        budget = self.queue_bytes - (self._bytes_in - self._bytes_out)
        size = 0
        for i, event in enumerate(events):
            grown = size + approx_nbytes(event)
            if grown > budget:
                rest = events[i:] + rest
                events = events[:i]
                break
            size = grown
        if events:
            with self._lock:
                self._batched += len(events) - 1
                self._bytes_in += size
            self._queue.put((Redelivered(events) if redelivered else events, size))
        return rest

    def _full(self, events: list[Event], may_block: bool, redelivered: bool = False) -> int:
        """The memory budget is full: spill ``events``, else wait for room, else drop them.

        Returns how many were dropped.
        """
        overflow = self.overflow  # a redelivered list never spills: it would lose its mark
        if not redelivered and overflow.can_spill() and overflow.spill(events):
            with self._lock:
                self._marks += 1
            self._queue.put(SPOOLED)  # its place in the queue: delivered in order
            return 0
        if may_block and self.policy.blocks:
            want = min(len(events), self.queue_size)
            size = sum(map(approx_nbytes, events[:want]))
            if overflow.allowance.wait(lambda: self._has_room(want, size)):
                events = self._queue_what_fits(events, redelivered)
                if not events:
                    return 0
        why = overflow.failure or "queue full"
        self._drop(why, len(events))
        return len(events)

    def _has_room(self, n: int, size: int) -> bool:
        return (
            self.backlog() + n <= self.queue_size
            and self._bytes_in - self._bytes_out + size <= self.queue_bytes
        )

    def offer_call(self, method: str, payload: Any) -> None:
        """Run ``handler.<method>(payload)`` after every event offered so far; never blocks.

        Calls are control items: they never count against the queue bound, so a full queue
        cannot lose a config recording. Failures are counted as errors and reported once.
        """
        call = Call(method, payload)
        if self._thread is not None:
            self._queue.put(call)
        elif self.broken:
            self._drop("handler could not be opened")
        else:
            with self._lock:
                self._invoke(call)

    def _drop(self, why: str, n: int = 1) -> None:
        self.tally.drop(n)
        self._report_once(
            why, advice(f"handler {self.name!r}: {why}; dropping events and counting them")
        )

    def _run(self) -> None:
        queue = self._queue
        while True:
            item = queue.get()
            if self._calls.orphans and self._calls.orphaned():
                return  # given up on: what is left was counted, the lane may have a new worker
            cls = item.__class__
            if cls is tuple:
                item, size = item
                if item.__class__ is not Event:
                    with self._lock:
                        self._batched -= len(item) - 1
                        self._bytes_out += size
                    if item.__class__ is Redelivered:
                        self._deliver_redelivered(item)
                    else:
                        self._deliver_many(item)
                else:
                    self._bytes_out += size  # only this thread writes it: no lock needed
                    self._deliver(item)
                if not queue.qsize():
                    self.overflow.allowance.refill()  # drained: the burst is over
            elif item is SPOOLED:
                with self._lock:
                    self._marks -= 1
                n, events = self.overflow.take()
                if n > len(events):
                    self._drop("spool record unreadable", n - len(events))
                if events:
                    self._deliver_many(events)
            elif cls is Ticket:
                self._held.passed(item, idle=not queue.qsize())
            elif cls is Call:
                self._invoke(item)
            elif cls is Control:
                self._held.settle()  # flushes the handler
                if item.close:
                    self._safe(self._close_handler)
                    item.done.set()
                    return
                item.done.set()

    # -- diagnostics ------------------------------------------------------------------------
    @property
    def dropped(self) -> int:
        """Events this lane refused so far (queue full, open failed, not handled in time)."""
        return self.tally.dropped

    def stats(self) -> HandlerStats:
        """Return the tally so far, with the handler's own ``losses()`` when it has them."""
        return self.tally.stats(handler_losses(self.handler))
