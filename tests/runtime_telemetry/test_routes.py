"""LoggerRoute hands a schema to exactly the handlers ``Logger.handle`` would, in its order."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime_telemetry import Subscriber, TelemetryEvent, TelemetrySchema, receives
from runtime_telemetry.routes import LoggerRoute

_BASE = "telemetry.routes_test"
_NAMES = (_BASE, f"{_BASE}.a", f"{_BASE}.a.b")
_LEVELS = (logging.NOTSET, logging.DEBUG, logging.INFO, logging.WARNING)
_ORIGIN = "<worker 7>"
Seen = list[tuple[Any, ...]]


@attrs.frozen(kw_only=True)
class RouteTestMoved(TelemetryEvent):
    joint: str = "elbow"


@attrs.frozen(kw_only=True)
class RouteTestGrasped(TelemetryEvent):
    pass


class _Records(logging.Handler):
    """A plain logging handler: it needs a record."""

    def __init__(self, tag: int, seen: Seen) -> None:
        super().__init__()
        self.tag, self.seen = tag, seen

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((self.tag, record.msg, record.name, record.levelno, record.pathname))


class _Plain(Subscriber):
    """A plain Subscriber: the route hands it the schema itself."""

    def __init__(self, tag: int, seen: Seen) -> None:
        super().__init__()
        self.tag, self.seen = tag, seen

    def on_event(self, schema: TelemetrySchema) -> None:
        self.seen.append((self.tag, schema))


class _Picky(_Plain):
    """Receives one class only; the default ``on_event`` is not overridden here."""

    on_event = Subscriber.on_event  # type: ignore[assignment]

    @receives(RouteTestMoved)
    def moved(self, event: RouteTestMoved) -> None:
        self.seen.append((self.tag, event))


class _Named(_Plain):
    """Overrides ``emit_schema`` (as the forwarder and ``ThreadedSubscriber`` do): a route
    must not take it for a plain subscriber (``receive`` would skip its ``emit_schema``)."""

    def emit_schema(self, name: str, level: int, schema: TelemetrySchema) -> None:
        self.seen.append((self.tag, "named", name, level, schema))


def _handler(kind: str, tag: int, level: int, seen: Seen) -> logging.Handler:
    handler: logging.Handler
    if kind == "records":
        handler = _Records(tag, seen)
    elif kind == "named":
        handler = _Named(tag, seen)
    elif kind == "null":
        handler = logging.NullHandler()
    elif kind == "picky":
        handler = _Picky(tag, seen)
    else:
        handler = _Plain(tag, seen)
        if kind == "passing":  # a Subscriber with a filter takes records
            handler.addFilter(lambda record: True)
        elif kind == "refusing":
            handler.addFilter(lambda record: False)
    handler.setLevel(level)
    return handler


_handlers = st.lists(
    st.tuples(
        st.sampled_from(["records", "plain", "picky", "named", "passing", "refusing", "null"]),
        st.sampled_from(_LEVELS),
    ),
    max_size=3,
)
_loggers = st.fixed_dictionaries(
    {
        "level": st.sampled_from(_LEVELS),
        "propagate": st.booleans(),
        "refuses": st.sampled_from([False, False, False, True]),
        "disabled": st.sampled_from([False, False, False, False, True]),
        "handlers": _handlers,
    }
)


@contextmanager
def _tree(config: list[dict[str, Any]], seen: Seen) -> Iterator[None]:
    """Build the three loggers as ``config`` says (and a recording ``lastResort``); undo it all."""
    tag = 0
    saved_last_resort = logging.lastResort
    logging.lastResort = _Records(-1, seen)
    try:
        for name, spec in zip(_NAMES, config, strict=True):
            logger = logging.getLogger(name)
            logger.setLevel(spec["level"])
            logger.propagate = spec["propagate"]
            logger.disabled = spec["disabled"]
            if spec["refuses"]:
                logger.addFilter(lambda record: False)
            for kind, level in spec["handlers"]:
                tag += 1
                logger.addHandler(_handler(kind, tag, level, seen))
        yield
    finally:
        logging.lastResort = saved_last_resort
        for name in _NAMES:
            logger = logging.getLogger(name)
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
            logger.filters.clear()
            logger.setLevel(logging.NOTSET)
            logger.propagate = True
            logger.disabled = False


def _stdlib(name: str, level: int, schema: TelemetrySchema) -> None:
    """What the runtime's emitter does: a record when the logger is enabled, then handle."""
    logger = logging.getLogger(name)
    if logger.isEnabledFor(level):
        logger.handle(logger.makeRecord(name, level, _ORIGIN, 0, schema, (), None))


class TestLoggerRoute:
    @settings(max_examples=300, deadline=None)
    @given(
        config=st.lists(_loggers, min_size=3, max_size=3),
        at=st.sampled_from(_NAMES),
        level=st.sampled_from(_LEVELS[1:]),
        moved=st.booleans(),
    )
    def test_the_same_handlers_get_the_same_schemas_in_the_same_order(
        self, config: list[dict[str, Any]], at: str, level: int, moved: bool
    ) -> None:
        """Over generated trees (levels, propagate, filters, disabled loggers, NullHandlers,
        plain and picky subscribers, record handlers, no handler at all), a route delivers what
        ``Logger.handle`` delivers: the same handlers, order, records' name, level and origin."""
        schemas = [RouteTestMoved(joint="knee") if moved else RouteTestGrasped(), RouteTestMoved()]
        by_stdlib: Seen = []
        with _tree(config, by_stdlib):
            for schema in schemas:
                _stdlib(at, level, schema)
        by_route: Seen = []
        with _tree(config, by_route):
            route = LoggerRoute(at, level, _ORIGIN)
            for schema in schemas:
                route.deliver(schema)

        assert by_stdlib == by_route

    def test_a_plain_subscriber_gets_the_schema_without_a_record(self) -> None:
        """The usual case (plain subscribers only) hands each the schema object itself."""
        seen: Seen = []
        config = [
            {"level": logging.INFO, "propagate": True, "refuses": False, "disabled": False,
             "handlers": [("plain", logging.NOTSET)]},
            {"level": logging.NOTSET, "propagate": True, "refuses": False, "disabled": False,
             "handlers": [("picky", logging.NOTSET)]},
            {"level": logging.NOTSET, "propagate": True, "refuses": False, "disabled": False,
             "handlers": []},
        ]  # fmt: skip
        event = RouteTestMoved()
        with _tree(config, seen):
            route = LoggerRoute(_NAMES[2], logging.INFO, _ORIGIN)
            route.deliver(event)

        assert route.receivers is not None and not route.stdlib
        assert [(2, event), (1, event)] == seen
        assert all(schema is event for _, schema in seen)
