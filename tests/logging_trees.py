"""Handlers of every kind a telemetry logger tree may hold, each recording what it was given.

Two suites compare a fast path with the stdlib's ``Logger.handle`` over generated logger trees:
``runtime_telemetry/test_deliver.py`` (the record-free emit, ADR 0078) and
``runtime_telemetry/test_routes.py`` (``LoggerRoute``, the workers' replay). Both build their
trees from these handlers and compare the traces they leave in one shared list: who got what, in
which order, and what a record said (name, level, message, where it was made).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import attrs

from runtime_telemetry import Subscriber, TelemetryEvent, TelemetrySchema, receives

Seen = list[tuple[Any, ...]]

LEVELS = (logging.NOTSET, logging.DEBUG, logging.INFO, logging.WARNING)


@attrs.frozen(kw_only=True)
class TreeTestMoved(TelemetryEvent):
    joint: str = "elbow"


@attrs.frozen(kw_only=True)
class TreeTestGrasped(TelemetryEvent):
    pass


class Records(logging.Handler):
    """A stdlib handler: reads the record (name, level, message, where it was made)."""

    def __init__(self, tag: int, seen: Seen) -> None:
        super().__init__()
        self.tag, self.seen = tag, seen

    def emit(self, record: logging.LogRecord) -> None:
        where = (record.pathname, record.lineno, record.funcName, record.module)
        self.seen.append((self.tag, "record", record.msg, record.name, record.levelno, *where))


class Plain(Subscriber):
    """A plain Subscriber: a fast path hands it the schema itself, with no record."""

    def __init__(self, tag: int, seen: Seen) -> None:
        super().__init__()
        self.tag, self.seen = tag, seen

    def on_event(self, schema: TelemetrySchema) -> None:
        self.seen.append((self.tag, "plain", schema))


class Picky(Plain):
    """Receives one class; the rest go to the default ``on_event`` (nothing)."""

    on_event = Subscriber.on_event  # type: ignore[assignment]

    @receives(TreeTestMoved)
    def moved(self, event: TreeTestMoved) -> None:
        self.seen.append((self.tag, "picky", event))


class Named(Plain):
    """Overrides ``emit_schema`` (as the forwarder and ``ThreadedSubscriber`` do): sees the
    logger name and level, and must not be taken for a plain subscriber (``receive`` would skip
    its ``emit_schema``)."""

    def emit_schema(self, name: str, level: int, schema: TelemetrySchema) -> None:
        self.seen.append((self.tag, "named", name, level, schema))


class OwnEmit(Plain):
    """Overrides ``emit`` itself: must be given a record."""

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((self.tag, "own-emit", record.msg, record.name, record.lineno))


class Adder(Plain):
    """On its first event, adds a stdlib handler to its own logger (mid-walk, as a callback
    may): the stdlib walk iterates the live list, so the new handler sees this event too."""

    def __init__(self, tag: int, seen: Seen, logger: logging.Logger) -> None:
        super().__init__(tag, seen)
        self.logger, self.added = logger, False

    def on_event(self, schema: TelemetrySchema) -> None:
        super().on_event(schema)
        if not self.added:
            self.added = True
            self.logger.addHandler(Records(1000 + self.tag, self.seen))


KINDS = ("records", "plain", "picky", "named", "passing", "refusing", "null")
"""Handler kinds that only read what they are given; ``make_handler`` also makes the two that
act back on the tree (``own-emit``, ``adder``)."""


def make_handler(
    kind: str, tag: int, level: int, seen: Seen, logger: logging.Logger | None = None
) -> logging.Handler:
    """A handler of ``kind`` recording into ``seen`` under ``tag``, at ``level``."""
    handler: logging.Handler
    if kind == "records":
        handler = Records(tag, seen)
    elif kind == "null":
        handler = logging.NullHandler()
    elif kind == "picky":
        handler = Picky(tag, seen)
    elif kind == "named":
        handler = Named(tag, seen)
    elif kind == "own-emit":
        handler = OwnEmit(tag, seen)
    elif kind == "adder":
        assert logger is not None, "an adder adds to its own logger"
        handler = Adder(tag, seen, logger)
    else:
        handler = Plain(tag, seen)
        if kind == "passing":  # a Subscriber with a filter takes records
            handler.addFilter(lambda record: True)
        elif kind == "refusing":
            handler.addFilter(lambda record: False)
    handler.setLevel(level)
    return handler


def reset_loggers(names: Iterable[str]) -> None:
    """Put each named logger back as ``getLogger`` first made it: no handlers, no filters."""
    for name in names:
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.filters.clear()
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
        logger.disabled = False
