"""``LoggerRoute``: hand schemas to a logger's handlers as ``Logger.handle`` would, resolved once.

For code that re-emits schemas already built elsewhere (the experiment replaying a worker
process's events, ADR 0054): ``logger.makeRecord`` and ``logger.handle`` for every event make a
new ``LogRecord`` (clock, thread and process names, ...) and walk up the logger tree each time,
about as much as the runtime paid to emit the event. While the tree does not change, the route
is resolved once per (logger, level): the handlers ``Logger.callHandlers`` would reach (each
handler's level and ``propagate`` honoured). A plain ``Subscriber`` (``emit`` and ``handle``
not overridden, no filters; the aggregators) gets the schema itself through
``Subscriber.receive``, under its lock, as from a record, and only for classes it ``accepts``
(the default ``on_event`` would ignore the rest); any other handler gets a record of its own,
copied from one template. A ``NullHandler`` is skipped (it does nothing). A logger with filters
or without handlers anywhere up its tree (``logging.lastResort``) keeps the stdlib path.

It sits here, beside ``Subscriber``, because it imitates the contract of both (stdlib logging's
handler walk and ``Subscriber.receive``/``accepts``); ``tests/runtime_telemetry/test_routes.py``
holds it to ``Logger.handle`` over generated logger trees.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from runtime_telemetry._subscriber import Subscriber

__all__ = ["LoggerRoute"]

_new = object.__new__


def _plain(handler: logging.Handler) -> bool:
    """Whether ``handler`` is a ``Subscriber`` that would only pass the schema on."""
    if not isinstance(handler, Subscriber):
        return False
    cls = type(handler)
    return (
        cls.emit is Subscriber.emit
        and cls.emit_schema is Subscriber.emit_schema  # not a queue or a forwarder (ADR 0078)
        and cls._deliver is Subscriber._deliver
        and cls.handle is logging.Handler.handle
        and not handler.filters
    )


def _nothing(schema: object) -> None:
    """The route of a disabled logger."""


class LoggerRoute:
    """Where a record on ``name`` at ``level`` goes, resolved once.

    Args:
        name: the logger name the event was emitted on in the worker.
        level: its level.
        origin: the records' ``pathname`` (where they came from, e.g. ``<worker 3>``).
    """

    __slots__ = (
        "_by_class",
        "_template",
        "deliver",
        "enabled",
        "logger",
        "receivers",
        "stdlib",
        "steps",
    )

    def __init__(self, name: str, level: int, origin: str) -> None:
        self.logger = logger = logging.getLogger(name)
        self.enabled = logger.isEnabledFor(level) and not logger.disabled
        self._template = logger.makeRecord(name, level, origin, 0, None, (), None).__dict__
        self._by_class: dict[type, list[Callable[[Any], object]]] = {}
        self.steps: list[tuple[Any, bool]] = []
        """In the stdlib's order: (handler, whether it takes a record, else the schema)."""
        reached: list[logging.Handler] = []
        node: Any = logger
        while node:
            reached.extend(h for h in node.handlers if level >= h.level)
            if not node.propagate:
                break
            node = node.parent
        self.stdlib = bool(logger.filters) or not reached
        for handler in reached:
            if type(handler) is logging.NullHandler:
                continue
            self.steps.append((handler, not _plain(handler)))
        self.receivers: list[Subscriber] | None
        self.receivers = None if any(r for _, r in self.steps) else [h for h, _ in self.steps]
        """The plain subscribers when no handler takes a record (the usual case), else None."""
        self.deliver: Callable[[Any], None]
        """Hand a schema to every handler of the route, in the order of the stdlib's walk."""
        if not self.enabled:
            self.deliver = _nothing
        elif self.stdlib:
            self.deliver = self._stdlib
        elif self.receivers is not None:
            self.deliver = self._receivers
        else:
            self.deliver = self._steps

    def _record(self, schema: object) -> logging.LogRecord:
        record: logging.LogRecord = _new(logging.LogRecord)
        record.__dict__.update(self._template)
        record.msg = schema
        record.created = now = time.time()
        record.msecs = (now - int(now)) * 1000
        return record

    def _stdlib(self, schema: object) -> None:
        self.logger.handle(self._record(schema))

    def _receivers(self, schema: object) -> None:
        receivers = self._by_class.get(type(schema))
        if receivers is None:
            receivers = self._by_class[type(schema)] = [
                h.receive for h in self.receivers or () if h.accepts(type(schema))
            ]
        for receive in receivers:
            receive(schema)

    def _steps(self, schema: object) -> None:
        record = None  # one record for every handler that takes one, as from Logger.handle
        for handler, takes_record in self.steps:
            if takes_record:
                if record is None:
                    record = self._record(schema)
                handler.handle(record)
            else:
                handler.receive(schema)
