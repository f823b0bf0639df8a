"""A seeded, simulated sensorimotor runtime: learning modules sensing objects, emitting events.

It stands for the runtime side of the split and imports nothing but the standard library,
``runtime_telemetry`` and its demo siblings (``world.py``: the objects and module specs;
``episode.py``: one module's episode): it never sees labels, targets, episodes' verdicts or any sink. Each
learning module looks at the object through its own patch (wide or narrow view), with sensor
noise, off-object steps and a step limit; it narrows its possible matches among the graphs in
its memory, resolves the pose (longer for symmetric objects), hears the other modules' votes
once per step (which can narrow its matches in a step without input), and learns new graphs
when told to. Every outcome the experiment side scores can happen, driven by one seed.

Its memory (the graphs each module learned) is plain data (``dump_memory``/``load_memory``), so
an experiment can hand the same trained memory to several worker processes.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from experiment_telemetry.demo.episode import Episode, LearningModule
from experiment_telemetry.demo.rotations import random_rotation
from experiment_telemetry.demo.world import (
    LIBRARY,
    LearningModuleSpec,
    ObjectModel,
    default_modules,
)
from runtime_telemetry import get_telemetry
from runtime_telemetry.events import LearningModuleReset, SensorimotorStep
from runtime_telemetry.events.metrics import MetricsBundle

__all__ = [
    "LIBRARY",
    "LearningModuleSpec",
    "ObjectModel",
    "SimulatedRuntime",
    "default_modules",
    "random_rotation",
]

_telemetry = get_telemetry(__name__)


class SimulatedRuntime:
    """Learning modules that learn graphs of objects and recognise them, emitting events.

    Args:
        modules: the learning modules (default: ``default_modules()``).
        library: the objects the world can show.
        max_steps: steps before an undecided module times out.
    """

    def __init__(
        self,
        *,
        modules: Sequence[LearningModuleSpec] | None = None,
        library: Sequence[ObjectModel] = LIBRARY,
        max_steps: int = 12,
    ) -> None:
        self.library = {obj.name: obj for obj in library}
        self.modules = [LearningModule(spec) for spec in (modules or default_modules())]
        self.max_steps = max_steps
        self.global_step = 0
        self._all_features = sorted({f for obj in library for f in obj.features})

    def run_episode(
        self,
        object_name: str,
        rotation: Sequence[float],
        *,
        learn: bool,
        seed: int,
        first_step: int | None = None,
    ) -> None:
        """Show ``object_name`` at ``rotation`` to every module for one episode.

        ``learn`` lets modules store what they saw (training). The world knows the object;
        the modules only see features, and report graph ids of their own making.
        ``first_step`` restarts the global step counter of the metric bundles (default: go on
        from the last episode), so an episode's bundles do not depend on which episodes ran
        before it in this process.

        Raises:
            KeyError: ``object_name`` is not in the library.
        """
        obj = self.library[object_name]
        if first_step is not None:
            self.global_step = first_step
        states = [self._start(m, obj, seed) for m in self.modules]
        for step in range(1, self.max_steps + 1):
            active = [s for s in states if not s.done]
            if not active:
                break
            processed = [s.spec.lm_id for s in active if s.step(step, rotation)]
            if len(states) > 1:  # one vote round per step among the modules still at work
                for state in active:
                    got_input = state.spec.lm_id in processed
                    state.receive_votes(len(processed) - got_input, got_input)
            _telemetry.emit(SensorimotorStep(step=step, modules_processed=processed))
            self.global_step += 1
            _telemetry.emit(
                MetricsBundle(
                    source="runtime",
                    step=self.global_step,
                    values={
                        "possible_matches_mean": sum(len(s.possible) for s in active) / len(active),
                        "on_object_fraction": sum(s.on_last for s in active) / len(active),
                    },
                )
            )
        for state in states:
            if not state.done:
                state.time_out()
            if learn:
                state.learn()

    def dump_memory(self) -> dict[str, Any]:
        """The modules' learned graphs as plain data (JSON-safe: lists and str)."""
        return {
            m.spec.lm_id: {
                "created": m.created,
                "graphs": {g: sorted(f) for g, f in sorted(m.memory.items())},
            }
            for m in self.modules
        }

    def load_memory(self, memory: Mapping[str, Any]) -> None:
        """Replace the modules' graphs with ``dump_memory()`` output (a module not named forgets).

        Raises:
            KeyError: ``memory`` names a module this runtime does not have.
        """
        by_id = {m.spec.lm_id: m for m in self.modules}
        unknown = sorted(set(memory) - set(by_id))
        if unknown:
            msg = f"memory names modules {unknown!r} this runtime lacks (it has {sorted(by_id)!r})."
            raise KeyError(msg)
        for lm_id, module in by_id.items():
            entry = memory.get(lm_id, {"created": 0, "graphs": {}})
            module.created = int(entry["created"])
            module.memory = {g: set(f) for g, f in entry["graphs"].items()}

    def _start(self, module: LearningModule, obj: ObjectModel, seed: int) -> Episode:
        salt = zlib.crc32(module.spec.lm_id.encode())
        _telemetry.emit(
            LearningModuleReset(lm_id=module.spec.lm_id, evidence_based=module.spec.evidence)
        )
        rng = random.Random(seed * 1_000_003 + salt)
        votes = random.Random(f"votes:{seed}:{salt}")
        return Episode(module, obj, rng, self._all_features, _telemetry, votes)
