"""The lane's doorstep: rows become the handler's events here, and each call's outcome is counted.

A handler's ``handle`` (or ``handle_batch``, or ``handle_redelivered`` for a list a dead host may
have handed over in part) and its ``call_handler`` methods run here; an exception is counted
and reported once per kind, never raised into the lane. The rows a lane carries become
:class:`~goggles_io._event.records.Event` objects right before the handler reads them
(:func:`~goggles_io._event.rows.events_of`, ADR 0071); a handler that carries rows on without
reading them (``handle_rows``: the host's subscriber sinks, the broker forwarder) gets the rows.
A row that makes no event is that row's failure, counted like a raising handler. A worker that
a close gave up on (an *orphan*) stops at the next event and counts nothing more
(:mod:`goggles_io._bus.tally`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from goggles_io._bus.items import HandlerCall, Redelivered
from goggles_io._bus.tally import LaneTally
from goggles_io._event.records import Event
from goggles_io._event.rows import SLOTS, Row, RowRun, events_of, row_of, run_rows
from goggles_io._util.report import ReportOnce
from goggles_io.handlers.base import Handler

__all__ = ["HandlerCalls"]

_CHUNK = 64  # rows turned into events and handled at a time on the in-process path


class HandlerCalls:
    """The calls a lane makes into its handler, each counted in ``tally``."""

    def __init__(
        self, handler: Handler, name: str, tally: LaneTally, report_once: ReportOnce
    ) -> None:
        self.handler = handler
        self.name = name
        self.tally = tally
        self._report_once = report_once
        self._handle_batch = getattr(handler, "handle_batch", None)
        self._handle_redelivered = getattr(handler, "handle_redelivered", None)
        # A sink that carries rows on (to a socket, a stream) and never reads an event.
        self._handle_rows: Callable[[list[Row]], object] | None = getattr(
            handler, "handle_rows", None
        )
        # Workers a close gave up on: they may still come back from the handler, and must
        # then neither count nor handle anything more.
        self.orphans: frozenset[threading.Thread] = frozenset()

    def orphaned(self) -> bool:
        """Whether this thread is a worker that a close gave up on."""
        return bool(self.orphans) and threading.current_thread() in self.orphans

    def invoke(self, call: HandlerCall) -> None:
        try:
            getattr(self.handler, call.method)(call.payload)
        except Exception as exc:
            self.tally.errors += 1
            self._report_once(
                f"call:{call.method}:{type(exc).__name__}",
                f"handler {self.name!r}.{call.method}() raised {exc!r} (further errors counted)",
            )

    def one(self, event: Event) -> None:
        """Hand the handler ``event`` itself (a synchronous lane: ``EventBus.emit``, ADR 0068)."""
        try:
            self.handler.handle(event)
        except Exception as exc:
            self._failed(exc, "handle", 1)
        else:
            if not (self.orphans and self.orphaned()):  # a give-up counted it already
                self.tally.delivered += 1

    def rows(self, rows: Sequence[Row]) -> None:
        """Hand ``rows`` (single rows offered one at a time: the in-process path) to the handler,
        each as its event through ``handle``."""
        if self._handle_rows is not None:
            self._whole(self._handle_rows, "handle_rows", list(rows))
            return
        # A few dozen at a time: each chunk's events are handled and freed while they are
        # still in cache (a whole burst built first: 0.48 against 0.36 us an event on the worker).
        for at in range(0, len(rows), _CHUNK):
            if at and self.orphans and self.orphaned():
                return  # a close gave up on this worker: the rest is counted already
            self._each(self._events(rows[at : at + _CHUNK]))

    def run(self, run: RowRun) -> None:
        """Hand a scalar front's run (ADR 0088) to the handler: its rows, a chunk at a time,
        each as its event through ``handle`` (``handle_batch`` and ``handle_rows`` as for a
        list)."""
        if self._handle_rows is not None or self._handle_batch is not None:
            self.many(run_rows(run))
            return
        step = _CHUNK * SLOTS
        for at in range(0, len(run), step):
            if at and self.orphans and self.orphaned():
                return  # a close gave up on this worker: the rest is counted already
            chunk = run[at : at + step]
            try:  # straight from the columns: zip reuses its tuple, no row is kept (ADR 0086)
                events: list[Event | None] = events_of(  # type: ignore[assignment]
                    zip(*(chunk[i::SLOTS] for i in range(SLOTS)), strict=True)
                )
            except Exception:  # a row that makes no event: found and counted row by row
                events = self._events(run_rows(chunk))  # type: ignore[arg-type]
            self._each(events)

    def many(self, rows: list[Row]) -> None:
        """Hand a socket batch's list to the handler: ``handle_batch`` when it has one."""
        if self._handle_rows is not None:
            self._whole(self._handle_rows, "handle_rows", rows)
        elif self._handle_batch is not None:
            events = self._events(rows)
            self._whole(self._handle_batch, "handle_batch", [e for e in events if e is not None])
        else:
            self._each(self._events(rows))

    def events(self, events: list[Event]) -> None:
        """Hand a list of events built already (a broker read, ADR 0086) to the handler:
        ``handle_batch`` (a list of its own) when it has one; a ``handle_rows`` sink gets rows."""
        if self._handle_rows is not None:
            self._whole(self._handle_rows, "handle_rows", list(map(row_of, events)))
        elif self._handle_batch is not None:
            self._whole(self._handle_batch, "handle_batch", list(events))
        else:
            self._each(events)  # type: ignore[arg-type]

    def redelivered(self, rows: Redelivered) -> None:
        """A list a dead host may have handed over in part: the handler skips what it has."""
        if self._handle_redelivered is None or self._handle_rows is not None:
            self.many(rows)
            return
        events = [e for e in self._events(rows) if e is not None]
        self._whole(self._handle_redelivered, "handle_redelivered", events)

    def _events(self, rows: Sequence[Row]) -> list[Event | None]:
        """The events of ``rows``; a row that makes none is counted failed (``None`` in its place)."""
        try:
            return events_of(rows)  # type: ignore[return-value]
        except Exception:
            pass
        found: list[Event | None] = []
        for row in rows:
            try:
                found += events_of((row,))
            except Exception as exc:
                self._failed(exc, "handle", 1)
                found.append(None)
        return found

    def _each(self, events: list[Event | None]) -> None:
        """``handle`` each event, counted as it returns."""
        tally = self.tally
        handle = self.handler.handle
        for event in events:
            if event is None:
                continue
            try:
                handle(event)
            except Exception as exc:
                self._failed(exc, "handle", 1)
            else:
                if self.orphans and self.orphaned():
                    return  # a close gave up on this worker: the rest is counted already
                tally.delivered += 1

    def _whole(self, method: Any, label: str, items: list[Any]) -> None:
        """Hand ``items`` to ``method`` at once: all delivered, or all failed."""
        if not items:
            return
        try:
            method(items)
        except Exception as exc:
            self._failed(exc, label, len(items))
        else:
            if not (self.orphans and self.orphaned()):
                self.tally.delivered += len(items)

    def _failed(self, exc: Exception, label: str, n: int) -> None:
        if not (self.orphans and self.orphaned()):
            self.tally.errors += n
            self.tally.failed += n
        self._report_once(
            f"{label}:{type(exc).__name__}",
            f"handler {self.name!r} raised {exc!r} (further errors counted, not shown)",
        )

    def safe(self, fn: Any) -> None:
        try:
            fn()
        except Exception as exc:
            self.tally.errors += 1
            self._report_once(
                f"{getattr(fn, '__name__', 'call')}:{type(exc).__name__}",
                f"handler {self.name!r}.{getattr(fn, '__name__', 'call')}() raised {exc!r}",
            )
