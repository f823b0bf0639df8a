"""Runtime in worker processes: their events reach the experiment's aggregators over the bus.

The experiment side of the bridge (``docs/experiment_telemetry.md``, "Workers"): a
``RuntimeSpec`` names the runtime as plain data, a ``WorkerPool`` runs episodes in worker
processes whose ``EventForwarder`` puts every runtime event on the goggles bus, and an
``EpisodeInbox`` files them per episode until they are handed back to this process's
``telemetry.*`` loggers in plan order (``EventCollector`` is its old name, kept as an alias).
A ``WorkerLoop`` is the experiment's episode loop over a pool; it scores through the hooks and
the ``publish`` function the experiment gives it.
Runtime code imports none of this (an import-linter contract holds it).
"""

from __future__ import annotations

from experiment_telemetry.workers.forwarder import BRIDGE_LOGGER, EventForwarder
from experiment_telemetry.workers.inbox import (
    EpisodeEvents,
    EpisodeInbox,
    EventCollector,
    replay_episode,
)
from experiment_telemetry.workers.loop import EpisodeHooks, WorkerLoop
from experiment_telemetry.workers.outcomes import (
    EpisodeOutcome,
    EpisodeTask,
    WorkerLoss,
    WorkerReport,
)
from experiment_telemetry.workers.pool import WorkerPool
from experiment_telemetry.workers.spec import RuntimeSpec, check_plain

__all__ = [
    "BRIDGE_LOGGER",
    "EpisodeEvents",
    "EpisodeHooks",
    "EpisodeInbox",
    "EpisodeOutcome",
    "EpisodeTask",
    "EventCollector",
    "EventForwarder",
    "RuntimeSpec",
    "WorkerLoop",
    "WorkerLoss",
    "WorkerPool",
    "WorkerReport",
    "check_plain",
    "replay_episode",
]
