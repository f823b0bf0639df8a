"""Queued events -> numbered batch frames under the frame size limit; what cannot go is counted.

A batch that encodes too big is split in halves; a batch with an unencodable value is retried
event by event, so one bad event costs only itself. A single event still over the frame limit
(e.g. a 70 MB log message) is dropped and counted like an unencodable one: the sender thread
must never die on it. An event whose array was staged in shared memory at the log call carries a
:class:`ShmRef`: a failed encoding frees only the slots the encoder itself took, and a dropped
event frees its staged slot.
"""

from __future__ import annotations

from collections.abc import Callable

from goggles_io._event.codec import Encoder, OutBatch
from goggles_io._event.records import ROW_PAYLOAD, Event, Row, ShmRef
from goggles_io._transport.framing import DEFAULT_MAX_FRAME_BYTES, encode_frame

__all__ = ["Batcher", "Frame", "Sendable", "payload_of"]

# (seq, frame bytes, the events it carries, shm slots the frame points at): the client keeps the
# events until the host acknowledges the frame, to send them again to the next host (ADR 0030).
# The client's events are :class:`Event` objects or queued rows (``records.Row``).
Sendable = Event | Row
Frame = tuple[int, bytes, list[Sendable], list[ShmRef]]
_ENCODE_ERRORS = (TypeError, ValueError, OverflowError)


class Batcher:
    """Encode event lists into frames with increasing sequence numbers (one per connection's life)."""

    def __init__(
        self,
        release: Callable[[list[ShmRef]], None],
        on_unencodable: Callable[[Exception], None],
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        self.seq = 0
        self.encoder: Encoder | None = None  # replaced on every new connection
        self._release = release
        self._on_unencodable = on_unencodable
        self._max = max_frame_bytes

    def frames(
        self, events: list[Sendable], redelivered: bool = False, producer: str = "", first: int = 0
    ) -> list[Frame]:
        """Return the frames carrying ``events``; unencodable events are reported and left out.

        ``redelivered`` marks them as sent before to a host that died (ADR 0030); ``producer``
        and ``first`` number them (``first`` is the sequence of ``events[0]``, the next ones
        follow by one: ADR 0057). A frame's first event keeps its own number when the list is
        split, and an event left out leaves a gap: every event has the same number on every
        send.
        """
        encoder = self.encoder
        assert encoder is not None, "set Batcher.encoder once connected"
        encoder.refs = []
        encoder.created = []
        try:
            payload = encoder.encode(OutBatch(self.seq + 1, events, redelivered, producer, first))
        except _ENCODE_ERRORS:
            self._release(encoder.created)
            return self._one_by_one(events, encoder, redelivered, producer, first)
        if len(payload) > self._max:
            self._release(encoder.created)
            if len(events) == 1:
                size = f"{len(payload)!r} bytes"
                self._on_unencodable(ValueError(f"event of {size} exceeds the frame limit"))
                self._release(_staged(events))
                return []
            half = len(events) // 2
            later = first + half if producer else 0
            return self.frames(events[:half], redelivered, producer, first) + self.frames(
                events[half:], redelivered, producer, later
            )
        self.seq += 1
        return [(self.seq, encode_frame(payload, self._max), events, encoder.refs)]

    def _one_by_one(
        self, events: list[Sendable], encoder: Encoder, redelivered: bool, producer: str, first: int
    ) -> list[Frame]:
        """Leave out the events that cannot be encoded; the runs between them go as frames,
        each numbered from its own first event."""
        runs: list[tuple[int, list[Sendable]]] = []
        good: list[Sendable] = []
        for i, event in enumerate(events):
            encoder.refs = []
            encoder.created = []
            try:
                encoder.encode(OutBatch(0, [event]))
            except _ENCODE_ERRORS as exc:
                self._on_unencodable(exc)
                self._release(_staged([event]))
                good = []
            else:
                if not good:
                    runs.append((i, good))
                good.append(event)
            self._release(encoder.created)
        frames: list[Frame] = []
        for at, run in runs:
            frames += self.frames(run, redelivered, producer, first + at if producer else 0)
        return frames


def payload_of(event: Sendable) -> object:
    """The payload slot of an event or of a queued row (a scalar row's holds its metric name):
    where an array staged at the log call is found."""
    if isinstance(event, tuple):
        return event[ROW_PAYLOAD]
    return event.payload


def _staged(events: list[Sendable]) -> list[ShmRef]:
    """The shared-memory slots that events staged at their log call hold."""
    payloads = map(payload_of, events)
    return [p for p in payloads if type(p) is ShmRef]
