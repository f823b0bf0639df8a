"""The decoder checks every length and count before it allocates (issue 41, item 6; ADR 0062).

In-process properties of :class:`~goggles_io._event.codec.Decoder`: any bytes give a message or
:class:`FrameError`, and what decoding allocates (``tracemalloc``'s peak) stays within a budget
stated per frame: a few MiB for the events a batch may claim (at most
``MAX_BATCH_EVENTS``), plus a bounded factor of the frame's own bytes. The same decoder over a
real socket, with the host's resident set measured, is in
``tests/goggles_io/transport/test_hostile_bytes.py``.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings

from goggles_io._event.codec import Decoder, Encoder, Message
from goggles_io._event.messages import MAX_BATCH_EVENTS, Batch
from goggles_io.exceptions import FrameError
from hostile_frames import BATCH_TAG, ISSUE_FRAME, TAG5_FRAME, payloads, row

_MIB = 1 << 20
# What one decode may allocate: the events a batch may claim (a row, ~200 bytes each; an Event
# and its maps were ~400) plus msgpack's objects, at most ~100 bytes per byte of the frame.
_EVENTS_BUDGET = MAX_BATCH_EVENTS * 512 + _MIB
_PER_BYTE = 100


@pytest.fixture(autouse=True)
def _traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def _decode_peak(payload: bytes) -> tuple[Message | FrameError, int]:
    """The message (or the FrameError) and the peak bytes allocated while decoding."""
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    try:
        result: Message | FrameError = Decoder().decode(payload)
    except FrameError as exc:
        result = exc
    return result, tracemalloc.get_traced_memory()[1] - start


def _within_budget(payload: bytes) -> Message | FrameError:
    result, peak = _decode_peak(payload)
    assert peak < _EVENTS_BUDGET + _PER_BYTE * len(payload), (peak, payload[:80])
    return result


def _scalar_body(n: int = 3) -> list[Any]:
    blob = Encoder().encode(Batch(1, [row(i) for i in range(n)]))
    body: list[Any] = msgpack.unpackb(blob)[1]
    return body


class TestCountsBeforeAllocation:
    @pytest.mark.parametrize("column", [2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16])
    def test_a_million_rows_in_63_bytes_are_refused_before_any_is_built(self, column: int) -> None:
        """Issue 41's frame: a million rows, every column bare but one empty list. Today's
        decoder built a million payload maps (~190 MiB) before it looked at the list."""
        body: list[Any] = [1, 1_000_000, "metric", "global", "x", None, 0, 1.5, "l", 7]
        body += [None, None, None, None, 0.5, "", 0]
        body[column] = []
        payload = msgpack.packb([BATCH_TAG, body])
        assert len(payload) < 64

        result, peak = _decode_peak(payload)

        assert isinstance(result, FrameError), result
        assert peak < _MIB, peak

    def test_the_issue_frame_is_63_bytes(self) -> None:
        """The shared strategies' copy of the frame is the one the issue measured (tag 5, gone:
        refused at once); in the one form it takes two more columns."""
        assert 63 == len(TAG5_FRAME)
        assert 67 == len(ISSUE_FRAME)
        for frame in (TAG5_FRAME, ISSUE_FRAME):
            result, peak = _decode_peak(frame[6:])
            assert isinstance(result, FrameError) and peak < _MIB, (result, peak)

    def test_a_batch_may_claim_at_most_max_batch_events(self) -> None:
        """A count above MAX_BATCH_EVENTS is refused, whatever its columns."""
        body = _scalar_body(1)
        body[1] = MAX_BATCH_EVENTS + 1
        body[6] = list(range(MAX_BATCH_EVENTS + 1))  # a real column of that length
        with pytest.raises(FrameError, match="at most"):
            Decoder().decode(msgpack.packb([BATCH_TAG, body]))
        general = msgpack.unpackb(Encoder().encode(Batch(1, [])))
        general[1][1] = MAX_BATCH_EVENTS + 1
        with pytest.raises(FrameError, match="at most"):
            Decoder().decode(msgpack.packb(general))

    def test_the_largest_batch_decodes_within_the_budget(self) -> None:
        """MAX_BATCH_EVENTS rows sharing every field (the costliest count per byte) are a valid
        batch, and decoding them stays within the stated budget."""
        body = _scalar_body(1)
        body[1] = MAX_BATCH_EVENTS
        body[6], body[14] = 5, 0.5  # every column bare
        result = _within_budget(msgpack.packb([BATCH_TAG, body]))

        assert type(result) is Batch and MAX_BATCH_EVENTS == len(result.rows)


class TestScalarKindsOnly:
    @pytest.mark.parametrize("kind", ["image", "log", "video", "artifact", "table", "nope"])
    def test_tag_5_rows_of_another_kind_are_refused(self, kind: str) -> None:
        """A scalar row is a metric: an ``image`` row with a number for a payload (accepted and
        acknowledged before, then an AttributeError in LocalStorageHandler) is a FrameError.
        (Tag 5 is gone, ADR 0071: the one form holds a scalar's value in a column of its own.)"""
        for column in (kind, ["metric", kind, "metric"]):
            body = _scalar_body(3)
            body[2] = column
            with pytest.raises(FrameError, match="metric"):
                Decoder().decode(msgpack.packb([BATCH_TAG, body]))


class TestFuzz:
    @settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
    @given(payloads())
    def test_any_bytes_give_a_message_or_frame_error_within_budget(self, payload: bytes) -> None:
        """Whatever the bytes, decoding returns a message or raises FrameError, and allocates
        no more than the budget; a batch it returns holds at most MAX_BATCH_EVENTS events."""
        result = _within_budget(payload)

        if type(result) is Batch:
            assert len(result.rows) <= MAX_BATCH_EVENTS
            # A row with a value (a scalar's) is a metric; tag 5 is refused whole.
            assert all(r[0] == "metric" for r in result.rows if r[12] is not None)
            assert payload[1] != 5
