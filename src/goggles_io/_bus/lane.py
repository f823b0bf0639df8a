"""One handler's delivery lane: a :class:`~goggles_io._delivery.pipe.Pipe` and the handler call.

One lane per handler means a slow handler only ever delays itself. What is offered goes into
the lane's pipe, the one delivery engine: memory within ``queue_size`` items and
``queue_bytes``, then the lane's spool in order, then a bounded wait (only for callers that may:
not a live subscriber's), then a counted drop (ADR 0025). The pipe's worker hands each batch to
:meth:`Lane._send`, which calls the handler item by item; the batch is acknowledged when that
returns. Flush, close, ``call_handler`` and the socket host's tickets travel in the same pipe,
forced (never dropped), so each runs after every event offered before it. The socket host
offers whole lists (:meth:`Lane.offer_many`): one put per list, counted per event.
"""

from __future__ import annotations

import math
import re
import threading
from typing import Any

from goggles_io._bus.calls import HandlerCalls
from goggles_io._bus.items import (
    Call,
    Control,
    HeldTickets,
    Redelivered,
    Ticket,
    event_count,
    handler_kinds,
    optional_method,
)
from goggles_io._bus.lane_pipe import lane_pipe
from goggles_io._bus.tally import NOT_HANDLED_IN_TIME, LaneTally
from goggles_io._bus.transport import HandlerStats, handler_losses
from goggles_io._delivery.drain import DrainOutcome, wait_while_progressing
from goggles_io._delivery.losses import NOT_DELIVERED, LossReport
from goggles_io._delivery.pipe import Pipe
from goggles_io._delivery.policy import DeliveryPolicy, WhenFull, advice, check_when_full
from goggles_io._event.records import (
    EVENT_OVERHEAD_BYTES,
    METRIC_ENTRY_BYTES,
    Event,
    Kind,
    Row,
    approx_nbytes,
    batch_nbytes,
    row_event,
)
from goggles_io._util.report import ReportOnce
from goggles_io.handlers.base import Handler

__all__ = ["Lane", "handler_kinds"]

