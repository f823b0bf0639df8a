"""A registered test handler that is slow until a gate file exists, and counts what it took.

``delay_s`` per event while ``gate`` does not exist, then none: a test floods it, watches the
slow drain for a while (``SlowUntilSink.handled`` counts in this process, for an in-process
host), then opens the gate so ``finish()`` ends soon. One short JSON line per event: its step.
"""

from __future__ import annotations

import os
import time
from typing import Any, ClassVar

import goggles_io as gg

__all__ = ["SlowUntilSink"]


@gg.register_handler
class SlowUntilSink(gg.BaseHandler):
    """Append ``{"step": n}`` per event to ``path``; sleep ``delay_s`` first while shut."""

    handled: ClassVar[int] = 0  # every instance's events in this process

    def __init__(
        self, path: str, gate: str, delay_s: float, name: str = "slow_until", level: int = 0
    ) -> None:
        super().__init__(name=name, level=level)
        self.path = path
        self.gate = gate
        self.delay_s = delay_s
        self._open = False
        self._fh: Any = None

    def config(self) -> dict[str, Any]:
        return {**super().config(), "path": self.path, "gate": self.gate, "delay_s": self.delay_s}

    def open(self) -> None:
        self._fh = open(self.path, "a", encoding="utf-8")

    def handle(self, event: gg.Event) -> None:
        if not self._open:
            self._open = os.path.exists(self.gate)
            if not self._open:
                time.sleep(self.delay_s)
        self._fh.write(f'{{"step": {event.step}}}\n')
        SlowUntilSink.handled += 1

    def flush(self) -> None:
        if self._fh is not None:
            self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
