"""One learning module's view of one episode: sensing, narrowing its matches, deciding, learning.

The episode draws everything from its own seeded generator and emits through the emitter the
runtime hands it (the runtime's own, so the events' logger names stay the runtime's).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from experiment_telemetry.demo.rotations import about as _about
from experiment_telemetry.demo.rotations import qmul as _qmul
from experiment_telemetry.demo.world import LearningModuleSpec, ObjectModel
from runtime_telemetry import TelemetryEmitter
from runtime_telemetry.events import (
    GraphMemoryUpdated,
    LearningModuleConclusionWithdrawn,
    LearningModuleGoalStateAttempted,
    LearningModuleNoMatch,
    LearningModuleObjectRecognized,
    LearningModuleStep,
    LearningModuleTimedOut,
    LearningModuleVotesReceived,
    MostLikelyHypothesis,
    SensorPatchObserved,
)

__all__ = ["Episode", "LearningModule"]

Quaternion = tuple[float, float, float, float]


@dataclass
class LearningModule:
    """A learning module of the runtime: its spec and the graphs it learned (its memory)."""

    spec: LearningModuleSpec
    memory: dict[str, set[str]] = field(default_factory=dict)
    created: int = 0


class Episode:
    """One module's view of one episode."""

    def __init__(
        self,
        module: LearningModule,
        obj: ObjectModel,
        rng: random.Random,
        all_features: list[str],
        telemetry: TelemetryEmitter,
        votes: random.Random | None = None,
    ) -> None:
        spec = module.spec
        self.module, self.spec, self.obj, self.rng = module, spec, obj, rng
        # Votes draw from their own generator, so adding them left every input as it was.
        self.votes = votes if votes is not None else random.Random(0)
        self.all_features = all_features
        self._telemetry = telemetry
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
        self._telemetry.emit(SensorPatchObserved(sensor_id=spec.sensor_id, step=step, on_object=on))
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
            self._telemetry.emit(
                LearningModuleNoMatch(lm_id=spec.lm_id, step=self.processed, new_graph_id=new_graph)
            )
            if noisy and before and step % 2:
                # Another module's vote restores what the stray observation ruled out.
                self.done = False
                self.possible = before
                self._telemetry.emit(
                    LearningModuleConclusionWithdrawn(
                        lm_id=spec.lm_id, step=self.processed, possible_matches=sorted(before)
                    )
                )
        matches = sorted(self.possible)
        self._telemetry.emit(
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
            self._telemetry.emit(
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
            self._telemetry.emit(
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

    def receive_votes(self, voters: int, got_input: bool) -> None:
        """One vote round, after the step's inputs: ``voters`` other modules processed input.

        In a step without input of its own, the others' votes may rule out graphs that lack a
        feature of the object they sensed (never all of them).
        """
        if voters and not got_input and not self.done and len(self.possible) > 1:
            if self.votes.random() < 0.5:
                feature = self.votes.choice(sorted(self.obj.features))
                kept = {g for g in self.possible if feature in self.module.memory[g]}
                if kept:
                    self.possible = kept
        self._telemetry.emit(
            LearningModuleVotesReceived(
                lm_id=self.spec.lm_id, step=self.processed, possible_matches=sorted(self.possible)
            )
        )

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
        self._telemetry.emit(
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
        self._telemetry.emit(
            LearningModuleTimedOut(
                lm_id=self.spec.lm_id,
                step=self.processed,
                possible_matches=matches,
                pose_resolved=resolved,
                possible_poses=[(1.0, 0.0, 0.0, 0.0)] if hypotheses else [],
                possible_locations=[(0.0, 0.0, 0.0)] if hypotheses else [],
                symmetry_evidence=self.pose if self.obj.symmetry > 1 and len(matches) == 1 else 0,
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
        self._telemetry.emit(
            GraphMemoryUpdated(
                lm_id=self.spec.lm_id,
                graph_id=graph,
                num_nodes=len(memory[graph]),
                created=created,
            )
        )
