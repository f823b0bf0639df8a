"""Batches a pipe has made and the sink has not acknowledged yet: sent → kept → released.

ADR 0029's words: a batch is *sent*, then *kept* until the other side says it took it, then
*released*. When the link is lost every kept batch is due again, oldest first, before anything
newer; the sink's acknowledgement is cumulative (every batch up to a sequence number). The
pipe's lock guards every call.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from itertools import accumulate, repeat, starmap
from typing import Generic, TypeVar

__all__ = ["Batch", "Kept"]

T = TypeVar("T")


class Batch(Generic[T]):
    """A numbered batch: made, sent (``attempts``), kept until acknowledged."""

    __slots__ = ("attempts", "items", "nbytes", "sent_gen", "seq", "units")

    def __init__(self, seq: int, items: list[T], units: int, nbytes: int) -> None:
        self.seq = seq
        self.items = items
        self.units = units
        self.nbytes = nbytes
        self.attempts = 0  # sends tried: any before this one makes it a redelivery
        self.sent_gen = -1  # link generation it was last sent on (-1: none)


class Kept(Generic[T]):
    """The batches made and not yet acknowledged, oldest first, and which are due to send."""

    def __init__(self) -> None:
        self.units = 0
        self.gen = 0  # link generation: a lost link makes every kept batch due again
        self.seq = 0  # the last sequence number given
        self._batches: deque[Batch[T]] = deque()
        self._next = 0  # index of the first batch that may not be sent on this link yet

    def __len__(self) -> int:
        return len(self._batches)

    def add(self, items: list[T], units: int, nbytes: int) -> Batch[T]:
        """Number a new batch and keep it (it is due until sent)."""
        self.seq += 1
        batch = Batch(self.seq, items, units, nbytes)
        self._batches.append(batch)
        self.units += units
        return batch

    def add_from(
        self,
        queue: deque[T],
        sizes: deque[int],
        max_items: int,
        max_bytes: int,
        count: Callable[[list[T]], int],
    ) -> Batch[T]:
        """Keep a new batch of the oldest items of ``queue`` (their bytes the oldest of
        ``sizes``), within the bounds."""
        n = min(len(queue), max_items)
        # Popped by C (no Python call per item). Sizes first: put() appends an item's size
        # before the item, so ``n`` sizes are there, and only this worker takes from either.
        taken = list(starmap(sizes.popleft, repeat((), n)))
        nbytes = sum(taken)
        if nbytes >= max_bytes:  # the batch ends at the item that reaches the byte bound
            n = next(i for i, total in enumerate(accumulate(taken), 1) if total >= max_bytes)
            sizes.extendleft(reversed(taken[n:]))  # the rest stay, oldest first
            nbytes = sum(taken[:n])
        items = list(starmap(queue.popleft, repeat((), n)))
        return self.add(items, count(items), nbytes)

    def due(self) -> Batch[T] | None:
        """The oldest batch not sent on the current link (a redelivery first), or ``None``."""
        batches = self._batches
        while self._next < len(batches) and batches[self._next].sent_gen == self.gen:
            self._next += 1
        return batches[self._next] if self._next < len(batches) else None

    def release(self, seq: int) -> tuple[int, int, int]:
        """Forget every batch up to ``seq`` (acknowledged); ``(batches, units, bytes)``."""
        batches = self._batches
        n = units = nbytes = 0
        while batches and batches[0].seq <= seq:
            batch = batches.popleft()
            n += 1
            units += batch.units
            nbytes += batch.nbytes
        self._next = max(0, self._next - n)
        self.units -= units
        return n, units, nbytes

    def link_lost(self) -> None:
        """Every kept batch is due again, oldest first."""
        self.gen += 1
        self._next = 0

    def take(self) -> list[tuple[list[T], bool, int]]:
        """Forget every batch and return them, oldest first, with whether each was sent and
        its number (a left-over folder numbers their events by it: ADR 0057)."""
        taken = [(batch.items, batch.attempts > 0, batch.seq) for batch in self._batches]
        self.clear()
        return taken

    def clear(self) -> None:
        """Forget everything (the pipe closed and counted it)."""
        self._batches.clear()
        self.units = 0
        self._next = 0
