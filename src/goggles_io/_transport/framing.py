"""Length-prefixed frames on a byte stream, with a magic byte, a version byte and a size limit.

A frame is ``MAGIC (1 byte) | VERSION (1 byte) | length (u32, big endian) | payload``. The
decoder is incremental: a host reads straight into the space it offers (:meth:`FrameDecoder.space`,
then :meth:`FrameDecoder.received`), anyone else feeds it what ``recv`` returned. Anything that
is not a well-formed frame of an acceptable size raises :class:`FrameError`, which closes that
one connection and nothing else.

Memory, checked before it is taken (ADR 0062):

* A frame's length is checked against ``max_frame_bytes`` from its header, before any byte of
  it is kept.
* A frame up to :data:`SMALL_FRAME_BYTES` is put together in the connection's own read buffer
  (:data:`READ_BYTES`, made once): a connection holds at most that much in small frames.
* A larger frame first takes its length from the :class:`FrameBudget` its connection shares
  with the host's others, waiting while they hold it. It is then received into an anonymous
  mapping whose pages exist only once bytes arrive: a half-sent frame holds what was sent, and
  all of a host's half-sent and not yet decoded large frames together at most the budget. The
  length goes back to the budget once the payload was handled (the next call) or the
  connection ended.
"""

from __future__ import annotations

import mmap
import select
import socket
import struct
import threading

from goggles_io.exceptions import FrameError  # re-exported: its home before exceptions.py

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "HEADER_BYTES",
    "MAGIC",
    "READ_BYTES",
    "SMALL_FRAME_BYTES",
    "VERSION",
    "FrameBudget",
    "FrameDecoder",
    "FrameError",
    "Payload",
    "encode_frame",
]

MAGIC = 0xC7
# 2: batches as columns (ADR 0013); 3: one batch form, rows of 15 slots (ADR 0071); 4: the host
# lends shared memory, an Ack pins slots and a Release gives them back (ADR 0077)
VERSION = 4
_HEADER = struct.Struct(">BBI")
HEADER_BYTES = _HEADER.size
DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024
SMALL_FRAME_BYTES = 32 * 1024  # put together in the read buffer; larger ones take the budget
READ_BYTES = 64 * 1024  # a connection's read buffer: headers and small frames

Payload = bytes | memoryview  # a large frame's payload is a view of its own mapping


