"""A host-side handler that records, per event it handles, one JSON line: index, kind, checksum
of an image's pixels, and whether the event came through ``handle_redelivered``.

It takes 20 ms per image (a slow media sink), so a host killed mid-burst is killed with batches
in its lanes. Each line is one ``os.write`` on an ``O_APPEND`` descriptor: a SIGKILLed host
leaves whole lines, so the file says exactly what the handler took before the kill. Redelivered
events are recorded, not skipped: the test checks that a second sighting is always marked.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import zlib
from collections.abc import Iterable
from typing import Any

import numpy as np

import goggles_io as gg

__all__ = ["RecordingSink", "image_checksum", "make_image"]

IMAGE_SHAPE = (512, 512, 4)  # 1 MiB of uint8
_IMAGE_BYTES = 512 * 512 * 4


def make_image(index: int) -> np.ndarray:
    """A 1 MiB uint8 image whose every byte depends on ``index`` (first 4 bytes: the index)."""
    raw = bytearray(hashlib.shake_128(index.to_bytes(4, "little")).digest(_IMAGE_BYTES))
    raw[:4] = index.to_bytes(4, "little")
    return np.frombuffer(bytes(raw), dtype=np.uint8).reshape(IMAGE_SHAPE).copy()


def image_checksum(pixels: Any) -> int:
    """CRC-32 of the pixels' bytes, as the handler and the test both compute it."""
    return zlib.crc32(np.ascontiguousarray(pixels).tobytes())


@gg.register_handler
class RecordingSink(gg.BaseHandler):
    """Append ``{"i", "k", "crc", "re"}`` per handled event to ``path``; ``image_s`` per image,
    ``event_s`` per event (a sink slow but steady)."""

    def __init__(
        self,
        path: str,
        name: str = "recording",
        level: int = 0,
        image_s: float = 0.02,
        event_s: float = 0.0,
    ) -> None:
        super().__init__(name=name, level=level)
        self.path = path
        self.image_s = image_s
        self.event_s = event_s
        self._fd: int | None = None

    def config(self) -> dict[str, Any]:
        slow = {"event_s": self.event_s} if self.event_s else {}  # subclasses need not take it
        return {**super().config(), "path": self.path, "image_s": self.image_s, **slow}

    def open(self) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def handle(self, event: gg.Event) -> None:
        self._record([event], redelivered=False)

    def handle_redelivered(self, events: Iterable[gg.Event]) -> None:
        """A list a dead host may have handled in part: recorded, marked, never skipped."""
        self._record(events, redelivered=True)

    def _record(self, events: Iterable[gg.Event], *, redelivered: bool) -> None:
        if self._fd is None:
            self.open()
        assert self._fd is not None
        for event in events:
            if self.event_s:
                time.sleep(self.event_s)
            crc = None
            if event.kind is gg.Kind.IMAGE:
                time.sleep(self.image_s)
                crc = image_checksum(event.payload)
            line = {"i": event.step, "k": event.kind.value, "crc": crc, "re": redelivered}
            os.write(self._fd, (json.dumps(line) + "\n").encode())

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
