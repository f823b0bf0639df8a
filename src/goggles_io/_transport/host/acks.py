"""The host's acknowledgements to one client: a batch is acknowledged once its handlers took it.

Each batch read from a client gets a :class:`~goggles_io._bus.items.Ticket` that follows its
lists through every lane it was routed to. A lane settles it when its worker got past the list
(handled, or dropped and counted by the lane); the ticket is done when every lane did. This
thread acknowledges the longest run of done tickets, oldest first, so ``Ack(seq)`` keeps its
meaning: every batch up to ``seq`` is through; it says how many events of each batch each handler
took, so the client counts what this host's handlers took even if the host dies (ADR 0057).
Until then the client keeps the batch and sends
it again to the next host if this one dies (ADR 0030).
"""

from __future__ import annotations

import threading
from collections import deque

from goggles_io._bus.items import Ticket
from goggles_io._event.messages import Ack
from goggles_io._transport.host.subscriber import ConnWriter

__all__ = ["BatchAcks"]

_IDLE_WAIT_S = 0.5


class BatchAcks:
    """Tickets of one connection's batches, acknowledged in order by a thread of their own."""

    def __init__(self, writer: ConnWriter) -> None:
        self._writer = writer
        self._tickets: deque[Ticket] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None

    def ticket(self, seq: int) -> Ticket:
        """A ticket for batch ``seq``, held by the caller until it routed the batch."""
        made = Ticket(seq, self._wake.set)
        with self._lock:
            self._tickets.append(made)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="goggles_io:host-acks", daemon=True
                )
                self._thread.start()
        return made

    def send_ready(self) -> None:
        """Acknowledge every done ticket at the head now (before a reply that must follow them)."""
        with self._lock:
            last = None
            dropped = 0
            taken: list[tuple[int, dict[str, int]]] = []
            tickets = self._tickets
            while tickets and tickets[0].done:
                last = tickets.popleft()
                dropped += last.dropped
                if last.taken:
                    taken.append((last.seq, last.taken))
            if last is None or self._writer.broken:
                return
            try:
                self._writer.send(Ack(last.seq, dropped, taken))
            except OSError:
                self._writer.broken = True

    def close(self) -> None:
        """The connection ended: stop the thread (unacknowledged batches are the client's)."""
        self._closed = True
        self._wake.set()

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(_IDLE_WAIT_S)
            self._wake.clear()
            self.send_ready()
