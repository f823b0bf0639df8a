"""The dedicated host lends handlers read-only views of a producer's shared memory (ADR 0077).

Copying each array out of shared memory cost the host about a memcpy per image and held the GIL
while the producer copied the next one in. Instead the host's :class:`~goggles_io._transport.shm.ShmReader`
hands out a read-only array whose memory is the producer's slot, through a small :class:`_Lease`
object that every view of it keeps alive (numpy keeps the exporter of an ``__array_interface__``
as the array's base, and each view of it keeps that array). When the last view dies, the lease
says so here: the slot's last reader is done.

A slot stays the producer's until the host acknowledged its batch (ADR 0030: the producer sends
it again to the next host) *and* no reader holds it. :class:`SlotLeases` counts live leases per
slot, host-wide (a batch sent again to the same host, on a new connection, makes a second lease
of the same slot); the acknowledgement names the slots that still have one (``Ack.pinned``), and
when the last one ends a ``Release`` names them again, sent on the producer's latest
connection. A handler that keeps an array therefore keeps its slot: its bytes never change, and
the producer, short of slots, goes on in its disk pool (ADR 0025).
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Iterable
from typing import Any

import numpy as np

from goggles_io._util.liveness import pid_alive

__all__ = ["Slot", "SlotLeases"]

Slot = tuple[str, int]  # (segment name, offset): one slot of a producer's pool


def owner_pid(segment: str) -> int:
    """The producer pid in a segment's name (``goggles_io-<uid>-<pid>-<n>``, checked before)."""
    return int(segment.split("-")[2])


class _Lease:
    """The exporter of one lent array: numpy keeps it as the array's base (and each view keeps
    its array), so it dies with the last view, and then gives its slot back."""

    __slots__ = ("__array_interface__", "_base", "_leases", "_slot")

    def __init__(
        self, leases: SlotLeases, slot: Slot, base: Any, address: int, dtype: np.dtype[Any],
        shape: tuple[int, ...],
    ) -> None:  # fmt: skip
        self._leases = leases
        self._slot = slot
        self._base = base  # the segment's mapping stays mapped while a view of it lives
        self.__array_interface__ = {
            "data": (address, True),  # read-only: a handler cannot write the producer's slot
            "shape": shape,
            "typestr": dtype.str,
            "version": 3,
        }

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit the module may be gone
            self._leases.returned(self._slot)


class SlotLeases:
    """Live leases per slot, for the whole host; which slots to pin and which to release.

    A lease's end may come from the cyclic garbage collector, at any allocation of any thread,
    even one inside this object's lock or inside a ``threading.Event``: so it only appends to a
    deque (atomic, no lock), and the next call that takes the lock counts it. The acks thread
    looks every 2 ms while a pinned slot waits (:meth:`waiting`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[Slot, int] = {}
        self._ended: deque[Slot] = deque()  # leases ended, not yet counted
        self._pinned: set[Slot] = set()  # named in an Ack while a lease of them lived
        self._released: dict[int, list[Slot]] = {}  # per producer pid: to send in a Release
        self._owners: dict[int, object] = {}  # per producer pid: the connection releases go to

    def lend(
        self, slot: Slot, base: Any, address: int, dtype: np.dtype[Any], shape: tuple[int, ...]
    ) -> np.ndarray:
        """A read-only array of ``dtype`` and ``shape`` at ``address`` (inside ``base``, the
        segment's mapping), lent until its last view dies."""
        lease = _Lease(self, slot, base, address, dtype, shape)
        with self._lock:
            self._count_ended_locked()
            self._live[slot] = self._live.get(slot, 0) + 1
        return np.asarray(lease)

    def returned(self, slot: Slot) -> None:
        """The last view of one lease of ``slot`` died (any thread, any moment: no lock)."""
        self._ended.append(slot)

    def _count_ended_locked(self) -> None:
        ended, live = self._ended, self._live
        while ended:
            slot = ended.popleft()
            left = live.get(slot, 0) - 1
            if left > 0:
                live[slot] = left
                continue
            live.pop(slot, None)
            if slot in self._pinned:
                self._pinned.discard(slot)
                self._released.setdefault(owner_pid(slot[0]), []).append(slot)

    def pin_live(self, slots: Iterable[Slot]) -> list[Slot]:
        """Of ``slots`` (of batches acknowledged now), those a reader still holds: the Ack pins
        them, and each goes in a later Release once its last lease ended."""
        with self._lock:
            self._count_ended_locked()
            live = self._live
            held = [slot for slot in slots if slot in live]
            self._pinned.update(held)
        return held

    def take_released(self, pid: int, owner: object) -> list[Slot]:
        """The pinned slots of producer ``pid`` whose last reader is done, to release now; only
        for ``owner``, the connection that serves it."""
        with self._lock:
            self._count_ended_locked()
            if self._owners.get(pid) is not owner:
                return []
            return self._released.pop(pid, [])

    def waiting(self) -> bool:
        """Whether a pinned slot still waits for its last reader (read without the lock)."""
        return bool(self._pinned)

    def serve(self, pid: int, owner: object) -> None:
        """Releases for producer ``pid`` go to ``owner`` (its latest connection that sent
        batches), including those left while it had none."""
        with self._lock:
            self._owners[pid] = owner

    def leave(self, pid: int, owner: object) -> None:
        """That connection ended (a newer one of ``pid`` may have taken over already)."""
        with self._lock:
            if self._owners.get(pid) is owner:
                del self._owners[pid]
            if not pid_alive(pid):  # its releases have nobody to go to, ever
                self._released.pop(pid, None)

    def live(self) -> int:
        """Leases alive now (for tests and the host's own checks)."""
        with self._lock:
            self._count_ended_locked()
            return sum(self._live.values())
