"""A host-side handler that costs ~60 µs of CPU per event (a busy wait, as W&B's or a PNG
encoder's work would), counting what it handled into a tally file at ``path``.

The tally (``handled``, ``distinct`` steps, ``redelivered``, ``closed``) is written whole (temp
file, then rename) every 5,000 events and at every close, so the test reads what the handler
had really taken, whatever the FinishReport says, even when a host exits without closing it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from typing import Any

import goggles_io as gg

__all__ = ["BusySink"]

_TALLY_EVERY = 5_000


@gg.register_handler
class BusySink(gg.BaseHandler):
    """Spin ``per_event_s`` per event in ``handle`` / ``handle_batch``; keep a tally file."""

    def __init__(
        self, path: str, name: str = "busy", level: int = 0, per_event_s: float = 60e-6
    ) -> None:
        super().__init__(name=name, level=level)
        self.path = path
        self.per_event_s = per_event_s
        self.handled = 0
        self.redelivered = 0
        self.steps: set[int] = set()

    def config(self) -> dict[str, Any]:
        return {**super().config(), "path": self.path, "per_event_s": self.per_event_s}

    def _spin(self, events: Iterable[gg.Event]) -> int:
        n = 0
        clock = time.perf_counter
        for event in events:
            end = clock() + self.per_event_s
            while clock() < end:
                pass
            self.steps.add(event.step)
            n += 1
        before, self.handled = self.handled, self.handled + n
        if before // _TALLY_EVERY != self.handled // _TALLY_EVERY:
            self._write_tally(closed=False)
        return n

    def handle(self, event: gg.Event) -> None:
        self._spin((event,))

    def handle_batch(self, events: list[gg.Event]) -> None:
        self._spin(events)

    def handle_redelivered(self, events: list[gg.Event]) -> None:
        self.redelivered += self._spin(events)

    def close(self) -> None:
        self._write_tally(closed=True)

    def _write_tally(self, *, closed: bool) -> None:
        tally = {
            "handled": self.handled,
            "distinct": len(self.steps),
            "redelivered": self.redelivered,
            "closed": closed,
        }
        tmp = f"{self.path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(tally, fh)
        os.replace(tmp, self.path)
