"""A ring allocator over a fixed number of bytes: the slots of a pool segment.

Slots are taken at the head and freed in any order; the tail moves once the oldest is free.
Used by the shared-memory pool and the disk pool alike.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any, TypeVar

__all__ = ["Ring", "release_slot"]


class Ring:
    """A ring allocator over ``size`` bytes; releases may arrive out of order."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.head = 0
        self.live: deque[list[Any]] = deque()  # [offset, released], oldest at the left
        self.by_offset: dict[int, list[Any]] = {}

    def allocate(self, n: int) -> int | None:
        if not self.live:
            self.head = 0
            if n <= self.size:
                return self._take(0, n)
            return None
        tail = self.live[0][0]
        if self.head > tail:
            if self.size - self.head >= n:
                return self._take(self.head, n)
            if tail >= n:
                return self._take(0, n)
            return None
        if tail - self.head >= n:
            return self._take(self.head, n)
        return None

    def _take(self, offset: int, n: int) -> int:
        entry = [offset, False]
        self.live.append(entry)
        self.by_offset[offset] = entry
        self.head = offset + n
        return offset

    def release(self, offset: int) -> bool:
        entry = self.by_offset.pop(offset, None)
        if entry is None:
            return False
        entry[1] = True
        while self.live and self.live[0][1]:
            self.live.popleft()
        return True


R = TypeVar("R", bound=Ring)


def release_slot(segments: Mapping[str, R], segment: str, offset: int) -> R | None:
    """Free the slot at ``offset`` of ``segments[segment]`` (under the pool's lock): the
    segment, for the pool to decide whether to give it back, or ``None`` if it is gone."""
    seg = segments.get(segment)
    if seg is not None:
        seg.release(offset)
    return seg
