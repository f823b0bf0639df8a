"""ADR 0029's bookkeeping beyond the pipe: sent → kept → confirmed or released (the outbox),
and the forwarder's pipe against a real ``redis-server``: entries kept until a consumer's mark
passes them, released for room, counted when Redis comes back without them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goggles_io._broker.entries import decode_entry
from goggles_io._broker.forwarder import BrokerForwarder
from goggles_io._broker.outbox import Outbox
from goggles_io._delivery.losses import LOST_BY_SINK, REASONS
from goggles_io._event.codec import Decoder
from goggles_io._event.records import Event, Kind
from goggles_io._event.rows import Row, events_of, row_of
from redis_server import RedisServer
from support import wait_until


class TestOutbox:
    def test_sent_entries_are_kept_until_a_consumer_passes_them(self) -> None:
        box = Outbox(1000)
        for seq in (1, 2, 3):
            assert 0 == box.sent(seq, 1, 100)
        assert 3 == box.kept_units
        box.confirm(2)
        assert (1, 100) == (box.kept_units, box.kept_bytes)
        closing = box.close()
        assert (3, 1, 0) == (closing.last_in_redis, closing.kept, closing.released)

    def test_a_repeat_is_recorded_once(self) -> None:
        """A batch sent again after a broken connection is in Redis once, kept once."""
        box = Outbox(1000)
        box.sent(1, 5, 100)
        box.sent(1, 5, 100)
        assert 5 == box.kept_units

    def test_kept_entries_are_released_for_room_and_remembered(self) -> None:
        """Past half the budget the oldest kept entries are left to Redis alone, remembered."""
        box = Outbox(300)
        assert [0, 0, 0, 1] == [box.sent(seq, 10, 100) for seq in (1, 2, 3, 4)]
        assert (30, 10) == (box.kept_units, box.released_events)
        assert 10 == box.close().released
        box.confirm(1)  # a consumer had handled it after all: not at risk any more
        assert 0 == box.close().released

    def test_redis_without_its_data_loses_only_what_was_released(self) -> None:
        """Kept entries are sent again (not lost); released unconfirmed ones are counted."""
        box = Outbox(300)
        for seq in (1, 2, 3, 4, 5):
            box.sent(seq, 10, 100)
        box.confirm(1)
        assert (3, 10) == box.lost()  # 3..5 kept: sent again; 2 released and unconfirmed
        assert 0 == box.kept_units
        box.sent(3, 10, 100)  # the resend is recorded again
        closing = box.close()
        assert (3, 10, 10, 0) == (
            closing.last_in_redis,
            closing.kept,
            closing.lost,
            closing.released,
        )

    @settings(max_examples=200, deadline=None)
    @given(
        ops=st.lists(
            st.one_of(
                st.tuples(st.just("send"), st.integers(1, 200)),
                st.tuples(st.just("confirm"), st.integers(0, 3)),
                st.tuples(st.just("lost"), st.just(0)),
            ),
            max_size=60,
        )
    )
    def test_every_entry_is_kept_confirmed_released_or_lost(self, ops: list[Any]) -> None:
        """Whatever happens: kept bytes stay within the budget, releases come oldest first, and
        every event sent is kept, confirmed, released (remembered) or sent again."""
        box = Outbox(500)
        seq = acked = 0
        sent: dict[int, int] = {}
        released_upto = 0
        for op, arg in ops:
            if op == "send":
                seq += 1
                sent[seq] = arg
                release = box.sent(seq, arg, arg * 2)
                if release:
                    assert release > released_upto  # cumulative, oldest first
                    released_upto = release
            elif op == "confirm" and seq:
                acked = max(acked, seq - arg)
                box.confirm(acked)
            elif op == "lost":
                box.lost()
            assert box.kept_bytes <= 500
        closing = box.close()
        unconfirmed = sum(n for s, n in sent.items() if s > acked)
        assert closing.kept + closing.released + closing.lost <= unconfirmed
        assert 0 == closing.forgotten


def _events(start: int, n: int) -> list[Row]:
    """Rows, as the forwarder's lane hands them over (``handle_rows``, ADR 0071)."""
    return [
        row_of(Event(kind=Kind.METRIC, scope="s", payload={"x": float(i)}, step=i))
        for i in range(start, start + n)
    ]


def _stream(redis_server: RedisServer, stream: str) -> list[tuple[int, list[Event]]]:
    decoder = Decoder()
    out = []
    for _, fields in redis_server.client().xrange(stream):
        _, seq, rows = decode_entry(decoder, fields)
        out.append((seq, events_of(rows)))
    return out


def _consume(redis_server: RedisServer, fwd: BrokerForwarder, upto: int) -> None:
    """What a consumer's record script does: the group's mark for this producer."""
    redis_server.client().hset(f"{fwd.stream}:goggles_io:seen", fwd.producer, upto)


@pytest.fixture
def forwarder(
    redis_server: RedisServer, tmp_path: Path, monkeypatch: Any
) -> Iterator[BrokerForwarder]:
    monkeypatch.setenv("GOGGLES_SPOOL_DIR", str(tmp_path / "spool"))
    fwd = BrokerForwarder(url=redis_server.url, run="t", buffer_bytes=64 << 10, close_timeout_s=1.0)
    fwd.open()
    yield fwd
    fwd.close()


class TestForwarderPipe:
    def test_entries_are_kept_until_the_mark_passes_them(
        self, redis_server: RedisServer, forwarder: BrokerForwarder
    ) -> None:
        forwarder.handle_rows(_events(0, 10))
        wait_until(lambda: _stream(redis_server, forwarder.stream), what="an entry in the stream")
        pipe = forwarder._pipe
        assert pipe is not None
        assert 10 == pipe.left()  # in Redis, kept: no consumer passed it
        _consume(redis_server, forwarder, _stream(redis_server, forwarder.stream)[-1][0])
        wait_until(lambda: pipe.left() == 0, what="the mark acknowledged the entry")
        assert {} == forwarder.losses()

    def test_released_entries_lost_by_redis_are_counted(
        self, redis_server: RedisServer, forwarder: BrokerForwarder
    ) -> None:
        """No consumer: kept entries past half the budget are released; Redis restarts empty;
        the kept ones are sent again, the released ones are counted lost by the sink."""
        pipe, outbox = forwarder._pipe, forwarder._outbox
        assert pipe is not None
        for start in range(0, 600, 50):  # ~230 KiB estimated: past the 32 KiB of kept entries
            forwarder.handle_rows(_events(start, 50))
            wait_until(lambda: pipe.left() == outbox.kept_units, what="all in Redis")
        kept, released = outbox.kept_units, outbox.released_events
        assert released > 0
        redis_server.stop()
        redis_server.start()  # empty
        forwarder.handle_rows(_events(600, 1))  # the next send finds the marker gone
        wait_until(
            lambda: sum(len(e) for _, e in _stream(redis_server, forwarder.stream)) == kept + 1,
            what="kept entries sent again",
        )
        entries = _stream(redis_server, forwarder.stream)
        steps = [e.step for _, batch in entries for e in batch]
        assert steps == sorted(steps) and 600 == steps[-1]
        forwarder.close()
        losses = forwarder.losses()

        assert {LOST_BY_SINK: released} == losses
        assert set(losses) <= set(REASONS)
