"""The two events the Monty adapter records in a run's event log beside the runtime events.

``MontyTelemetryEvent`` is one of Monty's own telemetry events (``tbp.monty.telemetry``: a
pydantic model on a ``telemetry.tbp.monty.*`` logger), dumped to plain JSON when it was emitted
and stamped with what Monty's event lacks: the run and the episode. ``MontyEpisodeReported`` is
what Monty's ``BasicGraphMatchingLogger`` handed its handlers at an episode's end (the per-LM
statistics it computed from its learning modules), as plain JSON: recorded in the event log,
``telemetry replay`` recomputes the same stat events from it.

Both are experiment-side records (like ``EpisodeContext``), defined here rather than in
runtime_telemetry: nothing of Monty enters the runtime vocabulary. Importing this module
imports nothing of Monty.
"""

from __future__ import annotations

import attrs

from runtime_telemetry import TelemetryEvent

__all__ = ["MontyEpisodeReported", "MontyTelemetryEvent"]


@attrs.frozen(kw_only=True)
class MontyTelemetryEvent(TelemetryEvent):
    """One event of Monty's telemetry stream; ``timestamp`` is its ``record.created``."""

    monty_kind: str
    """Monty's ``kind`` (``GlobalMatchingStep``, ``NewGraphAdded``, ``TerminalCondition``...)."""
    logger: str
    """The Monty logger it was emitted on (``telemetry.tbp.monty.frameworks.models...``)."""
    level: str
    """Its level name (``INFO``...)."""
    fields: str
    """The event as Monty's ``model_dump(mode="json")`` gave it, ``kind`` included: JSON text."""
    schema_version: int = 1
    """Monty's ``TelemetrySchema.VERSION`` of the event's class."""
    run_id: str = ""
    """The run it belongs to (this project's run id)."""
    episode: int | None = None
    """The run-wide episode (from 0, both modes) it was emitted in; None: before the first."""
    mode: str | None = None
    """``train`` or ``eval`` when the step hook told the run which; None otherwise."""


@attrs.frozen(kw_only=True)
class MontyEpisodeReported(TelemetryEvent):
    """Monty's statistics of one episode, as its logger reported them to its handlers."""

    mode: str
    """``train`` or ``eval``."""
    monty_episode: int
    """Monty's own episode number (counted per mode, as in its CSVs and W&B steps)."""
    lm_stats: str
    """JSON text: ``{"LM_0": {statistic: value, ...}, ...}`` in Monty's model order, each
    value as plain JSON (arrays as lists; NaN kept by ``nonfinite_json``, the project's one
    convention for non-finite numbers)."""
