"""``WorkerLoop``: an experiment's episode loop with episodes run in worker processes.

``Experiment.run`` with ``num_workers`` hands its loop to a ``WorkerLoop`` it holds: tasks come
from the experiment's hooks (``episodes``, ``pre_episode``, ``episode_kwargs``, ``learns``, the
:class:`EpisodeHooks` protocol), outcomes come back in plan order from a ``WorkerPool``, and each
is replayed and scored with ``post_episode``, or reported as a ``WorkerLost`` /
``EpisodeMissing`` stat through the ``publish`` function the experiment passed in. The loop
knows the experiment only through those: it imports nothing of ``harness.py``, which imports it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

import attrs

from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.exceptions import WorkerError
from experiment_telemetry.stats import EpisodeMissing, StatEvent, WorkerLost
from experiment_telemetry.workers.inbox import replay_episode
from experiment_telemetry.workers.outcomes import EpisodeOutcome, EpisodeTask, WorkerReport
from experiment_telemetry.workers.pool import WorkerPool
from experiment_telemetry.workers.spec import RuntimeSpec, check_plain

__all__ = ["EpisodeHooks", "WorkerLoop"]

# The harness's logger: its warnings about lost and missing episodes keep the name they had.
_logger = logging.getLogger("experiment_telemetry.harness")


class EpisodeHooks(Protocol):
    """What the loop calls on the experiment (``Experiment`` has each of these)."""

    def episodes(self, epoch: int) -> Iterable[EpisodeContext]: ...

    def pre_episode(self, context: EpisodeContext) -> None: ...

    def episode_kwargs(self, context: EpisodeContext) -> Mapping[str, Any]: ...

    def learns(self, context: EpisodeContext) -> bool: ...

    def post_episode(self, context: EpisodeContext) -> list[StatEvent]: ...

    def post_epoch(self, epoch: int) -> None: ...


class WorkerLoop:
    """Run ``num_epochs`` of ``hooks``' episodes in worker processes and score them here, in order.

    Args:
        hooks: the experiment whose episodes run (its hooks are called in this process).
        spec: how each worker builds the runtime.
        num_workers: worker processes (>= 1).
        levels: ``runtime_telemetry.configure`` levels applied in every worker.
        wait_s: bound of a worker's flush after each episode and of the wait for its events.
        publish: records a stat the loop makes itself (a lost or missing episode) as the
            experiment records its own: in the event log, the stats, on the stats stream.
    """

    def __init__(
        self,
        hooks: EpisodeHooks,
        spec: RuntimeSpec,
        *,
        num_workers: int,
        levels: Mapping[str, str | int],
        wait_s: float,
        publish: Callable[[StatEvent], None],
    ) -> None:
        self.hooks = hooks
        self.wait_s = wait_s
        self.publish = publish
        self.pool = WorkerPool(num_workers, spec, levels=levels, flush_timeout_s=wait_s)

    @property
    def report(self) -> WorkerReport:
        """Episodes and events lost, per worker (filled in while the loop runs)."""
        return self.pool.report

    def run(self, num_epochs: int, bar: Any) -> None:
        """The loop: start the workers, score every outcome (``bar.update(1)`` after each),
        ``post_epoch`` after each epoch; the workers are stopped whatever happened."""
        pool, hooks = self.pool, self.hooks
        try:
            pool.start()
            for epoch in range(num_epochs):
                for outcome in pool.run(self._tasks(epoch)):
                    self._score(outcome)
                    bar.update(1)
                hooks.post_epoch(epoch)
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

    def _tasks(self, epoch: int) -> Iterator[EpisodeTask]:
        hooks = self.hooks
        for context in hooks.episodes(epoch):
            context = attrs.evolve(context, timestamp=time.time())
            hooks.pre_episode(context)
            kwargs = check_plain(dict(hooks.episode_kwargs(context)), "episode_kwargs()")
            yield EpisodeTask(context, hooks.learns(context), kwargs)

    def _score(self, outcome: EpisodeOutcome) -> None:
        """Re-emit a finished episode's events here and score it; report a lost or missing one."""
        context = outcome.task.context
        if outcome.error is not None:
            msg = (
                f"episode {context.episode} raised in worker {outcome.worker} "
                f"(pid {outcome.pid}):\n{outcome.error}"
            )
            raise WorkerError(msg, outcome.worker, context.episode)
        where: dict[str, Any] = {  # which episode, on which worker: what both stats say
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
            self.publish(lost)
            return
        if outcome.undelivered:
            sent = outcome.arrived + outcome.missing
            missing = EpisodeMissing(**where, sent=sent, arrived=outcome.arrived)
            _logger.warning(
                "episode %d missing: %d of the %d events worker %d sent arrived within %.0f s "
                "(broker down or away?); not scored, the run goes on",
                context.episode, missing.arrived, missing.sent, outcome.worker, self.wait_s,
            )  # fmt: skip
            self.publish(missing)
            return
        replay_episode(outcome.events, outcome.worker)
        self.hooks.post_episode(attrs.evolve(context, timestamp=outcome.start))
