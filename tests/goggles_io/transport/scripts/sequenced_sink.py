"""A custom host-side sink written by the rule for exactly once (ADR 0057), with the library's
helpers: :class:`~goggles_io.handlers.Sequences` skips an event the file holds, and
:class:`~goggles_io.handlers.SequenceLog` records, ahead of each write, the last sequence of each
producer the write holds. One JSON line per event: ``{"k": kind, "i": step, "crc": image crc}``.

On a goggles_io without the helpers (the code before ADR 0057) it writes every event it is
handed, as a custom sink then did: the chaos test counts the duplicates that leaves.
"""

from __future__ import annotations

import json
import os
from typing import Any

from recording_sink import image_checksum

import goggles_io as gg

try:
    from goggles_io.handlers import SequenceLog, Sequences
except ImportError:  # before ADR 0057
    SequenceLog = Sequences = None  # type: ignore[assignment,misc]

__all__ = ["SequencedSink"]


@gg.register_handler
class SequencedSink(gg.BaseHandler):
    """Append one line per event to ``path``, each event once however often it is sent."""

    def __init__(self, path: str, name: str = "custom", level: int = 0) -> None:
        super().__init__(name=name, level=level)
        self.path = path
        self._fd: int | None = None
        self._lines: list[bytes] = []
        self._marks: dict[str, int] = {}
        self._log: Any = None
        self._seen: Any = None

    def config(self) -> dict[str, Any]:
        return {**super().config(), "path": self.path}

    def open(self) -> None:
        if self._fd is not None:
            return
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if SequenceLog is not None:
            self._log = SequenceLog(self.path, self.name)
            self._seen = Sequences(self._log.recover(self._fd))  # what the file holds

    def handle(self, event: gg.Event) -> None:
        if self._fd is None:
            self.open()
        if self._seen is not None and not self._seen.fresh(event):
            return  # the file holds it: a redelivery after a host's death
        crc = image_checksum(event.payload) if event.kind is gg.Kind.IMAGE else None
        line = {"k": event.kind.value, "i": event.step, "crc": crc}
        self._lines.append((json.dumps(line) + "\n").encode())
        producer = getattr(event, "producer", "")  # absent before ADR 0057
        if producer:
            self._marks[producer] = event.seq
        if len(self._lines) >= 4096:
            self.flush()

    def flush(self) -> None:
        """Write what is buffered with the marks of its events (the host acknowledges after)."""
        if not self._lines or self._fd is None:
            return
        data, self._lines = b"".join(self._lines), []
        marks, self._marks = self._marks, {}
        if self._log is not None:
            self._log.append(self._fd, data, marks)
        else:
            os.write(self._fd, data)

    def close(self) -> None:
        self.flush()
        if self._log is not None:
            self._log.close()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
