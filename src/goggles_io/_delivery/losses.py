"""The words for what a delivery pipe could not deliver, and the codec it spills with.

One vocabulary of loss reasons for every bounded buffer (a :class:`~goggles_io._delivery.pipe.Pipe`
counts its losses under these keys; ``FinishReport`` composes them), so the same loss reads
the same wherever it happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from goggles_io._delivery.policy import advice
from goggles_io._delivery.spool import Blob, SpoolRecord
from goggles_io._util.report import report

__all__ = [
    "KEPT_FOR_LATER",
    "LOST_BY_SINK",
    "NOT_DELIVERED",
    "NO_CLIENT",
    "QUEUE_FULL",
    "REASONS",
    "SPOOL_FULL",
    "SPOOL_UNREADABLE",
    "UNENCODABLE",
    "LossReport",
    "PipeCodec",
]

T = TypeVar("T")

QUEUE_FULL = "queue full"
"""Memory was full, spilling is off (``GOGGLES_WHEN_FULL=block|drop``) and the wait ran out."""
SPOOL_FULL = "spool full"
"""Memory and the spool were full (budget or disk) and the wait ran out."""
SPOOL_UNREADABLE = "spool unreadable"
"""A spilled record could not be read back."""
UNENCODABLE = "unencodable"
"""An item the codec could not encode for the spool."""
NOT_DELIVERED = "not delivered"
"""Still waiting (in memory, on disk or unacknowledged) when the pipe was closed."""

KEPT_FOR_LATER = "kept for later"
"""Not a loss: still waiting when ``finish()`` gave up, and stored on disk with its handlers'
specs for the next process on the machine to deliver (``goggles_io._transport.client.leftovers``)."""

LOST_BY_SINK = "lost by the sink"
"""The sink had it and lost it before anyone handled it (a Redis that came back without its
data), and it was no longer kept here to send again (ADR 0029's released entries)."""
NO_CLIENT = "no client library"
"""The sink's client library is not installed in this process: nothing could be sent."""

REASONS = (
    QUEUE_FULL,
    SPOOL_FULL,
    SPOOL_UNREADABLE,
    UNENCODABLE,
    NOT_DELIVERED,
    LOST_BY_SINK,
    NO_CLIENT,
)

_FULL = {QUEUE_FULL, SPOOL_FULL}


class PipeCodec(Protocol[T]):
    """How a pipe writes a list of items to its spool and reads it back.

    ``encode`` returns the record and blobs written after it straight from their buffers
    (big arrays); it raises ``TypeError``/``ValueError``/``OverflowError`` for what it cannot
    encode. ``decode`` gets the record (its ``data`` and ``read_blob``) and returns the items.
    """

    def encode(self, items: list[T]) -> tuple[bytes, Sequence[Blob]]: ...

    def decode(self, record: SpoolRecord) -> list[T]: ...


class LossReport:
    """Says each reason once on stderr (full buffers with what to do), then only counts."""

    __slots__ = ("_said", "label")

    def __init__(self, label: str) -> None:
        self.label = label
        self._said: set[str] = set()

    def __call__(self, reason: str, units: int, detail: str = "") -> None:
        if reason in self._said:
            return
        self._said.add(reason)
        text = f"{self.label}: {reason}" + (f" ({detail})" if detail else "")
        text += f"; {units} dropped and counted, later ones only counted"
        report(advice(text) if reason in _FULL else text)
