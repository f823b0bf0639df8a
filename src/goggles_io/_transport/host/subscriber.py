"""The host's side of a live subscription: a handler that writes events back to a client socket.

``gg.subscribe`` opens its own connection and sends ``subscribe``; the host attaches a
:class:`SubscriberSink` for it on the bus like any handler, in its own bounded lane (count and
byte budget), marked ``backpressure = False`` so a reader that stalls only fills its own lane:
its events are then dropped and counted, and the producers and other handlers never wait. Each
batch goes out as a ``Batch`` frame followed by an ``Ack`` carrying the lane's running drop
count, so the subscriber knows what it lost. Arrays travel inline (no shared memory back).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from goggles_io._event.codec import Ack, Batch, Encoder, Message
from goggles_io._event.records import Event, Kind
from goggles_io._event.rows import Row, row_of
from goggles_io._transport.framing import encode_frame

__all__ = ["ConnWriter", "SubscriberSink"]


class ConnWriter:
    """Serialise writes to one connection: replies and subscription frames share the socket."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.lock = threading.Lock()
        self.encoder = Encoder()
        self.broken = False

    def send(self, *messages: Message) -> None:
        """Send ``messages`` as frames, in order; raises ``OSError`` when the peer is gone."""
        with self.lock:
            data = b"".join(encode_frame(self.encoder.encode(m)) for m in messages)
            self.conn.sendall(data)


class SubscriberSink:
    """A bus handler that forwards what it is routed to one subscriber connection."""

    level = 0
    backpressure = False  # True for the feed of handlers placed in the subscriber's process
    remote_methods: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, name: str, writer: ConnWriter, kinds: Iterable[str] | None) -> None:
        self.name = name
        self.writer = writer
        self.capabilities = frozenset(Kind(k) for k in kinds) if kinds else frozenset(Kind)
        self.dropped: Callable[[], int] = lambda: 0  # set by the host: the lane's drop count
        self.queue_size: int | None = None  # the subscriber's own bounds for its lane, if any
        self.queue_bytes: int | None = None
        self._seq = 0

    def handle_rows(self, rows: list[Row]) -> None:
        """Send one batch and the running drop count; a gone reader makes this a no-op. The
        rows go on as rows: the subscriber builds their events where it reads them."""
        if self.writer.broken:
            return
        self._seq += 1
        try:
            self.writer.send(Batch(self._seq, rows), Ack(self._seq, self.dropped()))
        except OSError:
            self.writer.broken = True
            with contextlib.suppress(OSError):
                self.writer.conn.shutdown(socket.SHUT_RDWR)

    def handle(self, event: Event) -> None:
        """Forward one event a synchronous bus handed over itself."""
        self.handle_rows([row_of(event)])

    def to_dict(self) -> dict[str, Any]:
        """Subscribers are never rebuilt elsewhere; the spec only names them."""
        return {"cls": "goggles_io.subscriber", "data": {"name": self.name}}
