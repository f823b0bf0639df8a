"""The client queue's overflow: what a producer logs past its memory budget waits on disk.

Once anything is spilled, everything after it (events and handler operations) follows it here
until the sender has taken it all, so one producer's order is kept. Events gather in a small
chunk (512 events or 1 MiB) that is encoded once and appended to the spool as one record; the
sender reads records back in order, or takes the open chunk straight from memory. An array
staged in shared memory travels as its reference (its slot stays held until the host acked
it), so a spilled image costs its reference, not its pixels. See ADR 0025.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from goggles_io._delivery.policy import DeliveryPolicy
from goggles_io._delivery.spool import Spool
from goggles_io._event.records import Event, approx_nbytes

if TYPE_CHECKING:
    from goggles_io._event.spilled import SpillEncoder

__all__ = ["Spillover"]

_CHUNK_EVENTS = 512
_CHUNK_BYTES = 1 << 20


class Spillover:
    """Ordered overflow of one client queue: spool records, in-memory lists and markers."""

    def __init__(self, policy: DeliveryPolicy, on_active: Callable[[bool], None]) -> None:
        self.policy = policy
        self.active = False  # something is spilled: new items must come after it
        self._on_active = on_active  # told of each change, so the hot path reads no flag
        self.failure = ""  # why the last add was refused
        self.events = 0  # events waiting here
        self.spilled = 0  # events ever spilled
        self.lost = 0  # events of records that could not be read back (counted by the client)
        self._items: deque[Any] = deque()  # int (a record of n events) | list[Event] | marker
        self._chunk: list[Event] = []
        self._chunk_bytes = 0
        self._spool: Spool | None = None
        self._encoder: SpillEncoder | None = None  # made on the first spill (numpy, msgpack)
        self._lock = threading.Lock()

    def add(self, event: Event) -> bool:
        """Take ``event`` after everything spilled so far; ``False`` when there is no room."""
        with self._lock:
            if len(self._chunk) >= _CHUNK_EVENTS or self._chunk_bytes >= _CHUNK_BYTES:
                if not self._write_chunk():
                    return False
            self._chunk.append(event)
            self._chunk_bytes += approx_nbytes(event)
            self.events += 1
            self.spilled += 1
            self._set_active(True)
            return True

    def can_add(self) -> bool:
        """Whether :meth:`add` would take an event now (the open chunk has room)."""
        return len(self._chunk) < _CHUNK_EVENTS and self._chunk_bytes < _CHUNK_BYTES

    def add_marker(self, marker: Any) -> None:
        """A handler operation, in order after the spilled events (never refused)."""
        with self._lock:
            if self._chunk:
                self._items.append(self._chunk)  # rare: keep it in memory rather than write
                self._chunk, self._chunk_bytes = [], 0
            self._items.append(marker)
            self._set_active(True)

    def _write_chunk(self) -> bool:
        if self._spool is None:
            from goggles_io._event.spilled import SpillEncoder

            self._spool = Spool("client", self.policy)
            self._encoder = SpillEncoder()
        assert self._encoder is not None
        try:
            record, blobs = self._encoder.encode(self._chunk)
        except (TypeError, ValueError, OverflowError):
            ok = False  # an unencodable event: keep the chunk in memory, the sender reports it
        else:
            ok = self._spool.append(record, blobs)
        if not ok:
            self.failure = self._spool.failure or "an event cannot be encoded"
            if len(self._items) < 4:  # a little slack in memory so the sender can go on
                self._items.append(self._chunk)
                self._chunk, self._chunk_bytes = [], 0
                return True
            return False
        self._items.append(len(self._chunk))
        self._chunk, self._chunk_bytes = [], 0
        return True

    def take(self) -> list[Any]:
        """The next items for the sender, oldest first: events of one record or chunk, or one
        marker; ``[]`` (and no longer active) once everything was taken."""
        with self._lock:
            if self._items:
                item = self._items.popleft()
                if type(item) is int:
                    self.events -= item
                    return self._read(item)
                if type(item) is list:
                    self.events -= len(item)
                    return item
                return [item]
            if self._chunk:
                chunk, self._chunk, self._chunk_bytes = self._chunk, [], 0
                self.events -= len(chunk)
                return chunk
            self._set_active(False)
            return []

    def _set_active(self, active: bool) -> None:
        if active is not self.active:
            self.active = active
            self._on_active(active)

    def _read(self, n: int) -> list[Any]:
        from goggles_io._event.spilled import decode_spilled

        assert self._spool is not None
        try:
            record = self._spool.pop_record()
            events = [] if record is None else decode_spilled(record)
        except (OSError, ValueError):
            events = []
        if len(events) == n:
            return events
        self.failure = "a spool record could not be read back"
        self.lost += n
        return []

    def close(self) -> int:
        """Forget what is waiting (the caller counts it); remove the spool. Returns events."""
        with self._lock:
            left = self.events
            self._items.clear()
            self._chunk, self._chunk_bytes = [], 0
            self.events = 0
            self._set_active(False)
            spool, self._spool = self._spool, None
        if spool is not None:
            spool.close()
        return left

    def forget_after_fork(self) -> None:
        """In a forked child: the parent's spool is the parent's."""
        self._spool = None
        self._items = deque()
        self._chunk, self._chunk_bytes = [], 0
        self.events = 0
        self._set_active(False)
        self._lock = threading.Lock()
