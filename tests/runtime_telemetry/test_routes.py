"""LoggerRoute hands a schema to exactly the handlers ``Logger.handle`` would, in its order."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from logging_trees import (
    KINDS,
    LEVELS,
    Records,
    Seen,
    TreeTestGrasped,
    TreeTestMoved,
    make_handler,
    reset_loggers,
)
from runtime_telemetry import TelemetrySchema
from runtime_telemetry.routes import LoggerRoute

_BASE = "telemetry.routes_test"
_NAMES = (_BASE, f"{_BASE}.a", f"{_BASE}.a.b")
_ORIGIN = "<worker 7>"


_handlers = st.lists(
    st.tuples(
        st.sampled_from(KINDS),
        st.sampled_from(LEVELS),
    ),
    max_size=3,
)
_loggers = st.fixed_dictionaries(
    {
        "level": st.sampled_from(LEVELS),
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
    logging.lastResort = Records(-1, seen)
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
                logger.addHandler(make_handler(kind, tag, level, seen))
        yield
    finally:
        logging.lastResort = saved_last_resort
        reset_loggers(_NAMES)


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
        level=st.sampled_from(LEVELS[1:]),
        moved=st.booleans(),
    )
    def test_the_same_handlers_get_the_same_schemas_in_the_same_order(
        self, config: list[dict[str, Any]], at: str, level: int, moved: bool
    ) -> None:
        """Over generated trees (levels, propagate, filters, disabled loggers, NullHandlers,
        plain and picky subscribers, record handlers, no handler at all), a route delivers what
        ``Logger.handle`` delivers: the same handlers, order, records' name, level and origin."""
        schemas = [TreeTestMoved(joint="knee") if moved else TreeTestGrasped(), TreeTestMoved()]
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
        event = TreeTestMoved()
        with _tree(config, seen):
            route = LoggerRoute(_NAMES[2], logging.INFO, _ORIGIN)
            route.deliver(event)

        assert route.receivers is not None and not route.stdlib
        assert [(2, "picky", event), (1, "plain", event)] == seen
        assert all(entry[-1] is event for entry in seen)
