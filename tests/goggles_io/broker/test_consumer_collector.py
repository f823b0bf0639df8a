"""A consumer's read: its events are handled with the cyclic collector paused (ADR 0085), and
the collector is as it was after, whatever the handler did."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from goggles_io._broker.consumer import BrokerConsumer
from goggles_io._broker.entries import encode_entry
from goggles_io._broker.settings import BrokerSettings, stream_name
from goggles_io._event.codec import Encoder
from goggles_io._event.records import Event, Kind
from goggles_io._event.rows import row_of
from goggles_io.handlers.base import BaseHandler
from redis_server import RedisServer
from support import wait_until


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    try:
        yield
    finally:
        (gc.enable if was else gc.disable)()


class _Watch(BaseHandler):
    """Notes whether the collector ran automatically while each batch was in hand."""

    def __init__(self, fail_on: int = -1) -> None:
        super().__init__(name="watch")
        self.enabled: list[bool] = []
        self.steps: list[int] = []
        self.fail_on = fail_on

    def handle_batch(self, events: list[Event]) -> None:
        self.enabled.append(gc.isenabled())
        self.steps += [e.step for e in events]
        if events[0].step == self.fail_on:
            raise RuntimeError("a handler that fails")

    def handle(self, event: Event) -> None:
        self.handle_batch([event])


def _fill(server: RedisServer, run: str, entries: int, per_entry: int) -> None:
    client = server.client()
    encoder = Encoder()
    for seq in range(1, entries + 1):
        rows = [
            row_of(Event(Kind.METRIC, "s", {"x": 1.0}, step=(seq - 1) * per_entry + i))
            for i in range(per_entry)
        ]
        client.xadd(stream_name(run), encode_entry(encoder, "p:1:a", seq, rows))


def _consume(server: RedisServer, run: str, sink: _Watch, n: int) -> BrokerConsumer:
    consumer = BrokerConsumer(server.url, BrokerSettings(run=run))
    consumer.attach(sink, ["*"])
    try:
        wait_until(lambda: len(sink.steps) == n, what=f"{n} events handled")
    finally:
        consumer.finish(timeout_s=10, idle_s=0.2)
    return consumer


def test_a_read_is_handled_paused_and_the_collector_is_on_after(
    redis_server: RedisServer,
) -> None:
    gc.enable()
    sink = _Watch()
    _fill(redis_server, "pause", entries=12, per_entry=500)
    consumer = _consume(redis_server, "pause", sink, 6000)
    assert list(range(6000)) == sink.steps
    assert sink.enabled and not any(sink.enabled)
    assert gc.isenabled()
    assert 12 == consumer.handled


def test_a_failing_handler_leaves_the_collector_on(redis_server: RedisServer) -> None:
    """A handler that raises is counted as ever (ADR 0079's contract); the collector is back on
    for the next read and after."""
    gc.enable()
    sink = _Watch(fail_on=0)
    _fill(redis_server, "fails", entries=4, per_entry=300)
    consumer = _consume(redis_server, "fails", sink, 1200)
    assert not any(sink.enabled)
    assert gc.isenabled()
    assert 4 == consumer.handled


def test_a_collector_the_user_turned_off_stays_off(redis_server: RedisServer) -> None:
    gc.disable()
    sink = _Watch()
    _fill(redis_server, "off", entries=3, per_entry=100)
    _consume(redis_server, "off", sink, 300)
    assert not gc.isenabled()
