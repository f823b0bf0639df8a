"""Monty's per-module statistics, from a module's event-built state and the episode context.

The branches follow Monty's ``get_graph_lm_episode_stats``, ``add_evidence_lm_episode_stats``,
``calculate_performance``, ``add_pose_lm_episode_stats``, ``add_policy_episode_stats`` and
``compute_unsupervised_stats`` (``docs/experiment_telemetry.md`` lists each with its line
numbers and the departures D1-D19). Nothing here reads runtime objects: only events, what the
experiment passed, and the labels learned from earlier contexts.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import numpy as np

from experiment_telemetry.aggregators._labels import LabelMap
from experiment_telemetry.aggregators._module_state import MATCH, TIME_OUT, ModuleState
from experiment_telemetry.context import NO_LABEL, EpisodeContext
from experiment_telemetry.exceptions import ExperimentValueError
from experiment_telemetry.geometry import euler_xyz, rotation_error
from experiment_telemetry.stats import LearningModuleEpisodeStats
from runtime_telemetry.events import LearningModuleObjectRecognized

__all__ = ["NO_OBSERVATIONS_YET", "SystemSteps", "score_module"]

_logger = logging.getLogger("experiment_telemetry.aggregators.verdicts")
NO_OBSERVATIONS_YET = "no_observations_yet"
"""Monty's most-likely graph id of an evidence module that had no hypothesis yet."""
_TIME_OUTS = ("time_out", "pose_time_out")
_CONFUSED = ("confused", "confused_mlh")
_POSE_VERDICTS = ("correct", "confused", "pose_time_out")
_ORIGIN = (0.0, 0.0, 0.0)

Vector3 = tuple[float, float, float]


class SystemSteps:
    """The whole system's step counts this episode (Monty's ``episode_steps``/``matching_steps``)."""

    __slots__ = ("matching", "total")

    def __init__(self) -> None:
        self.total = 0
        self.matching = 0


def _verdict(
    state: ModuleState, primary: str, target: str | None, labels: LabelMap
) -> tuple[str | None, bool]:
    """The graph-module verdict of a gated module against ``target`` (Monty L581-624).

    Returns the verdict and whether the time-out branch replaced ``result`` by the matches.
    The no_label test reads the primary target even for the stepwise verdict, as Monty does.
    """
    if not state.possible:
        return "no_match", False
    if primary == NO_LABEL:
        return "no_label", False
    if state.state == MATCH:
        return ("correct" if labels.carries(state.detected_object, target) else "confused"), False
    if state.state == TIME_OUT:
        return ("pose_time_out" if len(state.possible) == 1 else "time_out"), True
    return state.state, False  # None (no verdict), or a no-match whose matches came back


def _refine(
    verdict: str | None, state: ModuleState, target: str | None, labels: LabelMap
) -> str | None:
    """An evidence module's time-out judged by its last hypothesis (Monty L835-840; D2)."""
    if verdict in _TIME_OUTS and state.mlh is not None:
        return "correct_mlh" if labels.carries(state.mlh.graph_id, target) else "confused_mlh"
    return verdict


def _error(
    lm_id: str, target: Sequence[float], candidates: Sequence[Sequence[float]]
) -> float | None:
    """``rotation_error``; a degenerate rotation from the runtime scores None with a warning."""
    try:
        return rotation_error(target, candidates)
    except ExperimentValueError as exc:
        _logger.warning("%s: rotation_error recorded as None (%s)", lm_id, exc)
        return None


def _candidates(event: LearningModuleObjectRecognized) -> Sequence[Sequence[float]]:
    """Monty's symmetric rotations when there are any, else the detected one (L595-602; D1)."""
    return event.symmetric_rotations or (event.rotation,)


def _euler(lm_id: str, q: Sequence[float], rounded: bool) -> Vector3 | None:
    try:
        angles = euler_xyz(q)
    except ExperimentValueError as exc:
        _logger.warning("%s: rotation recorded as None (%s)", lm_id, exc)
        return None
    if rounded:  # as Monty's modules store the detected pose: 3 places, mod 360
        return (round(angles[0], 3) % 360, round(angles[1], 3) % 360, round(angles[2], 3) % 360)
    return angles


def _evidence(value: float) -> float:
    """The evidence as the module said it: Monty's modules hold the int 0 before any hypothesis
    (their "new object" sentinel), which its CSV writes as ``0``; any other number is a float."""
    return value if type(value) is int else float(value)


def _individual(
    lm_id: str, state: ModuleState, context: EpisodeContext, labels: LabelMap
) -> tuple[int | None, str, float | None]:
    """Monty's ``individual_ts_*``: the first conclusion alone, of a gated module (L626-654)."""
    first = state.first_conclusion
    if first is None:
        return None, "time_out", None
    if not isinstance(first, LearningModuleObjectRecognized):
        return first.step, "no_match", None
    if not labels.carries(first.graph_id, context.target):
        return first.step, "confused", None
    return first.step, "correct", _error(lm_id, context.target_rotation, _candidates(first))


def _tfnp(possible: Sequence[str], target: str, labels: LabelMap) -> str:
    """Monty's ``compute_unsupervised_stats`` verdict on the possible matches (L198-216; D5)."""
    if labels.knows(target):
        if any(labels.carries(g, target) for g in possible):
            return "target_in_possible_matches_(TP)"
        return "target_not_matched_(FN)"
    if any(not labels.carries(g, target) for g in possible):
        return "unknown_object_in_possible_matches_(FP)"
    return "unknown_object_not_matched_(TN)"


