"""``EventBus.hand_events`` (ADR 0086): a list of built events that share scope, kind and level
reaches each matching handler in one call on a synchronous bus, as the same objects; an
asynchronous lane queues their rows; a ``handle_rows`` sink gets rows; counts are kept."""

from __future__ import annotations

import pytest

from goggles_io import Event, Kind
from goggles_io._bus.bus import EventBus
from goggles_io._event.rows import Row, row_of
from goggles_io.handlers.base import BaseHandler


class _Batches(BaseHandler):
    def __init__(self, name: str, level: int = 0) -> None:
        super().__init__(name=name, level=level)
        self.calls: list[list[Event]] = []

    def handle_batch(self, events: list[Event]) -> None:
        self.calls.append(events)

    def handle(self, event: Event) -> None:
        self.handle_batch([event])


class _Rows(BaseHandler):
    def __init__(self) -> None:
        super().__init__(name="rows")
        self.rows: list[Row] = []

    def handle_rows(self, rows: list[Row]) -> None:
        self.rows += rows

    def handle(self, event: Event) -> None:
        raise AssertionError("a rows sink gets rows")


class _Raises(BaseHandler):
    def handle_batch(self, events: list[Event]) -> None:
        raise RuntimeError("a handler that fails")

    def handle(self, event: Event) -> None:
        raise RuntimeError("a handler that fails")


def _events(scope: str, kind: Kind, n: int, level: int | None = None) -> list[Event]:
    payload = {"x": 1.0} if kind is Kind.METRIC else "text"
    return [Event(kind, scope, payload, level=level, step=i) for i in range(n)]


def test_a_synchronous_bus_hands_the_same_events_to_each_matching_handler_once() -> None:
    bus = EventBus(async_mode=False)
    every, scoped, other, rows = _Batches("every"), _Batches("scoped"), _Batches("other"), _Rows()
    bus.attach(every, ["*"])
    bus.attach(scoped, ["train"])
    bus.attach(other, ["eval"])
    bus.attach(rows, ["*"])
    events = _events("train.a", Kind.METRIC, 5)

    bus.hand_events(events, "train.a", "metric", None)

    assert 1 == len(every.calls) == len(scoped.calls) and not other.calls
    assert every.calls[0] is not events and every.calls[0] is not scoped.calls[0]
    assert all(a is b for a, b in zip(every.calls[0], events, strict=True))
    assert all(a is b for a, b in zip(scoped.calls[0], events, strict=True))
    assert [row_of(e) for e in events] == rows.rows
    stats = bus.finish(5).handlers
    assert (5, 5, 5) == (stats["every"].delivered, stats["rows"].delivered, stats["every"].logged)
    assert (0, 0) == (stats["other"].delivered, stats["other"].logged or 0)


def test_levels_and_kinds_filter_as_put_rows_does() -> None:
    bus = EventBus(async_mode=False)
    warnings, metrics_only = _Batches("warnings", level=30), _Batches("metrics")
    metrics_only.capabilities = frozenset({Kind.METRIC})  # type: ignore[misc]
    bus.attach(warnings, ["*"])
    bus.attach(metrics_only, ["*"])

    bus.hand_events(_events("s", Kind.LOG, 3, level=20), "s", "log", 20)
    bus.hand_events(_events("s", Kind.LOG, 2, level=40), "s", "log", 40)
    bus.hand_events([], "s", "log", 40)

    assert [2] == [len(c) for c in warnings.calls] and not metrics_only.calls


def test_a_failing_handler_is_counted_and_the_others_still_get_the_events() -> None:
    bus = EventBus(async_mode=False)
    good = _Batches("good")
    bus.attach(_Raises(name="bad"), ["*"])
    bus.attach(good, ["*"])

    bus.hand_events(_events("s", Kind.METRIC, 4), "s", "metric", None)

    stats = bus.finish(5).handlers
    assert (4, 4, 4) == (stats["bad"].failed, stats["bad"].logged, stats["good"].delivered)
    assert 4 == len(good.calls[0])


@pytest.mark.parametrize("n", [1, 700])
def test_an_asynchronous_lane_queues_their_rows(n: int) -> None:
    bus = EventBus(async_mode=True)
    sink = _Batches("sink")
    bus.attach(sink, ["*"])
    events = _events("s", Kind.METRIC, n)

    bus.hand_events(events, "s", "metric", None)

    assert bus.flush(10)
    got = [e for call in sink.calls for e in call]
    assert events == got and not any(a is b for a, b in zip(events, got, strict=True))
    assert n == bus.finish(5).handlers["sink"].delivered
