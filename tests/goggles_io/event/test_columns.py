"""The one batch form (ADR 0071): rows travel as columns, a one-value metric as its name and
value, and read back as the same rows; malformed bodies only ever raise FrameError. (These were
tag 5's tests, ADR 0051: that form is now the only one.)"""

from __future__ import annotations

import math
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goggles_io import Event, Kind
from goggles_io._event.codec import Batch, Decoder, Encoder
from goggles_io._event.columns import _folded
from goggles_io._event.rows import SLOTS, events_of, row_of
from goggles_io.exceptions import FrameError

_TAG = 1  # a Batch: the one batch form

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
    st.just(""),
    st.just(0),
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
    return [_exact(field) for field in row_of(event)]


def _tag_and_body(blob: bytes) -> tuple[int, list[Any]]:
    tag, body = msgpack.unpackb(blob, strict_map_key=False)
    return tag, body


class TestRoundTrip:
    @settings(max_examples=300)
    @given(_batches, st.booleans(), st.integers(0, 2**40))
    def test_scalar_rows_read_back_as_their_events(self, rows, redelivered, seq) -> None:
        """decode(encode(rows)) is the batch of the events the rows stand for, bit for bit."""
        blob = Encoder().encode(Batch(seq, rows, redelivered))
        back = Decoder().decode(blob)

        assert _TAG == _tag_and_body(blob)[0]
        assert type(back) is Batch
        assert (seq, redelivered) == (back.seq, back.redelivered)
        assert [_exact(list(row)) for row in rows] == [_exact(list(row)) for row in back.rows]
        assert [_fields(e) for e in events_of(rows)] == [_fields(e) for e in events_of(back.rows)]

    def test_shared_fields_travel_once_and_varying_ones_as_columns(self) -> None:
        """Every column the rows share is one bare value; steps and timestamps stay columns."""
        rows = [
            ("metric", "global", "loss", None, i, 100.0 + i, "l", 7, "f.py", 3, None, None, 0.5,
             "", 0)
            for i in range(50)
        ]  # fmt: skip
        tag, body = _tag_and_body(Encoder().encode(Batch(1, rows)))

        assert _TAG == tag
        assert 2 + SLOTS == len(body)
        assert [1, 50, "metric", "global", "loss", None] == body[:6]
        assert list(range(50)) == body[6]
        assert ["l", 7, "f.py", 3, None, None, 0.5, "", 0] == body[8:]

    def test_a_producers_numbering_is_its_first_sequence(self) -> None:
        """Numbered at send (ADR 0057): the producer once and the first sequence; each row
        reads back with its own."""
        rows = [_row(i) for i in range(3)]
        _, body = _tag_and_body(Encoder().encode(Batch(1, rows, False, "p-1", 1 << 20)))
        back = Decoder().decode(Encoder().encode(Batch(1, rows, False, "p-1", 1 << 20))).rows
        events = events_of(back)

        assert ["p-1", 1 << 20] == body[-2:]
        assert [("p-1", (1 << 20) + i) for i in range(3)] == [(e.producer, e.seq) for e in events]

    def test_equal_values_of_different_types_or_signs_are_not_folded(self) -> None:
        """1, 1.0 and True compare equal, as do 0.0 and -0.0: each keeps its own type and sign."""
        base = ("metric", "global", "x", None, 0, 1.0, "l", 7, None, None, None, None)
        for values in ([1, 1.0], [0.0, -0.0], [-0.0, 0.0]):
            rows = [(*base, value, "", 0) for value in values]
            back = events_of(Decoder().decode(Encoder().encode(Batch(1, rows))).rows)

            assert [_exact(v) for v in values] == [_exact(e.payload["x"]) for e in back]

    def test_each_event_gets_its_own_empty_extra(self) -> None:
        """A nil extra becomes a fresh map per event, never one map shared by all."""
        row = ("metric", "global", "x", None, 0, 1.0, "l", 7, None, None, None, None, 2.0, "", 0)
        events = events_of(Decoder().decode(Encoder().encode(Batch(1, [row, row]))).rows)

        assert [{}, {}] == [e.extra for e in events]
        assert events[0].extra is not events[1].extra
        assert events[0].payload is not events[1].payload

    def test_a_payload_column_of_text_around_arrays_is_not_folded(self) -> None:
        """Text, then an array, then the same text: the types decide before ``==`` (an array's
        ``==`` is not a truth value), and the column travels as it is."""
        line = Event(Kind.LOG, "global", "same", 20, None, 1.0, "l", 7)
        image = Event(Kind.IMAGE, "global", np.zeros((2, 2), dtype=np.uint8), None, 1, 1.0, "l", 7)
        events = [line, image, line]
        back = Decoder().decode(Encoder().encode(Batch(1, [row_of(e) for e in events])))

        assert events == events_of(back.rows)

    def test_text_folds_by_equality_and_a_str_subclass_arrives_as_the_same_str(self) -> None:
        """Text columns fold by one count (ADR 0076): a str subclass equal to the others folds,
        and arrives as the plain str msgpack would have sent for it anyway."""

        class Name(str):
            pass

        rows = [_row(0), (*_row(1)[:6], Name("l"), *_row(1)[7:]), _row(2)]
        _, body = _tag_and_body(Encoder().encode(Batch(1, rows)))
        back = events_of(Decoder().decode(Encoder().encode(Batch(1, rows))).rows)

        assert "l" == body[8]
        assert [str, str, str] == [type(e.logger) for e in back]

    def test_a_column_whose_equality_is_no_truth_value_travels_as_it_is(self) -> None:
        """A nil or text column holding an array (``==`` gives an array): not folded, no raise;
        the payload column compares types first (no ``==`` on the array at all)."""
        arr = np.array(["l", "l"])
        nils, text = (None, arr, None), ("l", arr, "l")
        assert _folded(nils, 3) is nils
        assert _folded(text, 3) is text
        one = ("l", np.array(["l"]), "l")  # a one-element array's ``==`` is a truth value
        assert _folded(one, 3, exact=True) is one

    def test_a_batch_mixing_metrics_and_other_events_is_one_form(self) -> None:
        """A one-value metric, the same as a map and a log line travel in one batch, one form."""
        row = ("metric", "global", "x", None, 0, 1.0, "l", 7, None, None, None, None, 2.0, "", 0)
        line = Event(Kind.LOG, "global", "hello", 20, None, 1.0, "l", 7)
        rows = [row, *map(row_of, events_of([row])), row_of(line)]
        blob = Encoder().encode(Batch(1, rows))
        back = Decoder().decode(blob)

        assert _TAG == _tag_and_body(blob)[0]
        assert [*events_of([row, row]), line] == events_of(back.rows)


