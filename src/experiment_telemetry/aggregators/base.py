"""``Aggregator``: a runtime ``Subscriber`` that the experiment asks to score each episode.

Runtime events arrive through stdlib logging (synchronously, under the handler's lock); the
harness then calls ``post_episode(context)``, the one place where experiment knowledge (the
target) meets what the runtime emitted. Stats go out on the experiment's own telemetry stream,
never to a sink: transforms subscribe to that stream and write.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.exceptions import ExperimentTypeError
from experiment_telemetry.stats import StatEvent
from runtime_telemetry import Subscriber, TelemetrySchema, get_telemetry

__all__ = ["STATS_STREAM", "Aggregator"]

STATS_STREAM = "experiment_telemetry.stats"
"""Emitter name of the stats stream; its logger is ``telemetry.experiment_telemetry.stats``."""

StatListener = Callable[[StatEvent], object]


class Aggregator(Subscriber):
    """Collect runtime events per episode; ``post_episode`` turns them into stat events.

    Subclasses receive events with ``@receives`` methods (or ``on_event``) and implement
    ``score_episode(context)``, which returns the stats and resets per-episode state. Every
    stat is passed to the listeners added with ``add_listener`` (replay uses this) and emitted
    on ``stream``. Event callbacks and ``post_episode`` run under the handler's lock, so events
    from several threads never interleave with scoring.
    """

    def __init__(self, *, stream: str = STATS_STREAM) -> None:
        super().__init__()
        self._stats = get_telemetry(stream)
        self._listeners: list[StatListener] = []

    @property
    def stream(self) -> str:
        """The logger name stats are emitted on (subscribe transforms to it)."""
        return self._stats.events_logger.name

    def add_listener(self, listener: StatListener) -> None:
        """Also hand every stat to ``listener`` (called in order, before the stat is emitted)."""
        self._listeners.append(listener)

    def feed(self, schema: TelemetrySchema) -> None:
        """Deliver ``schema`` as if it had been emitted, bypassing logging (used by replay)."""
        record = logging.LogRecord(self.stream, logging.INFO, "", 0, schema, None, None)
        self.handle(record)

    def post_episode(self, context: EpisodeContext) -> list[StatEvent]:
        """Score the episode that just ended, publish its stats and return them.

        Raises:
            ExperimentTypeError: ``context`` is not an ``EpisodeContext``.
        """
        if not isinstance(context, EpisodeContext):
            msg = f"context must be an EpisodeContext (got {context!r})."
            raise ExperimentTypeError(msg, context)
        with self.lock:
            stats = list(self.score_episode(context))
            for stat in stats:
                self.publish(stat)
        return stats

    def post_run(self) -> list[StatEvent]:
        """Publish and return what is still open at the run's end (e.g. a partial window)."""
        with self.lock:
            stats = list(self.score_run())
            for stat in stats:
                self.publish(stat)
        return stats

    def score_episode(self, context: EpisodeContext) -> Sequence[StatEvent]:
        """Compute this episode's stats and reset per-episode state; the default has none."""
        return []

    def score_run(self) -> Sequence[StatEvent]:
        """Compute the stats still open at the run's end; the default has none."""
        return []

    def publish(self, stat: StatEvent) -> None:
        """Give ``stat`` to the listeners, then emit it on the stats stream."""
        for listener in self._listeners:
            listener(stat)
        self._stats.emit(stat, stacklevel=2)
