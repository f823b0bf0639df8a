"""The broker forwarder's buffer: stream entries waiting for Redis, in memory then on disk.

Entries are ``{p, s, d}`` field maps (:mod:`goggles_io._broker.entries`). Within the byte
budget (``GOGGLES_BROKER_BYTES``) they wait in memory; past it they go to a spool, and every
later entry follows them there until the sender has taken them all, so each producer's entries
reach the stream in sequence order (ADR 0025). An entry moves through three states:

    waiting --take()--> sent --confirm()--> gone

``sent`` entries are kept until confirmed. Today an entry is confirmed as soon as Redis
accepted the ``XADD``; "keep what was sent until it is safe (the consumer group passed it) and
re-send the gap after a Redis restart" only changes when :meth:`confirm` is called and adds a
call to :meth:`resend`, which puts every sent, unconfirmed entry back in front of the waiting ones.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import msgpack

from goggles_io._util.delivery import DeliveryPolicy
from goggles_io._util.spool import Spool

__all__ = ["Entry", "Outbox"]

Entry = tuple[dict[str, Any], int, int]  # fields, bytes, events


class Outbox:
    """Waiting and sent entries of one forwarder; the caller holds its condition around calls."""

    def __init__(self, max_bytes: int, policy: DeliveryPolicy) -> None:
        self.max_bytes = max_bytes
        self.policy = policy
        self.failure = ""
        self.lost = 0  # events of spool records that could not be read back
        self._waiting: deque[Entry] = deque()
        self._sent: deque[Entry] = deque()
        self._bytes = 0  # of waiting and sent entries in memory
        self._spooled: deque[int] = deque()  # events of each spooled entry, in order
        self._spool: Spool | None = None

    def __bool__(self) -> bool:
        """Whether anything is waiting, on disk or sent and not yet confirmed."""
        return bool(self._waiting or self._spooled or self._sent)

    def add(self, entry: Entry) -> bool:
        """Queue ``entry`` after the others; ``False`` when neither memory nor spool has room."""
        if not self._spooled and self._bytes + entry[1] <= self.max_bytes:
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
        return not self._spooled and self._bytes + size <= self.max_bytes

    def take(self, n: int) -> list[Entry]:
        """Mark up to ``n`` waiting entries sent and return them (oldest first)."""
        while len(self._waiting) < n and self._spooled:
            entry = self._read()
            if entry is not None:
                self._waiting.append(entry)
                self._bytes += entry[1]
        out = [self._waiting.popleft() for _ in range(min(n, len(self._waiting)))]
        self._sent.extend(out)
        return out

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

    def confirm(self, n: int) -> int:
        """The oldest ``n`` sent entries are safe: forget them; return their events."""
        events = 0
        for _ in range(min(n, len(self._sent))):
            _, size, count = self._sent.popleft()
            self._bytes -= size
            events += count
        return events

    def resend(self) -> None:
        """Put every sent, unconfirmed entry back in front of the waiting ones (in order)."""
        while self._sent:
            self._waiting.appendleft(self._sent.pop())

    def clear(self) -> int:
        """Forget every entry (counted by the caller as unsent); return their events."""
        events = sum(e[2] for e in self._waiting) + sum(e[2] for e in self._sent)
        events += sum(self._spooled)
        self._waiting.clear()
        self._sent.clear()
        self._spooled.clear()
        self._bytes = 0
        if self._spool is not None:
            self._spool.close()
            self._spool = None
        return events
