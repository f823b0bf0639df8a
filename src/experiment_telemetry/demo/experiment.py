"""The demo experiment: trains and evaluates the simulated runtime, scoring it from events.

Each epoch shows every library object once in training (the modules learn graphs; the
aggregator learns which labels each graph stands for) and once in evaluation, plus one
evaluation episode whose object the experiment cannot name (``no_label``). Targets, labels
and rotations live here, on the experiment side; the runtime only gets an object to show.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

from experiment_telemetry.context import NO_LABEL, EpisodeContext
from experiment_telemetry.demo.runtime import LIBRARY, SimulatedRuntime, random_rotation
from experiment_telemetry.harness import Experiment, RunResult

__all__ = ["CONSISTENT_CHILDREN", "DemoExperiment", "run_demo"]

CONSISTENT_CHILDREN = {"mug": ("handle",)}
"""Parts a target is made of: recognising the part is not a plain confusion."""


class DemoExperiment(Experiment):
    """``Experiment`` over ``SimulatedRuntime``: train then eval episodes in every epoch."""

    def __init__(
        self,
        *,
        root: str | os.PathLike[str] = "runs",
        seed: int = 0,
        num_epochs: int = 3,
        max_steps: int = 12,
        console: bool = True,
        wandb: bool = False,
        progress: bool = True,
    ) -> None:
        config = {
            "demo.objects": [obj.name for obj in LIBRARY],
            "demo.max_steps": max_steps,
            "metrics.progress_every": 200,
            "metrics.diagnostic_every": 25,
            "recognition.learn_labels_in": ["train"],
        }
        super().__init__(
            root=Path(root),
            num_epochs=num_epochs,
            seed=seed,
            config=config,
            project="split-telemetry-demo",
            slug="demo",
            console=console,
            wandb=wandb,
            progress=progress,
        )
        self.runtime = SimulatedRuntime(max_steps=max_steps)
        self._next_episode = 0
        self._shown: dict[int, str] = {}

    def total_episodes(self) -> int:
        return self.num_epochs * (2 * len(LIBRARY) + 1)

    def episodes(self, epoch: int) -> Iterator[EpisodeContext]:
        rng = random.Random((self.seed or 0) * 7919 + epoch)
        names = [obj.name for obj in LIBRARY]
        plan = [("train", n, n) for n in rng.sample(names, len(names))]
        plan += [("eval", n, n) for n in rng.sample(names, len(names))]
        plan.append(("eval", rng.choice(names), NO_LABEL))
        for mode, shown, label in plan:
            episode = self._next_episode
            self._next_episode += 1
            self._shown[episode] = shown
            yield EpisodeContext(
                mode=mode,
                epoch=epoch,
                episode=episode,
                target=label,
                target_rotation=random_rotation(rng),
                consistent_child_labels=CONSISTENT_CHILDREN.get(label, ()),
                seed=(self.seed or 0) * 100_000 + episode,
            )

    def run_episode(self, context: EpisodeContext) -> None:
        self.runtime.run_episode(
            self._shown[context.episode],
            context.target_rotation,
            learn=context.mode == "train",
            seed=context.seed or 0,
        )


def run_demo(
    root: str | os.PathLike[str] = "runs",
    *,
    seed: int = 0,
    num_epochs: int = 3,
    wandb: bool | None = None,
    console: bool = True,
    progress: bool = True,
) -> RunResult:
    """Run the demo and return its ``RunResult``.

    ``wandb=None`` logs to W&B when the package is installed, in offline mode unless
    ``WANDB_MODE`` is set. goggles_io runs in-process unless ``GOGGLES_TRANSPORT`` is set: the
    demo is one process, and its lines belong on this terminal, not in a shared host's log.
    """
    os.environ.setdefault("GOGGLES_TRANSPORT", "inprocess")
    if wandb is None:
        try:
            import wandb as _wandb  # noqa: F401
        except ImportError:
            wandb = False
        else:
            wandb = True
    if wandb:
        os.environ.setdefault("WANDB_MODE", "offline")
        os.environ.setdefault("WANDB_SILENT", "true")
    experiment = DemoExperiment(
        root=root,
        seed=seed,
        num_epochs=num_epochs,
        console=console,
        wandb=wandb,
        progress=progress,
    )
    return experiment.run()
