"""Test helpers that ship with goggles_io: :class:`MemoryHandler` keeps every event it gets.

Use it instead of mocking the bus::

    handler = MemoryHandler(name="mem")
    goggles_io.attach(handler, scopes=["global"])
    logger.scalar("loss", 0.5, step=1)
    assert delivered(handler)[0].payload == {"loss": 0.5}

:func:`reset_defaults` finishes the transport and forgets every process-global setting, so each
test of code that logs starts from a process that never logged (use it in an autouse fixture).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, ClassVar

from goggles_io._api.state import reset_defaults
from goggles_io._event.records import Event, Kind
from goggles_io.handlers.base import ALL_KINDS, BaseHandler, register_handler

__all__ = ["MemoryHandler", "delivered", "reset_defaults"]


@register_handler
class MemoryHandler(BaseHandler):
    """Store every event in ``events`` (thread-safe); count lifecycle calls for assertions."""

    capabilities: ClassVar[frozenset[Kind]] = ALL_KINDS
    default_name: ClassVar[str] = "memory"

    def __init__(self, name: str | None = None, level: int = logging.NOTSET) -> None:
        super().__init__(name=name, level=level)
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self.opened = 0
        self.closed = 0
        self.flushed = 0

    @property
    def events(self) -> list[Event]:
        """A snapshot of the events handled so far, in order."""
        with self._lock:
            return list(self._events)

    def of_kind(self, kind: Kind | str) -> list[Event]:
        """Return the events of one kind."""
        return [e for e in self.events if e.kind == kind]

    def messages(self) -> list[str]:
        """Return the payloads of the ``LOG`` events."""
        return [e.payload for e in self.of_kind(Kind.LOG)]

    def metrics(self) -> list[tuple[str, Any, int | None]]:
        """Return ``(name, value, step)`` for every metric logged, in order."""
        return [
            (name, value, e.step)
            for e in self.of_kind(Kind.METRIC)
            for name, value in e.payload.items()
        ]

    def clear(self) -> None:
        """Forget the stored events."""
        with self._lock:
            self._events.clear()

    def open(self) -> None:
        self.opened += 1

    def handle(self, event: Event) -> None:
        with self._lock:
            self._events.append(event)

    def flush(self) -> None:
        self.flushed += 1

    def close(self) -> None:
        self.closed += 1


def delivered(handler: MemoryHandler, timeout_s: float = 30.0) -> list[Event]:
    """Wait until everything logged so far reached the handlers, then return ``handler``'s events."""
    from goggles_io._api.functions import flush

    flush(timeout_s)
    return handler.events
