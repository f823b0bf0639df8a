"""Queued rows -> numbered batch frames under the frame size limit; what cannot go is counted.

A batch that encodes too big is split in halves; a batch with an unencodable value is retried
row by row, so one bad row costs only itself. A single row still over the frame limit (e.g. a
70 MB log message) is dropped and counted like an unencodable one: the sender thread must never
die on it. A row whose array was staged in shared memory at the log call carries a
:class:`ShmRef`: a failed encoding frees only the slots the encoder itself took, and a dropped
row frees its staged slot.
"""

from __future__ import annotations

from collections.abc import Callable

from goggles_io._event.codec import Batch, Encoder
from goggles_io._event.records import ShmRef
from goggles_io._event.rows import Row, RowRun, payload_of, run_rows
from goggles_io._transport.framing import DEFAULT_MAX_FRAME_BYTES, encode_frame

__all__ = ["Batcher", "Frame", "as_rows", "staged"]

# (seq, frame bytes, the rows it carries, shm slots the frame points at): the client keeps the
# rows until the host acknowledges the frame, to send them again to the next host (ADR 0030).
Frame = tuple[int, bytes, list[Row], list[ShmRef]]
_ENCODE_ERRORS = (TypeError, ValueError, OverflowError)


class Batcher:
    """Encode lists of rows into frames with increasing sequence numbers (one per connection's life)."""

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
        self, rows: list[Row], redelivered: bool = False, producer: str = "", first: int = 0
    ) -> list[Frame]:
        """Return the frames carrying ``rows``; unencodable rows are reported and left out.

        ``redelivered`` marks them as sent before to a host that died (ADR 0030); ``producer``
        and ``first`` number them (``first`` is the sequence of ``rows[0]``, the next ones
        follow by one: ADR 0057). A frame's first row keeps its own number when the list is
        split, and a row left out leaves a gap: every row has the same number on every
        send.
        """
        encoder = self.encoder
        assert encoder is not None, "set Batcher.encoder once connected"
        encoder.refs = []
        encoder.created = []
        try:
            payload = encoder.encode(Batch(self.seq + 1, rows, redelivered, producer, first))
        except _ENCODE_ERRORS:
            self._release(encoder.created)
            return self._one_by_one(as_rows(rows), encoder, redelivered, producer, first)
        if len(payload) > self._max:
            self._release(encoder.created)
            rows = as_rows(rows)
            if len(rows) == 1:
                size = f"{len(payload)!r} bytes"
                self._on_unencodable(ValueError(f"row of {size} exceeds the frame limit"))
                self._release(staged(rows))
                return []
            half = len(rows) // 2
            later = first + half if producer else 0
            return self.frames(rows[:half], redelivered, producer, first) + self.frames(
                rows[half:], redelivered, producer, later
            )
        self.seq += 1
        return [(self.seq, encode_frame(payload, self._max), rows, encoder.refs)]

    def _one_by_one(
        self, rows: list[Row], encoder: Encoder, redelivered: bool, producer: str, first: int
    ) -> list[Frame]:
        """Leave out the rows that cannot be encoded; the runs between them go as frames,
        each numbered from its own first row."""
        runs: list[tuple[int, list[Row]]] = []
        good: list[Row] = []
        for i, row in enumerate(rows):
            encoder.refs = []
            encoder.created = []
            try:
                encoder.encode(Batch(0, [row]))
            except _ENCODE_ERRORS as exc:
                self._on_unencodable(exc)
                self._release(staged([row]))
                good = []
            else:
                if not good:
                    runs.append((i, good))
                good.append(row)
            self._release(encoder.created)
        frames: list[Frame] = []
        for at, run in runs:
            frames += self.frames(run, redelivered, producer, first + at if producer else 0)
        return frames


def as_rows(rows: list[Row]) -> list[Row]:
    """``rows`` as row tuples: a scalar front's :class:`RowRun` is laid end to end (ADR 0088)."""
    return run_rows(rows) if type(rows) is RowRun else rows


def staged(rows: list[Row]) -> list[ShmRef]:
    """The shared-memory slots that rows staged at their log call hold."""
    return [p for p in map(payload_of, rows) if type(p) is ShmRef]
