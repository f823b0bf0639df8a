"""A client batch of scalar rows travels as names and values (ADR 0051) and reads back as the
same events the general batch form gives; malformed bodies only ever raise FrameError."""

from __future__ import annotations

import math
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goggles_io import Event
from goggles_io._event.codec import Batch, Decoder, Encoder, OutBatch
from goggles_io._event.records import SCALAR_ROW_LEN, event_row, row_event
from goggles_io._event.scalar_columns import SCALARS_TAG
from goggles_io.exceptions import FrameError

_extra_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.lists(st.text(max_size=4), max_size=3),
)
_values = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(),  # NaN and +-inf too: the logger keeps them (and lists them in extra)
    st.sampled_from([0.0, -0.0, 1, 1.0, 0.5]),
)
_rows = st.tuples(
    st.just("metric"),
    st.sampled_from(["global", "train"]) | st.text(min_size=1, max_size=6),
    st.sampled_from(["loss", "reward"]) | st.text(min_size=1, max_size=6),
    st.none(),
    st.none() | st.integers(0, 2**40),
    st.floats(0, 2e9),
    st.sampled_from(["bench", ""]),
    st.sampled_from([1234, 7]),
    st.none() | st.just("/x/train.py"),
    st.none() | st.sampled_from([3, 207]),
    st.none() | st.dictionaries(st.text(max_size=6), _extra_values, min_size=1, max_size=3),
    st.none() | st.floats(allow_nan=False) | st.just(0.0),
    _values,
)
_batches = st.lists(_rows, min_size=1, max_size=12) | st.lists(_rows, min_size=1, max_size=1).map(
    lambda one: one * 7
)  # identical rows: every column that can fold does


def _exact(value: Any) -> Any:
    """A value compared by its exact type and bits (NaN equal to NaN, -0.0 unlike 0.0)."""
    if type(value) is float:
        return ("float", "nan" if math.isnan(value) else value.hex())
    if type(value) is dict:
        return ("dict", sorted((k, _exact(v)) for k, v in value.items()))
    if type(value) is list:
        return ("list", [_exact(v) for v in value])
    return (type(value).__name__, value)


def _fields(event: Event) -> list[Any]:
    return [_exact(field) for field in event_row(event)]


def _tag_and_body(blob: bytes) -> tuple[int, list[Any]]:
    tag, body = msgpack.unpackb(blob, strict_map_key=False)
    return tag, body


class TestRoundTrip:
    @settings(max_examples=300)
    @given(_batches, st.booleans(), st.integers(0, 2**40))
    def test_scalar_rows_read_back_as_their_events(self, rows, redelivered, seq) -> None:
        """decode(encode(rows)) is the batch of the events the rows stand for, bit for bit."""
        blob = Encoder().encode(OutBatch(seq, rows, redelivered))
        back = Decoder().decode(blob)

        assert SCALARS_TAG == _tag_and_body(blob)[0]
        assert type(back) is Batch
        assert (seq, redelivered) == (back.seq, back.redelivered)
        assert [_fields(row_event(row)) for row in rows] == [_fields(e) for e in back.events]

    def test_shared_fields_travel_once_and_varying_ones_as_columns(self) -> None:
        """Every column the rows share is one bare value; steps and timestamps stay columns."""
        rows = [
            ("metric", "global", "loss", None, i, 100.0 + i, "l", 7, "f.py", 3, None, None, 0.5)
            for i in range(50)
        ]
        tag, body = _tag_and_body(Encoder().encode(OutBatch(1, rows)))

        assert SCALARS_TAG == tag
        assert 2 + SCALAR_ROW_LEN == len(body)
        assert [1, 50, "metric", "global", "loss", None] == body[:6]
        assert list(range(50)) == body[6]
        assert ["l", 7, "f.py", 3, None, None, 0.5] == body[8:]

    def test_equal_values_of_different_types_or_signs_are_not_folded(self) -> None:
        """1, 1.0 and True compare equal, as do 0.0 and -0.0: each keeps its own type and sign."""
        base = ("metric", "global", "x", None, 0, 1.0, "l", 7, None, None, None, None)
        for values in ([1, 1.0], [0.0, -0.0], [-0.0, 0.0]):
            rows = [(*base, value) for value in values]
            back = Decoder().decode(Encoder().encode(OutBatch(1, rows))).events

            assert [_exact(v) for v in values] == [_exact(e.payload["x"]) for e in back]

    def test_each_event_gets_its_own_empty_extra(self) -> None:
        """A nil extra becomes a fresh map per event, never one map shared by all."""
        row = ("metric", "global", "x", None, 0, 1.0, "l", 7, None, None, None, None, 2.0)
        events = Decoder().decode(Encoder().encode(OutBatch(1, [row, row]))).events

        assert [{}, {}] == [e.extra for e in events]
        assert events[0].extra is not events[1].extra
        assert events[0].payload is not events[1].payload

    def test_a_batch_mixing_rows_and_events_goes_in_the_general_form(self) -> None:
        """Only a batch of scalar rows takes the names-and-values form."""
        row = ("metric", "global", "x", None, 0, 1.0, "l", 7, None, None, None, None, 2.0)
        blob = Encoder().encode(OutBatch(1, [row, row_event(row)]))
        back = Decoder().decode(blob)

        assert 1 == _tag_and_body(blob)[0]
        assert [row_event(row), row_event(row)] == back.events


