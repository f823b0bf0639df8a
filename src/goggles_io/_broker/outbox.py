"""The broker forwarder's buffer: entries until they are *safe*, in memory then on disk.

Entries are ``{p, s, d}`` field maps (:mod:`goggles_io._broker.entries`). An entry moves
through three states (ADR 0029):

    waiting --take()--> sent --confirm_upto(seq)--> gone (safe)
                          \\--resend()--> waiting again, in front, in order

*Safe* means the consumer group has recorded the entry as handled: its ``seen`` high-water
mark for this producer reached the entry's sequence number. Until then a sent entry is kept,
because Redis may lose it (a restart without persistence) before any consumer read it; after a
reconnect every kept entry is sent again and consumers drop the repeats by ``(producer, seq)``.

One byte budget (``GOGGLES_BROKER_BYTES``) bounds memory for waiting and kept entries together.
Past it, waiting entries go to a spool on disk (every later entry follows them there, so each
producer's entries reach the stream in sequence order, ADR 0025). Kept entries never go to
disk: when new entries need the room, the oldest kept ones are *released*, left to Redis alone.
Released entries are remembered as ``(seq, events)`` so that a later loss of them (Redis came
back without them) is counted, not silent.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import msgpack

from goggles_io._delivery.policy import DeliveryPolicy
from goggles_io._delivery.spool import Spool

__all__ = ["Entry", "Outbox"]

Entry = tuple[dict[str, Any], int, int]  # fields, bytes, events
_MAX_RELEASED = 100_000  # released entries remembered (16 bytes each, about); older: uncounted


class Outbox:
    """Waiting and sent entries of one forwarder; the caller holds its condition around calls."""

    def __init__(self, max_bytes: int, policy: DeliveryPolicy) -> None:
        self.max_bytes = max_bytes
        self.policy = policy
        self.failure = ""
        self.lost = 0  # events of spool records that could not be read back
        self.released_events = 0  # events ever left to Redis alone before a consumer passed them
        self.released_forgotten = 0  # of those, events past _MAX_RELEASED: a loss would not show
        self._waiting: deque[Entry] = deque()
        self._sent: deque[Entry] = deque()
        self._in_flight = 0  # of the newest sent entries: taken, Redis has not answered yet
        self._released: deque[tuple[int, int]] = deque()  # (seq, events), oldest first
        self._bytes = 0  # of waiting and sent entries in memory
        self._spooled: deque[int] = deque()  # events of each spooled entry, in order
        self._spool: Spool | None = None

    def __bool__(self) -> bool:
        """Whether anything is waiting, on disk or sent and not yet safe."""
        return bool(self._waiting or self._spooled or self._sent)

    @property
    def unsent(self) -> bool:
        """Whether anything has not reached Redis yet (waiting in memory or on disk)."""
        return bool(self._waiting or self._spooled)

    @property
    def kept_events(self) -> int:
        """Events in Redis and kept here until a consumer passes them."""
        return sum(e[2] for e in list(self._sent)[: len(self._sent) - self._in_flight])

    def add(self, entry: Entry) -> bool:
        """Queue ``entry`` after the others; ``False`` when neither memory nor spool has room."""
        if not self._spooled:
            self._release_for(entry[1])
            if self._bytes + entry[1] <= self.max_bytes:
                self._waiting.append(entry)
                self._bytes += entry[1]
                return True
        if not self.policy.spills:
            self.failure = "buffer full"
            return False
        if self._spool is None:
            self._spool = Spool("broker", self.policy)
        if not self._spool.append(msgpack.packb(entry[0], use_bin_type=True)):
            self.failure = self._spool.failure
            return False
        self._spooled.append(entry[2])
        return True

    def has_room(self, size: int) -> bool:
        """Whether :meth:`add` of ``size`` bytes would go to memory now."""
        kept = sum(e[1] for e in self._sent)
        return not self._spooled and self._bytes - kept + size <= self.max_bytes

    def take(self, n: int) -> list[Entry]:
        """Mark up to ``n`` waiting entries sent and return them (oldest first)."""
        while len(self._waiting) < n and self._spooled:
            entry = self._read()
            if entry is not None:
                self._release_for(entry[1])
                self._waiting.append(entry)
                self._bytes += entry[1]
        out = [self._waiting.popleft() for _ in range(min(n, len(self._waiting)))]
        self._sent.extend(out)
        self._in_flight += len(out)
        return out

    def accepted(self) -> None:
        """Redis answered for every entry taken so far: they are in the stream."""
        self._in_flight = 0

    def _release_for(self, size: int) -> None:
        """Leave the oldest kept entries to Redis alone until ``size`` more bytes fit."""
        while len(self._sent) > self._in_flight and self._bytes + size > self.max_bytes:
            fields, nbytes, events = self._sent.popleft()
            self._bytes -= nbytes
            self.released_events += events
            self._released.append((int(fields["s"]), events))
            if len(self._released) > _MAX_RELEASED:
                self.released_forgotten += self._released.popleft()[1]

    def _read(self) -> Entry | None:
        assert self._spool is not None
        events = self._spooled.popleft()
        raw = self._spool.pop()
        try:
            fields = msgpack.unpackb(raw, raw=False) if raw else None
        except (ValueError, TypeError):
            fields = None
        if not isinstance(fields, dict) or not isinstance(fields.get("d"), bytes):
            self.lost += events
            self.failure = "a spool record could not be read back"
            return None
        return fields, len(fields["d"]) + 64, events

    def confirm_upto(self, seq: int) -> int:
        """Entries up to ``seq`` are safe (a consumer recorded them): forget them; their events."""
        events = 0
        while self._sent and int(self._sent[0][0]["s"]) <= seq:
            _, size, count = self._sent.popleft()
            self._bytes -= size
            events += count
        while self._released and self._released[0][0] <= seq:
            self._released.popleft()
        return events

    def drop_sent(self, n: int) -> int:
        """Forget the newest ``n`` sent entries (Redis refused them); return their events."""
        events = 0
        self._in_flight = max(0, self._in_flight - n)
        for _ in range(min(n, len(self._sent))):
            _, size, count = self._sent.pop()
            self._bytes -= size
            events += count
        return events

    def released_unsafe(self) -> int:
        """Events of released entries no consumer has passed yet (at risk in Redis alone)."""
        return sum(events for _, events in self._released)

    def resend(self, n: int | None = None) -> int:
        """Put the newest ``n`` (default: every) sent, unsafe entries back in front of the
        waiting ones, in order; how many."""
        n = len(self._sent) if n is None else min(n, len(self._sent))
        for _ in range(n):
            self._waiting.appendleft(self._sent.pop())
        self._in_flight = max(0, self._in_flight - n)
        return n

    def clear(self) -> int:
        """Forget every entry not yet in Redis (counted by the caller as unsent); their events.

        Kept entries Redis accepted are in the stream: they are forgotten without being counted.
        """
        events = sum(e[2] for e in self._waiting) + sum(self._spooled)
        events += sum(e[2] for e in list(self._sent)[len(self._sent) - self._in_flight :])
        self._in_flight = 0
        self._waiting.clear()
        self._sent.clear()
        self._spooled.clear()
        self._bytes = 0
        if self._spool is not None:
            self._spool.close()
            self._spool = None
        return events
