"""One Monty learning module, read after each step: what changed, as runtime events.

The attributes read are the ones Monty's own statistics read at an episode's end
(``get_stats_per_lm`` and the functions it calls): the buffer's per-step flags and stats,
the terminal state, the detected object and pose, the possible matches and poses, the
symmetry count, the most likely hypothesis. Reading them after every step and saying each
change as it happens is what lets ``RecognitionAggregator`` rebuild, from events alone, the
state Monty scores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from experiment_telemetry.context import ObjectUnderSensor
from runtime_telemetry import TelemetryEvent
from runtime_telemetry.events import (
    LearningModuleConclusionWithdrawn,
    LearningModuleGoalStateAttempted,
    LearningModuleNoMatch,
    LearningModuleObjectRecognized,
    LearningModuleReset,
    LearningModuleStep,
    LearningModuleTimedOut,
    LearningModuleVotesReceived,
    MostLikelyHypothesis,
)

__all__ = ["ModuleReader", "quaternion"]

Vector3 = tuple[float, float, float]
Quaternion = tuple[float, float, float, float]
_TIME_OUTS = ("time_out", "pose_time_out")


def quaternion(rotation: Any) -> Quaternion:
    """``(w, x, y, z)`` of a Monty ``Rotation`` (scalar-first) or a scipy one (scalar-last)."""
    q = np.asarray(rotation.as_quat(), dtype=float).reshape(-1)
    if hasattr(rotation, "as_scipy_rotation"):
        return (float(q[0]), float(q[1]), float(q[2]), float(q[3]))
    return (float(q[3]), float(q[0]), float(q[1]), float(q[2]))


def _vector(value: Any) -> Vector3 | None:
    try:
        a = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        return None
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        return None
    return (float(a[0]), float(a[1]), float(a[2]))


def _quat4(value: Any) -> Quaternion | None:
    try:
        a = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        return None
    if a.shape != (4,) or not np.all(np.isfinite(a)) or not np.any(a):
        return None
    return (float(a[0]), float(a[1]), float(a[2]), float(a[3]))


def _vectors(value: Any) -> tuple[Vector3, ...]:
    if value is None:
        return ()
    single = _vector(value)
    if single is not None and np.asarray(value, dtype=object).ndim == 1:
        return (single,)
    found = [_vector(v) for v in value]
    return tuple(v for v in found if v is not None)


class ModuleReader:
    """Reads one learning module (``lm``, Monty's ``LM_<i>`` as ``lm_id``) step after step."""

    def __init__(self, lm_id: str, lm: Any, sensor: str | None) -> None:
        self.lm_id = lm_id
        self.lm = lm
        self.sensor = sensor
        self.evidence = hasattr(lm, "hypotheses_updater")
        """Monty's test for an evidence LM (``get_stats_per_lm``)."""
        self.inputs = 0
        self.processed_now = False
        self._errors_seen = 0
        self._goals_seen = 0
        self._state: str | None = None
        self._said_first = False
        self._recognition: tuple[Any, ...] | None = None
        self._label: str | None = None
        self._mlh_key: tuple[Any, ...] | None = None
        self._said_mlh: tuple[Any, ...] | None = None

    def took_input(self) -> bool:
        """Whether the module processed an input in the step just taken (before ``step``)."""
        flags = self.lm.buffer.stats.get("lm_processed_steps", ())
        return bool(flags) and bool(flags[-1]) and len(self.lm.buffer) > 0

    # -- events -------------------------------------------------------------------------------
    def reset_event(self) -> LearningModuleReset:
        """The module's reset, stamped when Monty reset its buffer (the origin of ``time``)."""
        start = getattr(self.lm.buffer, "start_time", None)
        if not isinstance(start, (int, float)):
            return LearningModuleReset(lm_id=self.lm_id, evidence_based=self.evidence)
        return LearningModuleReset(
            timestamp=float(start), lm_id=self.lm_id, evidence_based=self.evidence
        )

    def step(self, stamp: float, *, exploring: bool, votes: bool) -> list[TelemetryEvent]:
        """The events of the step the model just took."""
        lm, stats = self.lm, self.lm.buffer.stats
        events: list[TelemetryEvent] = []
        count = int(sum(bool(f) for f in stats.get("lm_processed_steps", ())))
        self.processed_now = count > self.inputs
        if self.processed_now:
            self.inputs = count
            label = getattr(lm, "stepwise_target_object", None)
            if self.sensor and isinstance(label, str) and label and label != self._label:
                self._label = label
                events.append(
                    ObjectUnderSensor(
                        timestamp=stamp, sensor_id=self.sensor, step=count, label=label
                    )
                )
            on_object = list(lm.buffer.on_object)
            events.append(
                LearningModuleStep(
                    timestamp=stamp,
                    lm_id=self.lm_id,
                    step=count,
                    possible_matches=self._matches(),
                    on_object=bool(on_object[-1]) if on_object else False,
                    exploring=exploring,
                    location=_vector(lm.buffer.current_location()),
                    symmetry_evidence=int(getattr(lm, "symmetry_evidence", 0) or 0),
                )
            )
            if self.evidence and not exploring:
                events.append(self._hypothesis(stamp, count))
        if (
            self.evidence
            and self._mlh_key is not None
            and not (self.processed_now and not exploring)
        ):
            moved = self._hypothesis(stamp, count, between_inputs=True)
            if self._mlh_key != self._said_mlh:  # votes or movement moved it: say it again
                events.append(moved)
                self._said_mlh = self._mlh_key
        self._errors_seen = len(stats.get("mlh_prediction_error", ()))
        if votes:
            events.append(
                LearningModuleVotesReceived(
                    timestamp=stamp, lm_id=self.lm_id, step=count, possible_matches=self._matches()
                )
            )
        goals = list(stats.get("goal_state_achieved", ()))
        for achieved in goals[self._goals_seen :]:
            events.append(
                LearningModuleGoalStateAttempted(
                    timestamp=stamp, lm_id=self.lm_id, step=count, achieved=bool(achieved)
                )
            )
        self._goals_seen = len(goals)
        events.extend(self.conclusions(stamp=stamp))
        return events

    def conclusions(
        self, *, final: bool = False, stamp: float | None = None
    ) -> list[TelemetryEvent]:
        """A change of the module's terminal state (``final``: at the episode's end, when
        Monty may have timed it out after the last step, and its poses are the ones Monty
        scores)."""
        lm, stats = self.lm, self.lm.buffer.stats
        kwargs: dict[str, Any] = {} if stamp is None else {"timestamp": stamp}
        events: list[TelemetryEvent] = []
        state = lm.terminal_state
        first = stats.get("individual_ts_reached_at_step")
        if first is not None and not self._said_first and state not in ("match", "no_match"):
            # Reached and undone within one step (a vote restored matches): say both.
            self._said_first = True
            events.append(
                LearningModuleNoMatch(
                    lm_id=self.lm_id, step=int(first), new_graph_id=None, **kwargs
                )
                if stats.get("individual_ts_object") is None
                else self._recognized(int(first), final, kwargs)
            )
            self._state = "no_match" if stats.get("individual_ts_object") is None else "match"
        step = self.inputs
        if first is not None and not self._said_first:
            step, self._said_first = int(first), True
        if state == "match":
            recognized = self._recognized(step, final, kwargs)
            key = (recognized.graph_id, recognized.location, recognized.rotation,
                   recognized.symmetric_rotations, recognized.possible_poses)  # fmt: skip
            if self._state != "match" or key != self._recognition:
                self._recognition = key
                events.append(recognized)
        elif state == "no_match":
            if self._state != "no_match":
                detected = getattr(lm, "detected_object", None)
                events.append(
                    LearningModuleNoMatch(
                        lm_id=self.lm_id,
                        step=step,
                        new_graph_id=None if detected is None else str(detected),
                        **kwargs,
                    )
                )
        elif state in _TIME_OUTS:
            if self._state not in _TIME_OUTS:
                matches = self._matches()
                poses, locations = self._poses(matches)
                events.append(
                    LearningModuleTimedOut(
                        lm_id=self.lm_id,
                        step=step,
                        possible_matches=matches,
                        pose_resolved=state != "pose_time_out",
                        possible_poses=poses,
                        possible_locations=locations,
                        symmetry_evidence=int(getattr(lm, "symmetry_evidence", 0) or 0),
                        **kwargs,
                    )
                )
        elif state is None and self._state in ("match", "no_match"):
            events.append(
                LearningModuleConclusionWithdrawn(
                    lm_id=self.lm_id, step=step, possible_matches=self._matches(), **kwargs
                )
            )
        self._state = state
        return events

    # -- reading ------------------------------------------------------------------------------
    def _matches(self) -> tuple[str, ...]:
        return tuple(str(m) for m in self.lm.get_possible_matches())

    def _hypothesis(
        self, stamp: float, count: int, *, between_inputs: bool = False
    ) -> MostLikelyHypothesis:
        """The module's current best guess (``_get_current_mlh``, as Monty's statistics read
        it): for an input, with the error Monty appended for it; between inputs, without."""
        lm = self.lm
        error = None
        if not between_inputs:
            errors = list(lm.buffer.stats.get("mlh_prediction_error", ()))
            fresh = errors[self._errors_seen :]
            error = float(fresh[0]) if fresh and fresh[0] is not None else None
        mlh = lm._get_current_mlh()
        location = _vector(mlh.get("location")) or (0.0, 0.0, 0.0)
        evidence = mlh.get("evidence", 0)  # Monty's sentinel hypothesis holds the int 0
        event = MostLikelyHypothesis(
            timestamp=stamp,
            lm_id=self.lm_id,
            step=count,
            graph_id=str(mlh.get("graph_id")),
            location=location,
            rotation=quaternion(mlh["rotation"].inv()),
            evidence=evidence if type(evidence) is int else float(evidence),
            prediction_error=None if error is None or math.isnan(error) else error,
        )
        self._mlh_key = (event.graph_id, event.location, event.rotation, event.evidence)
        if not between_inputs:
            self._said_mlh = self._mlh_key
        return event

    def _recognized(
        self, step: int, final: bool, kwargs: dict[str, Any]
    ) -> LearningModuleObjectRecognized:
        lm, stats = self.lm, self.lm.buffer.stats
        found = getattr(lm, "detected_pose", None)
        pose = [None] * 7 if found is None else list(found)
        location = _vector(pose[:3]) or (0.0, 0.0, 0.0)
        quats = stats.get("detected_rotation_quat")
        rotation = _quat4(quats)
        if rotation is None and isinstance(quats, (list, tuple)) and quats:
            rotation = _quat4(quats[0])
        if rotation is None:
            rotation = self._euler_quaternion(pose[3:6]) or (1.0, 0.0, 0.0, 0.0)
        scale = pose[6] if len(pose) > 6 and isinstance(pose[6], (int, float, np.number)) else 1.0
        matches = self._matches()
        poses, locations = self._poses(matches) if not self.evidence else ((), ())
        detected = getattr(lm, "detected_object", None)
        return LearningModuleObjectRecognized(
            lm_id=self.lm_id,
            step=step,
            graph_id=str(detected if detected is not None else (matches[0] if matches else "")),
            location=location,
            rotation=rotation,
            scale=float(scale),
            symmetric_rotations=self._symmetric(),
            symmetry_evidence=int(getattr(lm, "symmetry_evidence", 0) or 0),
            path=_vectors(stats.get("detected_path")),
            possible_poses=poses,
            possible_locations=locations,
            **kwargs,
        )

    def _symmetric(self) -> tuple[Quaternion, ...]:
        """The module's symmetric rotations as object rotations: an evidence LM stores
        hypothesis rotation matrices (the object's inverse), a feature LM Euler angles of
        object rotations (D1)."""
        from tbp.monty.geometry import Rotation

        found = self.lm.buffer.stats.get("symmetric_rotations")
        if found is None:
            return ()
        array = np.asarray(found, dtype=float)
        if array.ndim == 3:
            return tuple(quaternion(Rotation.from_matrix(m).inv()) for m in array)
        if array.ndim == 2:
            return tuple(quaternion(Rotation.from_euler("xyz", e, degrees=True)) for e in array)
        return ()

    def _euler_quaternion(self, angles: Sequence[Any]) -> Quaternion | None:
        from tbp.monty.geometry import Rotation

        vector = _vector(angles)
        return (
            None if vector is None else quaternion(Rotation.from_euler("xyz", vector, degrees=True))
        )

    def _poses(self, matches: Sequence[str]) -> tuple[tuple[Quaternion, ...], tuple[Vector3, ...]]:
        """Distinct object rotations still possible for the first match, and the last location
        of each possible path (a module that narrows poses; what Monty reports at the end)."""
        lm = self.lm
        if self.evidence or not matches or not hasattr(lm, "possible_poses"):
            return (), ()
        from tbp.monty.frameworks.utils.spatial_arithmetics import get_unique_rotations

        poses = lm.possible_poses.get(matches[0])
        if not poses:
            return (), ()
        _, rotations = get_unique_rotations(poses, lm.pose_similarity_threshold)
        paths = np.asarray(lm.possible_paths.get(matches[0], []), dtype=float)
        locations = _vectors(paths[:, -1]) if paths.ndim == 3 else ()
        return tuple(quaternion(r) for r in rotations), locations
