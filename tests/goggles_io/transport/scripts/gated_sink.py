"""A host-side RecordingSink that takes nothing until a gate file exists: a hung handler.

Each handled event is one JSON line (index, kind, image checksum, redelivered mark), as in
``recording_sink``; before the first one it waits, polling, until ``gate`` exists.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import Any

from recording_sink import RecordingSink

import goggles_io as gg

__all__ = ["GatedSink"]


@gg.register_handler
class GatedSink(RecordingSink):
    """Record events, but only once ``gate`` exists (until then the handler hangs)."""

    def __init__(
        self, path: str, gate: str, name: str = "gated", level: int = 0, image_s: float = 0.0
    ) -> None:
        super().__init__(path, name=name, level=level, image_s=image_s)
        self.gate = gate

    def config(self) -> dict[str, Any]:
        return {**super().config(), "gate": self.gate}

    def _record(self, events: Iterable[gg.Event], *, redelivered: bool) -> None:
        while not os.path.exists(self.gate):
            time.sleep(0.02)
        super()._record(events, redelivered=redelivered)
