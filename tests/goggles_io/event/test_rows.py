"""The one in-flight shape (ADR 0071): rows in, events out, and nothing else builds or reads them.

A log call builds a row; every pipe, spool, frame and lane carries it; the lane's doorstep
(``_bus/calls.py``) or the subscriber builds the :class:`Event` with :func:`events_of`, the only
function that makes one from a row. These check the row module's conversions against each other
and against what the log calls build.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import goggles_io as gg
from goggles_io import Event, Kind
from goggles_io._event.rows import (
    SLOTS,
    columns_of,
    events_of,
    nbytes,
    row_of,
    rows_nbytes,
    rows_of,
)
from goggles_io.handlers.base import BaseHandler
from goggles_io.testing import MemoryHandler

_SRC = Path(__file__).resolve().parents[3] / "src" / "goggles_io"

_plain = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False)
)
_events = st.builds(
    Event,
    kind=st.sampled_from(list(Kind)),
    scope=st.sampled_from(["global", "global.eval"]),
    payload=st.one_of(
        st.text(max_size=8),
        st.dictionaries(st.text(min_size=1, max_size=4), _plain, max_size=3),
        st.just(np.arange(6, dtype=np.float32)),
    ),
    level=st.none() | st.integers(0, 50),
    step=st.none() | st.integers(0, 2**40),
    timestamp=st.floats(0, 2e9),
    logger=st.text(max_size=6),
    pid=st.integers(0, 2**22),
    filepath=st.none() | st.just("f.py"),
    lineno=st.none() | st.integers(0, 999),
    extra=st.dictionaries(st.text(max_size=4), _plain, max_size=3),
    time=st.none() | st.floats(allow_nan=False),
    producer=st.sampled_from(["", "p-1"]),
    seq=st.integers(0, 2**40),
)


class TestConversions:
    @settings(max_examples=200)
    @given(st.lists(_events, max_size=20))
    def test_an_event_comes_back_from_its_row(self, events: list[Event]) -> None:
        """events_of(row_of(e)) == e, its producer and sequence too, short and long lists."""
        rows = [row_of(event) for event in events]
        back = events_of(rows)

        assert events == back
        assert [(e.producer, e.seq) for e in events] == [(e.producer, e.seq) for e in back]
        assert all(len(row) == SLOTS for row in rows)

    @pytest.mark.parametrize("n", [1, 3, 50])
    def test_each_event_gets_maps_of_its_own(self, n: int) -> None:
        """A one-value metric's payload and an empty extra are a new map per event."""
        row = ("metric", "global", "x", None, 0, 1.0, "l", 7, None, None, None, None, 2.0, "", 0)
        events = events_of([row] * n)

        assert [{"x": 2.0}] * n == [e.payload for e in events]
        assert n == len({id(e.payload) for e in events}) == len({id(e.extra) for e in events})

    @pytest.mark.parametrize("n", [1, 50])
    def test_a_row_of_another_shape_is_refused(self, n: int) -> None:
        """A short row, or an unknown kind, raises: the lane counts it as that row's failure."""
        good = ("metric", "global", "x", None, 0, 1.0, "l", 7, None, None, None, None, 2.0, "", 0)
        for bad in (good[:5], ("nope", *good[1:])):
            with pytest.raises((ValueError, KeyError)):
                events_of([good] * (n - 1) + [bad])

    @given(st.lists(_events, max_size=20))
    def test_columns_and_rows_are_each_others_inverse(self, events: list[Event]) -> None:
        rows = [row_of(event) for event in events]

        assert events_of(rows_of(columns_of(rows))) == events if rows else True

    @given(st.lists(_events, max_size=20))
    def test_a_lists_bytes_are_its_rows_bytes(self, events: list[Event]) -> None:
        rows = [row_of(event) for event in events]

        assert sum(map(nbytes, rows)) == rows_nbytes(rows)


class _Rows(BaseHandler):
    """Takes rows as they travel (``handle_rows``): what the log calls built, unconverted."""

    capabilities: ClassVar[frozenset[Kind]] = frozenset(Kind)

    def __init__(self) -> None:
        super().__init__(name="rows")
        self.rows: list[Any] = []

    def handle_rows(self, rows: list[Any]) -> None:
        self.rows += rows

    def handle(self, event: Event) -> None:
        self.rows.append(row_of(event))


def test_a_log_calls_row_is_the_row_of_the_event_a_handler_reads() -> None:
    """Each log call builds its row in the row module's order: a handler reading events gets
    what ``events_of`` makes of the rows another one carries on."""
    rows, events = _Rows(), MemoryHandler(name="mem")
    gg.attach(rows)
    gg.attach(events)
    log = gg.get_logger("t", with_metrics=True)
    log.scalar("loss", 0.5, step=3, split="val")
    log.info("step %d", 3)
    log.push({"a": 1.0, "b": 2})
    log.image(np.zeros((4, 4, 3), dtype=np.uint8), name="cam", step=1)
    log.text("hello", name="note")
    gg.flush()

    assert 5 == len(rows.rows) == len(events.events)
    assert events.events == events_of(rows.rows)
    assert all(len(row) == SLOTS for row in rows.rows)
    for row, event in zip(rows.rows[1:], events.events[1:], strict=True):  # not a scalar's
        assert [*row_of(event)[:2], *row_of(event)[3:]] == [*row[:2], *row[3:]]


def test_only_the_row_module_knows_a_rows_shape() -> None:
    """No module but ``_event/rows.py`` tells rows from events by their type or length, or
    turns a row into an event; ``_api`` finds nothing on a transport with ``getattr``."""
    shape = re.compile(r"is tuple|SCALAR_ROW_LEN|row_event")
    found = [
        str(path.relative_to(_SRC))
        for path in sorted(_SRC.rglob("*.py"))
        if shape.search(path.read_text(encoding="utf-8"))
    ]
    reaches = [
        str(path.relative_to(_SRC))
        for path in sorted((_SRC / "_api").rglob("*.py"))
        if "getattr(transport" in path.read_text(encoding="utf-8")
    ]

    assert ["_event/rows.py"] == found or [] == found
    assert [] == reaches
