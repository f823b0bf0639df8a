"""Frames large and small, and the budget large frames share (issue 41, item 6; ADR 0062)."""

from __future__ import annotations

import os
import struct
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goggles_io._transport.framing import (
    MAGIC,
    SMALL_FRAME_BYTES,
    VERSION,
    FrameBudget,
    FrameDecoder,
    FrameError,
    encode_frame,
)
from support import wait_until

_MIB = 1 << 20
_sizes = st.one_of(
    st.integers(0, 300),
    st.integers(SMALL_FRAME_BYTES - 8, SMALL_FRAME_BYTES + 8),
    st.integers(SMALL_FRAME_BYTES, 3 * SMALL_FRAME_BYTES),
)


def _rss_anon_kib() -> int:
    with open(f"/proc/{os.getpid()}/status") as fh:
        for line in fh:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    raise AssertionError("no RssAnon in /proc/self/status")


def _header(length: int) -> bytes:
    return struct.pack(">BBI", MAGIC, VERSION, length)


class TestLargeAndSmallFrames:
    @settings(max_examples=60, deadline=None)
    @given(st.lists(_sizes, min_size=1, max_size=6), st.integers(1, 70_000), st.booleans())
    def test_frames_survive_any_split_and_give_their_budget_back(
        self, sizes: list[int], chunk: int, direct: bool
    ) -> None:
        """Payloads of every size (around and past the small-frame limit) come back in order,
        fed in any chunks or read straight into the decoder's space; afterwards the budget
        holds nothing."""
        payloads = [os.urandom(n) for n in sizes]
        stream = b"".join(map(encode_frame, payloads))
        budget = FrameBudget(4 * SMALL_FRAME_BYTES)
        decoder = FrameDecoder(budget=budget)
        out: list[bytes] = []
        pos = 0
        while pos < len(stream):
            if direct:  # as the host reads: recv_into(space())
                room = decoder.space()
                k = min(len(room), chunk, len(stream) - pos)
                room[:k] = stream[pos : pos + k]
                got = decoder.received(k)
            else:
                k = min(chunk, len(stream) - pos)
                got = decoder.feed(stream[pos : pos + k])
            out += [bytes(p) for p in got]
            pos += k
        decoder.close()

        assert payloads == out
        assert 0 == budget.held

    def test_a_half_sent_frame_holds_what_was_sent(self) -> None:
        """A header claiming 60 MiB and 1 MiB of its body: the process holds ~1 MiB more, not
        60 (the frame's mapping gets pages only as bytes arrive)."""
        decoder = FrameDecoder()
        before = _rss_anon_kib()
        assert [] == decoder.feed(_header(60 * _MIB) + bytes(_MIB))
        grew_kib = _rss_anon_kib() - before
        pending = decoder.pending_bytes
        decoder.discard()

        assert _MIB == pending
        assert grew_kib < 8 * 1024, grew_kib

    def test_a_length_over_the_limit_is_refused_from_its_header(self) -> None:
        """Checked before anything is kept or taken from the budget."""
        budget = FrameBudget(_MIB)
        with pytest.raises(FrameError, match="exceeds"):
            FrameDecoder(max_frame_bytes=_MIB, budget=budget).feed(_header(_MIB + 1))
        assert 0 == budget.held

    def test_stream_ending_inside_a_large_frame_is_an_error_and_gives_back(self) -> None:
        budget = FrameBudget(_MIB)
        decoder = FrameDecoder(budget=budget)
        decoder.feed(_header(100_000) + bytes(10))
        assert 100_000 == budget.held
        with pytest.raises(FrameError, match="stream ended inside a frame"):
            decoder.close()
        assert 0 == budget.held


class TestSharedBudget:
    def test_a_large_frame_waits_while_others_hold_the_budget(self) -> None:
        """Two connections share 100 KiB: the second's 80 KiB frame waits until the first's
        payload was handled (its decoder's next call), then goes."""
        budget = FrameBudget(100 * 1024)
        first, second = FrameDecoder(budget=budget), FrameDecoder(budget=budget)
        big = os.urandom(80 * 1024)
        [got] = first.feed(encode_frame(big))
        results: list[list[bytes]] = []
        thread = threading.Thread(
            target=lambda: results.append([bytes(p) for p in second.feed(encode_frame(big))])
        )
        thread.start()
        try:
            wait_until(lambda: thread.is_alive(), what="the second reader started")
            held_while_waiting = budget.held
            alive_while_held = thread.is_alive()
            assert bytes(got) == big
            first.feed(b"")  # the first payload is handled: its length goes back
            wait_until(lambda: results, what="the second frame received")
        finally:
            budget.close()
            thread.join(10)

        assert (80 * 1024, True) == (held_while_waiting, alive_while_held)
        assert [[big]] == results

    def test_closing_the_budget_wakes_a_waiter_with_frame_error(self) -> None:
        budget = FrameBudget(10)
        budget.take(10)
        errors: list[Exception] = []

        def wait() -> None:
            try:
                budget.take(5)
            except FrameError as exc:
                errors.append(exc)

        thread = threading.Thread(target=wait)
        thread.start()
        budget.close()
        thread.join(10)

        assert 1 == len(errors)
