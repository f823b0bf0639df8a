"""Where a producer's big arrays wait for the host: the shared-memory pool, then the disk pool.

An array of at least ``GOGGLES_SHM_THRESHOLD`` bytes is copied once, at the log call, into a
pre-faulted shared-memory slot (the event then carries only its :class:`ShmRef`); when the pool
is full it is ``pwrite``-n into the disk pool (ADR 0025). A slot is held until the host's
handlers took the batch that refers to it (ADR 0030), so a batch sent again to the next host
still finds its arrays, and past that while a reader on the host holds a view of it: the Ack
pins it, a Release gives it back (ADR 0077). Both pools are made on first use, so scalar-only processes never
allocate them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from goggles_io._delivery.policy import DeliveryPolicy
from goggles_io._event.records import ShmRef
from goggles_io._util.report import report

if TYPE_CHECKING:  # imported where used: attach() must not pay for numpy and the codec
    from goggles_io._transport.diskpool import DiskPool
    from goggles_io._transport.shm import ShmPool

__all__ = ["ArrayPools"]


class ArrayPools:
    """One producer's shared-memory pool and disk pool, and the release of their slots."""

    def __init__(self, *, threshold: int, shm_bytes: int, policy: DeliveryPolicy) -> None:
        self.threshold = threshold
        self._shm_bytes = shm_bytes
        self._policy = policy
        self._shm: ShmPool | None = None
        self._disk: DiskPool | None = None
        self._prewarmed = False
        self._shm_failed = False
        self._lock = threading.Lock()
        # Slots a host reader holds (pins not yet released, ADR 0077), and those of them whose
        # batch is acknowledged: given back at their last release.
        self._pinned: dict[tuple[str, int], int] = {}
        self._parked: dict[tuple[str, int], ShmRef] = {}
        self._pin_lock = threading.Lock()
        # Set before the first row that holds a slot is put: until then no batch can hold
        # one, and the courier frames a batch of rows without looking at each payload.
        self.staged_any = False

    def stage(self, array: Any) -> ShmRef | None:
        """Copy ``array`` into a slot now; ``None`` (the caller keeps a heap copy) when it is
        small, of a dtype that cannot cross, or both pools are full."""
        if array.nbytes < self.threshold or array.dtype.kind not in "biuf":
            return None
        pool = self.shm()
        if pool is None:
            return None
        if not self._prewarmed:
            self._prewarmed = True
            pool.prewarm()
            if self._policy.spills:
                self.disk().prewarm()
        ref = pool.put(array)
        if ref is None and self._policy.spills:
            ref = self.disk().put(array)  # the shm pool is full: the disk pool (ADR 0025)
        if ref is not None:
            self.staged_any = True
        return ref

    def filling(self) -> bool:
        """Whether the shared-memory pool is more than half in use (its slots come back only at
        acknowledgements: the sender should not linger then)."""
        shm = self._shm
        return shm is not None and shm.filling

    def shm(self) -> ShmPool | None:
        """The shared-memory pool (made on first use; ``None`` where shm is unavailable)."""
        if self._shm is None and not self._shm_failed:
            from goggles_io._transport.shm import ShmPool, sweep_dead_segments

            with self._lock:  # the producer (stage) and the pipe's worker may both get here
                if self._shm is None and not self._shm_failed:
                    try:
                        sweep_dead_segments()  # a crashed run's segments go on our next start
                        self._shm = ShmPool.with_budget(self._shm_bytes)
                    except OSError as exc:
                        self._shm_failed = True
                        report(f"shared memory unavailable ({exc}); arrays go inline")
        return self._shm

    def disk(self) -> DiskPool:
        """The disk pool (made on first use)."""
        disk = self._disk
        if disk is None:
            from goggles_io._transport.diskpool import DiskPool

            with self._lock:
                disk = self._disk = self._disk or DiskPool(self._policy)
        return disk

    def pin(self, slots: Iterable[tuple[str, int]]) -> None:
        """An Ack says a reader on the host still holds these ``(segment, offset)`` slots."""
        with self._pin_lock:
            pinned = self._pinned
            for segment, offset in slots:
                key = (segment, offset)
                pinned[key] = pinned.get(key, 0) + 1

    def unpin(self, slots: Iterable[tuple[str, int]]) -> None:
        """A Release says their last reader is done: a slot whose batch is acknowledged goes
        back now. A slot not pinned here (its Ack went on a connection since lost) stays."""
        free: list[ShmRef] = []
        with self._pin_lock:
            pinned, parked = self._pinned, self._parked
            for segment, offset in slots:
                key = (segment, offset)
                left = pinned.get(key, 0) - 1
                if left > 0:
                    pinned[key] = left
                elif left == 0:
                    del pinned[key]
                    ref = parked.pop(key, None)
                    if ref is not None:
                        free.append(ref)
        if free:
            self.release(free)

    def give_back(self, refs: list[ShmRef]) -> None:
        """The batch that ``refs`` belong to is acknowledged: give them back, but keep the
        pinned ones until their release."""
        if self._pinned:
            free: list[ShmRef] = []
            with self._pin_lock:
                pinned, parked = self._pinned, self._parked
                for ref in refs:
                    key = (ref.segment, ref.offset)
                    if key in pinned:
                        parked[key] = ref
                    else:
                        free.append(ref)
            refs = free
        self.release(refs)

    def release(self, refs: Iterable[ShmRef]) -> None:
        """Give the slots back: the host's handlers took what refers to them, or it was lost."""
        shm, disk = self._shm, self._disk
        for ref in refs:
            if ref.segment.startswith("/"):
                if disk is not None:
                    disk.release(ref.segment, ref.offset)
            elif shm is not None:
                shm.release(ref.segment, ref.offset)

    def close(self) -> None:
        """Unlink every segment and remove the disk pool's files."""
        shm, self._shm = self._shm, None
        disk, self._disk = self._disk, None
        self._prewarmed = False
        with self._pin_lock:
            self._pinned.clear()
            self._parked.clear()
        if shm is not None:
            shm.close()
        if disk is not None:
            disk.close()

    def forget_after_fork(self) -> None:
        """In a forked child: the parent's segments are the parent's; make our own on use."""
        self._shm = None
        self._disk = None
        self._prewarmed = False
        self._lock = threading.Lock()
        self._pin_lock = threading.Lock()
        self._pinned.clear()
        self._parked.clear()
