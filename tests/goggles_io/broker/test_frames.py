"""ADR 0079: a client batch travels to Redis as the client encoded it, and hostile entries that
look like one are refused at the consumer, each counted, nothing else lost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goggles_io._broker.consumer import BrokerConsumer
from goggles_io._broker.entries import decode_entry, encode_entry
from goggles_io._broker.forwarder import BrokerForwarder
from goggles_io._broker.frames import FrameTable
from goggles_io._broker.settings import BrokerSettings
from goggles_io._event.codec import Batch, Decoder, Encoder, Hello
from goggles_io._event.messages import MAX_BATCH_EVENTS
from goggles_io._event.records import Event, Kind, ShmRef
from goggles_io._event.rows import Row, row_of
from goggles_io.handlers.base import BaseHandler
from redis_server import RedisServer
from support import wait_until


def _rows(start: int, n: int, name: str = "x") -> list[Row]:
    return [
        row_of(Event(Kind.METRIC, "global", {name: float(i)}, step=i, timestamp=1.5, pid=7))
        for i in range(start, start + n)
    ]


def _client_frame(rows: list[Row], seq: int = 3, producer: str = "7-abc", first: int = 1) -> bytes:
    """What a client sends: its batch numbered in its own stream (ADR 0057)."""
    return Encoder().encode(Batch(seq, rows, False, producer, first))


def _host_rows(frame: bytes) -> list[Row]:
    """What the host decodes from it."""
    message = Decoder().decode(frame)
    assert type(message) is Batch
    return message.rows


class TestFrameTable:
    def test_a_batch_that_is_the_noted_list_is_its_frame(self) -> None:
        rows = _rows(0, 4)
        table = FrameTable()
        table.note(rows, memoryview(b"frame"))
        assert b"frame" == table.take([rows])
        assert None is table.take([rows])  # taken once
        assert (1, 1, 0) == (table.forwarded, table.encoded, table.nbytes)

    def test_anything_else_is_encoded(self) -> None:
        """An equal list that is not the noted one (read back from the spool), a batch of the
        list and one more row, a batch of two lists: none is the frame."""
        rows = _rows(0, 4)
        table = FrameTable()
        table.note(rows, b"frame")
        assert None is table.take([list(rows)])
        assert None is table.take([rows, _rows(4, 1)[0]])
        other = _rows(9, 2)
        table.note(other, b"other")
        assert None is table.take([other, rows])
        assert 3 == table.encoded

    def test_the_table_is_bounded_in_frames_and_bytes(self) -> None:
        """Frames whose rows were dropped or spilled are never taken: the oldest go first."""
        table = FrameTable(max_frames=4, max_bytes=100)
        kept = [_rows(i, 1) for i in range(10)]
        for rows in kept:
            table.note(rows, b"f" * 30)
            assert table.nbytes <= 100
        assert 90 == table.nbytes
        assert [None] * 7 == [table.take([rows]) for rows in kept[:7]]
        assert [b"f" * 30] * 3 == [table.take([rows]) for rows in kept[7:]]
        table.note(_rows(0, 1), b"f" * 101)  # larger than the whole table: not held
        assert 0 == table.nbytes


class TestFramesReadBack:
    @settings(max_examples=50, deadline=None)
    @given(
        values=st.lists(st.floats(allow_nan=False), min_size=1, max_size=40),
        extra=st.dictionaries(
            st.sampled_from(["name", "fps", "k"]), st.integers(-(2**63), 2**63 - 1), max_size=2
        ),
        redelivered=st.booleans(),
    )
    def test_a_forwarded_frame_reads_back_as_the_rows_the_host_decoded(
        self, values: list[float], extra: dict[str, int], redelivered: bool
    ) -> None:
        """The consumer gets from the client's bytes exactly the rows the host decoded from
        them (and would have encoded again): numbering, extras, an inline array."""
        events = [
            Event(Kind.METRIC, "s", {"v": v}, step=i, timestamp=2.0, pid=3, extra=dict(extra))
            for i, v in enumerate(values)
        ]
        events.append(Event(Kind.HISTOGRAM, "s", np.arange(6.0), step=1, timestamp=2.0, pid=3))
        frame = Encoder().encode(Batch(9, [row_of(e) for e in events], redelivered, "3-ff", 40))
        host = _host_rows(frame)
        fields = {b"p": b"host:1:abc", b"s": b"12", b"d": frame}
        producer, seq, got = decode_entry(Decoder(), fields)

        encoded = encode_entry(Encoder(), "host:1:abc", 12, host)["d"]  # the way before
        before = decode_entry(Decoder(), {**fields, b"d": encoded})[2]

        assert ("host:1:abc", 12) == (producer, seq)
        assert len(host) == len(got) == len(before)
        for a, b, c in zip(host, got, before, strict=True):
            assert a[:2] == b[:2] == c[:2] and a[3:] == b[3:] == c[3:]
            if isinstance(a[2], np.ndarray):
                assert np.array_equal(a[2], b[2]) and np.array_equal(a[2], c[2])
            else:
                assert a[2] == b[2] == c[2]

    def test_the_host_knows_a_frame_that_refers_to_shared_memory(self) -> None:
        """A frame with a shared-memory reference is local to its machine: the decoder counts
        it (the host then does not hand the frame on)."""

        class Pool:
            def put(self, array: Any) -> ShmRef:
                return ShmRef("seg", 0, int(array.nbytes), array.dtype.str, array.shape)

        class Reader:
            def read(self, ref: ShmRef) -> Any:
                return np.zeros(ref.shape, dtype=ref.dtype)

        image = Event(Kind.IMAGE, "s", np.zeros((4, 4), np.uint8), step=0, timestamp=1.0, pid=1)
        shm = Encoder(shm_threshold=1, pool=Pool()).encode(Batch(1, [row_of(image)]))
        plain = _client_frame(_rows(0, 3))
        decoder = Decoder(Reader())
        decoder.decode(plain)
        assert 0 == decoder.shm_refs
        decoder.decode(shm)
        assert 1 == decoder.shm_refs


@pytest.fixture
def forwarder(
    redis_server: RedisServer, tmp_path: Path, monkeypatch: Any
) -> Iterator[BrokerForwarder]:
    monkeypatch.setenv("GOGGLES_SPOOL_DIR", str(tmp_path / "spool"))
    fwd = BrokerForwarder(url=redis_server.url, run="f", buffer_bytes=8 << 20, close_timeout_s=1.0)
    fwd.open()
    yield fwd
    fwd.close()


def _entries(redis_server: RedisServer, stream: str) -> list[dict[bytes, bytes]]:
    return [fields for _, fields in redis_server.client().xrange(stream)]


class TestForwarder:
    def test_a_full_client_batch_is_sent_as_the_client_encoded_it(
        self, redis_server: RedisServer, forwarder: BrokerForwarder
    ) -> None:
        frame = _client_frame(_rows(0, 1024))
        rows = _host_rows(frame)
        forwarder.note_frame(rows, memoryview(frame))
        forwarder.handle_rows(rows)
        wait_until(lambda: _entries(redis_server, forwarder.stream), what="the entry")
        (entry,) = _entries(redis_server, forwarder.stream)

        assert frame == entry[b"d"]
        assert rows == decode_entry(Decoder(), entry)[2]

    def test_small_batches_are_gathered_and_encoded_in_order(
        self, redis_server: RedisServer, forwarder: BrokerForwarder
    ) -> None:
        """Lists smaller than an entry, a frame noted or not, single rows: each entry holds
        whole lists, in order, every row once."""
        pipe = forwarder._pipe
        assert pipe is not None
        step = 0
        for n in (10, 300, 1, 700, 1024, 5):
            frame = _client_frame(_rows(step, n), first=step + 1)
            rows = _host_rows(frame)
            forwarder.note_frame(rows, frame)
            forwarder.handle_rows(rows)
            step += n
        event = Event(Kind.METRIC, "global", {"x": 1.0}, step=step, timestamp=1.5, pid=7)
        forwarder.handle(event)
        want = step + 1
        decoder = Decoder()

        def steps() -> list[int]:
            return [
                r[4]
                for e in _entries(redis_server, forwarder.stream)
                for r in decode_entry(decoder, e)[2]
            ]

        wait_until(lambda: len(steps()) == want, what="every row in the stream")
        assert list(range(want)) == steps()
        assert all(
            len(decode_entry(decoder, e)[2]) <= 2300
            for e in _entries(redis_server, forwarder.stream)
        )


class _Count(BaseHandler):
    def __init__(self) -> None:
        super().__init__(name="count")
        self.steps: list[int] = []

    def handle_batch(self, events: list[Event]) -> None:
        self.steps += [e.step for e in events]

    def handle(self, event: Event) -> None:
        self.handle_batch([event])


def _hostile_frames() -> list[bytes]:
    """Entries shaped like forwarded client batches, each wrong in one way."""
    good = _client_frame(_rows(0, 8))
    body = msgpack.unpackb(good)
    huge = [body[0], [body[1][0], MAX_BATCH_EVENTS * 1000, *body[1][2:]]]  # a count claimed
    ref = msgpack.ExtType(2, msgpack.packb(["seg", 0, 1 << 40, "<f8", [1 << 37]]))
    shm = [body[0], [*body[1][:4], [ref] * 8, *body[1][5:]]]  # the payload column
    long_producer = [body[0], [*body[1][:-2], "p" * 5000, 1]]
    return [
        good[: len(good) // 2],  # cut short
        msgpack.packb(huge),
        msgpack.packb(shm),  # a shared-memory reference: no consumer reads another's memory
        Encoder().encode(Hello(1)),  # a message, not a batch
        good + good,  # two messages
        msgpack.packb(long_producer),
        b"\xdc\xff\xff",  # an array header claiming 65,535 items, then nothing
    ]


def test_hostile_entries_shaped_like_frames_are_refused_and_counted(
    redis_server: RedisServer,
) -> None:
    """Each hostile entry is acknowledged, skipped and counted with a clear error before it
    builds anything; the entries around it are handled, once each, in order."""
    client = redis_server.client()
    stream = "goggles_io:hostile"
    seq = 0
    for at, hostile in enumerate(_hostile_frames()):
        seq += 1
        frame = _client_frame(_rows(at * 10, 10), first=at * 10 + 1)
        client.xadd(stream, {"p": "m:1:a", "s": str(seq), "d": frame})
        client.xadd(stream, {"p": "bad:1:b", "s": str(seq), "d": hostile})
    consumer = BrokerConsumer(redis_server.url, BrokerSettings(run="hostile"))
    sink = _Count()
    consumer.attach(sink, ["*"])
    try:
        wait_until(lambda: consumer.malformed == 7 and len(sink.steps) == 70, what="all read")
    finally:
        consumer.finish(timeout_s=10, idle_s=0.2)
    assert list(range(70)) == sink.steps
    assert (7, 7, 0) == (consumer.malformed, consumer.handled, consumer.duplicates)
