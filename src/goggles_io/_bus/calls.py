"""Calling one handler from its lane, and counting each outcome in the lane's tally.

A handler's ``handle`` (or ``handle_batch``, or ``handle_redelivered`` for a list a dead host may
have handed over in part) and its ``call_handler`` methods run here; an exception is counted
and reported once per kind, never raised into the lane. A worker that a close gave up on (an
*orphan*) stops at the next event and counts nothing more (:mod:`goggles_io._bus.tally`).
"""

from __future__ import annotations

import threading
from itertools import islice
from typing import Any

from goggles_io._bus.items import Call, Redelivered
from goggles_io._bus.tally import LaneTally
from goggles_io._event.records import KINDS, SCALAR_ROW_LEN, Event, row_event
from goggles_io._util.report import ReportOnce
from goggles_io.handlers.base import Handler

__all__ = ["HandlerCalls"]


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
        # Workers a close gave up on: they may still come back from the handler, and must
        # then neither count nor handle anything more.
        self.orphans: frozenset[threading.Thread] = frozenset()

    def orphaned(self) -> bool:
        """Whether this thread is a worker that a close gave up on."""
        return bool(self.orphans) and threading.current_thread() in self.orphans

    def invoke(self, call: Call) -> None:
        try:
            getattr(self.handler, call.method)(call.payload)
        except Exception as exc:
            self.tally.errors += 1
            self._report_once(
                f"call:{call.method}:{type(exc).__name__}",
                f"handler {self.name!r}.{call.method}() raised {exc!r} (further errors counted)",
            )

    def one(self, event: Event) -> None:
        try:
            self.handler.handle(event)
        except Exception as exc:
            self._failed(exc, "handle", 1)
        else:
            if not (self.orphans and self.orphaned()):  # a give-up counted it already
                self.tally.delivered += 1

    def rows(self, items: list[Any], start: int) -> int:
        """Hand the rows of ``items`` from ``start`` on (up to the first item that is not a row)
        to the handler, each as its Event; return the index of the first item not handled.

        The hot loop of an in-process burst of scalars: the Event is built inline
        (:func:`~goggles_io._event.records.row_event`, without its call), counted as
        :meth:`one` counts it.
        """
        handle = self.handler.handle
        tally = self.tally
        kinds = KINDS
        at = start
        for row in islice(items, start, None):
            if row.__class__ is not tuple:
                break
            at += 1
            try:  # a row that makes no Event is the handler's failure too, never the worker's
                if len(row) == SCALAR_ROW_LEN:
                    kind, scope, name, lvl, step, ts, lg, pid, path, line, ext, when, val = row
                    event = Event(
                        kinds[kind],
                        scope,
                        {name: val},
                        lvl,
                        step,
                        ts,
                        lg,
                        pid,
                        path,
                        line,
                        ext or {},
                        when,
                    )
                else:
                    event = row_event(row)
                handle(event)
            except Exception as exc:
                self._failed(exc, "handle", 1)
            else:
                if self.orphans and self.orphaned():
                    break  # a close gave up on this worker: the rest is counted already
                tally.delivered += 1
        return at

    def many(self, events: list[Event]) -> None:
        if self._handle_batch is not None:
            self._whole(self._handle_batch, "handle_batch", events)
            return
        tally = self.tally
        handle = self.handler.handle
        for event in events:
            try:
                handle(event)
            except Exception as exc:
                self._failed(exc, "handle", 1)
            else:
                if self.orphans and self.orphaned():
                    return  # a close gave up on this worker: the rest is counted already
                tally.delivered += 1

    def redelivered(self, events: Redelivered) -> None:
        """A list a dead host may have handed over in part: the handler skips what it has."""
        if self._handle_redelivered is None:
            self.many(events)
        else:
            self._whole(self._handle_redelivered, "handle_redelivered", events)

    def _whole(self, method: Any, label: str, events: list[Event]) -> None:
        """Hand ``events`` to ``method`` at once: all delivered, or all failed."""
        try:
            method(events)
        except Exception as exc:
            self._failed(exc, label, len(events))
        else:
            if not (self.orphans and self.orphaned()):
                self.tally.delivered += len(events)

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
