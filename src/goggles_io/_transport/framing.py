"""Length-prefixed frames on a byte stream, with a magic byte, a version byte and a size limit.

A frame is ``MAGIC (1 byte) | VERSION (1 byte) | length (u32, big endian) | payload``. The
decoder is incremental so a host can feed it whatever ``recv`` returned; anything that is not a
well-formed frame of an acceptable size raises :class:`FrameError`, which closes that one
connection and nothing else.
"""

from __future__ import annotations

import struct

from goggles_io.exceptions import FrameError  # re-exported: its home before exceptions.py

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "HEADER_BYTES",
    "MAGIC",
    "VERSION",
    "FrameDecoder",
    "FrameError",
    "encode_frame",
]

MAGIC = 0xC7
VERSION = 2  # 2: batches as columns (ADR 0013)
_HEADER = struct.Struct(">BBI")
HEADER_BYTES = _HEADER.size
DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024


def encode_frame(payload: bytes, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> bytes:
    """Prefix ``payload`` with the frame header; refuse payloads over ``max_frame_bytes``."""
    if len(payload) > max_frame_bytes:
        msg = f"frame payload of {len(payload)!r} bytes exceeds max_frame_bytes={max_frame_bytes!r}"
        raise FrameError(msg, value=len(payload))
    return _HEADER.pack(MAGIC, VERSION, len(payload)) + payload


class FrameDecoder:
    """Reassemble frames from partial reads of one stream.

    One decoder per connection: after a :class:`FrameError` the stream is out of sync and the
    connection must be closed.
    """

    __slots__ = ("_buf", "_max", "_need")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        if max_frame_bytes < 1:
            msg = f"max_frame_bytes must be >= 1 (got {max_frame_bytes!r})"
            raise ValueError(msg)
        self._buf = bytearray()
        self._max = max_frame_bytes
        self._need = -1  # payload length of the frame being assembled, -1 while reading a header

    @property
    def pending_bytes(self) -> int:
        """Bytes received that do not yet form a complete frame."""
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Append ``data`` and return every payload it completed, oldest first."""
        buf = self._buf
        buf += data
        out: list[bytes] = []
        pos = 0
        n = len(buf)
        while True:
            if self._need < 0:
                if n - pos < HEADER_BYTES:
                    break
                magic, version, length = _HEADER.unpack_from(buf, pos)
                if magic != MAGIC:
                    msg = f"bad frame magic byte {magic!r} (expected {MAGIC!r})"
                    raise FrameError(msg, value=magic)
                if version != VERSION:
                    msg = f"unsupported frame version {version!r} (expected {VERSION!r})"
                    raise FrameError(msg, value=version)
                if length > self._max:
                    msg = f"frame length {length!r} exceeds max_frame_bytes={self._max!r}"
                    raise FrameError(msg, value=length)
                pos += HEADER_BYTES
                self._need = length
            if n - pos < self._need:
                break
            out.append(bytes(buf[pos : pos + self._need]))
            pos += self._need
            self._need = -1
        if pos:
            del buf[:pos]
        return out

    def close(self) -> None:
        """Declare end of stream; a partial frame left over is a :class:`FrameError`."""
        if self._buf or self._need >= 0:
            msg = f"stream ended inside a frame ({len(self._buf)!r} bytes pending)"
            raise FrameError(msg, value=len(self._buf))
