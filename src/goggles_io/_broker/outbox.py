"""What the broker forwarder knows beyond its pipe: which entries Redis holds, and which it
left to Redis alone (ADR 0029's sent → kept → released).

The forwarder's :class:`~goggles_io._delivery.pipe.Pipe` keeps every entry (one numbered batch
of events; its sequence number is the stream entry's) until it is acknowledged. The outbox
records what the pipe cannot see:

    sent (the XADD answered) --mark >= seq--> confirmed (a consumer recorded it; the pipe acks)
         \\--room needed--> released (the pipe acks it; remembered as (seq, events))

*Kept* entries are in Redis and not yet confirmed. They hold at most half the byte budget:
past it the oldest are *released*, left to Redis alone, so that new entries always have room
in memory. Released entries are remembered (at most 100,000) so that a Redis that comes back
without them is counted (``lost by the sink``, unless a consumer's mark shows it had handled
them), not silent. When Redis comes back without its
data the kept entries are no longer in it: the pipe sends them again (``link_lost``) and they
are recorded again as they are sent.
"""

from __future__ import annotations

import threading
from collections import deque

import attrs

__all__ = ["Closing", "Outbox"]

_MAX_RELEASED = 100_000  # released entries remembered (16 bytes each, about); older: uncounted


@attrs.frozen
class Closing:
    """What the outbox holds when the forwarder closes."""

    last_in_redis: int  # the newest entry Redis holds: the pipe may forget up to it
    kept: int  # events in Redis, kept here, no consumer has handled yet
    released: int  # events left to Redis alone, no consumer has handled yet
    lost: int  # of those, events Redis lost (it came back without its data)
    forgotten: int  # events released past the memory of releases: a loss would not show


class Outbox:
    """Kept and released entries of one forwarder; thread-safe (the pipe's worker writes,
    ``flush``/``close`` read)."""

    def __init__(self, max_kept_bytes: int) -> None:
        self.max_kept_bytes = max_kept_bytes
        self.changed = threading.Condition()
        self.kept_units = 0
        self.kept_bytes = 0
        self.mark = 0  # the consumer group's high-water mark for this producer
        self.released_events = 0  # ever left to Redis alone before a consumer passed them
        self.released_forgotten = 0  # of those, events past _MAX_RELEASED
        self._kept: deque[tuple[int, int, int]] = deque()  # (seq, events, bytes), oldest first
        self._top = 0  # the newest entry recorded in Redis since its data was last lost
        self._released: deque[tuple[int, int]] = deque()  # (seq, events), oldest first
        self._gone: deque[tuple[int, int]] = deque()  # released, then Redis lost its data

    def sent(self, seq: int, units: int, nbytes: int) -> int:
        """Redis took entry ``seq``; the newest entry to release for room (0: none)."""
        with self.changed:
            if seq > max(self._top, self.mark):  # a repeat of one recorded is in Redis once
                self._top = seq
                self._kept.append((seq, units, nbytes))
                self.kept_units += units
                self.kept_bytes += nbytes
            release = 0
            while self._kept and self.kept_bytes > self.max_kept_bytes:
                release, units, nbytes = self._kept.popleft()
                self.kept_units -= units
                self.kept_bytes -= nbytes
                self.released_events += units
                self._released.append((release, units))
                if len(self._released) > _MAX_RELEASED:
                    self.released_forgotten += self._released.popleft()[1]
            self.changed.notify_all()
            return release

    def confirm(self, mark: int) -> None:
        """The consumer group recorded every entry up to ``mark``: forget them."""
        with self.changed:
            if mark <= self.mark:
                return
            self.mark = mark
            kept, released = self._kept, self._released
            while kept and kept[0][0] <= mark:
                _, units, nbytes = kept.popleft()
                self.kept_units -= units
                self.kept_bytes -= nbytes
            for found in (released, self._gone):
                while found and found[0][0] <= mark:
                    found.popleft()
            self.changed.notify_all()

    def lost(self) -> tuple[int, int]:
        """Redis came back without its data: what it held of ours is gone; ``(entries kept
        here, to send again; events released and not yet confirmed, at risk)``."""
        with self.changed:
            again = len(self._kept)
            self._kept.clear()
            self.kept_units = self.kept_bytes = 0
            self._top = 0
            self._gone.extend(self._released)
            self._released.clear()
            while len(self._gone) > _MAX_RELEASED:
                self.released_forgotten += self._gone.popleft()[1]
            at_risk = sum(units for _, units in self._gone)
            self.changed.notify_all()
            return again, at_risk

    def wait(self, timeout_s: float) -> None:
        """Wait until something changes (or ``timeout_s``)."""
        with self.changed:
            self.changed.wait(timeout_s)

    def close(self) -> Closing:
        """What is left at close (kept entries are in Redis: the caller releases them)."""
        with self.changed:
            released = sum(units for _, units in self._released)
            lost = sum(units for _, units in self._gone)
            last = self._kept[-1][0] if self._kept else 0
            return Closing(last, self.kept_units, released, lost, self.released_forgotten)