def _row(i: int) -> tuple[Any, ...]:
    return ("metric", "global", "x", None, i, 1.0 + i, "l", 7, None, None, None, None, 0.5 * i)


def _body(n: int = 2) -> list[Any]:
    rows = [_row(i) for i in range(n)]
    return _tag_and_body(Encoder().encode(OutBatch(1, rows)))[1]


class TestHostileInput:
    @pytest.mark.parametrize(
        ("index", "value", "match"),
        [
            (6, [0], "'step' has 1 values for 2"),
            (14, ["high", "low"], "'value' holds a value of the wrong type"),
            (14, True, "'value' holds a value of the wrong type"),
            (4, 5, "'name' holds a value of the wrong type"),
            (12, ["not a map", None], "'extra'"),
            (12, {}, "'extra' must be nil or a list"),
            (1, -1, "seq and count"),
        ],
    )
    def test_malformed_columns_are_frame_errors(self, index: int, value: Any, match: str) -> None:
        """A column of the wrong length or type is refused with FrameError."""
        body = _body()
        body[index] = value
        with pytest.raises(FrameError, match=match):
            Decoder().decode(msgpack.packb([SCALARS_TAG, body]))

    def test_a_body_of_the_wrong_shape_is_a_frame_error(self) -> None:
        """Too few columns, or a redelivered mark that is not true, is refused."""
        for body in (_body()[:-1], [*_body(), False], "nope"):
            with pytest.raises(FrameError):
                Decoder().decode(msgpack.packb([SCALARS_TAG, body]))

    def test_a_count_without_a_column_to_bound_it_is_a_frame_error(self) -> None:
        """Every column bare and a count of millions: refused, not millions of events built."""
        body = _tag_and_body(Encoder().encode(OutBatch(1, [_row(1)] * 3)))[1]
        body[1] = 10**9
        with pytest.raises(FrameError, match="at most"):
            Decoder().decode(msgpack.packb([SCALARS_TAG, body]))

    @settings(max_examples=300)
    @given(_batches, st.data())
    def test_corrupted_bodies_decode_or_raise_frame_error(self, rows, data) -> None:
        """Flipping bytes of a valid scalar batch gives a message or FrameError, nothing else."""
        blob = bytearray(Encoder().encode(OutBatch(1, rows)))
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(blob) - 1))
            blob[i] = data.draw(st.integers(0, 255))
        try:
            Decoder().decode(bytes(blob))
        except FrameError:
            pass
