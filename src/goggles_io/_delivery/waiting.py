"""What waits behind a :class:`~goggles_io._delivery.pipe.Pipe`'s memory queue once it spilled.

:class:`Waiting` is everything behind the pipe's memory queue once it spilled, in order: sealed
parts (a spool record, or a list kept in memory when the spool had no room) and the open
chunk that new items join. The pipe's lock guards every call.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

from goggles_io._delivery.policy import DeliveryPolicy
from goggles_io._delivery.spool import Blob, Spool

if TYPE_CHECKING:
    from goggles_io._delivery.losses import PipeCodec

__all__ = ["Keep", "Part", "Waiting", "left_in_order"]

T = TypeVar("T")
Keep = Callable[[Iterator[tuple[list[T], bool, int]]], bool]
"""Stores what a closing pipe has left, in order, as ``(items, sent, seq)`` lists (``seq``: the
batch's number, 0 for items never batched): whether it did."""
_ENCODE_ERRORS = (TypeError, ValueError, OverflowError)


class Part(Generic[T]):
    """A sealed list behind the queue: on disk (``items is None``) or in memory."""

    __slots__ = ("items", "n", "nbytes", "open", "units")

    def __init__(
        self, items: list[T] | None, n: int, units: int, nbytes: int, open: bool = False
    ) -> None:
        self.items = items
        self.n = n
        self.units = units
        self.nbytes = nbytes
        self.open = open  # the open chunk itself, not yet counted in memory


class Waiting(Generic[T]):
    """What waits behind the memory queue once the pipe spilled, oldest first."""

    def __init__(
        self,
        label: str,
        policy: DeliveryPolicy,
        codec: PipeCodec[T] | None,
        count: Callable[[list[T]], int],
    ) -> None:
        self.label = label
        self.policy = policy
        self.can_spill = codec is not None and policy.spills
        self._codec = codec
        self._count = count
        self.active = False  # something waits here: new items must come after it
        self.units = 0  # units of every part, the open chunk and the part being read
        self.reading: Part[T] | None = None  # taken from the spool, not yet read back
        self.failure = ""  # why the spool refused the last record
        self.chunk: list[tuple[T, int]] = []
        self.chunk_bytes = 0
        self.chunk_units = 0
        self.chunk_forced = False
        self._encoded: tuple[bytes, Sequence[Blob]] | None = None
        self._parts: deque[Part[T]] = deque()
        self._spool: Spool | None = None

    def chunk_full(self, items: int, nbytes: int) -> bool:
        return len(self.chunk) >= items or self.chunk_bytes >= nbytes

    def add(self, item: T, size: int, units: int, forced: bool) -> None:
        self.chunk.append((item, size))
        self.chunk_bytes += size
        self.chunk_units += units
        self.chunk_forced |= forced
        self.units += units
        self._encoded = None

    def seal(self, charge: Callable[[int, bool], bool]) -> tuple[bool, list[T]]:
        """Seal the open chunk as a part: on the spool, else in memory if ``charge(bytes,
        forced)`` takes it. Returns whether it was sealed, and the items the codec refused
        (taken out of the chunk: the caller counts them)."""
        assert self._codec is not None
        try:
            if self._encoded is None:
                self._encoded = self._codec.encode([item for item, _ in self.chunk])
        except _ENCODE_ERRORS:
            if self.chunk_forced and charge(self.chunk_bytes, True):
                self._seal([item for item, _ in self.chunk])
                return True, []
            return self._seal_encodable(charge)
        if self._spool is None:
            self._spool = Spool(self.label, self.policy)
        if self._spool.append(self._encoded[0], self._encoded[1]):
            self._seal(None)
            return True, []
        self.failure = self._spool.failure
        if charge(self.chunk_bytes, False):
            self._seal([item for item, _ in self.chunk])
            return True, []
        return False, []

    def _seal_encodable(self, charge: Callable[[int, bool], bool]) -> tuple[bool, list[T]]:
        """Take out the items the codec refuses one by one; seal the rest."""
        assert self._codec is not None
        kept: list[tuple[T, int]] = []
        refused: list[T] = []
        for item, size in self.chunk:
            try:
                self._codec.encode([item])
            except _ENCODE_ERRORS:
                refused.append(item)
            else:
                kept.append((item, size))
        units = self._count([item for item, _ in kept])
        self.units += units - self.chunk_units
        self.chunk = kept
        self.chunk_bytes = sum(size for _, size in kept)
        self.chunk_units = units
        self._encoded = None
        if not kept:
            return True, refused
        sealed, more = self.seal(charge)
        return sealed, refused + more

    def _seal(self, items: list[T] | None) -> None:
        self._parts.append(Part(items, len(self.chunk), self.chunk_units, self.chunk_bytes))
        self.chunk = []
        self.chunk_bytes = self.chunk_units = 0
        self.chunk_forced = False
        self._encoded = None

    def first(self) -> Part[T] | None:
        """The oldest part, or the open chunk as one (``open``), or ``None``."""
        if self._parts:
            return self._parts[0]
        if self.chunk:
            items = [item for item, _ in self.chunk]
            return Part(items, len(items), self.chunk_units, self.chunk_bytes, open=True)
        return None

    def take(self, charge: Callable[[int], bool]) -> Part[T] | None:
        """Take the oldest part out; one not yet counted in memory (on disk, or the open
        chunk) only if ``charge(bytes)`` takes its bytes. ``None``: nothing, or no room."""
        part = self.first()
        if part is None or ((part.items is None or part.open) and not charge(part.nbytes)):
            return None
        self.pop(part)
        return part

    def done_reading(self) -> None:
        """The part :meth:`take` gave to read back is read (or counted lost)."""
        if self.reading is not None:
            self.units -= self.reading.units
            self.reading = None

    def busy(self) -> bool:
        """Whether anything waits here or is being read back."""
        return not self.empty() or self.reading is not None

    def pop(self, part: Part[T]) -> None:
        """Take ``part`` (from :meth:`first`) out."""
        if part.open:
            self.chunk = []
            self.chunk_bytes = self.chunk_units = 0
            self.chunk_forced = False
            self._encoded = None
            self.units -= part.units
        elif part.items is None:
            self._parts.popleft()
            self.reading = part  # its units stay counted until read back
        else:
            self._parts.popleft()
            self.units -= part.units

    def empty(self) -> bool:
        return not self._parts and not self.chunk

    def read(self, *, safely: bool = False) -> list[T] | None:
        """Read the oldest spool record back into items (``None``: there is none, or, when
        ``safely``, it could not be read)."""
        spool = self._spool
        try:
            record = None if spool is None else spool.pop_record()
            if record is None or self._codec is None:
                return None
            return self._codec.decode(record)
        except (OSError, *_ENCODE_ERRORS):
            if safely:
                return None
            raise

    def drain(self) -> Iterator[list[T]]:
        """Everything that waits here, oldest first (spool records read back); raises what a
        record that cannot be read raises. For a pipe that closed."""
        while self._parts:
            part = self._parts.popleft()
            items = part.items if part.items is not None else self.read()
            if items is None or len(items) != part.n:
                msg = f"a spool record of {self.label} held {0 if items is None else len(items)} items, not {part.n}"
                raise OSError(msg)
            yield items
        if self.chunk:
            yield [item for item, _ in self.chunk]
            self.chunk = []

    def close(self) -> None:
        """Remove the spool's files."""
        spool, self._spool = self._spool, None
        if spool is not None:
            spool.close()


def left_in_order(
    batches: list[tuple[list[T], bool, int]], queued: list[T], waiting: Waiting[T]
) -> Iterator[tuple[list[T], bool, int]]:
    """What a closed pipe holds, in the order it was put: the batches made and not
    acknowledged (``sent`` when they went to the sink, with their numbers), the memory queue,
    then what spilled (numbered 0: never batched)."""
    yield from batches
    if queued:
        yield queued, False, 0
    for items in waiting.drain():
        yield items, False, 0
