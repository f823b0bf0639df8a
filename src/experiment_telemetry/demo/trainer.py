"""A seeded, simulated RL training loop that can be driven into each failure the watchers know.

Runtime side: it imports only ``runtime_telemetry`` (and its list of failures from
``demo.scenarios``, a module without imports) and emits ``MetricsBundle`` events, as a learner
would. Healthy, the critic's ``q_mean`` rises and levels off, ``critic_loss`` decays,
``train_steps`` advances once per environment step and ``episode_return`` climbs with noise. From
``onset`` (an episode) on, the chosen ``failure`` bends one of them the way the logging guide's
"What to watch" describes.
"""

from __future__ import annotations

import math
import random

from experiment_telemetry.demo.scenarios import FAILURES
from runtime_telemetry import get_telemetry
from runtime_telemetry.events.metrics import MetricsBundle

__all__ = ["FAILURES", "SimulatedTrainer"]

_telemetry = get_telemetry(__name__)


class SimulatedTrainer:
    """Emit one learner bundle per environment step and one actor bundle per episode.

    Raises:
        ValueError: ``failure`` is not in ``FAILURES``.
    """

    def __init__(
        self, failure: str = "none", *, onset: int = 60, steps_per_episode: int = 20, seed: int = 0
    ) -> None:
        if failure not in FAILURES:
            msg = f"failure must be one of {FAILURES!r} (got {failure!r})."
            raise ValueError(msg)
        self.failure = failure
        self.onset = onset
        self.steps_per_episode = steps_per_episode
        self.rng = random.Random(seed)
        self.env_steps = 0
        self.train_steps = 0.0
        self.mean_q = 1.0

    def run_episode(self, episode: int) -> None:
        """One episode: ``steps_per_episode`` learner bundles, then the episode's return."""
        rng, broken = self.rng, episode >= self.onset
        failure = self.failure if broken else "none"
        for _ in range(self.steps_per_episode):
            self.env_steps += 1
            t = self.env_steps
            # updates_per_step left at 1 with 32 environments: 32x fewer updates than intended.
            self.train_steps += 1.0 / 32 if failure == "train-steps-stall" else 1.0
            if failure == "value-explosion":
                self.mean_q *= 1.04
            else:
                self.mean_q = 50.0 * (1.0 - math.exp(-t / 800.0)) + 1.0
            values = {
                "q_mean": self.mean_q * (1.0 + rng.gauss(0.0, 0.02)),
                "critic_loss": 2.0 * math.exp(-t / 1500.0) + 0.05 + abs(rng.gauss(0.0, 0.02)),
                "train_steps": math.floor(self.train_steps),
            }
            if failure == "silence":
                del values["critic_loss"]  # the loss logging broke; the rest keeps coming
            if failure == "non-finite" and episode == self.onset:
                values["critic_loss"] = math.nan
            _telemetry.emit(MetricsBundle(source="learner", step=t, values=values))
        if self.failure == "loss-without-return":
            ret = 5.0  # the loss falls all the same: it learns something, not the task
        else:
            ret = 100.0 * (1.0 - math.exp(-episode / 25.0))
            if failure == "return-collapse":
                ret *= 0.1
        noisy = ret + rng.gauss(0.0, 3.0)
        _telemetry.emit(
            MetricsBundle(source="actor", step=self.env_steps, values={"episode_return": noisy})
        )
