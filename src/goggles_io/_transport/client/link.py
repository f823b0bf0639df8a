"""The client's connection to its host: connect (electing a host), read acks, notice a death.

A receiver thread per connection reads acknowledgements and replies; EOF means the host died,
which is noticed at once: the link tells its owner (``on_lost``), whose pipe then sends every
batch the dead host had not acknowledged again, first, to the next host (ADR 0030). On every
new connection the link says hello and replays the handler operations sent so far.

A connection that fails before its handshake is sent is no connection: the link closes it and
goes on electing. It happens after a host is SIGKILLed: the kernel releases the dead process's
sockets after our connection (EOF), but its listener last, so a reconnect can still land in the
dead listener's backlog and is reset at the first send. A receiver only ever disconnects its
own connection, never a newer one made since.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from goggles_io._event.messages import Ack, Call, Hello, Message, Release, Reply
from goggles_io._transport.framing import FrameDecoder, encode_frame
from goggles_io._util.report import report

if TYPE_CHECKING:
    from goggles_io._transport.client.election import HostElector

__all__ = ["HostLink", "LinkLost", "received"]

_MAX_BACKOFF_S = 0.25


def received(sock: socket.socket, bufsize: int) -> Iterator[Message]:
    """Each message the peer sends on ``sock``, decoded, until it closes; a read or decode
    error ends the feed in the reader's hands."""
    from goggles_io._event.codec import Decoder

    frames = FrameDecoder()
    decoder = Decoder()
    while True:
        data = sock.recv(bufsize)
        if not data:
            return
        for payload in frames.feed(data):
            yield decoder.decode(payload)


class LinkLost(OSError):
    """A write meant for a connection that is lost: the pipe picks again, in order."""


