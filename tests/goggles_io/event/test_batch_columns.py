"""A batch read as checked columns (ADR 0086): the events built from them are the events of the
rows ``decode`` gives, bit for bit; ``uniform`` names the one scope, kind and level a batch
shares; hostile bytes raise FrameError exactly where ``decode`` raises it."""

from __future__ import annotations

import math
from typing import Any

import msgpack
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from goggles_io._event.codec import Ack, Batch, Decoder, Encoder
from goggles_io._event.columns import BatchColumns
from goggles_io._event.records import Event
from goggles_io._event.rows import events_of, row_of
from goggles_io.exceptions import FrameError

_numbers = st.one_of(st.integers(-(2**63), 2**63 - 1), st.floats(), st.just(-0.0))
_extras = st.none() | st.dictionaries(
    st.text(max_size=4), _numbers | st.text(max_size=4), max_size=2
)
_metric = st.tuples(
    st.just("metric"),
    st.sampled_from(["global", "train", "train.a"]),
    st.sampled_from(["loss", "x"]),
    st.none(),
    st.none() | st.integers(0, 2**40),
    st.floats(0, 2e9),
    st.sampled_from(["bench", ""]),
    st.sampled_from([1234, 7]),
    st.none() | st.just("/x/train.py"),
    st.none() | st.sampled_from([3, 207]),
    _extras,
    st.none() | st.floats(allow_nan=False),
    _numbers,
    st.sampled_from(["", "host:1:ab"]),
    st.integers(0, 2**40),
)
_log = st.tuples(
    st.just("log"),
    st.sampled_from(["global", "train"]),
    st.text(max_size=12),
    st.sampled_from([10, 20, 40]),
    st.none(),
    st.floats(0, 2e9),
    st.just("bench"),
    st.just(7),
    st.none(),
    st.none(),
    _extras,
    st.none(),
    st.none(),
    st.just(""),
    st.just(0),
)
_rows = st.lists(_metric, min_size=1, max_size=10) | st.lists(_metric | _log, max_size=10)
_same = st.tuples(
    _metric, st.integers(1, 40)
).map(  # one logger's batch: everything folds
    lambda one: [(*one[0][:4], i, *one[0][5:14], 0) for i in range(one[1])]
)


def _exact(value: Any) -> Any:
    if type(value) is float:
        return ("float", "nan" if math.isnan(value) else value.hex())
    if type(value) is dict:
        return ("dict", sorted((k, _exact(v)) for k, v in value.items()))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    return (type(value).__name__, value)


def _fields(events: list[Event]) -> list[list[Any]]:
    return [[_exact(field) for field in row_of(event)] for event in events]


@settings(max_examples=300)
@given(_rows | _same, st.booleans(), st.sampled_from(["", "7-ab"]))
def test_events_from_columns_are_the_events_of_the_rows(
    rows: list[tuple[Any, ...]], redelivered: bool, producer: str
) -> None:
    blob = Encoder().encode(Batch(3, rows, redelivered, producer, 1 if producer else 0))
    found = Decoder().decode_columns(blob)
    expected = Decoder().decode(blob)

    assert type(found) is BatchColumns
    assert type(expected) is Batch
    assert (3, len(rows), redelivered) == (found.seq, found.n, found.redelivered)
    assert _fields(events_of(expected.rows)) == _fields(events_of(zip(*found.columns, strict=True)))
    shared = {(row[1], row[0], row[3]) for row in rows}
    assert found.uniform == (shared.pop() if len(shared) == 1 else None)


def test_an_array_payload_and_extras_come_through_the_columns() -> None:
    image = np.arange(12, dtype=np.uint8).reshape(3, 4)
    rows = [
        ("image", "cam", image, None, 1, 5.0, "l", 7, None, None, {"k": 1}, None, None, "", 0),
        ("image", "cam", image, None, 2, 6.0, "l", 7, None, None, None, None, None, "", 0),
    ]
    found = Decoder().decode_columns(Encoder().encode(Batch(1, rows)))
    events = events_of(zip(*found.columns, strict=True))

    assert ("cam", "image", None) == found.uniform
    assert _fields(events) == _fields(events_of(rows))
    assert events[1].extra == {} and events[1].extra is not events[0].extra


@settings(max_examples=500)
@given(st.binary(max_size=200) | st.builds(lambda b: b"\x92\x01" + b, st.binary(max_size=120)))
def test_hostile_bytes_fail_exactly_where_decode_fails(blob: bytes) -> None:
    """Random bytes (and random batch bodies): ``decode_columns`` refuses with FrameError
    whenever ``decode`` does not give a batch, and never raises anything else."""
    try:
        decoded = Decoder().decode(blob)
    except FrameError:
        decoded = None
    try:
        columns: BatchColumns | None = Decoder().decode_columns(blob)
    except FrameError:
        columns = None
    assert (columns is None) == (type(decoded) is not Batch)


def test_a_message_that_is_no_batch_is_refused() -> None:
    blob = Encoder().encode(Ack(5))
    try:
        Decoder().decode_columns(blob)
    except FrameError as exc:
        assert "not a batch" in str(exc)
    else:
        raise AssertionError("an Ack read as a batch's columns")
    unknown = msgpack.packb([99, []])
    try:
        Decoder().decode_columns(unknown)
    except FrameError as exc:
        assert "unknown message tag 99" in str(exc)
    else:
        raise AssertionError("an unknown tag read as a batch's columns")
