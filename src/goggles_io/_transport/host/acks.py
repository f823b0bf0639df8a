"""The host's acknowledgements to one client: a batch is acknowledged once its handlers took it.

Each batch read from a client gets a :class:`~goggles_io._bus.items.Ticket` that follows its
lists through every lane it was routed to. A lane settles it when its worker got past the list
(handled, or dropped and counted by the lane); the ticket is done when every lane did. This
thread acknowledges the longest run of done tickets, oldest first, so ``Ack(seq)`` keeps its
meaning: every batch up to ``seq`` is through; it says how many events of each batch each handler
took, so the client counts what this host's handlers took even if the host dies (ADR 0057).
Until then the client keeps the batch and sends
it again to the next host if this one dies (ADR 0030).

The Ack also names the shared-memory slots of those batches that a reader on the host still
holds (a lent view, ADR 0077): the client keeps them until a ``Release``, which this thread
sends once their last reader is done.
"""

from __future__ import annotations

import threading
from collections import deque

from goggles_io._bus.items import Ticket
from goggles_io._event.messages import Ack, Release
from goggles_io._transport.host.subscriber import ConnWriter
from goggles_io._transport.lending import Slot, SlotLeases

__all__ = ["BatchAcks"]

_IDLE_WAIT_S = 0.5
_RELEASE_POLL_S = 0.002


class BatchAcks:
    """Tickets of one connection's batches, acknowledged in order by a thread of their own."""

    def __init__(self, writer: ConnWriter, leases: SlotLeases | None = None) -> None:
        self._writer = writer
        self._leases = leases
        self._producer: int | None = None  # whose releases come here (serve())
        self._tickets: deque[tuple[Ticket, list[Slot]]] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None

    def ticket(self, seq: int, slots: list[Slot] | None = None) -> Ticket:
        """A ticket for batch ``seq`` (whose arrays were lent from ``slots``), held by the
        caller until it routed the batch."""
        made = Ticket(seq, self._wake.set)
        with self._lock:
            self._tickets.append((made, slots or []))
            if self._thread is None:
                self._start_locked()
        return made

    def serve(self, pid: int) -> None:
        """This connection carries producer ``pid``'s batches: its slot releases come here."""
        if self._leases is None or self._producer == pid:
            return
        with self._lock:
            self._producer = pid
            if self._thread is None:
                self._start_locked()
        self._leases.serve(pid, self)
        self._wake.set()  # releases left for it while it had no connection

    def _start_locked(self) -> None:
        self._thread = threading.Thread(target=self._run, name="goggles_io:host-acks", daemon=True)
        self._thread.start()

    def send_ready(self) -> None:
        """Acknowledge every done ticket at the head now (before a reply that must follow them),
        then release the slots whose last reader is done."""
        with self._lock:
            last = None
            dropped = 0
            taken: list[tuple[int, dict[str, int]]] = []
            slots: list[Slot] = []
            tickets = self._tickets
            while tickets and tickets[0][0].done:
                last, lent = tickets.popleft()
                dropped += last.dropped
                if last.taken:
                    taken.append((last.seq, last.taken))
                slots += lent
            if self._writer.broken:
                return
            try:
                if last is not None:
                    leases = self._leases
                    pinned = leases.pin_live(slots) if slots and leases is not None else []
                    self._writer.send(Ack(last.seq, dropped, taken, pinned))
                if self._producer is not None and self._leases is not None:
                    # After the Ack that pinned them (same lock): the client knows them.
                    released = self._leases.take_released(self._producer, self)
                    if released:
                        self._writer.send(Release(released))
            except OSError:
                self._writer.broken = True

    def close(self) -> None:
        """The connection ended: stop the thread (unacknowledged batches are the client's;
        releases wait for the producer's next connection)."""
        self._closed = True
        if self._producer is not None and self._leases is not None:
            self._leases.leave(self._producer, self)
        self._wake.set()

    def _run(self) -> None:
        leases = self._leases
        while not self._closed:
            # A lease's end wakes nobody (it may come from the garbage collector anywhere):
            # while a pinned slot waits, look every few ms.
            waiting = leases is not None and self._producer is not None and leases.waiting()
            self._wake.wait(_RELEASE_POLL_S if waiting else _IDLE_WAIT_S)
            self._wake.clear()
            self.send_ready()
