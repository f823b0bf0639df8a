"""Test helpers shipped with the package: capture what runtime code emits, no mocks needed."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from runtime_telemetry._emitter import EVENTS_ROOT, SNAPSHOTS_ROOT, TRACE
from runtime_telemetry._schema import TelemetrySchema
from runtime_telemetry._subscriber import Subscriber

__all__ = ["capture_events"]


class _Collector(Subscriber):
    def __init__(self, sink: list[TelemetrySchema]) -> None:
        super().__init__()
        self._sink = sink

    def on_event(self, schema: TelemetrySchema) -> None:
        self._sink.append(schema)


@contextmanager
def capture_events(*logger_names: str, level: int = TRACE) -> Iterator[list[TelemetrySchema]]:
    """Collect every event and snapshot emitted inside the block into the yielded list.

    The named loggers (default: the ``telemetry`` and ``snapshots`` roots) are lowered to
    ``level`` for the block and restored afterwards, so capture works whatever the current
    configuration; a level set on a child logger still applies.
    """
    names = logger_names or (EVENTS_ROOT, SNAPSHOTS_ROOT)
    captured: list[TelemetrySchema] = []
    loggers = [logging.getLogger(name) for name in names]
    saved = [logger.level for logger in loggers]
    collector = _Collector(captured).subscribe(*names)
    try:
        for logger in loggers:
            logger.setLevel(level)
        yield captured
    finally:
        collector.close()
        for logger, old in zip(loggers, saved, strict=True):
            logger.setLevel(old)
