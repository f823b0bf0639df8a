"""A seeded, simulated sensorimotor runtime: learning modules sensing objects, emitting events.

It stands for the runtime side of the split and imports nothing but the standard library and
``runtime_telemetry``: it never sees labels, targets, episodes' verdicts or any sink. Each
learning module looks at the object through its own patch (wide or narrow view), with sensor
noise, off-object steps and a step limit; it narrows its possible matches among the graphs in
its memory, resolves the pose (longer for symmetric objects), and learns new graphs when told
to. Every outcome the experiment side scores can happen, driven by one seed.

Its memory (the graphs each module learned) is plain data (``dump_memory``/``load_memory``), so
an experiment can hand the same trained memory to several worker processes.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from experiment_telemetry.demo.rotations import about as _about
from experiment_telemetry.demo.rotations import qmul as _qmul
from experiment_telemetry.demo.rotations import random_rotation
from runtime_telemetry import get_telemetry
from runtime_telemetry.events import (
    GraphMemoryUpdated,
    LearningModuleConclusionWithdrawn,
    LearningModuleGoalStateAttempted,
    LearningModuleNoMatch,
    LearningModuleObjectRecognized,
    LearningModuleReset,
    LearningModuleStep,
    LearningModuleTimedOut,
    MostLikelyHypothesis,
    SensorimotorStep,
    SensorPatchObserved,
)
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
Quaternion = tuple[float, float, float, float]


@dataclass(frozen=True)
class ObjectModel:
    """An object the simulated world can show: surface features and rotational symmetry."""

    name: str
    features: tuple[str, ...]
    symmetry: int = 1
    """n-fold symmetry about the object's z axis (1: none)."""


LIBRARY: tuple[ObjectModel, ...] = (
    ObjectModel("mug", ("handle", "glaze", "rim", "curved_wall", "flat_base", "lip")),
    ObjectModel("handle", ("handle", "glaze")),
    ObjectModel("bowl", ("rim", "curved_wall", "glaze", "foot", "flat_base"), symmetry=6),
    ObjectModel("can", ("rim", "cylinder_wall", "label", "seam", "flat_base"), symmetry=8),
    ObjectModel("spoon", ("handle", "scoop", "edge", "glint")),
    ObjectModel("dice", ("corner", "edge", "flat_face", "pip"), symmetry=4),
)
"""The demo's object library (the handle is the mug's part: a consistent child)."""


@dataclass(frozen=True)
class LearningModuleSpec:
    """How one simulated learning module senses and decides."""

    lm_id: str
    sensor_id: str
    evidence: bool = True
    """Evidence-based modules report a most-likely hypothesis every step."""
    view: int = 0
    """Features its patch can reach per episode (0: all of the object's)."""
    miss_rate: float = 0.06
    """Chance per episode that the patch never lands on the object."""
    off_rate: float = 0.15
    """Chance per step of an off-object observation."""
    noise: float = 0.02
    """Chance per step of observing a feature of another object."""
    pose_steps: int = 3
    """On-object steps with one match left before the pose resolves (x2 if symmetric)."""


def default_modules() -> tuple[LearningModuleSpec, ...]:
    """Four modules: evidence/graph-only, each with a wide and a narrow patch."""
    return (
        LearningModuleSpec("lm_0", "patch_0", evidence=True),
        LearningModuleSpec("lm_1", "patch_1", evidence=True, view=2),
        LearningModuleSpec("lm_2", "patch_2", evidence=False),
        LearningModuleSpec("lm_3", "patch_3", evidence=False, view=3, pose_steps=4),
    )


@dataclass
class _Module:
    spec: LearningModuleSpec
    memory: dict[str, set[str]] = field(default_factory=dict)
    created: int = 0


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
        self.modules = [_Module(spec) for spec in (modules or default_modules())]
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

    def _start(self, module: _Module, obj: ObjectModel, seed: int) -> _Episode:
        salt = zlib.crc32(module.spec.lm_id.encode())
        _telemetry.emit(
            LearningModuleReset(lm_id=module.spec.lm_id, evidence_based=module.spec.evidence)
        )
        return _Episode(module, obj, random.Random(seed * 1_000_003 + salt), self._all_features)


