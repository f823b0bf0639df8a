"""A host-side handler that records the order in which its host hands it events: one line per
event, ``{"host": the host's pid, "i": step, "re": came through handle_redelivered}``, each one
``os.write`` on an ``O_APPEND`` descriptor (a SIGKILLed host leaves whole lines). ``delay_s``
per event keeps batches unacknowledged in the producer while the host works."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from typing import Any

import goggles_io as gg

__all__ = ["OrderSink"]


@gg.register_handler
class OrderSink(gg.BaseHandler):
    """Append what it is handed, in the order it is handed it; never skips a repeat."""

    def __init__(self, path: str, name: str = "order", level: int = 0, delay_s: float = 0.0):
        super().__init__(name=name, level=level)
        self.path = path
        self.delay_s = delay_s
        self._fd: int | None = None

    def config(self) -> dict[str, Any]:
        return {**super().config(), "path": self.path, "delay_s": self.delay_s}

    def open(self) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def handle(self, event: gg.Event) -> None:
        self._record([event], redelivered=False)

    def handle_redelivered(self, events: Iterable[gg.Event]) -> None:
        self._record(events, redelivered=True)

    def _record(self, events: Iterable[gg.Event], *, redelivered: bool) -> None:
        if self._fd is None:
            self.open()
        assert self._fd is not None
        for event in events:
            if self.delay_s:
                time.sleep(self.delay_s)
            line = {"host": os.getpid(), "i": event.step, "re": redelivered}
            os.write(self._fd, (json.dumps(line) + "\n").encode())

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
