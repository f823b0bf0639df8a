"""Events -> frames: size limit, splitting, and events that cannot go (real encoder, real socket host)."""

from __future__ import annotations

import time

import pytest

import goggles_io as gg
from goggles_io import Event, Kind
from goggles_io._event.codec import Batch, Decoder, Encoder
from goggles_io._event.rows import Row, events_of, row_of
from goggles_io._transport.client.batching import Batcher
from goggles_io._transport.framing import FrameDecoder
from goggles_io.testing import MemoryHandler


def _event(payload: object, step: int = 0) -> Row:
    """A log line's row, as the client queues it."""
    event = Event(kind=Kind.LOG, scope="global", payload=payload, step=step, timestamp=time.time())
    return row_of(event)


def _batcher(max_frame_bytes: int) -> tuple[Batcher, list[Exception]]:
    errors: list[Exception] = []
    batcher = Batcher(lambda refs: None, errors.append, max_frame_bytes=max_frame_bytes)
    batcher.encoder = Encoder()
    return batcher, errors


def _decoded(frames: list) -> list[list[Event]]:
    """Each frame's events."""
    out = []
    for _, frame, _, _ in frames:
        (payload,) = FrameDecoder().feed(frame)
        batch = Decoder().decode(payload)
        assert type(batch) is Batch
        out.append(events_of(batch.rows))
    return out


class TestBatcher:
    def test_batch_over_the_limit_is_split_and_numbered_in_order(self) -> None:
        """A batch too big for one frame goes as several, with increasing seq, nothing lost."""
        batcher, errors = _batcher(max_frame_bytes=4096)
        frames = batcher.frames([_event(f"{i:03} " + "x" * 200, step=i) for i in range(64)])
        batches = _decoded(frames)

        assert len(frames) > 1
        assert list(range(1, len(frames) + 1)) == [seq for seq, _, _, _ in frames]
        assert list(range(64)) == [e.step for b in batches for e in b]
        assert [] == errors

    def test_single_event_over_the_limit_is_dropped_and_reported(self) -> None:
        """One event bigger than a frame is reported and left out; its neighbours still go."""
        batcher, errors = _batcher(max_frame_bytes=4096)
        frames = batcher.frames([_event("a", 0), _event("x" * 10_000, 1), _event("b", 2)])

        assert [0, 2] == [e.step for b in _decoded(frames) for e in b]
        assert 1 == len(errors)
        assert "exceeds the frame limit" in str(errors[0])

    def test_unencodable_event_is_dropped_and_reported(self) -> None:
        """An event holding a value msgpack cannot carry is reported; the rest of the batch goes."""
        batcher, errors = _batcher(max_frame_bytes=1 << 20)
        frames = batcher.frames([_event("a", 0), _event(object(), 1), _event("b", 2)])

        assert [0, 2] == [e.step for b in _decoded(frames) for e in b]
        assert 1 == len(errors)
        assert isinstance(errors[0], TypeError)


class TestOversizedEventOverTheSocket:
    def test_sender_keeps_going_after_an_event_over_the_frame_limit(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A log message over the 64 MiB frame limit is counted as dropped; later events still arrive."""
        monkeypatch.setenv("GOGGLES_TRANSPORT", "socket")
        monkeypatch.setenv("GOGGLES_DEDICATED_HOST", "0")
        monkeypatch.setenv("GOGGLES_QUEUE_BYTES", str(256 * 1024 * 1024))  # past the frame limit
        gg.attach(MemoryHandler(name="mem"), scopes=["global"])
        log = gg.get_logger("big")
        log.info("before")
        log.info("x" * (65 * 1024 * 1024))
        log.info("after")
        flushed = gg.flush(timeout_s=60)
        client = gg.get_bus()
        host_handler = client.elector.host.bus.handlers["mem"]
        messages = host_handler.messages()

        assert flushed
        assert ["before", "after"] == messages
        assert 1 == client.unencodable