class _Episode:
    """One module's view of one episode."""

    def __init__(
        self, module: _Module, obj: ObjectModel, rng: random.Random, all_features: list[str]
    ) -> None:
        spec = module.spec
        self.module, self.spec, self.obj, self.rng = module, spec, obj, rng
        self.all_features = all_features
        self.missed = rng.random() < spec.miss_rate
        features = list(obj.features)
        if spec.view and spec.view < len(features):
            start = rng.randrange(len(features) - spec.view + 1)
            features = features[start : start + spec.view]
        self.view = features
        self.possible = set(module.memory)
        self.hits = dict.fromkeys(module.memory, 0)
        self.pose = 0
        self.processed = 0
        self.last_step = 0
        self.on_last = False
        self.done = False
        self.recognized: str | None = None
        self.seen: set[str] = set()

    def step(self, step: int, rotation: Sequence[float]) -> bool:
        """Observe once; True when the module processed the input (its patch was on the object)."""
        spec, rng = self.spec, self.rng
        self.last_step = step
        on = not self.missed and rng.random() >= spec.off_rate
        self.on_last = on
        _telemetry.emit(SensorPatchObserved(sensor_id=spec.sensor_id, step=step, on_object=on))
        if not on:  # nothing reaches the module: no input, no step of its own
            return False
        self.processed += 1
        before = set(self.possible)
        noisy = rng.random() < spec.noise
        feature = rng.choice(self.all_features if noisy else self.view)
        self.seen.add(feature)
        for graph in sorted(self.possible):
            if feature in self.module.memory[graph]:
                self.hits[graph] += 1
            else:
                self.possible.discard(graph)
        if len(self.possible) == 1:
            self.pose += 1
        symmetric = self.obj.symmetry > 1 and len(self.possible) == 1
        if not self.possible:
            self.done = True
            new_graph = f"graph_{self.module.created}"
            _telemetry.emit(
                LearningModuleNoMatch(lm_id=spec.lm_id, step=self.processed, new_graph_id=new_graph)
            )
            if noisy and before and step % 2:
                # Another module's vote restores what the stray observation ruled out.
                self.done = False
                self.possible = before
                _telemetry.emit(
                    LearningModuleConclusionWithdrawn(
                        lm_id=spec.lm_id, step=self.processed, possible_matches=sorted(before)
                    )
                )
        matches = sorted(self.possible)
        _telemetry.emit(
            LearningModuleStep(
                lm_id=spec.lm_id,
                step=self.processed,
                possible_matches=matches,
                location=(0.0, 0.0, 0.01 * step),
                symmetry_evidence=self.pose if symmetric else 0,
            )
        )
        if spec.evidence and self.hits:
            best = max(sorted(self.hits), key=self._score)
            _telemetry.emit(
                MostLikelyHypothesis(
                    lm_id=spec.lm_id,
                    step=self.processed,
                    graph_id=best,
                    location=self._location(),
                    rotation=self._estimate(rotation),
                    evidence=round(self._score(best), 6),
                    prediction_error=0.0 if feature in self.module.memory[best] else 1.0,
                )
            )
        if len(matches) == 2:  # a goal state to tell the two apart; reached two times in three
            _telemetry.emit(
                LearningModuleGoalStateAttempted(
                    lm_id=spec.lm_id, step=self.processed, achieved=bool(step % 3)
                )
            )
        if self.done:
            return True
        needed = spec.pose_steps * (2 if self.obj.symmetry > 1 else 1)
        if len(self.possible) == 1 and self.pose >= needed:
            self.done = True
            self.recognized = matches[0]
            self._recognize(matches[0], rotation, needed)
        return True

    def _score(self, graph: str) -> float:
        # Evidence per stored feature: among graphs that fit, the most specific one wins.
        return self.hits[graph] / math.sqrt(len(self.module.memory[graph]))

    def _location(self) -> tuple[float, float, float]:
        g = self.rng.gauss
        return (g(0.0, 0.002), g(0.0, 0.002), g(0.0, 0.002))

    def _estimate(self, rotation: Sequence[float]) -> Quaternion:
        wobble = _about(
            (self.rng.random(), self.rng.random(), self.rng.random()), self.rng.gauss(0, 2)
        )
        return _qmul(rotation, wobble)

    def _recognize(self, graph: str, rotation: Sequence[float], needed: int) -> None:
        symmetry = self.obj.symmetry
        if symmetry > 1:
            poses = [
                _qmul(self._estimate(rotation), _about((0, 0, 1), 360.0 * k / symmetry))
                for k in range(symmetry)
            ]
            chosen = self.rng.randrange(symmetry)
            detected = poses[chosen]
        else:
            detected, poses = self._estimate(rotation), []
            if self.rng.random() < 0.1:  # a flipped pose: recognised, but 180 degrees off
                detected = _qmul(detected, _about((1, 0, 0), 180.0))
        location = self._location()
        evidence = self.spec.evidence
        _telemetry.emit(
            LearningModuleObjectRecognized(
                lm_id=self.spec.lm_id,
                step=self.processed,
                graph_id=graph,
                location=location,
                rotation=detected,
                symmetric_rotations=poses,
                symmetry_evidence=needed if symmetry > 1 else 0,
                path=(location,),
                possible_poses=() if evidence else (poses or [detected]),
                possible_locations=() if evidence else [location] * max(1, len(poses)),
            )
        )

    def time_out(self) -> None:
        self.done = True
        matches = sorted(self.possible)
        resolved = len(matches) == 1 and self.pose >= self.spec.pose_steps
        hypotheses = len(matches) == 1 and not self.spec.evidence
        _telemetry.emit(
            LearningModuleTimedOut(
                lm_id=self.spec.lm_id,
                step=self.processed,
                possible_matches=matches,
                pose_resolved=resolved,
                possible_poses=[(1.0, 0.0, 0.0, 0.0)] if hypotheses else [],
                possible_locations=[(0.0, 0.0, 0.0)] if hypotheses else [],
            )
        )

    def learn(self) -> None:
        """Store the object as a graph: what was seen, plus the rest of it, found by exploring."""
        if self.missed or not self.seen:
            return
        memory = self.module.memory
        # Exploring reveals the object's own features (a noisy observation is not one of
        # them), and whether a stored graph already is this object: then that graph is kept,
        # recognised or not. So a module holds at most one graph per object it has seen, and
        # its memory (and the events that list its matches) stays bounded however long it
        # runs; two objects are never merged into one graph.
        features = set(self.obj.features)
        if self.recognized is not None and memory[self.recognized] == features:
            graph, created = self.recognized, False
        else:
            known = next((g for g in sorted(memory) if memory[g] == features), None)
            if known is not None:
                graph, created = known, False
            else:
                graph, created = f"graph_{self.module.created}", True
                self.module.created += 1
                memory[graph] = set(features)
        _telemetry.emit(
            GraphMemoryUpdated(
                lm_id=self.spec.lm_id,
                graph_id=graph,
                num_nodes=len(memory[graph]),
                created=created,
            )
        )
