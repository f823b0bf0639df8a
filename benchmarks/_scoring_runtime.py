"""Runtime side of ``workers_ceiling.py``: the benchmark's episode, scored in the worker.

A probe of partial aggregation's ceiling (ADR 0084), not a way to run experiments: the
standard aggregators subscribe in the worker to a logger the ``EventForwarder`` does not hear
(``telemetry.bench`` stops propagating), so only each episode's stat events cross, as a
per-episode partial result would.
"""

from __future__ import annotations

import logging

from _worker_runtime import ReplayRuntime

from experiment_telemetry.aggregators.standard import make_aggregators
from experiment_telemetry.context import EpisodeContext


class ScoringRuntime(ReplayRuntime):
    """Emit the benchmark's episode and score it here (``post_episode`` after each)."""

    def __init__(self, steps: int = 120) -> None:
        super().__init__(steps)
        logging.getLogger("telemetry.bench").propagate = False  # the forwarder hears "telemetry"
        self.aggregators = [
            a.subscribe("telemetry.bench") for a in make_aggregators({"watch.enabled": True})
        ]
        self.episode = 0

    def run_episode(self) -> None:
        super().run_episode()
        context = EpisodeContext(mode="eval", epoch=0, episode=self.episode, target="mug")
        for aggregator in self.aggregators:
            aggregator.post_episode(context)
        self.episode += 1
