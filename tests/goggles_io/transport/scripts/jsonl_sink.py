"""A tiny registered handler for the transport tests: one JSON line per event, flushed per call."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import goggles_io as gg

__all__ = ["JsonlSink"]


@gg.register_handler
class JsonlSink(gg.BaseHandler):
    """Append ``{pid, scope, step, payload...}`` per event to ``path``; ``delay_s`` slows it."""

    def __init__(
        self, path: str, name: str = "test.jsonl", level: int = 0, delay_s: float = 0.0
    ) -> None:
        super().__init__(name=name, level=level)
        self.path = path
        self.delay_s = delay_s
        self._fh: Any = None

    def config(self) -> dict[str, Any]:
        return {**super().config(), "path": self.path, "delay_s": self.delay_s}

    def open(self) -> None:
        self._fh = open(self.path, "a", encoding="utf-8")
        if self._fh.tell() and not _ends_with_newline(self.path):
            self._fh.write("\n")  # a host SIGKILLed mid-line left it torn: keep ours apart

    def handle_redelivered(self, events: list[gg.Event]) -> None:
        """A batch a dead host had not acknowledged: its lines say so (tests check repeats)."""
        for event in events:
            self.handle(event, redelivered=True)

    def handle(self, event: gg.Event, redelivered: bool = False) -> None:
        if self.delay_s:
            time.sleep(self.delay_s)
        payload = event.payload
        if hasattr(payload, "shape"):
            payload = {"shape": list(payload.shape), "sum": float(payload.sum())}
        elif isinstance(payload, Mapping):
            payload = dict(payload)
        self._fh.write(
            json.dumps(
                {
                    "pid": event.pid,
                    "scope": event.scope,
                    "step": event.step,
                    "kind": event.kind.value,
                    "payload": payload,
                    **({"redelivered": True} if redelivered else {}),
                }
            )
            + "\n"
        )

    def flush(self) -> None:
        if self._fh is not None:
            self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _ends_with_newline(path: str) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"
