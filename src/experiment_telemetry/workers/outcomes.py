"""What goes into the worker pool and what comes out: tasks, outcomes, the run's report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from experiment_telemetry.context import EpisodeContext

__all__ = ["EpisodeOutcome", "EpisodeTask", "WorkerLoss", "WorkerReport"]


@attrs.frozen
class EpisodeTask:
    """One episode to run: its context (never sent), whether it learns, the runtime's kwargs."""

    context: EpisodeContext
    learns: bool
    kwargs: Mapping[str, Any]


@attrs.frozen
class EpisodeOutcome:
    """How an episode ended, in plan order.

    ``lost``: the worker died before finishing it (``returncode`` says how; ``-9`` is SIGKILL).
    ``error``: the runtime raised (the worker's traceback). ``undelivered``: the worker
    finished it but its events did not arrive within the wait (its end marker never came:
    over a broker, Redis was away; locally, none of them came); ``events`` then holds none,
    ``missing`` the events that did not arrive, and the episode must not be scored. Otherwise
    ``events`` are the forwarded events (logger name, level, encoded schema) and ``missing``
    those that were lost.
    """

    task: EpisodeTask
    worker: int
    pid: int
    start: float
    events: list[Sequence[Any]] = attrs.field(factory=list)
    missing: int = 0
    lost: bool = False
    returncode: int | None = None
    error: str | None = None
    undelivered: bool = False
    arrived: int = 0
    """With ``undelivered``: the episode's events that had arrived when the wait ended."""


@attrs.frozen
class WorkerLoss:
    """A worker that ended before the pool closed it."""

    worker: int
    pid: int
    returncode: int | None
    episode: int | None
    """The episode it was running (lost with it), if any."""


@attrs.define
class WorkerReport:
    """What the workers did in a run; ``WorkerPool.report``, and ``RunResult.workers``."""

    num_workers: int
    episodes: int = 0
    episodes_lost: int = 0
    episodes_missing: int = 0
    """Episodes the workers finished whose events did not arrive in time: reported, not scored."""
    events_sent: int = 0
    """Events the workers sent in completed episodes."""
    events_missing: int = 0
    """Of those, events that never reached the experiment (bounded queues full)."""
    subscription_dropped: int = 0
    """Events the experiment's subscription lost, as counted by goggles_io."""
    losses: list[WorkerLoss] = attrs.field(factory=list)
    episodes_per_worker: dict[int, int] = attrs.field(factory=dict)
    """Worker index -> episodes it completed."""

    def count(self, outcome: EpisodeOutcome) -> None:
        """Add one episode's outcome, in plan order, to the totals."""
        self.episodes += 1
        if outcome.lost:
            self.episodes_lost += 1
        elif outcome.undelivered:
            self.episodes_missing += 1
            self.events_sent += outcome.arrived + outcome.missing
            self.events_missing += outcome.missing
        else:
            per_worker = self.episodes_per_worker
            per_worker[outcome.worker] = per_worker.get(outcome.worker, 0) + 1
            self.events_sent += len(outcome.events) + outcome.missing
            self.events_missing += outcome.missing

    def summary(self) -> str:
        """One line for the end of a run."""
        line = (
            f"{self.num_workers} workers: {self.episodes} episodes, {self.episodes_lost} lost "
            f"with their worker, {self.episodes_missing} missing (their events did not arrive; "
            f"not scored); {self.events_sent} events forwarded, {self.events_missing} missing "
            f"({self.subscription_dropped} dropped by the subscription)"
        )
        for loss in self.losses:
            line += f"; worker {loss.worker} (pid {loss.pid}) ended with code {loss.returncode}" + (
                "" if loss.episode is None else f" in episode {loss.episode}"
            )
        return line
