"""The harness's loop with episodes run in worker processes, and their outcomes scored here.

``Experiment.run`` with ``num_workers`` hands its loop to ``run_in_workers``: tasks come from
the experiment's hooks (``episodes``, ``pre_episode``, ``episode_kwargs``, ``learns``), outcomes
come back in plan order from a ``WorkerPool``, and each is replayed and scored with
``post_episode``, or reported as a ``WorkerLost`` / ``EpisodeMissing`` stat. Apart from
``harness.py`` so the lifecycle there reads the same with or without workers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import attrs

from experiment_telemetry.exceptions import WorkerError
from experiment_telemetry.stats import EpisodeMissing, WorkerLost
from experiment_telemetry.workers import (
    EpisodeOutcome,
    EpisodeTask,
    WorkerPool,
    check_plain,
    replay_episode,
)

if TYPE_CHECKING:
    from experiment_telemetry.harness import Experiment

__all__ = ["run_in_workers"]

# The harness's logger: its warnings about lost and missing episodes keep the name they had.
_logger = logging.getLogger("experiment_telemetry.harness")


def run_in_workers(experiment: Experiment, bar: Any) -> None:
    """The same loop with episodes run in worker processes and scored here, in order."""
    pool = WorkerPool(
        experiment.num_workers,
        experiment.runtime_spec(),
        levels=experiment.telemetry_levels,
        flush_timeout_s=experiment.worker_wait_s,
    )
    experiment.worker_report = pool.report
    try:
        pool.start()
        for epoch in range(experiment.num_epochs):
            for outcome in pool.run(_tasks(experiment, epoch)):
                _score_outcome(experiment, outcome)
                bar.update(1)
            experiment.post_epoch(epoch)
    finally:
        pool.close()
        report = pool.report
        if (
            report.episodes_lost
            or report.episodes_missing
            or report.events_missing
            or report.subscription_dropped
        ):
            _logger.warning("%s", report.summary())


def _tasks(experiment: Experiment, epoch: int) -> Iterator[EpisodeTask]:
    for context in experiment.episodes(epoch):
        context = attrs.evolve(context, timestamp=time.time())
        experiment.pre_episode(context)
        kwargs = check_plain(dict(experiment.episode_kwargs(context)), "episode_kwargs()")
        yield EpisodeTask(context, experiment.learns(context), kwargs)


def _score_outcome(experiment: Experiment, outcome: EpisodeOutcome) -> None:
    """Re-emit a finished episode's events here and score it; report a lost or missing one."""
    context = outcome.task.context
    if outcome.error is not None:
        msg = (
            f"episode {context.episode} raised in worker {outcome.worker} "
            f"(pid {outcome.pid}):\n{outcome.error}"
        )
        raise WorkerError(msg, outcome.worker, context.episode)
    where = {  # which episode, on which worker: what a lost and a missing episode both say
        "mode": context.mode,
        "epoch": context.epoch,
        "episode": context.episode,
        "target": context.target,
        "worker": outcome.worker,
        "pid": outcome.pid,
    }
    if outcome.lost:
        lost = WorkerLost(**where, returncode=outcome.returncode)
        _logger.warning(
            "episode %d lost: worker %d (pid %d) ended with code %s; the run goes on",
            context.episode, outcome.worker, outcome.pid, outcome.returncode,
        )  # fmt: skip
        experiment._publish(lost)
        return
    if outcome.undelivered:
        sent = outcome.arrived + outcome.missing
        missing = EpisodeMissing(**where, sent=sent, arrived=outcome.arrived)
        _logger.warning(
            "episode %d missing: %d of the %d events worker %d sent arrived within %.0f s "
            "(broker down or away?); not scored, the run goes on",
            context.episode, missing.arrived, missing.sent, outcome.worker, experiment.worker_wait_s,
        )  # fmt: skip
        experiment._publish(missing)
        return
    replay_episode(outcome.events, outcome.worker)
    experiment.post_episode(attrs.evolve(context, timestamp=outcome.start))
