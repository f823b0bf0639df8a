"""What travels through a lane: rows, lists of rows, and one small hierarchy of controls.

A lane's pipe carries rows (:mod:`goggles_io._event.rows`: one counts one), the socket host's
lists of rows (a plain ``list``, or :class:`Redelivered`: each counts its length) and
:class:`Control` items (count none, never spill, never dropped). Controls run after every row
offered before them: a :class:`Flush` (or close), a :class:`HandlerCall` (``call_handler``), a
:class:`Ticket` that follows a socket batch through every lane it reached (the host acknowledges
the batch once each of those lanes got past it, ADR 0030). Also here: what a lane reads off its
handler (its kinds, its optional lifecycle methods: robo-goggles' protocol).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Union

from goggles_io._event.records import Kind
from goggles_io._event.rows import SLOTS, Row, RowRun, is_row

__all__ = [
    "Control",
    "Flush",
    "HandlerCall",
    "HeldTickets",
    "LaneItem",
    "Redelivered",
    "Ticket",
    "handler_kinds",
    "lane_units",
    "optional_method",
]

_HELD_MAX = 64  # batches a busy lane passes before it flushes its handler to settle them
_HELD_MAX_S = 0.25  # the longest a passed batch waits for that flush while the lane is busy

_KIND_VALUES = frozenset(k.value for k in Kind)


class Control:
    """Something a lane's worker does in order with the rows before it: counts none, is never
    spilled (a spool record cannot hold it) and never dropped (it is put forced)."""

    __slots__ = ()


class Flush(Control):
    """A flush (or, with ``close``, a close) request behind the rows before it."""

    __slots__ = ("close", "done")

    def __init__(self, close: bool) -> None:
        self.close = close
        self.done = threading.Event()


class Ticket(Control):
    """One batch's passage through the lanes it was routed to; done once every lane passed it.

    The host holds it while it routes the batch (``hold`` per lane, then its own ``settle``), so
    it cannot be done before every lane got its list; ``on_done`` runs once, on the thread of
    the last lane (or the host's), and must be cheap.
    """

    __slots__ = ("_left", "_lock", "_on_done", "done", "dropped", "seq", "taken")

    def __init__(self, seq: int, on_done: Any) -> None:
        self.seq = seq
        self.dropped = 0  # (event, handler) deliveries of this batch refused for want of room
        self.taken: dict[str, int] = {}  # per handler name, the events of it routed there
        self.done = False
        self._left = 1  # the host's own hold, given back after routing
        self._on_done = on_done
        self._lock = threading.Lock()

    def hold(self) -> None:
        """One more lane must pass this ticket."""
        with self._lock:
            self._left += 1

    def settle(self) -> None:
        """One holder is through; the last one marks it done and says so."""
        with self._lock:
            self._left -= 1
            finished = self._left == 0 and not self.done
            if finished:
                self.done = True
        if finished:
            self._on_done()


class HeldTickets:
    """Tickets a lane's worker got past, settled only after the handler's next flush.

    A sink that buffers (log lines, CSV rows) has not written what it took until it flushes, and
    the host acknowledges a batch when its ticket settles: a group commit, once the queue is
    idle, every ``_HELD_MAX`` batches under load, or when the oldest has waited
    ``_HELD_MAX_S``. The last bound keeps acknowledgements coming from a slow handler that is
    never idle: they are the progress a producer's ``finish()`` waits on (issue 41: a handler
    at 8,000 events/s settled every 65,536 events, 8 s apart, and a 2 s stall deadline cut it
    off while it worked).
    """

    __slots__ = ("_first_at", "_flush", "_held", "_later")

    def __init__(self, flush: Any, later: Any = None) -> None:
        self._flush = flush
        # The handler's ``when_durable(callback)``, when it has one: what it took is safe only
        # once its sink confirms it (a collector's answer, W&B's own file), so the tickets
        # settle when it calls back, from any thread (ADR 0069).
        self._later = later
        self._held: list[Ticket] = []
        self._first_at = 0.0  # when the oldest held ticket was passed

    def passed(self, ticket: Ticket, *, idle: bool) -> None:
        """The worker got past ``ticket``; settle now when idle, when many are waiting, or
        when the oldest has waited long enough."""
        held = self._held
        now = time.monotonic()
        if not held:
            self._first_at = now
        held.append(ticket)
        if idle or len(held) >= _HELD_MAX or now - self._first_at >= _HELD_MAX_S:
            self.settle()

    def waiting(self) -> bool:
        """Whether a ticket waits for the next flush."""
        return bool(self._held)

    def settle(self) -> None:
        """Flush the handler, then settle every ticket held (once the handler says what it
        took is durable, when it has ``when_durable``)."""
        self._flush()
        held, self._held = self._held, []
        if not held:
            return
        later = self._later
        if later is not None:
            once = _SettleOnce(held)
            try:
                later(once)
                return
            except Exception:
                once()  # a hook that fails must not hold the batches for ever
                return
        for ticket in held:
            ticket.settle()


class _SettleOnce:
    """Settles its tickets on the first call only (a handler's callback may come twice)."""

    __slots__ = ("_lock", "_tickets")

    def __init__(self, tickets: list[Ticket]) -> None:
        self._tickets: list[Ticket] | None = tickets
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            tickets, self._tickets = self._tickets, None
        for ticket in tickets or ():
            ticket.settle()


class Redelivered(list[Row]):
    """A list of rows sent before to a host that died without acknowledging it: a handler
    may have handled a head of it already (its ``handle_redelivered`` decides)."""

    __slots__ = ()


class HandlerCall(Control):
    """A ``call_handler`` request: run ``method(payload)`` on the worker, after the rows before it."""

    __slots__ = ("method", "payload")

    def __init__(self, method: str, payload: Any) -> None:
        self.method = method
        self.payload = payload


LaneItem = Union[Row, list[Row], Control]  # noqa: UP007 (a runtime object on 3.10)
"""What a lane's pipe carries (a :class:`Redelivered` is a list; so is a scalar front's
:class:`~goggles_io._event.rows.RowRun`, whose rows are laid end to end)."""


def lane_units(items: list[LaneItem]) -> int:
    """The events lane ``items`` stand for: a row one, a list its length, a control none.

    Rows are counted in one C pass; only a batch that holds something else (a redelivered
    list, a control) is walked in Python.
    """
    rows = sum(map(is_row, items))
    if rows == len(items):
        return rows
    return rows + sum(
        len(item) // SLOTS if type(item) is RowRun else len(item)
        for item in items
        if isinstance(item, list)
    )


def _noop() -> None:
    """Stand-in for a lifecycle method the handler does not define."""


def optional_method(handler: object, name: str) -> Any:
    """Return ``handler.<name>`` or a no-op: robo-goggles' protocol makes ``flush`` optional."""
    found = getattr(handler, name, None)
    return found if callable(found) else _noop


def handler_kinds(handler: object) -> frozenset[Kind]:
    """The kinds routed to ``handler``: its ``capabilities``, else what ``can_handle`` accepts.

    Capabilities may be given as strings (``{"log", "metric"}``), as robo-goggles handlers do;
    a handler with neither attribute receives every kind.
    """
    declared = getattr(handler, "capabilities", None)
    if declared is not None:
        return frozenset(Kind(k) for k in declared if k in _KIND_VALUES)
    can_handle = getattr(handler, "can_handle", None)
    if callable(can_handle):
        accepted = set()
        for kind in Kind:
            try:
                if can_handle(kind):
                    accepted.add(kind)
            except Exception:
                continue
        return frozenset(accepted)
    return frozenset(Kind)
