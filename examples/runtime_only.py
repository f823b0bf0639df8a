"""A runtime that emits typed telemetry, and a subscriber that prints it. No experiment code.

Run: ``python3 examples/runtime_only.py`` (needs only ``pip install -e .``).

The top half is "runtime code": a toy learning module and sensor that only import
``runtime_telemetry`` and emit what they know. The bottom half is whoever listens: it turns
telemetry on with ``configure()`` and attaches a ``Subscriber``. Snapshots stay off, so the
runtime never even builds them.
"""

from __future__ import annotations

import random
import sys

import attrs
import numpy as np

from runtime_telemetry import Subscriber, TelemetrySchema, configure, get_telemetry, receives
from runtime_telemetry.events import (
    GraphMemoryUpdated,
    LearningModuleEvidenceSnapshot,
    LearningModuleObjectRecognized,
    LearningModuleStep,
    MostLikelyHypothesis,
    SensorPatchObserved,
)

# --- runtime code ---------------------------------------------------------------------------

telemetry = get_telemetry("toy_runtime.learning_module")
sensor_telemetry = get_telemetry("toy_runtime.sensor")

KNOWN_OBJECTS = ("mug", "bowl", "spoon", "banana", "cup")


class ToyLearningModule:
    """Narrows down which stored object it is touching, one observation at a time."""

    def __init__(self, lm_id: str, seed: int) -> None:
        self.lm_id = lm_id
        self.rng = random.Random(seed)
        self.possible = list(KNOWN_OBJECTS)

    def step(self, step: int, on_object: bool) -> bool:
        if on_object and len(self.possible) > 1:
            self.possible.remove(self.rng.choice([o for o in self.possible if o != "mug"]))
        telemetry.emit(
            LearningModuleStep(
                lm_id=self.lm_id, step=step, possible_matches=self.possible, on_object=on_object
            )
        )
        evidence = self.rng.random(), self.rng.random()
        telemetry.emit(
            MostLikelyHypothesis(
                lm_id=self.lm_id,
                step=step,
                graph_id=self.possible[0],
                location=(0.1, 0.0, 0.02 * step),
                rotation=(1.0, 0.0, 0.0, 0.0),
                evidence=max(evidence),
            )
        )
        if telemetry.snapshots_enabled():  # skip building arrays nobody will see
            telemetry.snapshot(
                LearningModuleEvidenceSnapshot(
                    lm_id=self.lm_id,
                    step=step,
                    graph_id=self.possible[0],
                    evidence=np.array(evidence),
                    locations=np.zeros((2, 3)),
                    rotations=np.tile([1.0, 0.0, 0.0, 0.0], (2, 1)),
                )
            )
        if len(self.possible) == 1:
            telemetry.emit(
                LearningModuleObjectRecognized(
                    lm_id=self.lm_id,
                    step=step,
                    graph_id=self.possible[0],
                    location=(0.1, 0.0, 0.02 * step),
                    rotation=(0.7071, 0.0, 0.7071, 0.0),
                    symmetric_rotations=[(0.7071, 0.0, -0.7071, 0.0)],
                    symmetry_evidence=2,
                )
            )
            return True
        return False

    def learn(self) -> None:
        telemetry.emit(
            GraphMemoryUpdated(lm_id=self.lm_id, graph_id=self.possible[0], num_nodes=42, created=False)
        )  # fmt: skip


def run_runtime() -> None:
    lm = ToyLearningModule("lm_0", seed=3)
    for step in range(1, 20):
        on_object = step % 4 != 0
        sensor_telemetry.emit(
            SensorPatchObserved(sensor_id="patch_0", step=step, on_object=on_object)
        )
        if lm.step(step, on_object):
            break
    lm.learn()


# --- whoever listens ------------------------------------------------------------------------


class Printer(Subscriber):
    """Prints each event on one line; anything without a dedicated method goes to on_event."""

    @receives(LearningModuleStep)
    def on_step(self, e: LearningModuleStep) -> None:
        where = "on object" if e.on_object else "off object"
        print(
            f"  {e.lm_id} step {e.step:2d}  {where:10}  possible: {', '.join(e.possible_matches)}"
        )

    @receives(LearningModuleObjectRecognized)
    def on_recognized(self, e: LearningModuleObjectRecognized) -> None:
        print(
            f"  {e.lm_id} step {e.step:2d}  RECOGNISED {e.graph_id!r} at {e.location}, "
            f"rotation {e.rotation}, {len(e.symmetric_rotations)} symmetric pose(s)"
        )

    def on_event(self, schema: TelemetrySchema) -> None:
        fields = attrs.asdict(schema, filter=lambda a, _: a.name not in ("timestamp", "lm_id"))
        shown = ", ".join(
            f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in fields.items()
        )
        print(f"  {'':4} {'':7}  {schema}: {shown}")


def main() -> int:
    # Events on, except the sensor's (per-module control); snapshots stay off (the default).
    configure({"telemetry": "INFO", "telemetry.toy_runtime.sensor": "OFF"})
    with Printer().subscribe():
        print("runtime_telemetry demo: a toy learning module narrows down what it touches")
        run_runtime()
    leaked = sorted(m for m in ("experiment_telemetry", "goggles_io") if m in sys.modules)
    print(f"experiment-side packages imported: {leaked or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
