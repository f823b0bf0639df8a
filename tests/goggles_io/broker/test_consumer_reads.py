"""A consumer's read goes to its handlers as events built from the entries' columns (ADR 0086):
one call per handler a read, the same objects for every handler of a uniform read, row by row
routing for a read that mixes scopes; and a Redis that forgot the record-and-ack script (a
``SCRIPT FLUSH`` between handling a read and recording it) loses and repeats nothing."""

from __future__ import annotations

from typing import Any

from goggles_io._broker.consumer import BrokerConsumer
from goggles_io._broker.entries import encode_entry
from goggles_io._broker.settings import BrokerSettings, seen_key, stream_name
from goggles_io._event.codec import Encoder
from goggles_io._event.records import Event, Kind
from goggles_io._event.rows import row_of
from goggles_io.handlers.base import BaseHandler
from redis_server import RedisServer
from support import wait_until

_GROUP = BrokerSettings().group


class _Calls(BaseHandler):
    """Keeps each ``handle_batch`` call's events; ``on_first`` runs in the first call."""

    def __init__(self, name: str, on_first: Any = None) -> None:
        super().__init__(name=name)
        self.calls: list[list[Event]] = []
        self.on_first = on_first

    def handle_batch(self, events: list[Event]) -> None:
        self.calls.append(events)
        if self.on_first is not None and len(self.calls) == 1:
            self.on_first()

    def handle(self, event: Event) -> None:
        self.handle_batch([event])

    def steps(self) -> list[int | None]:
        return [e.step for call in self.calls for e in call]


class _OneByOne(BaseHandler):
    """A robo-goggles handler: ``handle`` only."""

    def __init__(self) -> None:
        super().__init__(name="one")
        self.steps: list[int | None] = []

    def handle(self, event: Event) -> None:
        self.steps.append(event.step)


def _fill(server: RedisServer, run: str, scopes: list[str], per_entry: int) -> None:
    """One entry a scope of ``scopes``, in order; steps count on across entries."""
    client = server.client()
    encoder = Encoder()
    step = 0
    for seq, scope in enumerate(scopes, start=1):
        rows = []
        for _ in range(per_entry):
            rows.append(row_of(Event(Kind.METRIC, scope, {"x": float(step)}, step=step)))
            step += 1
        client.xadd(stream_name(run), encode_entry(encoder, "p:1:a", seq, rows))


def _consume(server: RedisServer, run: str, handlers: list[tuple[Any, list[str]]], n: int) -> Any:
    consumer = BrokerConsumer(server.url, BrokerSettings(run=run))
    for handler, scopes in handlers:
        consumer.attach(handler, scopes)
    seen = handlers[0][0]
    try:
        wait_until(lambda: len(seen.steps()) >= n, what=f"{n} events handled")
    finally:
        consumer.finish(timeout_s=10, idle_s=0.2)
    return consumer


def test_a_uniform_read_reaches_each_handler_once_as_the_same_events(
    redis_server: RedisServer,
) -> None:
    every, scoped, one = _Calls("every"), _Calls("scoped"), _OneByOne()
    _fill(redis_server, "uniform", ["s"] * 6, per_entry=300)
    consumer = _consume(
        redis_server, "uniform", [(every, ["*"]), (scoped, ["s"]), (one, ["*"])], 1800
    )

    assert list(range(1800)) == every.steps() == scoped.steps() == one.steps
    assert len(every.calls) == len(scoped.calls) < 6  # reads of several entries: a call each
    for mine, theirs in zip(every.calls, scoped.calls, strict=True):
        assert mine is not theirs  # a list of its own ...
        assert all(a is b for a, b in zip(mine, theirs, strict=True))  # ... of the same events
    assert {"x": 5.0} == every.calls[0][5].payload and {} == every.calls[0][5].extra
    assert (6, 1800, 0, 0) == (
        consumer.handled,
        consumer.events,
        consumer.duplicates,
        consumer.malformed,
    )


def test_a_read_that_mixes_scopes_is_routed_row_by_row_one_call_a_handler(
    redis_server: RedisServer,
) -> None:
    every, only_a, only_b = _Calls("every"), _Calls("a"), _Calls("b")
    _fill(redis_server, "mixed", ["a", "b"] * 4, per_entry=200)
    _consume(redis_server, "mixed", [(every, ["*"]), (only_a, ["a"]), (only_b, ["b"])], 1600)

    assert list(range(1600)) == every.steps()
    assert [s for s in range(1600) if (s // 200) % 2 == 0] == only_a.steps()
    assert [s for s in range(1600) if (s // 200) % 2 == 1] == only_b.steps()
    assert len(every.calls) == len(only_a.calls) == len(only_b.calls) < 8
    assert {e.scope for e in only_a.calls[0]} == {"a"}


def test_scripts_flushed_before_a_read_is_recorded_lose_and_repeat_nothing(
    redis_server: RedisServer, capfd: Any
) -> None:
    """The first read is handled, then Redis forgets the record-and-ack script before the
    consumer runs it (NOSCRIPT): a new connection puts back the marks and acknowledges the
    read; nothing is handled twice, nothing is left pending."""
    client = redis_server.client()
    sink = _Calls("sink", on_first=client.script_flush)
    _fill(redis_server, "flushed", ["s"] * 8, per_entry=256)
    stream, seen = stream_name("flushed"), seen_key(stream_name("flushed"), _GROUP)
    consumer = BrokerConsumer(redis_server.url, BrokerSettings(run="flushed"))
    consumer.attach(sink, ["*"])
    try:
        wait_until(
            lambda: (
                client.hget(seen, "p:1:a") == b"8"
                and 0 == int(client.xpending(stream, _GROUP)["pending"])
            ),
            what="all 8 entries recorded and acknowledged",
        )
    finally:
        consumer.finish(timeout_s=10, idle_s=0.2)

    assert list(range(2048)) == sink.steps()
    assert (8, 0, 0) == (consumer.handled, consumer.duplicates, consumer.malformed)
    assert "Redis forgot its scripts" in capfd.readouterr().err
