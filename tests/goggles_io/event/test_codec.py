"""The wire codec: every message round-trips, hostile bytes only ever raise FrameError."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from goggles_io import Event, Kind
from goggles_io._event.codec import Ack, Batch, Call, Decoder, Encoder, Hello, Message, Reply
from goggles_io._event.rows import events_of, row_of
from goggles_io._transport.shm import ShmPool, ShmReader
from goggles_io.exceptions import FrameError

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
_arrays = arrays(
    st.sampled_from([np.uint8, np.int32, np.float32, np.float64, np.bool_]),
    array_shapes(min_dims=0, max_dims=3, max_side=5),
)
_events = st.builds(
    Event,
    kind=st.sampled_from(list(Kind)),
    scope=st.text(min_size=1, max_size=10),
    payload=st.one_of(_json, _arrays),
    level=st.none() | st.integers(0, 50),
    step=st.none() | st.integers(0, 2**40),
    timestamp=st.floats(0, 2e9),
    logger=st.text(max_size=10),
    pid=st.integers(0, 2**22),
    filepath=st.none() | st.text(max_size=20),
    lineno=st.none() | st.integers(0, 10**6),
    extra=st.dictionaries(st.text(max_size=8), _json, max_size=3),
    time=st.none() | st.floats(allow_nan=False),
)
_messages = st.one_of(
    st.builds(Batch, seq=st.integers(0, 2**40), rows=st.lists(_events.map(row_of), max_size=5)),
    st.builds(Hello, pid=st.integers(0, 2**22)),
    st.builds(Ack, seq=st.integers(0, 2**40), dropped=st.integers(0, 2**20)),
    st.builds(
        Call,
        token=st.integers(0, 2**40),
        op=st.text(max_size=8),
        args=st.dictionaries(st.text(max_size=8), _json, max_size=3),
    ),
    st.builds(Reply, token=st.integers(0, 2**40), ok=st.booleans(), result=_json),
)


def _same(message: Message) -> object:
    """A batch as the events its rows stand for (arrays compare by value there)."""
    if type(message) is Batch:
        return (message.seq, message.redelivered, events_of(message.rows))
    return message


class TestRoundTrip:
    @settings(max_examples=200)
    @given(_messages)
    def test_every_message_round_trips(self, message) -> None:
        """decode(encode(m)) == m for every message, arrays included."""
        assert _same(message) == _same(Decoder().decode(Encoder().encode(message)))

    def test_numpy_scalar_keeps_its_dtype(self) -> None:
        """A numpy scalar payload comes back with its dtype."""
        event = Event(kind=Kind.METRIC, scope="global", payload={"x": np.float32(1.5)})
        back = Decoder().decode(Encoder().encode(Batch(1, [row_of(event)])))

        assert type(events_of(back.rows)[0].payload["x"]) is np.float32

    def test_big_array_travels_through_shared_memory(self) -> None:
        """An array at or over the threshold is sent as a shm reference and read back equal."""
        pool = ShmPool(segment_bytes=1 << 20)
        image = np.arange(64 * 64 * 3, dtype=np.uint8).reshape(64, 64, 3)
        encoder = Encoder(shm_threshold=1024, pool=pool)
        event = Event(kind=Kind.IMAGE, scope="global", payload=image)
        blob = encoder.encode(Batch(1, [row_of(event)]))
        back = Decoder(ShmReader()).decode(blob)
        pool.close()

        assert len(blob) < image.nbytes
        assert 1 == len(encoder.refs)
        assert np.array_equal(image, events_of(back.rows)[0].payload)


def _metric(step: int, **fields: object) -> Event:
    return Event(kind=Kind.METRIC, scope="global", payload={"x": 1.0}, step=step, **fields)


class TestBatchColumns:
    def test_shared_fields_travel_once(self) -> None:
        """A field every event of a batch shares is sent as one bare value, not a column."""
        events = [_metric(i, logger="l", pid=7, filepath="f.py", lineno=3) for i in range(50)]
        body = msgpack.unpackb(Encoder().encode(Batch(1, list(map(row_of, events)))))[1]

        assert [1, 50, "metric", "global"] == body[:4]
        assert ["l", 7, "f.py", 3] == body[8:12]
        assert list(range(50)) == body[6]

    def test_equal_values_of_different_types_are_not_folded(self) -> None:
        """1 and True compare equal but keep their own types across the wire."""
        events = [_metric(0, lineno=1), _metric(1, lineno=True)]
        back = Decoder().decode(Encoder().encode(Batch(1, list(map(row_of, events)))))

        assert [int, int] == [type(e.lineno) for e in events_of(back.rows)]
        assert [1, 1] == [e.lineno for e in events_of(back.rows)]

    def test_int_timestamp_is_converted_not_refused(self) -> None:
        """A timestamp sent as an int arrives as a float instead of closing the connection."""
        back = Decoder().decode(Encoder().encode(Batch(1, [row_of(_metric(0, timestamp=5))])))

        assert 5.0 == events_of(back.rows)[0].timestamp
        assert float is type(events_of(back.rows)[0].timestamp)

    def test_column_of_the_wrong_length_is_a_frame_error(self) -> None:
        """A column with fewer values than the batch count is refused with FrameError."""
        body = msgpack.unpackb(Encoder().encode(Batch(1, [row_of(_metric(0)), row_of(_metric(1))])))
        body[1][6] = [0]
        with pytest.raises(FrameError, match="'step' has 1 values for 2 events"):
            Decoder().decode(msgpack.packb(body))

    def test_extra_that_is_not_a_map_is_a_frame_error(self) -> None:
        """An ``extra`` column holding a non-map is refused with FrameError."""
        body = msgpack.unpackb(Encoder().encode(Batch(1, [row_of(_metric(0))])))
        body[1][12] = ["not a map"]
        with pytest.raises(FrameError, match="'extra'"):
            Decoder().decode(msgpack.packb(body))


class TestHostileInput:
    @settings(max_examples=500)
    @given(st.binary(max_size=500))
    def test_any_bytes_decode_or_raise_frame_error(self, data: bytes) -> None:
        """Arbitrary bytes give a message or FrameError; never another exception, never code."""
        try:
            Decoder().decode(data)
        except FrameError:
            pass

    @given(_messages, st.data())
    def test_corrupted_messages_decode_or_raise_frame_error(self, message, data) -> None:
        """Flipping bytes of a valid message gives a message or FrameError."""
        blob = bytearray(Encoder().encode(message))
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(blob) - 1))
            blob[i] = data.draw(st.integers(0, 255))
        try:
            Decoder().decode(bytes(blob))
        except FrameError:
            pass

    def test_object_dtype_array_is_refused(self) -> None:
        """An inline array claiming dtype 'O' is a FrameError, never unpickled."""
        header = msgpack.packb(("|O", [1]))
        ext = msgpack.ExtType(1, len(header).to_bytes(2, "big") + header + b"\0" * 8)
        blob = msgpack.packb(
            [1, [1, [["metric", "g", ext, None, None, 0.0, "", 0, None, None, {}]]]]
        )
        with pytest.raises(FrameError, match="not allowed"):
            Decoder().decode(blob)

    def test_shm_reference_without_reader_is_refused(self) -> None:
        """A shm reference arriving where no reader is configured is a FrameError."""
        ext = msgpack.ExtType(2, msgpack.packb(["goggles_io-0-1-0", 0, 8, "<f8", [1]]))
        with pytest.raises(FrameError, match="shared-memory"):
            Decoder().decode(msgpack.packb([4, [1, True, ext]]))

    def test_unencodable_payload_raises_type_error_naming_the_type(self) -> None:
        """An arbitrary object in a payload is refused on the producer side, naming its type."""
        event = Event(kind=Kind.TEXT, scope="global", payload=object())
        with pytest.raises(TypeError, match="'object'"):
            Encoder().encode(Batch(1, [row_of(event)]))
