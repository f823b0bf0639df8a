"""A live subscription's client side: a bounded buffer fed by the host over its own connection.

See :func:`goggles_io.subscribe` for the public entry point and :mod:`goggles_io._transport.host.subscriber`
for the host's side. Rows arrive and wait here as rows; each becomes its :class:`Event` where the
subscriber reads it (``get``, iteration, the callback: ADR 0071). This module does not import
what builds the transport.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from goggles_io._bus.bus import EventBus
from goggles_io._bus.transport import check_scope
from goggles_io._event.codec import Ack, Batch, Call, Encoder, Hello, Reply
from goggles_io._event.records import Event, Kind
from goggles_io._event.rows import Row, events_of, nbytes
from goggles_io._transport.client.link import received
from goggles_io._transport.framing import encode_frame

__all__ = ["Subscription"]

_CONNECT_TIMEOUT_S = 30.0


class Subscription:
    """A live feed of events; iterate it, or pass ``callback`` to :func:`subscribe`.

    Attributes:
        dropped: events lost for this subscriber: by the host (its lane was full) plus locally
            (this buffer was full), counted, never silent.
        received: events delivered to the iterator or callback.
    """

    def __init__(
        self,
        scopes: Sequence[str],
        kinds: Sequence[Kind] | None,
        callback: Callable[[Event], Any] | None,
        *,
        on_rows: Callable[[list[Row]], Any] | None = None,
        max_events: int,
        max_bytes: int,
    ) -> None:
        self.scopes = list(scopes)
        self.kinds = None if kinds is None else [Kind(k) for k in kinds]
        self.callback = callback
        self.on_rows = on_rows  # a feed that routes rows on (handlers placed here) reads no event
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.host_dropped = 0
        self.local_dropped = 0
        self.received = 0
        self.closed = False
        self._buffer: deque[tuple[Row, int]] = deque()  # with each row's estimated bytes
        self._bytes = 0
        self._cond = threading.Condition()
        self._sock: socket.socket | None = None
        self._send_lock = threading.Lock()
        self._encoder = Encoder()
        self._tokens = itertools.count(1)
        self._replies: dict[int, tuple[threading.Event, list[Reply]]] = {}
        self._reader: threading.Thread | None = None
        self._inprocess: tuple[EventBus, str] | None = None
        self.host_bounds: tuple[int | None, int | None] = (None, None)
        # True for the feed of handlers placed here: they are real handlers, so the host slows
        # its producers for them as for its own, rather than dropping what they could not take.
        self.backpressure = False

    @property
    def dropped(self) -> int:
        """Events this subscriber lost, in the host and locally."""
        return self.host_dropped + self.local_dropped

    # -- feeding ----------------------------------------------------------------------------
    def deliver(self, rows: list[Row]) -> None:
        """Hand rows to the feed, or their events to the callback, or buffer them (dropping and
        counting past the bound)."""
        if self.on_rows is not None:
            self.on_rows(rows)
            self.received += len(rows)
            return
        if self.callback is not None:
            for event in events_of(rows):
                self.callback(event)
            self.received += len(rows)
            return
        with self._cond:
            for row in rows:
                size = nbytes(row)
                if len(self._buffer) >= self.max_events or self._bytes + size > self.max_bytes:
                    self.local_dropped += 1
                    continue
                self._buffer.append((row, size))
                self._bytes += size
            self._cond.notify_all()

    def fed_by(self, bus: Any, name: str) -> None:
        """``bus`` (this process's own) feeds this subscription through its handler ``name``."""
        self._inprocess = (bus, name)

    # -- reading ----------------------------------------------------------------------------
    def get(self, timeout: float | None = None) -> Event | None:
        """Return the next event, waiting up to ``timeout`` seconds; ``None`` if none came."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._buffer:
                if self.closed:
                    return None
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._cond.wait(left)
            row, size = self._buffer.popleft()
            self._bytes -= size
            self.received += 1
        return events_of((row,))[0]  # where the subscriber reads it

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        event = self.get()
        if event is None:
            raise StopIteration
        return event

    # -- control ----------------------------------------------------------------------------
    def sync(self, timeout: float | None = 10.0) -> bool:
        """Wait until every event the host routed to us so far has been delivered here."""
        if self._inprocess is not None:
            bus, name = self._inprocess
            return bus.flush_handler(name, timeout)
        reply = self._call("sub_flush", {"timeout_s": timeout}, timeout)
        if reply is None or not reply.ok or not isinstance(reply.result, dict):
            return False
        dropped = reply.result.get("dropped")
        if type(dropped) is int:
            self.host_dropped = max(self.host_dropped, dropped)
        return bool(reply.result.get("done"))

    def add_scopes(self, scopes: Sequence[str]) -> None:
        """Widen the subscription to more scopes (events from now on)."""
        new = [check_scope(s, wildcard=True) for s in scopes if s not in self.scopes]
        if not new:
            return
        self.scopes += new
        if self._inprocess is not None:
            bus, name = self._inprocess
            bus.attach(bus.handlers[name], new)
        else:
            self._subscribe(new)

    def close(self) -> None:
        """Stop receiving; iteration ends once the buffer is empty."""
        if self.closed:
            return
        if self._inprocess is not None:
            bus, name = self._inprocess
            bus.forget(name)
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"Subscription(scopes={self.scopes!r}, received={self.received}, "
            f"dropped={self.dropped}, closed={self.closed})"
        )

    # -- socket side ------------------------------------------------------------------------
    def connect(self, socket_path: str, elect: Callable[[], None]) -> None:
        """Connect to the host on ``socket_path`` (starting one via ``elect``) and subscribe."""
        deadline = time.monotonic() + _CONNECT_TIMEOUT_S
        backoff = 0.01
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(socket_path)
                break
            except OSError as exc:
                sock.close()
                if time.monotonic() > deadline:
                    msg = f"no goggles_io host answered on {socket_path!r} within {_CONNECT_TIMEOUT_S:.0f} s"
                    raise ConnectionError(msg) from exc
                elect()
                time.sleep(backoff)
                backoff = min(backoff * 2, 0.25)
        self._sock = sock
        sock.sendall(encode_frame(self._encoder.encode(Hello(os.getpid()))))
        self._reader = threading.Thread(
            target=self._read, args=(sock,), name="goggles_io:subscription", daemon=True
        )
        self._reader.start()
        self._subscribe(self.scopes)

    def _subscribe(self, scopes: Sequence[str]) -> None:
        kinds = None if self.kinds is None else [k.value for k in self.kinds]
        reply = self._call(
            "subscribe", {"scopes": list(scopes), "kinds": kinds, "pid": os.getpid()}, 30.0
        )
        if reply is None or not reply.ok:
            why = "no answer" if reply is None else reply.result
            msg = f"the goggles_io host refused the subscription: {why}"
            raise ConnectionError(msg)

    def _call(self, op: str, args: dict[str, Any], timeout: float | None) -> Reply | None:
        sock = self._sock
        if sock is None:
            return None
        token = next(self._tokens)
        done = threading.Event()
        box: list[Reply] = []
        self._replies[token] = (done, box)
        try:
            with self._send_lock:
                sock.sendall(encode_frame(self._encoder.encode(Call(token, op, args))))
        except OSError:
            self._replies.pop(token, None)
            return None
        done.wait(timeout)
        self._replies.pop(token, None)
        return box[0] if box else None

    def _read(self, sock: socket.socket) -> None:
        try:
            for msg in received(sock, 1 << 20):
                if type(msg) is Batch:
                    self.deliver(msg.rows)
                elif type(msg) is Ack:
                    self.host_dropped = max(self.host_dropped, int(msg.dropped))
                elif type(msg) is Reply:
                    waiting = self._replies.get(msg.token)
                    if waiting is not None:
                        waiting[1].append(msg)
                        waiting[0].set()
        except Exception:  # a broken or closed connection ends the feed
            pass
        for done, _ in list(self._replies.values()):
            done.set()
        with self._cond:
            self.closed = True
            self._cond.notify_all()