def score_module(
    lm_id: str,
    state: ModuleState,
    context: EpisodeContext,
    labels: LabelMap,
    *,
    evidence_based: bool,
    system: SystemSteps,
    stamp: float,
    target_euler: Vector3,
) -> LearningModuleEpisodeStats:
    """Every statistic Monty's ``get_stats_per_lm`` reports for one module (``target_euler``:
    ``context.euler()``, computed once per episode)."""
    target = context.target
    stepwise = None if not state.processed else (
        state.stepwise_label or context.stepwise_target or NO_LABEL
    )  # fmt: skip
    gated = state.processed > 0 and state.gated
    primary: str | None = "patch_off_object"
    stepwise_perf: str | None = "patch_off_object"
    result: str | tuple[str, ...] | None = None
    error: float | None = None
    individual: tuple[int | None, str, float | None] = (None, "patch_off_object", None)
    possible: tuple[str, ...] = ()
    if gated:
        possible = state.possible
        primary, listed = _verdict(state, target, target, labels)
        stepwise_perf, _ = _verdict(state, target, stepwise, labels)
        result = possible if listed else state.detected_object
        if primary == "correct" and state.last_recognition is not None:
            error = _error(lm_id, context.target_rotation, _candidates(state.last_recognition))
        individual = _individual(lm_id, state, context, labels)
    mlh = state.mlh
    if evidence_based:
        primary = _refine(primary, state, target, labels)
        stepwise_perf = _refine(stepwise_perf, state, stepwise, labels)
        if primary == "correct_mlh" and mlh is not None:
            error = _error(lm_id, context.target_rotation, (mlh.rotation,))
        children = context.consistent_child_labels
        if primary in _CONFUSED and children and mlh is not None and mlh.graph_id in children:
            primary = "consistent_child_obj"  # a graph id compared with child names (L816)
    recognition = state.last_recognition
    poses: tuple[Vector3, ...] | None = None
    locations: tuple[Vector3, ...] | None = None
    if not evidence_based and primary in _POSE_VERDICTS and state.poses:
        found = [_euler(lm_id, q, rounded=True) for q in state.poses]
        poses = tuple(p for p in found if p is not None)
        locations = state.pose_locations
    reached, individual_perf, individual_error = individual
    last_ts = state.last_matching_ts
    origin = context.timestamp if state.reset_ts is None else state.reset_ts
    return LearningModuleEpisodeStats(
        timestamp=stamp,
        mode=context.mode,
        epoch=context.epoch,
        episode=context.episode,
        lm_id=lm_id,
        evidence_based=evidence_based,
        primary_performance=primary,
        stepwise_performance=stepwise_perf,
        num_steps=state.processed if gated else 0,
        result=result,
        rotation_error=error,
        num_possible_matches=len(possible),
        detected_location=None if recognition is None else recognition.location,
        detected_rotation=None
        if recognition is None
        else _euler(lm_id, recognition.rotation, rounded=True),
        detected_scale=None if recognition is None else recognition.scale,
        location_rel_body=(state.location or _ORIGIN) if gated else _ORIGIN,
        detected_path=recognition.path if recognition is not None and recognition.path else None,
        symmetry_evidence=state.symmetry_evidence,
        individual_ts_reached_at_step=reached,
        individual_ts_performance=individual_perf,
        individual_ts_rotation_error=individual_error,
        time=0.0 if last_ts is None else last_ts - origin,
        mean_objects_per_graph=labels.mean_labels_per_graph(),
        mean_graphs_per_object=labels.mean_graphs_per_label(),
        TFNP=_tfnp(possible, target, labels),
        possible_match_sources=labels.sources(possible),
        most_likely_object=None if not evidence_based else (
            NO_OBSERVATIONS_YET if mlh is None else mlh.graph_id
        ),
        most_likely_location=None if not evidence_based else (
            _ORIGIN if mlh is None else mlh.location
        ),
        most_likely_rotation=None if not evidence_based else (
            _ORIGIN if mlh is None else _euler(lm_id, mlh.rotation, rounded=False)
        ),
        highest_evidence=None if not evidence_based else (  # Monty's sentinel is the int 0
            0 if mlh is None else _evidence(mlh.evidence)
        ),
        episode_avg_prediction_error=None if not evidence_based else (
            float(np.mean(state.prediction_errors)) if state.prediction_errors else math.nan
        ),
        possible_object_poses=poses,
        possible_object_locations=locations,
        goal_states_attempted=state.goals_attempted,
        goal_state_achieved=state.goals_achieved,
        monty_steps=system.total,
        monty_matching_steps=system.matching,
        episode_seed=context.seed,
        primary_target_object=target,
        primary_target_position=context.target_position,
        primary_target_rotation_euler=target_euler,
        primary_target_rotation_quat=context.target_rotation,
        primary_target_scale=context.target_scale,
        stepwise_target_object=stepwise,
        detected_labels=()
        if recognition is None
        else tuple(sorted(labels.labels(recognition.graph_id))),
        possible_matches=possible,
    )  # fmt: skip
