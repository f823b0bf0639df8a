"""One handler's delivery lane: a :class:`~goggles_io._delivery.pipe.Pipe` and the handler call.

Over 400 lines, one piece: a lane's three offer verbs, its worker and its lifecycle share one
pipe and its held tickets; the handler calls (calls.py), the items (items.py) and the pipe's
configuration (lane_pipe.py) are already apart.

One lane per handler means a slow handler only ever delays itself. What is offered goes into
the lane's pipe, the one delivery engine: memory within ``queue_size`` items and
``queue_bytes``, then the lane's spool in order, then a bounded wait (only for callers that may:
not a live subscriber's), then a counted drop (ADR 0025). The pipe carries rows, lists of rows
and controls (:mod:`~goggles_io._bus.items`); its worker hands each batch to :meth:`Lane._send`,
which turns rows into the handler's events at the doorstep (:mod:`~goggles_io._bus.calls`); the
batch is acknowledged when that returns. Flush, close, ``call_handler`` and the socket host's
tickets are controls, forced (never dropped), so each runs after every row offered before it.
The socket host offers whole lists (:meth:`Lane.offer_rows`): one put per list, counted per row.
A synchronous lane hands what it is offered to the handler before the offer returns.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable

from goggles_io._bus.calls import HandlerCalls
from goggles_io._bus.front import ScalarFront
from goggles_io._bus.items import (
    Control,
    Flush,
    HandlerCall,
    HeldTickets,
    LaneItem,
    Redelivered,
    Ticket,
    handler_kinds,
    lane_units,
    optional_method,
)
from goggles_io._bus.lane_pipe import lane_pipe
from goggles_io._bus.tally import NOT_HANDLED_IN_TIME, LaneTally
from goggles_io._bus.transport import HandlerStats, handler_losses
from goggles_io._delivery.drain import DrainOutcome, wait_while_progressing
from goggles_io._delivery.losses import NOT_DELIVERED, LossReport
from goggles_io._delivery.pipe import Pipe
from goggles_io._delivery.policy import DeliveryPolicy, WhenFull, advice, check_when_full
from goggles_io._event.records import Event
from goggles_io._event.rows import Row, RowRun, is_row, nbytes, row_of
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
        self._pipe: Pipe[LaneItem] | None = None  # async and open: where offers go
        self._worker: threading.Thread | None = None  # the pipe's worker, once it sent
        self._handler_closed = False  # the worker passed a close: it handles nothing more
        self._lock = threading.Lock()
        self._report_once = ReportOnce()
        self._losses = LossReport(f"handler {self.name!r}")
        self._calls = calls = HandlerCalls(handler, self.name, self.tally, self._report_once)
        self._safe = calls.safe
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
            on_put=self._offer_one,
        )
        pipe = self._pipe
        # Scalars gather end to end before the pipe (ADR 0088): counted offered per run.
        self._front = ScalarFront(pipe, self.queue_size, put=pipe.put_one, on_run=self.tally.offer)
        pipe.refill = self._front.refill

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
        self._front.close()  # a scalar put from now on goes to the pipe, which counts it
        self._front.seal()
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
        request = Flush(close)
        self._front.seal()  # after every scalar offered before it
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
    def offer(self, row: Row, nbytes: int) -> None:
        """Queue one row (``nbytes`` against the budget), counted without a lock; a full pipe
        spills, waits or drops (counted through :meth:`_lost`). A synchronous lane hands its
        event to the handler now."""
        if self._pipe is not None:
            self._front.put_other(row, nbytes)  # counts it (``on_put``), then queues it
        elif self._taken_now():
            with self._lock:
                self._calls.rows((row,))

    def row_putter(self) -> Callable[[Row, int], bool] | None:
        """What :meth:`offer` calls for a row while this pipe lasts (its front's ``put_other``:
        the pipe's ``put_one`` after the scalars gathered), for the bus to call straight from
        its route cache; ``None`` when the lane has no pipe (synchronous, or not open). The bus
        forgets it whenever the lane starts or closes."""
        return None if self._pipe is None else self._front.put_other

    def scalar_putter(self) -> Callable[[Row, int], bool] | None:
        """Where a one-value metric's row goes while this pipe lasts (its scalar front, ADR
        0088); ``None`` when the lane has no pipe. Forgotten by the bus with :meth:`row_putter`."""
        return None if self._pipe is None else self._front.put

    def hand(self, event: Event) -> None:
        """Hand ``event`` itself to the handler before returning (a synchronous lane: ADR 0068);
        an asynchronous one queues its row."""
        if self._pipe is not None:
            row = row_of(event)
            self.offer(row, nbytes(row))
        elif self._taken_now():
            with self._lock:
                self._calls.one(event)

    def _taken_now(self) -> bool:
        """Count one offer to a synchronous lane; ``False`` (dropped, counted) if the handler
        could not be opened, else the caller hands it over now."""
        self.tally.offer()
        if self.broken:
            self._drop("handler could not be opened")
            return False
        return True

    def backlog(self) -> int:
        """Events offered and not yet handled (queued, spilled or in the handler's hands);
        0 for a synchronous lane."""
        return 0 if self._pipe is None else self.tally.pending() + len(self._front)

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

    def offer_rows(self, rows: list[Row], nbytes: int, *, redelivered: bool = False) -> int:
        """Queue a whole list as one item (async) or hand it over now (sync).

        Returns how many of ``rows`` were dropped (and counted): all or none. The lane owns
        ``rows`` afterwards: the caller must not reuse the list. ``redelivered``: the list was
        sent before to a host that died (the handler's ``handle_redelivered`` gets it, when it
        has one).
        """
        if not rows:
            return 0
        n = len(rows)
        self.tally.offer(n)
        pipe = self._pipe
        if pipe is not None:
            self._front.seal()
            item = Redelivered(rows) if redelivered else rows
            if not pipe.put(item, nbytes):
                return n
            if pipe.memory_bytes() > self.queue_bytes // 2:
                # Past the half that makes the socket host wait (congested): the worker must
                # not linger for more, the host is about to wait on it (issue 44).
                pipe.nudge()
            return 0
        if self.broken:
            self._drop("handler could not be opened", n)
            return n
        with self._lock:
            if redelivered:
                self._calls.redelivered(Redelivered(rows))
            else:
                self._calls.many(rows)
        return 0

    def offer_events(self, events: list[Event]) -> None:
        """Hand a list of events built already (a broker read, ADR 0086) over now, in one call
        (a synchronous lane); an asynchronous lane queues their rows as one list."""
        if self._pipe is not None:
            rows = list(map(row_of, events))
            self.offer_rows(rows, sum(map(nbytes, rows)))
            return
        self.tally.offer(len(events))
        if self.broken:
            self._drop("handler could not be opened", len(events))
            return
        with self._lock:
            self._calls.events(events)

    def offer_control(self, control: Control) -> None:
        """Run ``control`` after every row offered so far; never blocks, never dropped.

        A :class:`Ticket` settles once the worker got past it (and the handler flushed); a
        :class:`HandlerCall` runs the handler's method (a failure counted as an error and
        reported once: a full pipe cannot lose a config recording).
        """
        pipe = self._pipe
        if pipe is not None:
            self._front.seal()
        if type(control) is Ticket:
            if pipe is not None:
                control.hold()
                if not pipe.put(control, 0, force=True):  # closed: what it followed was counted
                    control.settle()
            return
        if pipe is not None:
            pipe.put(control, 0, force=True)
        elif type(control) is HandlerCall:
            if self.broken:
                self._drop("handler could not be opened")
            else:
                with self._lock:
                    self._calls.invoke(control)

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
    def _send(self, _seq: int, items: list[LaneItem], _again: bool) -> None:
        """Hand a batch to the handler, item by item (a run of rows at once); the pipe then
        acknowledges it (each event was handled, or its failure counted)."""
        self._worker = threading.current_thread()
        calls = self._calls
        end = len(items)
        if sum(map(is_row, items)) == end:  # a burst of single rows (the in-process path)
            if self._handler_closed or (calls.orphans and calls.orphaned()):
                self._skipped(items, 0)
            else:
                calls.rows(items)  # type: ignore[arg-type]
            return
        last = items[-1]
        at = 0
        while at < end:
            if self._handler_closed or (calls.orphans and calls.orphaned()):
                self._skipped(items, at)
                return
            item = items[at]
            if is_row(item):  # a run of single rows, at once
                stop = at + 1
                while stop < end and is_row(items[stop]):
                    stop += 1
                calls.rows(items[at:stop])  # type: ignore[arg-type]
                at = stop
                continue
            at += 1
            cls = item.__class__
            if cls is RowRun:
                calls.run(item)  # type: ignore[arg-type]
            elif cls is list:
                calls.many(item)  # type: ignore[arg-type]
            elif cls is Redelivered:
                calls.redelivered(item)  # type: ignore[arg-type]
            elif cls is Ticket:
                pipe = self._pipe
                self._held.passed(item, idle=item is last and (pipe is None or pipe.idle()))  # type: ignore[arg-type]
            elif cls is HandlerCall:
                calls.invoke(item)  # type: ignore[arg-type]
            elif cls is Flush:
                self._held.settle()  # flushes the handler
                if item.close:  # type: ignore[union-attr]
                    self._handler_closed = True
                    self._safe(self._close_handler)
                item.done.set()  # type: ignore[union-attr]

    def _skipped(self, items: list[LaneItem], first: int) -> None:
        """The handler is closed (or the worker given up on): nothing from ``items[first]`` on
        is handled. Its events count as not handled in time (unless a give-up counted them);
        its tickets settle and its flushes end (what they wait for is counted)."""
        rest = items[first:]
        n = lane_units(rest)
        if n and not (self._calls.orphans and self._calls.orphaned()):
            self.tally.lose(n, not_in_time=True)
        for item in rest:
            if type(item) is Ticket:
                item.settle()
            elif type(item) is Flush:
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
