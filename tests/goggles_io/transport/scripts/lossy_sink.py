"""A registered handler that refuses every other event and says so through ``losses()``."""

from __future__ import annotations

import time

import goggles_io as gg

__all__ = ["LossySink"]


@gg.register_handler
class LossySink(gg.BaseHandler):
    """Counts what it takes; ``refused`` every odd step, like a sink rejecting bad points."""

    def __init__(self, name: str = "lossy", level: int = 0, delay_s: float = 0.0) -> None:
        super().__init__(name=name, level=level)
        self.delay_s = delay_s
        self.refused = 0

    def config(self) -> dict[str, object]:
        return {**super().config(), "delay_s": self.delay_s}

    def handle(self, event: gg.Event) -> None:
        if self.delay_s:
            time.sleep(self.delay_s)
        if (event.step or 0) % 2:
            self.refused += 1

    def losses(self) -> dict[str, int]:
        return {"refused": self.refused}
