"""The remote sender's queue: messages in memory within a byte budget, then on disk (ADR 0025).

A collector that is down or slow must not cost points: past ``max_bytes`` of queued points
(estimated at ~200 bytes a point as Python tuples) messages go to a spool as msgpack records,
and everything after them follows them there until the sender has taken them all, so the
collector still sees each run's points in order. Only when the spool has no room (its budget, a
full disk) is a message refused (and counted by the sender). Control messages (register,
finish) are never refused. Not thread-safe: the sender's condition guards every call.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import msgpack

from goggles_io._delivery.policy import DeliveryPolicy
from goggles_io._delivery.spool import Spool

__all__ = ["POINT_BYTES", "PointQueue"]

POINT_BYTES = 200  # one queued point: a 5-tuple, its float and int objects
_MESSAGE_BYTES = 512

Message = tuple[str, str, Any, int]


def _size(message: Message) -> int:
    return _MESSAGE_BYTES + POINT_BYTES * message[3]


class PointQueue:
    """An ordered queue of sender messages: memory first, the spool beyond the budget."""

    def __init__(self, max_bytes: int, max_messages: int | None, policy: DeliveryPolicy) -> None:
        self.max_bytes = max_bytes
        self.max_messages = max_messages
        self.policy = policy
        self.failure = ""
        self.lost = 0  # points of spool records that could not be read back
        self._memory: deque[Message] = deque()
        self._bytes = 0
        self._spooled: deque[int] = deque()  # points of each spooled message, in order
        self._spool: Spool | None = None

    def __len__(self) -> int:
        return len(self._memory) + len(self._spooled)

    def points(self) -> int:
        """Points waiting, in memory and on disk."""
        return sum(m[3] for m in self._memory) + sum(self._spooled)

    def push(self, message: Message, *, force: bool = False) -> bool:
        """Queue ``message`` last; ``False`` when it is refused (no room in memory or spool)."""
        size = _size(message)
        has_room = self._bytes + size <= self.max_bytes and (
            self.max_messages is None or len(self._memory) < self.max_messages
        )
        if not self._spooled and (has_room or force):
            self._memory.append(message)
            self._bytes += size
            return True
        if self.policy.spills and self._spill(message):
            return True
        if force:  # register / finish keep their place even with a full spool: memory then
            self._memory.append(message)
            self._bytes += size
            return True
        return False

    def _spill(self, message: Message) -> bool:
        if self._spool is None:
            self._spool = Spool("remote", self.policy)
        try:
            record = msgpack.packb(list(message), use_bin_type=True)
        except (TypeError, ValueError, OverflowError):
            self.failure = "a message cannot be encoded"
            return False
        if not self._spool.append(record):
            self.failure = self._spool.failure
            return False
        self._spooled.append(message[3])
        return True

    def peek(self) -> Message | None:
        """The next message without taking it (``None`` when empty)."""
        if self._memory:
            return self._memory[0]
        if self._spooled:
            message = self._read()
            if message is not None:
                self._memory.appendleft(message)  # read once; taken from memory next
                self._bytes += _size(message)
            return message
        return None

    def pop(self) -> Message | None:
        """Take the next message (memory first: it is older than anything spooled)."""
        if not self._memory and self._spooled:
            self.peek()
        if not self._memory:
            return None
        message = self._memory.popleft()
        self._bytes -= _size(message)
        return message

    def _read(self) -> Message | None:
        assert self._spool is not None
        n = self._spooled.popleft()
        raw = self._spool.pop()
        try:
            kind, path, payload, count = msgpack.unpackb(raw, raw=False) if raw else (0,) * 4
        except (ValueError, TypeError):
            kind = 0
        if kind == 0:
            self.failure = "a spool record could not be read back"
            self.lost += n
            return None
        return (kind, path, payload, count)

    def clear(self) -> int:
        """Forget everything; return the points that were waiting."""
        n = self.points()
        self._memory.clear()
        self._bytes = 0
        self._spooled.clear()
        if self._spool is not None:
            self._spool.close()
            self._spool = None
        return n
