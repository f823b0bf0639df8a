"""``send``: hand an emitted schema to its logger's handlers, with a ``LogRecord`` only for those
that would read one (ADR 0078).

``Logger.handle(logger.makeRecord(...))`` costs about 2.4 µs an event, most of it building the
record (clock, thread and process names, path parts) that a ``Subscriber`` never reads: it only
wants the schema, and the forwarder the logger name and level besides. ``send`` walks the
handlers exactly as ``Logger.callHandlers`` does, *every call* (so nothing is cached that a
change of handlers, levels, ``propagate`` or filters at run time could make stale), and gives:

- a ``NullHandler`` nothing (its ``handle`` does nothing);
- a ``Subscriber`` whose class keeps the stdlib's ``handle``/``filter``/``acquire``/``release``
  and ``Subscriber.emit`` (it overrides ``emit_schema`` at most), when it has no filters: the
  schema, under its lock, as ``Handler.handle`` would call ``emit`` (``Subscriber._direct``);
- any other handler (a ``StreamHandler``, pytest's ``caplog``, the Monty adapter, a subscriber
  with filters or its own ``emit``): a record, made once per call when the first of them is
  reached, through ``logger.makeRecord`` and located at the caller, and ``handler.handle``.

The whole stdlib path is kept where anything could tell the difference before the walk: a
logger class other than ``logging.Logger``, a record factory other than ``LogRecord``
(``logging.setLogRecordFactory``), filters on the emitting logger, or no handler on the way up
(``logging.lastResort``). A disabled logger drops the event, as ``Logger.handle`` does.
``tests/runtime_telemetry/test_deliver.py`` holds this to the stdlib over generated trees.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

__all__ = ["register_base", "send"]

_NONE, _DIRECT, _RECORD = 0, 1, 2
_kinds: dict[type, int] = {}
"""Per handler class: what ``send`` gives its instances (a class's methods are its own)."""
_Logger = logging.Logger
_LogRecord = logging.LogRecord
_record_factory = logging.getLogRecordFactory


_base: list[type] = []
"""``Subscriber``, put here by ``_subscriber.py`` (which imports this module's importer)."""


def register_base(subscriber: type) -> None:
    """Name the class whose stock ``emit`` takes schemas without a record (``Subscriber``)."""
    _base[:] = [subscriber]
    _kinds.clear()


def _classify(cls: type) -> int:
    Subscriber: Any = _base[0] if _base else None
    if cls is logging.NullHandler:
        kind = _NONE
    elif (
        Subscriber is not None
        and issubclass(cls, Subscriber)
        and getattr(cls, "emit", None) is Subscriber.emit
        and getattr(cls, "handle", None) is logging.Handler.handle
        and getattr(cls, "filter", None) is logging.Filterer.filter
        and getattr(cls, "acquire", None) is logging.Handler.acquire
        and getattr(cls, "release", None) is logging.Handler.release
    ):
        kind = _DIRECT
    else:
        kind = _RECORD
    _kinds[cls] = kind
    return kind


def send(logger: logging.Logger, level: int, schema: object, stacklevel: int) -> None:
    """Deliver ``schema`` on ``logger`` at ``level`` as ``Logger.handle`` would deliver a record
    of it made at the frame ``stacklevel`` above this one (the level is already checked)."""
    if logger.filters or type(logger) is not _Logger or _record_factory() is not _LogRecord:
        _stdlib(logger, level, schema, sys._getframe(stacklevel))
        return
    if logger.disabled:
        return
    record: Any = None
    found = 0
    name = logger.name
    kinds = _kinds
    node: Any = logger
    while node:
        for handler in node.handlers:
            found += 1
            if level >= handler.level:
                kind = kinds.get(type(handler))
                if kind is None:
                    kind = _classify(type(handler))
                if kind == _NONE:
                    continue
                if kind == _DIRECT and not handler.filters:
                    handler._direct(name, level, schema)
                    continue
                if record is None:
                    record = _record(logger, level, schema, sys._getframe(stacklevel))
                handler.handle(record)
        node = node.parent if node.propagate else None
    if not found:  # logging.lastResort, or the stdlib's one-off warning: its own walk decides
        _stdlib(logger, level, schema, sys._getframe(stacklevel))


def _record(logger: logging.Logger, level: int, schema: object, frame: Any) -> logging.LogRecord:
    code = frame.f_code
    return logger.makeRecord(
        logger.name, level, code.co_filename, frame.f_lineno, schema, (), None, code.co_name
    )


def _stdlib(logger: logging.Logger, level: int, schema: object, frame: Any) -> None:
    """The stdlib's whole path: one record, ``Logger.handle`` (filters, walk, last resort)."""
    logger.handle(_record(logger, level, schema, frame))