def _row(i: int) -> tuple[Any, ...]:
    return ("metric", "global", "x", None, i, 1.0 + i, "l", 7, None, None, None, None, 0.5 * i,
            "", 0)  # fmt: skip


def _body(n: int = 2) -> list[Any]:
    rows = [_row(i) for i in range(n)]
    return _tag_and_body(Encoder().encode(Batch(1, rows)))[1]


class TestHostileInput:
    @pytest.mark.parametrize(
        ("index", "value", "match"),
        [
            (6, [0], "'step' has 1 values for 2"),
            (14, ["high", "low"], "'value' holds a value of the wrong type"),
            (14, True, "'value' must be a list or one plain value"),
            (4, 5, "metrics named by strings"),
            (12, ["not a map", None], "'extra'"),
            (12, {}, "'extra' must be nil or a list"),
            (1, -1, "seq and count"),
            (15, "p" * 129, "at most 128"),
            (16, -5, "out of range"),
            (16, [1, -1], "out of range"),
            (2, "nope", "metric"),
        ],
    )
    def test_malformed_columns_are_frame_errors(self, index: int, value: Any, match: str) -> None:
        """A column of the wrong length or type is refused with FrameError."""
        body = _body()
        body[index] = value
        with pytest.raises(FrameError, match=match):
            Decoder().decode(msgpack.packb([_TAG, body]))

    def test_a_body_of_the_wrong_shape_is_a_frame_error(self) -> None:
        """Too few columns, or a redelivered mark that is not true, is refused."""
        for body in (_body()[:-1], [*_body(), False], "nope"):
            with pytest.raises(FrameError):
                Decoder().decode(msgpack.packb([_TAG, body]))

    def test_a_count_without_a_column_to_bound_it_is_a_frame_error(self) -> None:
        """Every column bare and a count of millions: refused, not millions of events built."""
        body = _tag_and_body(Encoder().encode(Batch(1, [_row(1)] * 3)))[1]
        body[1] = 10**9
        with pytest.raises(FrameError, match="at most"):
            Decoder().decode(msgpack.packb([_TAG, body]))

    @settings(max_examples=300)
    @given(_batches, st.data())
    def test_corrupted_bodies_decode_or_raise_frame_error(self, rows, data) -> None:
        """Flipping bytes of a valid scalar batch gives a message or FrameError, nothing else."""
        blob = bytearray(Encoder().encode(Batch(1, rows)))
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(blob) - 1))
            blob[i] = data.draw(st.integers(0, 255))
        try:
            Decoder().decode(bytes(blob))
        except FrameError:
            pass
