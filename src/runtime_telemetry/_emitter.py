"""Emitters: per-module fronts over the ``telemetry.<name>`` and ``snapshots.<name>`` loggers."""

from __future__ import annotations

import logging
import sys
import threading

from runtime_telemetry._deliver import send
from runtime_telemetry._schema import TelemetryEvent, TelemetrySnapshot
from runtime_telemetry.exceptions import SchemaTypeError, TelemetryTypeError

__all__ = [
    "EVENTS_ROOT",
    "OFF",
    "SNAPSHOTS_ROOT",
    "TRACE",
    "TelemetryEmitter",
    "getTelemetry",
    "get_telemetry",
]

TRACE = 5
"""Level below ``logging.DEBUG``; the default level of snapshots."""
OFF = sys.maxsize
"""Level above anything emitted: a logger set to ``OFF`` lets nothing through."""
EVENTS_ROOT = "telemetry"
SNAPSHOTS_ROOT = "snapshots"

logging.addLevelName(TRACE, "TRACE")
logging.addLevelName(OFF, "OFF")


def _install_roots() -> None:
    """Keep both roots away from the root logger and from ``logging.lastResort``.

    A ``NullHandler`` counts as a handler, so a record nobody subscribed to is dropped quietly
    at every level. Events start ON (``telemetry`` at INFO): a subscriber that subscribes must
    receive what the runtime emits without a configuration step nobody remembers. Snapshots
    start OFF (``snapshots`` at WARNING, above TRACE): they are heavy and turned on per module
    when a live view wants them. A level set before this module was imported is kept.
    """
    for name, level in ((EVENTS_ROOT, logging.INFO), (SNAPSHOTS_ROOT, logging.WARNING)):
        root = logging.getLogger(name)
        root.propagate = False
        if not any(type(h) is logging.NullHandler for h in root.handlers):
            root.addHandler(logging.NullHandler())
        if root.level == logging.NOTSET:
            root.setLevel(level)


_install_roots()


class TelemetryEmitter:
    """What runtime code holds: ``emit()`` events and ``snapshot()`` state for one module.

    It owns two stdlib loggers with independent levels, ``telemetry.<name>`` and
    ``snapshots.<name>``, so plain logging configuration turns either stream on or off per
    module or package subtree. Records carry the schema object itself as ``record.msg``
    (``record.getMessage()`` is its kind) and point ``funcName``/``lineno`` at the caller.
    Get one with ``get_telemetry(__name__)``; do not instantiate directly.
    """

    __slots__ = ("_events", "_snapshots", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._events = logging.getLogger(f"{EVENTS_ROOT}.{name}")
        self._snapshots = logging.getLogger(f"{SNAPSHOTS_ROOT}.{name}")

    def __repr__(self) -> str:
        return f"<TelemetryEmitter {self.name!r}>"

    @property
    def events_logger(self) -> logging.Logger:
        """The ``telemetry.<name>`` logger that carries events."""
        return self._events

    @property
    def snapshots_logger(self) -> logging.Logger:
        """The ``snapshots.<name>`` logger that carries snapshots."""
        return self._snapshots

    def enabled(self, level: int = logging.INFO) -> bool:
        """Whether an event at ``level`` would be delivered: skip building costly events."""
        return self._events.isEnabledFor(level)

    def snapshots_enabled(self, level: int = TRACE) -> bool:
        """Whether a snapshot at ``level`` would be delivered: skip building costly snapshots."""
        return self._snapshots.isEnabledFor(level)

    def emit(self, event: TelemetryEvent, level: int = logging.INFO, stacklevel: int = 1) -> None:
        """Publish ``event`` on ``telemetry.<name>`` at ``level``.

        The level is checked first, so a disabled call costs one cached lookup and the type is
        only checked once the event would be delivered. Handlers that only want the schema (a
        ``Subscriber``) get it without a ``LogRecord``; the others get a record (ADR 0078).
        Raise ``stacklevel`` when calling from a helper, so the record points at the helper's
        caller.

        Raises:
            SchemaTypeError: (a ``TypeError``) ``event`` is not a ``TelemetryEvent``.
        """
        logger = self._events
        if logger.isEnabledFor(level):
            if not isinstance(event, TelemetryEvent):
                raise _wrong_type("emit", "event", event, TelemetryEvent)
            send(logger, level, event, stacklevel + 1)

    def snapshot(
        self, snapshot: TelemetrySnapshot, level: int = TRACE, stacklevel: int = 1
    ) -> None:
        """Publish ``snapshot`` on ``snapshots.<name>`` at ``level`` (default ``TRACE``).

        Raises:
            SchemaTypeError: (a ``TypeError``) ``snapshot`` is not a ``TelemetrySnapshot``.
        """
        logger = self._snapshots
        if logger.isEnabledFor(level):
            if not isinstance(snapshot, TelemetrySnapshot):
                raise _wrong_type("snapshot", "snapshot", snapshot, TelemetrySnapshot)
            send(logger, level, snapshot, stacklevel + 1)


def _wrong_type(method: str, param: str, value: object, expected: type) -> SchemaTypeError:
    hint = ""
    if isinstance(value, TelemetrySnapshot):
        hint = "; snapshots go through snapshot()"
    elif isinstance(value, TelemetryEvent):
        hint = "; events go through emit()"
    msg = f"{method}() {param} must be a {expected.__name__} (got {value!r}){hint}."
    return SchemaTypeError(msg, value)


_emitters: dict[str, TelemetryEmitter] = {}
_emitters_lock = threading.Lock()


def get_telemetry(name: str) -> TelemetryEmitter:
    """Return the cached emitter for module ``name``, like ``logging.getLogger(__name__)``.

    Raises:
        TelemetryTypeError: (a ``TypeError``) ``name`` is not a non-empty str.
    """
    try:
        emitter = _emitters.get(name)
    except TypeError:  # unhashable name; refused below
        emitter = None
    if emitter is not None:
        return emitter
    if not isinstance(name, str) or not name:
        msg = f"name must be a non-empty str such as __name__ (got {name!r})."
        raise TelemetryTypeError(msg, name)
    with _emitters_lock:
        return _emitters.setdefault(name, TelemetryEmitter(name))


getTelemetry = get_telemetry
