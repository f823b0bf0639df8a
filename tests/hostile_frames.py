"""Hypothesis strategies for hostile input to the socket decoder (issue 41, item 6).

``payloads()``: what a frame may carry: random bytes, batch bodies (the one form, ADR 0071, and
the removed tag 5 of ADR 0051) with wild counts and columns (bare values, short, empty or
mismatched lists), and valid batches with a few bytes overwritten. ``streams()``: what a peer may write on a connection: those
payloads framed, garbage, headers claiming large frames that never arrive, a frame cut short.
"""

from __future__ import annotations

import struct
from typing import Any

import msgpack
from hypothesis import strategies as st

from goggles_io._event.codec import Batch, Encoder
from goggles_io._event.rows import SLOTS, events_of, row_of
from goggles_io._transport.framing import MAGIC, VERSION, encode_frame

__all__ = ["BATCH_TAG", "ISSUE_FRAME", "TAG5_FRAME", "payloads", "row", "streams"]

BATCH_TAG = 1  # the one batch form's message tag
_TAG5 = 5  # the second form's tag, removed (ADR 0071): now an unknown tag


def row(i: int) -> tuple[Any, ...]:
    """A scalar's row as the socket client queues it."""
    return ("metric", "global", "x", None, i, 1.0 + i, "l", 7, None, None, None, None, 0.5 * i,
            "", 0)  # fmt: skip


# Issue 41's frame body: a million rows, every column bare but ``extra``, an empty list. As the
# issue measured it (tag 5, 63 bytes framed), and in the one form (67 bytes: two more columns).
_ISSUE_BODY = [1, 1_000_000, "metric", "global", "reward", None, 0, 1.5, "l", 7]
TAG5_FRAME = encode_frame(msgpack.packb([_TAG5, [*_ISSUE_BODY, None, None, [], None, 0.5]]))
ISSUE_FRAME = encode_frame(
    msgpack.packb([BATCH_TAG, [*_ISSUE_BODY, None, None, [], None, 0.5, "", 0]])
)

_atoms = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(),
    st.text(max_size=6),
    st.binary(max_size=6),
    st.sampled_from(["metric", "image", "global", "x"]),
)
_columns = st.one_of(
    _atoms,
    st.lists(_atoms, max_size=6),
    st.integers(0, 8).map(lambda n: [{}] * n),
    st.just([]),
)
_counts = st.one_of(
    st.integers(0, 8), st.integers(-5, 2**64 - 1), st.sampled_from([10**6, 10**9, 8192, 8193])
)


@st.composite
def _bodies(draw: st.DrawFn) -> bytes:
    tag = draw(st.sampled_from([BATCH_TAG, _TAG5]))
    width = draw(st.sampled_from([SLOTS, SLOTS - 2, 12]))
    body: list[Any] = [draw(st.integers(0, 2**40)), draw(_counts)]
    body += [draw(_columns) for _ in range(width)]
    if draw(st.booleans()):
        body.append(draw(st.sampled_from([True, False, 1])))
    return msgpack.packb([tag, body], use_bin_type=True)


@st.composite
def _corrupted(draw: st.DrawFn) -> bytes:
    n = draw(st.integers(1, 20))
    if draw(st.booleans()):
        events: list[Any] = [row(i) for i in range(n)]
    else:
        events = [row_of(events_of([row(1)])[0])] * n  # its payload a map
    blob = bytearray(Encoder().encode(Batch(1, events)))
    for _ in range(draw(st.integers(1, 4))):
        blob[draw(st.integers(0, len(blob) - 1))] = draw(st.integers(0, 255))
    return bytes(blob)


@st.composite
def _inflated(draw: st.DrawFn) -> bytes:
    """A valid batch claiming a huge count, with a column or two swapped for an empty or short
    list or a bare value (the issue's frame is one of these)."""
    rows = [row(i) for i in range(draw(st.integers(1, 4)))]
    scalar = draw(st.booleans())
    events = rows if scalar else [row_of(events_of(rows)[0])]
    tag, body = msgpack.unpackb(Encoder().encode(Batch(1, events)))
    body[1] = draw(st.sampled_from([8193, 65_536, 65_537, 10**6, 2**31]))
    if scalar and draw(st.booleans()):  # names and values bare, as in the issue's frame
        body[4], body[14] = "x", 0.5
    for _ in range(draw(st.integers(1, 2))):
        at = draw(st.integers(2, len(body) - 1))
        body[at] = draw(st.sampled_from([[], [0], ["metric"], None, "x", 0.5]))
    return msgpack.packb([tag, body], use_bin_type=True)


def payloads() -> st.SearchStrategy[bytes]:
    """Frame payloads: random bytes, wild batch bodies, inflated counts, corrupted batches."""
    return st.one_of(st.binary(max_size=300), _bodies(), _inflated(), _corrupted())


def _header(length: int) -> bytes:
    return struct.pack(">BBI", MAGIC, VERSION, length)


def streams() -> st.SearchStrategy[bytes]:
    """What a peer may write before it closes: framed payloads, garbage, a header claiming up to
    4 GiB followed by a few bytes, a frame cut short."""
    framed = st.lists(payloads().map(encode_frame), min_size=1, max_size=3).map(b"".join)
    claims = st.tuples(st.integers(0, 2**32 - 1), st.binary(max_size=64)).map(
        lambda t: _header(t[0]) + t[1]
    )
    cut = st.tuples(payloads(), st.integers(1, 40)).map(lambda t: encode_frame(t[0])[: -t[1]])
    return st.one_of(
        framed,
        st.binary(min_size=1, max_size=200),
        claims,
        cut,
        st.sampled_from([ISSUE_FRAME, TAG5_FRAME]),
    )
