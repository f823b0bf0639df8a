"""Where a handler lane's events go when its memory budget is full: the lane's spool (ADR 0025).

A spilled list is encoded once (the wire codec, big arrays beside it: :mod:`goggles_io._event.spilled`)
into one spool record, and a
:data:`SPOOLED` mark takes its place in the lane's queue, so the worker delivers it exactly
where it was offered: order is kept without the producer ever waiting. When the spool has no
room (budget, disk) the caller blocks or drops, per the policy.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from goggles_io._delivery.policy import BlockAllowance, DeliveryPolicy
from goggles_io._delivery.spool import Spool
from goggles_io._event.records import Event

if TYPE_CHECKING:
    from goggles_io._event.spilled import SpillEncoder

__all__ = ["SPOOLED", "Overflow"]


class _Spooled:
    """The place of one spilled list in a lane's queue."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "SPOOLED"


SPOOLED = _Spooled()


class Overflow:
    """One lane's spool (created on the first spill) and its block allowance."""

    def __init__(self, label: str, policy: DeliveryPolicy) -> None:
        self.policy = policy
        self.label = label
        self.allowance = BlockAllowance(policy.block_timeout_s)
        self.spooled_events = 0  # events waiting in the spool now
        self.spilled = 0  # events ever spilled
        self._spool: Spool | None = None
        self._encoder: SpillEncoder | None = None  # made on the first spill (numpy, msgpack)
        self._sizes: deque[int] = deque()  # events per waiting record, oldest first
        self._failed_at = -1e9
        self._lock = threading.Lock()

    @property
    def failure(self) -> str:
        """Why the last spill failed ("" if none did)."""
        return self._spool.failure if self._spool is not None else ""

    def can_spill(self) -> bool:
        """Whether spilling is on and did not just fail (it is tried again after 0.2 s)."""
        return self.policy.spills and time.monotonic() - self._failed_at > 0.2

    def spill(self, events: list[Event]) -> bool:
        """Append ``events`` as one record; ``False`` when the spool has no room (or is off)."""
        if not self.policy.spills:
            return False
        if self._spool is None:
            from goggles_io._event.spilled import SpillEncoder

            with self._lock:
                if self._spool is None:
                    self._encoder = SpillEncoder()
                    self._spool = Spool(self.label, self.policy)
        assert self._encoder is not None
        try:
            record, blobs = self._encoder.encode(events)
        except (TypeError, ValueError, OverflowError):
            return False  # not encodable (a handler-only object): it stays in memory or drops
        with self._lock:  # records and their sizes in one order (host threads spill at once)
            if not self._spool.append(record, blobs):
                self._failed_at = time.monotonic()
                return False
            self._sizes.append(len(events))
            self.spooled_events += len(events)
            self.spilled += len(events)
        return True

    def take(self) -> tuple[int, list[Event]]:
        """The oldest spilled list, with how many events it held (more than returned when the
        record could not be read back: the caller counts the difference as dropped)."""
        spool = self._spool
        if spool is None or not self._sizes:
            return 0, []
        with self._lock:
            n = self._sizes.popleft()
            self.spooled_events -= n
        from goggles_io._event.spilled import decode_spilled

        try:
            record = spool.pop_record()
            return n, [] if record is None else decode_spilled(record)
        except (OSError, ValueError):
            return n, []

    def close(self) -> int:
        """Remove the spool; return the events that were still in it."""
        left = self.spooled_events
        self.spooled_events = 0
        self._sizes.clear()
        spool, self._spool = self._spool, None
        if spool is not None:
            spool.close()
        return left

    def forget_after_fork(self) -> None:
        """In a forked child: the parent's spool files are the parent's; start without them."""
        self._spool = None
        self._sizes = deque()
        self.spooled_events = 0
        self._lock = threading.Lock()
