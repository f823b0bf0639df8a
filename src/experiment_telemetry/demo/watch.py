"""The watchers' demo: a simulated training loop driven into one failure, watched live.

``telemetry demo --scenario value-explosion`` (or any of ``SCENARIOS``) runs
``demo.trainer.SimulatedTrainer`` under an ``Experiment`` whose only aggregators are the
metric ones, so the console shows the alerts as they fire and the run directory keeps them
(``alerts.jsonl``, ``stats.jsonl``) for ``telemetry runs``, ``show`` and ``replay``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from experiment_telemetry.context import NO_LABEL, EpisodeContext
from experiment_telemetry.demo.scenarios import SCENARIOS
from experiment_telemetry.demo.trainer import SimulatedTrainer
from experiment_telemetry.harness import Experiment, RunResult

__all__ = ["ONSET", "SCENARIOS", "WatchDemoExperiment", "run_watch_demo"]

ONSET = 60
"""The episode at which the failure starts (``loss-without-return`` is broken from the start)."""


class WatchDemoExperiment(Experiment):
    """``Experiment`` over ``SimulatedTrainer``: ``num_episodes`` train episodes, one epoch."""

    def __init__(
        self,
        scenario: str,
        *,
        root: str | os.PathLike[str] = "runs",
        seed: int = 0,
        num_episodes: int = 160,
        console: bool = True,
        wandb: bool = False,
        progress: bool = True,
    ) -> None:
        config = {
            "demo.scenario": scenario,
            "demo.onset_episode": ONSET,
            "recognition.enabled": False,
            "metrics.progress_every": 1_000,
            "metrics.diagnostic_every": 200,
        }
        super().__init__(
            root=Path(root),
            num_epochs=1,
            seed=seed,
            config=config,
            project="split-telemetry-demo",
            slug=f"watch-{scenario}",
            console=console,
            wandb=wandb,
            progress=progress,
        )
        self.num_episodes = num_episodes
        self.trainer = SimulatedTrainer(scenario, onset=ONSET, seed=seed)

    def total_episodes(self) -> int:
        return self.num_episodes

    def episodes(self, epoch: int) -> Iterator[EpisodeContext]:
        for episode in range(self.num_episodes):
            yield EpisodeContext(mode="train", epoch=epoch, episode=episode, target=NO_LABEL)

    def run_episode(self, context: EpisodeContext) -> None:
        self.trainer.run_episode(context.episode)


def run_watch_demo(
    scenario: str,
    root: str | os.PathLike[str] = "runs",
    *,
    seed: int = 0,
    wandb: bool = False,
    console: bool = True,
    progress: bool = True,
) -> RunResult:
    """Run one scenario and return its ``RunResult`` (its ``stats`` hold the alerts).

    Raises:
        ValueError: ``scenario`` is not one of ``SCENARIOS``.
    """
    if scenario not in SCENARIOS:
        msg = f"scenario must be one of {SCENARIOS!r} (got {scenario!r})."
        raise ValueError(msg)
    os.environ.setdefault("GOGGLES_TRANSPORT", "inprocess")
    if wandb:
        os.environ.setdefault("WANDB_MODE", "offline")
        os.environ.setdefault("WANDB_SILENT", "true")
    experiment = WatchDemoExperiment(
        scenario, root=root, seed=seed, console=console, wandb=wandb, progress=progress
    )
    return experiment.run()
