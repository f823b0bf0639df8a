"""A host-side ``SequencedSink`` that takes nothing until a gate file exists: a hung handler
that skips what its file holds by producer sequence (ADR 0057), and later wakes (then taking
``per_event_s`` per event)."""

from __future__ import annotations

import os
import time
from typing import Any

from sequenced_sink import SequencedSink

import goggles_io as gg

__all__ = ["GatedSequencedSink"]


@gg.register_handler
class GatedSequencedSink(SequencedSink):
    """Write one line per event once ``gate`` exists (until then the handler hangs)."""

    def __init__(
        self, path: str, gate: str, name: str = "gated", level: int = 0, per_event_s: float = 0.0
    ) -> None:
        super().__init__(path, name=name, level=level)
        self.gate = gate
        self.per_event_s = per_event_s

    def config(self) -> dict[str, Any]:
        return {**super().config(), "gate": self.gate, "per_event_s": self.per_event_s}

    def handle(self, event: gg.Event) -> None:
        while not os.path.exists(self.gate):
            time.sleep(0.02)
        if self.per_event_s:
            time.sleep(self.per_event_s)
        super().handle(event)
