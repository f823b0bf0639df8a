"""The client's connection to its host: connect (electing a host), receive acks, notice a death.

A receiver thread per connection reads acknowledgements (freeing shared-memory slots) and
replies; EOF means the host died, which is noticed at once. The host acknowledges a batch once
its handlers took it (ADR 0030), so what was in flight at a death was not handled, or only in
part: those frames are kept, and sent again first to the next host, after a ``redeliver`` call
that tells it they may reach a handler a second time.

A connection that fails before its handshake is sent is no connection: the sender closes it and
goes on electing. It happens after a host is SIGKILLed: the kernel releases the dead process's
sockets after our connection (EOF), but its listener last, so a reconnect can still land in the
dead listener's backlog and is reset at the first send. A receiver only ever disconnects its
own connection, never a newer one the sender has made since.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from typing import TYPE_CHECKING, Any

from goggles_io._event.messages import Ack, Call, Hello, Reply
from goggles_io._transport.framing import FrameDecoder, encode_frame
from goggles_io._util.report import report

__all__ = ["HostLink"]


class HostLink:
    """The connection-facing half of :class:`~goggles_io._transport.client.SocketClient`."""

    # Provided by SocketClient.
    _stop: bool
    _sock: socket.socket | None
    _conn_gen: int
    _ops: list[Any]
    _pending: dict[int, Any]
    _inflight: Any
    _resend: Any
    _tokens: Any
    _lock: threading.Lock
    _wake: threading.Event
    _elector: Any
    _host_lost: bool
    socket_path: str
    reconnects: int
    lost_in_flight: int
    redelivered: int
    host_dropped: int
    delivered: int

    if TYPE_CHECKING:  # defined by SocketClient

        def _warn_once(self, key: str, message: str) -> None: ...

        def _release(self, refs: list[Any]) -> None: ...

    # -- connection -------------------------------------------------------------------------
    def _connect(self) -> bool:
        backoff = 0.01
        while not self._stop:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(self.socket_path)
            except OSError:
                sock.close()
                try:
                    self._elector.elect()
                except Exception as exc:
                    self._warn_once("elect", f"cannot start a host on {self.socket_path!r}: {exc}")
                self._wake.wait(backoff)
                self._wake.clear()
                backoff = min(backoff * 2, 0.25)
                continue
            try:
                self._on_connected(sock)
            except OSError:
                # Reset before the handshake went out (a dying host's backlog, a host in its
                # idle-exit instant): nothing was sent on it, so nothing is lost; elect again.
                sock.close()
                self._wake.wait(backoff)
                self._wake.clear()
                backoff = min(backoff * 2, 0.25)
                continue
            return True
        return False

    def _on_connected(self, sock: socket.socket) -> None:
        from goggles_io._event.codec import Encoder  # on the sender thread

        encoder = Encoder()
        frames = [encode_frame(encoder.encode(Hello(os.getpid())))]
        frames += [encode_frame(encoder.encode(call)) for call in self._ops]
        with self._lock:
            resend = list(self._resend)
        if resend:
            # What the dead host had not acknowledged goes first, in order, marked (ADR 0030).
            upto = Call(next(self._tokens), "redeliver", {"upto": resend[-1][0]})
            frames.append(encode_frame(encoder.encode(upto)))
            frames += [frame for _, frame, _, _ in resend]
        frames += [encode_frame(encoder.encode(m.call)) for m in self._pending.values()]
        sock.sendall(b"".join(frames))
        with self._lock:
            for _ in resend:
                self._resend.popleft()
            self._inflight.extendleft(reversed(resend))
            self.redelivered += sum(n for _, _, n, _ in resend)
        self._conn_gen += 1
        self._sock = sock
        self._host_lost = False
        threading.Thread(
            target=self._recv_loop,
            args=(sock, self._conn_gen),
            name="goggles_io:receiver",
            daemon=True,
        ).start()

    def _disconnect(self, *, keep: bool, warn: bool, only: socket.socket | None = None) -> None:
        """Drop the connection (``only``: if it is still that one).

        ``keep``: the host died, so what was in flight is kept to be sent again to the next one;
        else (this client closes) it is counted as not delivered.
        """
        with self._lock:
            if only is not None and self._sock is not only:
                return  # the sender already dropped it (and may have connected again)
            sock, self._sock = self._sock, None
            inflight = list(self._inflight)
            self._inflight.clear()
            if keep:
                # Also when the receiver already dropped the socket: the sender may have put a
                # batch in flight on it since. Oldest first, whoever noticed the death first.
                self._resend.extend(inflight)
                ordered = sorted(self._resend, key=lambda frame: frame[0])
                self._resend.clear()
                self._resend.extend(ordered)
        kept = sum(n for _, _, n, _ in inflight)
        if not keep:
            for _, _, _, refs in inflight:
                self._release(refs)
            self.lost_in_flight += kept
        if sock is None:
            return
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()
        if warn:
            self._host_lost = True  # producers do not wait for room until a host answers again
            self.reconnects += 1
            report(
                f"pid {os.getpid()}: lost the host on {self.socket_path!r}; {kept} events it had "
                "not acknowledged are kept and sent again to the next host; re-electing a host "
                "and re-attaching handlers"
            )

    # -- receiver thread --------------------------------------------------------------------
    def _recv_loop(self, sock: socket.socket, gen: int) -> None:
        from goggles_io._event.codec import Decoder

        frames = FrameDecoder()
        decoder = Decoder()
        try:
            while True:
                data = sock.recv(1 << 16)
                if not data:
                    break
                for payload in frames.feed(data):
                    msg = decoder.decode(payload)
                    if type(msg) is Ack:
                        self._on_ack(msg)
                    elif type(msg) is Reply:
                        marker = self._pending.pop(msg.token, None)
                        if not msg.ok:
                            self._warn_once(f"call:{msg.result}", f"host refused: {msg.result}")
                        if marker is not None:
                            marker.result = msg
                            marker.done.set()
        except (OSError, ValueError):
            pass
        if gen == self._conn_gen and not self._stop:
            self._disconnect(keep=True, warn=True, only=sock)
            self._wake.set()

    def _on_ack(self, ack: Ack) -> None:
        if type(ack.dropped) is int and ack.dropped > 0:
            self.host_dropped += ack.dropped
        inflight = self._inflight
        while inflight and inflight[0][0] <= ack.seq:
            with self._lock:
                if not inflight:
                    break
                _, _, n, refs = inflight.popleft()
                self.delivered += n
            self._release(refs)
