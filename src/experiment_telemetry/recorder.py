"""``EventRecorder``: every runtime event, in order, as JSON lines in the run's event log.

The log is what replay reads back, so it holds exactly what the aggregators saw, plus the
``EpisodeContext`` the harness records at each episode's end, in the same order. Lines are
``runtime_telemetry.to_json`` output; the file is flushed at every episode end and on close.
"""

from __future__ import annotations

import os
from pathlib import Path

from experiment_telemetry.exceptions import ExperimentTypeError, ExperimentValueError
from experiment_telemetry.stats import StatEvent
from runtime_telemetry import Subscriber, TelemetrySchema, to_json

__all__ = ["ALERTS_FILE", "RUNTIME_EVENTS_FILE", "STATS_FILE", "EventRecorder"]

RUNTIME_EVENTS_FILE = "runtime_events.jsonl"
"""The runtime event log (with episode contexts) inside a run directory."""
STATS_FILE = "stats.jsonl"
"""The stat events emitted during a run."""
ALERTS_FILE = "alerts.jsonl"
"""The ``MetricAlert`` stats alone (also in ``stats.jsonl``): small, for ``telemetry runs``."""


class EventRecorder(Subscriber):
    """Append each received schema of type ``only`` (but not ``skip``) to ``path`` as a JSON line.

    The default records runtime events and skips stat events; pass ``only=(StatEvent,),
    skip=()`` to record the stats stream instead. A schema that cannot be encoded is counted
    in ``errors`` and reported once (see ``Subscriber``); the lines before it are kept.

    Raises:
        ExperimentValueError: ``path`` is not path-like.
        ExperimentTypeError: ``only``/``skip`` hold something other than schema classes.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        only: tuple[type[TelemetrySchema], ...] = (TelemetrySchema,),
        skip: tuple[type[TelemetrySchema], ...] = (StatEvent,),
    ) -> None:
        super().__init__()
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            msg = f"path must be a non-empty path (got {path!r})."
            raise ExperimentValueError(msg, path)
        for name, types in (("only", only), ("skip", skip)):
            if not isinstance(types, tuple) or not all(
                isinstance(t, type) and issubclass(t, TelemetrySchema) for t in types
            ):
                msg = f"{name} must be a tuple of TelemetrySchema classes (got {types!r})."
                raise ExperimentTypeError(msg, types)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.only = only
        self.skip = skip
        self.count = 0
        self._file = open(self.path, "a", encoding="utf-8")

    def on_event(self, schema: TelemetrySchema) -> None:
        """Write ``schema`` if it passes the type filter."""
        if isinstance(schema, self.only) and not isinstance(schema, self.skip):
            self._write(schema)

    def record(self, schema: TelemetrySchema) -> None:
        """Write ``schema`` whatever its type (the harness records contexts this way)."""
        with self.lock:
            self._write(schema)
            self._file.flush()

    def _write(self, schema: TelemetrySchema) -> None:
        line = to_json(schema)  # encode first: a failure leaves no half line
        self._file.write(line + "\n")
        self.count += 1

    def flush(self) -> None:
        """Push buffered lines to the OS."""
        with self.lock:
            if not self._file.closed:
                self._file.flush()

    def close(self) -> None:
        """Flush, fsync and close the log, and detach; idempotent."""
        with self.lock:
            if not self._file.closed:
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()
        super().close()
