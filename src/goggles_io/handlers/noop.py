"""``NoOpHandler``: accepts every event and does nothing (a sink for overhead measurements)."""

from __future__ import annotations

from typing import ClassVar

from goggles_io._event.records import Event, Kind
from goggles_io.handlers.base import ALL_KINDS, BaseHandler, register_handler

__all__ = ["NoOpHandler"]


@register_handler
class NoOpHandler(BaseHandler):
    """Discard everything; useful to measure the bus itself or to silence a scope."""

    capabilities: ClassVar[frozenset[Kind]] = ALL_KINDS
    default_name: ClassVar[str] = "noop"

    def handle(self, event: Event) -> None:
        return None
