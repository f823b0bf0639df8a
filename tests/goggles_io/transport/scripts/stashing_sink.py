"""A host-side handler that keeps the arrays it is handed (ADR 0077's adversary).

The host lends handlers read-only views of the producer's shared memory. This sink keeps every
image's ``event.payload`` after ``handle()`` returns, the last ``keep`` of them (a history
buffer: older ones are dropped, so their slots come back and are reused while it keeps the
rest), with each one's CRC-32 when it was handed over. On every image it checks that each payload
it still holds has the same bytes; it also tries to write into the payload (a lent view is
read-only; an array read from the disk pool is the host's own copy). One JSON line per image
(``os.write`` on an ``O_APPEND`` descriptor, whole lines after a SIGKILL): the image's index,
whether its CRC matched the producer's pattern, the indexes of kept payloads whose bytes changed
since, and whether it was lent (the write was refused).
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Iterable
from typing import Any

from recording_sink import image_checksum, make_image

import goggles_io as gg

__all__ = ["StashingSink"]


@gg.register_handler
class StashingSink(gg.BaseHandler):
    """Keep the last ``keep`` image payloads; record per image what changed under them."""

    def __init__(self, path: str, keep: int = 8, name: str = "stashing", level: int = 0) -> None:
        super().__init__(name=name, level=level)
        self.path = path
        self.keep = keep
        self._fd: int | None = None
        self._kept: deque[tuple[int, Any, int]] = deque()

    def config(self) -> dict[str, Any]:
        return {**super().config(), "path": self.path, "keep": self.keep}

    def open(self) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def handle(self, event: gg.Event) -> None:
        self._take([event], redelivered=False)

    def handle_redelivered(self, events: Iterable[gg.Event]) -> None:
        self._take(events, redelivered=True)

    def _take(self, events: Iterable[gg.Event], *, redelivered: bool) -> None:
        if self._fd is None:
            self.open()
        assert self._fd is not None
        for event in events:
            if event.kind is not gg.Kind.IMAGE:
                continue
            payload = event.payload
            step = int(event.step or 0)
            first = int(payload[0, 0, 0])
            try:
                payload[0, 0, 0] = 255 - first  # a lent view refuses; an own copy takes it
            except ValueError:
                lent = True
            else:
                payload[0, 0, 0] = first
                lent = False
            crc = image_checksum(payload)
            changed = [i for i, kept, was in self._kept if image_checksum(kept) != was]
            self._kept.append((step, payload, crc))
            while len(self._kept) > self.keep:
                self._kept.popleft()
            line = {
                "i": step,
                "ok": crc == image_checksum(make_image(step)),
                "changed": changed,
                "lent": lent,
                "re": redelivered,
            }
            os.write(self._fd, (json.dumps(line) + "\n").encode())

    def close(self) -> None:
        changed = [i for i, kept, was in self._kept if image_checksum(kept) != was]
        if self._fd is not None:
            os.write(self._fd, (json.dumps({"closed": True, "changed": changed}) + "\n").encode())
            os.close(self._fd)
            self._fd = None
        self._kept.clear()