def encode_frame(payload: bytes, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> bytes:
    """Prefix ``payload`` with the frame header; refuse payloads over ``max_frame_bytes``."""
    if len(payload) > max_frame_bytes:
        msg = f"frame payload of {len(payload)!r} bytes exceeds max_frame_bytes={max_frame_bytes!r}"
        raise FrameError(msg, value=len(payload))
    return _HEADER.pack(MAGIC, VERSION, len(payload)) + payload


class FrameBudget:
    """Bytes the large frames of all of a host's connections may hold at once.

    A frame takes its length before it is received and gives it back once handled; a taker
    waits while the others hold too much (one frame larger than the whole budget goes alone).
    """

    def __init__(self, limit_bytes: int) -> None:
        if limit_bytes < 1:
            msg = f"limit_bytes must be >= 1 (got {limit_bytes!r})"
            raise ValueError(msg)
        self.limit = limit_bytes
        self._held = 0
        self._closed = False
        self._cond = threading.Condition()

    @property
    def held(self) -> int:
        """Bytes taken and not given back."""
        return self._held

    def take(self, n: int) -> None:
        """Wait until ``n`` bytes fit, then take them.

        Raises:
            FrameError: the budget was closed (the host is ending) while waiting.
        """
        with self._cond:
            while self._held and self._held + n > self.limit and not self._closed:
                self._cond.wait()
            if self._closed:
                msg = "the host is closing: no room for a frame"
                raise FrameError(msg, value=n)
            self._held += n

    def give(self, n: int) -> None:
        """Give back ``n`` bytes taken before."""
        if n:
            with self._cond:
                self._held -= n
                self._cond.notify_all()

    def close(self) -> None:
        """Wake every waiter with a FrameError: the host is ending."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class FrameDecoder:
    """Reassemble frames from partial reads of one stream.

    One decoder per connection: after a :class:`FrameError` the stream is out of sync and the
    connection must be closed. With a ``budget``, large frames wait for room in it (see the
    module's docstring); without one (a client reading its host) they only allocate as bytes
    arrive.
    """

    __slots__ = (
        "_body",
        "_budget",
        "_buf",
        "_end",
        "_got",
        "_handed",
        "_max",
        "_need",
        "_parked",
        "_reserved",
        "_start",
        "_view",
    )

    def __init__(
        self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, budget: FrameBudget | None = None
    ) -> None:
        if max_frame_bytes < 1:
            msg = f"max_frame_bytes must be >= 1 (got {max_frame_bytes!r})"
            raise ValueError(msg)
        self._max = max_frame_bytes
        self._budget = budget
        self._buf = bytearray(READ_BYTES)
        self._start = 0  # the bytes not consumed yet are _buf[_start:_end]
        self._end = 0
        self._body: mmap.mmap | None = None  # the large frame being received
        self._view: memoryview | None = None
        self._got = 0
        self._need = 0
        self._reserved = 0  # budget taken by the large frame being received
        self._handed = 0  # budget taken by the large payloads the last call returned
        self._parked = False  # a large frame's header waits for those payloads to be done

    @property
    def pending_bytes(self) -> int:
        """Bytes received that do not yet form a complete frame."""
        return self._end - self._start + self._got

    @property
    def parked(self) -> bool:
        """Whether a large frame's header waits in the read buffer until the payloads the last
        call returned are done with: call :meth:`received` with 0 before reading more (its
        bytes may all be here already)."""
        return self._parked

    @property
    def receiving_large(self) -> bool:
        """Whether a large frame is half received (it holds part of the budget)."""
        return self._view is not None

    def space(self) -> memoryview:
        """Where the next read should go: the rest of the large frame being received, else the
        free end of the read buffer. Never empty."""
        if self._view is not None:
            return self._view[self._got :]
        if self._start == self._end:
            self._start = self._end = 0
        elif self._start and len(self._buf) - self._end < SMALL_FRAME_BYTES + HEADER_BYTES:
            n = self._end - self._start  # what is left is shorter than a small frame and header
            self._buf[:n] = self._buf[self._start : self._end]
            self._start, self._end = 0, n
        return memoryview(self._buf)[self._end :]

    def received(self, n: int) -> list[Payload]:
        """``n`` bytes were written at the start of :meth:`space`; return every payload they
        completed, oldest first. The payloads the previous call returned are done with."""
        self._give_back()
        return self._advance(n)

    def read(self, sock: socket.socket, stall_s: float) -> list[Payload] | None:
        """Read once from ``sock`` straight into :meth:`space` and return the payloads that
        completed (the previous call's are done with); ``None`` when the peer closed cleanly.

        Raises:
            FrameError: the stream ended inside a frame, or a half-sent large frame (holding
                budget) got no byte for ``stall_s`` seconds.
        """
        if self._parked:
            return self.received(0)
        if self._view is not None:
            poll = select.poll()
            poll.register(sock, select.POLLIN)
            if not poll.poll(stall_s * 1000):
                msg = f"a half-sent frame got no byte for {stall_s:g} s ({self._got} bytes held)"
                raise FrameError(msg, value=self._got)
        got = sock.recv_into(self.space())
        if not got:
            self.close()
            return None
        return self.received(got)

    def feed(self, data: bytes | bytearray | memoryview) -> list[Payload]:
        """Append ``data`` and return every payload it completed, oldest first."""
        self._give_back()
        out: list[Payload] = []
        src = memoryview(data).cast("B")
        pos, total = 0, len(src)
        while pos < total or self._parked:
            if self._parked:  # the payloads so far go to the caller together: no budget waits
                self._give_back()
                out += self._advance(0)
                continue
            room = self.space()
            k = min(len(room), total - pos)
            room[:k] = src[pos : pos + k]
            pos += k
            out += self._advance(k)
        return out

    def close(self) -> None:
        """Declare end of stream; a partial frame left over is a :class:`FrameError`. Gives
        everything back to the budget."""
        pending = self.pending_bytes
        receiving = self._view is not None
        self.discard()
        if pending or receiving:
            msg = f"stream ended inside a frame ({pending!r} bytes pending)"
            raise FrameError(msg, value=pending)

    def discard(self) -> None:
        """Drop what is held (the connection ended) and give its budget back."""
        self._give_back()
        self._drop_body()
        if self._budget is not None:
            self._budget.give(self._reserved)
        self._reserved = 0
        self._start = self._end = self._got = 0

    # -- inside -----------------------------------------------------------------------------
    def _give_back(self) -> None:
        if self._handed and self._budget is not None:
            self._budget.give(self._handed)
        self._handed = 0

    def _drop_body(self) -> None:
        if self._view is not None:
            self._view.release()
        self._view = self._body = None

    def _advance(self, n: int) -> list[Payload]:
        out: list[Payload] = []
        self._parked = False
        if self._view is not None:
            self._got += n
            if self._got < self._need:
                return out
            out.append(self._complete())
        else:
            self._end += n
        buf = self._buf
        while self._end - self._start >= HEADER_BYTES:
            start = self._start
            magic, version, length = _HEADER.unpack_from(buf, start)
            if magic != MAGIC:
                msg = f"bad frame magic byte {magic!r} (expected {MAGIC!r})"
                raise FrameError(msg, value=magic)
            if version != VERSION:
                msg = f"unsupported frame version {version!r} (expected {VERSION!r})"
                raise FrameError(msg, value=version)
            if length > self._max:
                msg = f"frame length {length!r} exceeds max_frame_bytes={self._max!r}"
                raise FrameError(msg, value=length)
            body = start + HEADER_BYTES
            have = self._end - body
            if length <= SMALL_FRAME_BYTES:
                if have < length:
                    break
                out.append(bytes(memoryview(buf)[body : body + length]))
                self._start = body + length
                continue
            if self._handed and self._budget is not None:
                # Its length may have to wait for budget that this call's payloads hold: the
                # caller handles them first, then calls again (``parked``).
                self._parked = True
                break
            # A large frame: its length from the budget first, then a mapping of that size
            # whose pages are made only as bytes arrive.
            if self._budget is not None:
                self._budget.take(length)
            self._reserved = length
            self._body = mmap.mmap(-1, length)
            self._view = memoryview(self._body)
            self._need = length
            self._got = min(have, length)
            self._view[: self._got] = memoryview(buf)[body : body + self._got]
            self._start = body + self._got
            if self._got < length:
                break  # the read buffer is empty: the rest is read straight into the mapping
            out.append(self._complete())
        return out

    def _complete(self) -> memoryview:
        """The large frame is in: hand its payload out (its budget until the next call)."""
        body = self._body
        assert body is not None
        self._drop_body()
        self._handed += self._reserved
        self._reserved = self._got = self._need = 0
        return memoryview(body)
