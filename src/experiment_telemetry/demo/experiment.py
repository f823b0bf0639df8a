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
from typing import Any

from experiment_telemetry.context import NO_LABEL, EpisodeContext
from experiment_telemetry.demo.runtime import LIBRARY, SimulatedRuntime, random_rotation
from experiment_telemetry.harness import Experiment, RunResult
from experiment_telemetry.workers import RuntimeSpec

__all__ = ["CONSISTENT_CHILDREN", "DemoExperiment", "run_demo"]

CONSISTENT_CHILDREN = {"mug": ("handle",)}
"""Parts a target is made of: recognising the part is not a plain confusion."""


class DemoExperiment(Experiment):
    """``Experiment`` over ``SimulatedRuntime``: train then eval episodes in every epoch.

    With ``num_workers`` the runtime runs in worker processes: training in one (it learns),
    evaluation in all of them, each episode from the memory training left. Each episode's
    metric bundles are numbered from ``episode * max_steps``, so its events, and the stats,
    do not depend on where or after what it ran.
    """

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
        num_workers: int = 0,
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
            num_workers=num_workers,
        )
        self.max_steps = max_steps
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
                stepwise_target=shown,  # what the modules looked at, named or not
            )

    def runtime_spec(self) -> RuntimeSpec:
        return RuntimeSpec(
            factory="experiment_telemetry.demo.runtime:SimulatedRuntime",
            kwargs={"max_steps": self.max_steps},
        )

    def episode_kwargs(self, context: EpisodeContext) -> dict[str, Any]:
        return {
            "object_name": self._shown[context.episode],
            "rotation": list(context.target_rotation),
            "learn": self.learns(context),
            "seed": context.seed or 0,
            "first_step": context.episode * self.max_steps,
        }

    def run_episode(self, context: EpisodeContext) -> None:
        self.runtime.run_episode(**self.episode_kwargs(context))


def run_demo(
    root: str | os.PathLike[str] = "runs",
    *,
    seed: int = 0,
    num_epochs: int = 3,
    wandb: bool | None = None,
    console: bool = True,
    progress: bool = True,
    workers: int = 0,
) -> RunResult:
    """Run the demo and return its ``RunResult``.

    ``wandb=None`` logs to W&B when the package is installed, in offline mode unless
    ``WANDB_MODE`` is set. goggles_io runs in-process unless ``GOGGLES_TRANSPORT`` is set: the
    demo is one process, and its lines belong on this terminal, not in a shared host's log.
    With ``workers`` >= 1 the runtime runs in that many worker processes, which reach this one
    over the goggles socket; unless ``GOGGLES_DEDICATED_HOST`` is set, this process hosts the
    bus in a thread, so the lines still come out here.
    """
    if workers:
        os.environ.setdefault("GOGGLES_TRANSPORT", "socket")
        os.environ.setdefault("GOGGLES_DEDICATED_HOST", "0")
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
        num_workers=workers,
    )
    return experiment.run()
