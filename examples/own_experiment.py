"""Your own experiment: a runtime module with its own event, an Experiment subclass, the UI.

Run: python3 examples/own_experiment.py [ROOT]     then look: telemetry ui ROOT
Walkthrough: docs/your-experiment.md
"""

from __future__ import annotations

import random
import sys

import attrs

from experiment_telemetry import EpisodeContext, Experiment
from runtime_telemetry import TelemetryEvent, get_telemetry
from runtime_telemetry.events import MetricsBundle


# -- runtime side: knows only itself (imports runtime_telemetry, nothing else) ---------------
@attrs.frozen(kw_only=True)
class GraspAttempted(TelemetryEvent):
    """One grasp by the gripper: how hard it squeezed and whether the object stayed."""

    step: int
    force_n: float
    held: bool


class Gripper:
    def __init__(self, seed: int) -> None:
        self.rng, self.step, self.skill = random.Random(seed), 0, 0.2
        self.telemetry = get_telemetry("my_robot.gripper")

    def grasp(self) -> bool:
        self.step += 1
        force = self.rng.uniform(1.0, 10.0)
        held = self.rng.random() < self.skill
        self.skill = min(0.95, self.skill + 0.01)  # it learns
        self.telemetry.emit(GraspAttempted(step=self.step, force_n=force, held=held))
        values = {"force_n": force, "held": float(held), "skill": self.skill}
        self.telemetry.emit(MetricsBundle(source="gripper", step=self.step, values=values))
        return held


# -- experiment side: episodes, targets, the run directory ----------------------------------
class GraspExperiment(Experiment):
    def __init__(self, **kwargs: object) -> None:
        # No object recognition here: the standard metrics aggregator and watchers only. Said in
        # the config (not by overriding make_aggregators), so `telemetry replay` rebuilds the same.
        config = {
            "metrics.diagnostic_every": 5,
            "metrics.progress_every": 20,
            "recognition.enabled": False,
        }
        super().__init__(slug="grasp", project="my-robot", config=config, **kwargs)  # type: ignore[arg-type]
        self.gripper = Gripper(seed=self.seed or 0)

    def episodes(self, epoch: int) -> list[EpisodeContext]:
        return [
            EpisodeContext(mode="train", epoch=epoch, episode=i, target="cube") for i in range(10)
        ]

    def run_episode(self, context: EpisodeContext) -> None:
        while not self.gripper.grasp() and self.gripper.step % 8:
            pass  # up to 8 tries, then the episode ends


if __name__ == "__main__":
    root = sys.argv[1] if len(sys.argv) > 1 else "runs"
    result = GraspExperiment(root=root, num_epochs=3, seed=1, console=False, progress=False).run()
    print(f"run {result.status}: {result.run_dir}\nlook at it: telemetry ui {root}")
