"""A host-side BusySink that hangs for good once it has handled ``hang_after`` events: a handler
that stops taking events in the middle of a run."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from busy_sink import BusySink

import goggles_io as gg

__all__ = ["HangingSink"]


@gg.register_handler
class HangingSink(BusySink):
    """Spin ``per_event_s`` per event; after ``hang_after`` events, never return."""

    def __init__(self, path: str, hang_after: int, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.hang_after = hang_after

    def config(self) -> dict[str, Any]:
        return {**super().config(), "hang_after": self.hang_after}

    def _spin(self, events: Iterable[gg.Event]) -> int:
        if self.handled >= self.hang_after:
            while True:
                time.sleep(3600)
        return super()._spin(events)