class HostLink:
    """One client's connection to the host on ``socket_path``, made again after a death."""

    def __init__(
        self,
        socket_path: str,
        *,
        elector: Callable[[], HostElector],
        replay: Callable[[], list[Call]],
        on_ack: Callable[[Ack], None],
        on_reply: Callable[[Reply], None],
        on_release: Callable[[Release], None] | None = None,
        on_lost: Callable[[], None],
        warn_once: Callable[[str, str], None],
    ) -> None:
        self.socket_path = socket_path
        self._elector = elector
        self._replay = replay
        self._on_ack = on_ack
        self._on_reply = on_reply
        self._on_release = on_release
        self._on_lost = on_lost
        self._warn_once = warn_once
        self._sock: socket.socket | None = None
        self._gen = 0
        # Connections lost so far (each also told to ``on_lost``, once): a write made for an
        # earlier count is refused, never sent on a newer connection (see ``send``).
        self.losses = 0
        self._lock = threading.Lock()
        self._sending = threading.Lock()  # one write at a time: frames never interleave
        self._wake = threading.Event()
        self._closing = False

    def send(self, data: bytes, losses: int | None = None) -> None:
        """Write ``data`` on the connection (connecting first when there is none).

        ``losses``: the count of lost connections ``data`` was made for. Once another was lost
        since, ``data`` is refused rather than sent on a new connection ahead of what the
        owner must send again first (a receiver notices a death while the sender frames).

        Raises:
            LinkLost: a connection was lost since ``data`` was made.
            OSError: the host is gone (or the link is closing): the caller keeps what it sent.
        """
        with self._lock:
            if losses is not None and losses != self.losses:
                raise LinkLost("the connection this was made for is lost")
            sock = self._sock
        sock = sock or self._connect()
        if sock is None:
            raise OSError("the link is closing")
        with self._sending:
            sock.sendall(data)

    def ask(self, call: Call, wait_s: float) -> Reply | None:
        """Run ``call`` on the host over a connection of its own; its reply, or ``None``.

        For a finish that gave up: the host may have stopped reading our connection (a hung
        handler's lane is full, ADR 0030), so an operation sent there would wait behind the
        batches it has not read. A connection of its own is read at once. Never elects.
        """
        from goggles_io._event.codec import Decoder, Encoder

        deadline = time.monotonic() + wait_s
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(wait_s)
                sock.connect(self.socket_path)
                encoder = Encoder()
                hello = encode_frame(encoder.encode(Hello(os.getpid())))
                sock.sendall(hello + encode_frame(encoder.encode(call)))
                frames, decoder = FrameDecoder(), Decoder()
                while (left := deadline - time.monotonic()) > 0:
                    sock.settimeout(left)
                    data = sock.recv(1 << 16)
                    if not data:
                        return None
                    for payload in frames.feed(data):
                        msg = decoder.decode(payload)
                        if type(msg) is Reply and msg.token == call.token:
                            return msg
        except (OSError, ValueError):
            return None
        return None

    def _connect(self) -> socket.socket | None:
        backoff = 0.01
        while not self._closing:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(self.socket_path)
            except OSError:
                sock.close()
                try:
                    self._elector().elect()
                except Exception as exc:
                    self._warn_once("elect", f"cannot start a host on {self.socket_path!r}: {exc}")
                self._wake.wait(backoff)
                self._wake.clear()
                backoff = min(backoff * 2, _MAX_BACKOFF_S)
                continue
            try:
                self._handshake(sock)
            except OSError:
                # Reset before the handshake went out (a dying host's backlog, a host in its
                # idle-exit instant): nothing was sent on it, so nothing is lost; elect again.
                sock.close()
                self._wake.wait(backoff)
                self._wake.clear()
                backoff = min(backoff * 2, _MAX_BACKOFF_S)
                continue
            return sock
        return None

    def _handshake(self, sock: socket.socket) -> None:
        from goggles_io._event.codec import Encoder  # on the pipe's worker thread

        encoder = Encoder()
        frames = [encode_frame(encoder.encode(Hello(os.getpid())))]
        frames += [encode_frame(encoder.encode(call)) for call in self._replay()]
        sock.sendall(b"".join(frames))
        with self._lock:
            self._gen += 1
            self._sock = sock
            gen = self._gen
        threading.Thread(
            target=self._receive, args=(sock, gen), name="goggles_io:receiver", daemon=True
        ).start()

    def disconnect(self, *, only: socket.socket | None = None, lost: bool = True) -> None:
        """Drop the connection (``only``: if it is still that one); ``lost``: the host died."""
        with self._lock:
            if only is not None and self._sock is not only:
                return  # already dropped (and maybe connected again)
            sock, self._sock = self._sock, None
            told = lost and not self._closing and sock is not None
            if told:
                self.losses += 1  # before the owner hears of it: no write slips in between
        if sock is None:
            return
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()
        if told:
            report(
                f"pid {os.getpid()}: lost the host on {self.socket_path!r}; what it had not "
                "acknowledged is kept and sent again to the next host; re-electing a host and "
                "re-attaching handlers"
            )
            self._on_lost()

    def _receive(self, sock: socket.socket, gen: int) -> None:
        try:
            for msg in received(sock, 1 << 16):
                if type(msg) is Ack:
                    self._on_ack(msg)
                elif type(msg) is Reply:
                    if not msg.ok:
                        self._warn_once(f"call:{msg.result}", f"host refused: {msg.result}")
                    self._on_reply(msg)
                elif type(msg) is Release and self._on_release is not None:
                    self._on_release(msg)
        except (OSError, ValueError):
            pass
        if gen == self._gen:
            self.disconnect(only=sock)

    def close(self) -> None:
        """Stop connecting and drop the connection (the client is finishing)."""
        self._closing = True
        self._wake.set()
        self.disconnect(lost=False)

    def forget_after_fork(self) -> None:
        """In a forked child: close our copy of the parent's socket (never shut it down)."""
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()
        self._lock = threading.Lock()
        self._sending = threading.Lock()
        self._wake = threading.Event()