_LABEL = re.compile(r"[^A-Za-z0-9_.-]+")
_SUBSCRIBER_GRACE_S = 1.0  # a stalled live subscriber does not hold up a producer's finish


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
        self.name: str = handler.name
        self.kinds = handler_kinds(handler)
        self.takes_metrics = Kind.METRIC in self.kinds  # a logger's scalar rows come here
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
        self.label = f"lane-{_LABEL.sub('_', self.name)[:40]}"
        self.tally = LaneTally()
        self._offer_one = self.tally.offer_one
        self.last_wait: DrainOutcome | None = None  # how the last close or flush wait ended
        self.broken = False  # open() failed: every event is a counted drop
        self._pipe: Pipe[Any] | None = None  # async and open: where offers go
        self._worker: threading.Thread | None = None  # the pipe's worker, once it sent
        self._handler_closed = False  # the worker passed a close: it handles nothing more
        self._lock = threading.Lock()
        self._report_once = ReportOnce()
        self._losses = LossReport(f"handler {self.name!r}")
        self._calls = calls = HandlerCalls(handler, self.name, self.tally, self._report_once)
        self._deliver, self._deliver_many = calls.one, calls.many
        self._deliver_redelivered, self._invoke, self._safe = (
            calls.redelivered,
            calls.invoke,
            calls.safe,
        )
        later = getattr(handler, "when_durable", None)
        self._held = HeldTickets(
            lambda: self._safe(self._flush_handler), later if callable(later) else None
        )

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
            self._fresh_pipe()
        return True

    def _fresh_pipe(self) -> None:
        """A new pipe (its worker starts with the first put) and a new spool codec."""
        self._handler_closed = False
        self._worker = None
        self._pipe = lane_pipe(
            self._send,
            self.policy,
            label=self.label,
            queue_size=self.queue_size,
            queue_bytes=self.queue_bytes,
            backpressure=self.backpressure,
            on_idle=self._idle,
            on_loss=self._lost,
            name=f"goggles_io:{self.name}",
        )

    def restart_after_fork(self) -> None:
        """Give the child its own lock, pipe, spool and thread (the parent's are not copied)."""
        self._lock = threading.Lock()
        self.tally.after_fork()
        if self._pipe is not None:
            self._fresh_pipe()

    def patience(self, stall_s: float | None) -> float | None:
        """How long a producer's flush or finish waits on this lane without progress: a live
        subscriber's reader loses only its own events, so it gets a short grace."""
        if self.backpressure:
            return stall_s
        return _SUBSCRIBER_GRACE_S if stall_s is None else min(stall_s, _SUBSCRIBER_GRACE_S)

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
        pipe = self._pipe
        if pipe is None:
            return outcome.drained
        # What is still not settled: left by a worker given up on, or offered behind the close.
        if not outcome.drained or self.tally.pending():
            worker = self._worker
            if worker is not None:
                self._calls.orphans = self._calls.orphans | {worker}
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
        pipe.close(join_s=1.0 if outcome.drained else 0.0)  # removes the spool
        self._pipe = None
        return outcome.drained

    def _control(
        self, *, close: bool, timeout_s: float | None, stall_s: float | None
    ) -> DrainOutcome:
        if self.broken:
            return DrainOutcome(left=0, elapsed_s=0.0)
        pipe = self._pipe
        if pipe is None:
            with self._lock:
                self._safe(self._flush_handler)
                if close:
                    self._safe(self._close_handler)
            return DrainOutcome(left=0, elapsed_s=0.0)
        request = Control(close)
        pipe.put(request, 0, force=True)
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
        """Queue (async) or handle (sync) one event; a full pipe spills, waits or drops."""
        self.tally.offer()
        pipe = self._pipe
        if pipe is not None:
            payload = event.payload
            # A metric's dict is the hot case: its estimate inline, the rest via approx_nbytes.
            if payload.__class__ is dict:
                pipe.put(event, EVENT_OVERHEAD_BYTES + METRIC_ENTRY_BYTES * len(payload))
            else:
                pipe.put(event, approx_nbytes(event))
        elif self.broken:
            self._drop("handler could not be opened")
        else:
            with self._lock:
                self._deliver(event)

    def offer_row(self, row: Row, nbytes: int) -> None:
        """Queue a logger's scalar row (``nbytes`` against the budget), counted without a lock;
        the worker builds its Event. A synchronous (or broken) lane takes the Event now."""
        pipe = self._pipe
        if pipe is not None:
            self._offer_one()
            pipe.put(row, nbytes)  # a drop is counted through _lost
        else:
            self.offer(row_event(row))

    def backlog(self) -> int:
        """Events offered and not yet handled (queued, spilled or in the handler's hands);
        0 for a synchronous lane."""
        return 0 if self._pipe is None else self.tally.pending()

    def backlog_bytes(self) -> int:
        """Approximate bytes the lane holds in memory (queued, or in the handler's hands)."""
        pipe = self._pipe
        return 0 if pipe is None else pipe.memory_bytes()

    def congested(self, room: int) -> bool:
        """Whether this lane is within ``room`` events (or half its bytes) of full and cannot
        spill: the socket host then stops reading producers for a while (backpressure)."""
        if not self.backpressure or self._pipe is None:
            return False
        room = min(room, self.queue_size // 2)  # a queue smaller than a batch: half of it
        full = self.backlog() > self.queue_size - room or (
            self.backlog_bytes() > self.queue_bytes // 2
        )
        return full and not self.policy.spills

    def offer_many(self, events: list[Event], *, redelivered: bool = False) -> int:
        """Queue a whole list as one item (async) or handle it now (sync).

        Returns how many of ``events`` were dropped (and counted): all or none. The lane owns
        ``events`` afterwards: the caller must not reuse the list. ``redelivered``: the list was
        sent before to a host that died (the handler's ``handle_redelivered`` gets it, when it
        has one).
        """
        if not events:
            return 0
        n = len(events)
        self.tally.offer(n)
        pipe = self._pipe
        if pipe is not None:
            item = Redelivered(events) if redelivered else events
            return 0 if pipe.put(item, batch_nbytes(events)) else n
        if self.broken:
            self._drop("handler could not be opened", n)
            return n
        with self._lock:
            if redelivered:
                self._deliver_redelivered(Redelivered(events))
            else:
                self._deliver_many(events)
        return 0

    def offer_ticket(self, ticket: Ticket) -> None:
        """Settle ``ticket`` once the worker got past everything offered before it (and the
        handler flushed)."""
        pipe = self._pipe
        if pipe is not None:
            ticket.hold()
            if not pipe.put(ticket, 0, force=True):  # closed: what it followed was counted
                ticket.settle()

    def offer_call(self, method: str, payload: Any) -> None:
        """Run ``handler.<method>(payload)`` after every event offered so far; never blocks.

        Calls are forced items: never dropped and never waiting, so a full pipe cannot lose a
        config recording. Failures are counted as errors and reported once.
        """
        call = Call(method, payload)
        pipe = self._pipe
        if pipe is not None:
            pipe.put(call, 0, force=True)
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

    def _lost(self, reason: str, units: int, detail: str) -> None:
        """The pipe lost ``units`` events (under its lock): count them, say each reason once.
        What a close left behind is the close's to report."""
        self.tally.lose(units, not_in_time=reason == NOT_DELIVERED)
        if reason != NOT_DELIVERED:
            self._losses(reason, units, detail)

    # -- the worker -------------------------------------------------------------------------
    def _send(self, _seq: int, items: list[Any], _again: bool) -> None:
        """Hand a batch to the handler, item by item; the pipe then acknowledges it (each
        event was handled, or its failure counted)."""
        self._worker = threading.current_thread()
        calls = self._calls
        last = items[-1]
        at, end = 0, len(items)
        while at < end:
            if self._handler_closed or (calls.orphans and calls.orphaned()):
                self._skipped(items, at)
                return
            item = items[at]
            cls = item.__class__
            if cls is tuple:  # a run of a logger's scalar rows, in one loop
                at = calls.rows(items, at)
                continue
            at += 1
            if cls is Event:
                self._deliver(item)
            elif cls is Ticket:
                pipe = self._pipe
                self._held.passed(item, idle=item is last and (pipe is None or pipe.idle()))
            elif cls is Redelivered:
                self._deliver_redelivered(item)
            elif cls is Call:
                self._invoke(item)
            elif cls is Control:
                self._held.settle()  # flushes the handler
                if item.close:
                    self._handler_closed = True
                    self._safe(self._close_handler)
                item.done.set()
            else:
                self._deliver_many(item)

    def _skipped(self, items: list[Any], first: int) -> None:
        """The handler is closed (or the worker given up on): nothing from ``items[first]`` on
        is handled. Its events count as not handled in time (unless a give-up counted them);
        its tickets settle and its flushes end (what they wait for is counted)."""
        rest = items[first:]
        n = sum(map(event_count, rest))
        if n and not (self._calls.orphans and self._calls.orphaned()):
            self.tally.lose(n, not_in_time=True)
        for item in rest:
            if item.__class__ is Ticket:
                item.settle()
            elif item.__class__ is Control:
                item.done.set()

    def _idle(self) -> None:
        """The worker is about to sleep: settle the tickets it passed (flushing the handler)."""
        if self._held.waiting() and not self._handler_closed:
            self._held.settle()

    # -- diagnostics ------------------------------------------------------------------------
    @property
    def dropped(self) -> int:
        """Events this lane refused so far (queue full, open failed, not handled in time)."""
        return self.tally.dropped

    def stats(self) -> HandlerStats:
        """Return the tally so far, with the handler's own ``losses()`` when it has them."""
        return self.tally.stats(handler_losses(self.handler))
