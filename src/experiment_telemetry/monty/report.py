"""``MontyReportAggregator``: Monty's own per-LM statistics of an episode as this project's stat events.

Monty's ``BasicGraphMatchingLogger`` computes each learning module's statistics from the
module's internals (``get_stats_per_lm``) and hands them to its handlers; the stats handler
records them as a ``MontyEpisodeReported`` event. This aggregator turns that event into a
``LearningModuleEpisodeStats`` per module (Monty's values, Monty's names), then the episode's
``EpisodeStats`` and the mode's ``OverallStats`` by the same rules as ``RecognitionAggregator``
(``aggregators/_totals.py``). Values keep Monty's meaning; only their shapes change where this
project's stat events hold another (vectors as tuples, Monty's ``[None, None, None]`` as None:
departures D9, D10, D15 in ``docs/experiment_telemetry.md``).

It reads plain JSON and imports nothing of Monty, so ``telemetry replay`` rebuilds it from the
run's recorded config (``monty.report.enabled``) and recomputes the same stats from the log.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

import nonfinite_json
from experiment_telemetry.aggregators._totals import Totals, episode_stats
from experiment_telemetry.aggregators.base import STATS_STREAM, Aggregator
from experiment_telemetry.context import MODES, EpisodeContext
from experiment_telemetry.monty.events import MontyEpisodeReported
from experiment_telemetry.stats import LearningModuleEpisodeStats, StatEvent
from runtime_telemetry import receives

__all__ = ["MONTY_STATS_STREAM", "MontyReportAggregator", "module_stats"]

_logger = logging.getLogger(__name__)
MONTY_STATS_STREAM = "experiment_telemetry.monty.stats"
"""Stats stream of Monty's own numbers when the step hook's are the run's."""
Vector3 = tuple[float, float, float]


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _int(value: Any, default: int | None = 0) -> int | None:
    """Monty's counts: numpy ints, or numpy's float sum of an empty list (``0.0``)."""
    number = _number(value)
    return default if number is None or math.isnan(number) else int(number)


def _vector(value: Any) -> Vector3 | None:
    """A 3-vector, or None for Monty's unresolved ``[None, None, None]`` (D9)."""
    if isinstance(value, (list, tuple)) and len(value) == 3:
        numbers = [_number(v) for v in value]
        if all(n is not None for n in numbers):
            return (numbers[0], numbers[1], numbers[2])  # type: ignore[return-value]
    return None


def _vectors(value: Any) -> tuple[Vector3, ...] | None:
    """A list of 3-vectors; one bare 3-vector is a list of one (D15); NaN or empty: None."""
    if not isinstance(value, (list, tuple)) or not value:
        return None
    single = _vector(value)
    if single is not None and not isinstance(value[0], (list, tuple)):
        return (single,)
    found = [_vector(v) for v in value]
    return tuple(v for v in found if v is not None) or None


def _poses(value: Any) -> tuple[Vector3, ...] | None:
    """Monty's ``possible_object_poses`` is the pair ``get_unique_rotations`` returns (Euler
    angles, rotations): its Euler angles (D16)."""
    if isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[0], list):
        if all(_vector(v) is not None for v in value[0]):
            return _vectors(value[0])
    return _vectors(value)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _result(value: Any) -> str | tuple[str, ...] | None:
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    return _text(value)


def module_stats(
    lm_id: str, raw: Mapping[str, Any], context: EpisodeContext, stamp: float
) -> LearningModuleEpisodeStats:
    """One module's statistics as Monty reported them, in this project's stat event."""
    evidence = "most_likely_object" in raw
    mlh_rotation = _vector(raw.get("most_likely_rotation")) if evidence else None
    location = raw.get("most_likely_location")
    return LearningModuleEpisodeStats(
        timestamp=stamp,
        mode=context.mode,
        epoch=context.epoch,
        episode=context.episode,
        lm_id=str(raw.get("lm_id", lm_id)),
        evidence_based=evidence,
        primary_performance=_text(raw.get("primary_performance")),
        stepwise_performance=_text(raw.get("stepwise_performance")),
        num_steps=_int(raw.get("num_steps")) or 0,
        result=_result(raw.get("result")),
        rotation_error=_number(raw.get("rotation_error")),
        num_possible_matches=_int(raw.get("num_possible_matches")) or 0,
        detected_location=_vector(raw.get("detected_location")),
        detected_rotation=_vector(raw.get("detected_rotation")),
        detected_scale=_number(raw.get("detected_scale")),
        location_rel_body=_vector(raw.get("location_rel_body")) or (0.0, 0.0, 0.0),
        detected_path=_vectors(raw.get("detected_path")),
        symmetry_evidence=_int(raw.get("symmetry_evidence")) or 0,
        individual_ts_reached_at_step=_int(raw.get("individual_ts_reached_at_step"), None),
        individual_ts_performance=str(raw.get("individual_ts_performance", "patch_off_object")),
        individual_ts_rotation_error=_number(raw.get("individual_ts_rotation_error")),
        time=_number(raw.get("time")) or 0.0,
        mean_objects_per_graph=_number(raw.get("mean_objects_per_graph")),
        mean_graphs_per_object=_number(raw.get("mean_graphs_per_object")),
        TFNP=str(raw.get("TFNP", "")),
        possible_match_sources=str(raw.get("possible_match_sources", "")),
        most_likely_object=_text(raw.get("most_likely_object")) if evidence else None,
        most_likely_location=(_vector(location) or None) if evidence else None,
        most_likely_rotation=mlh_rotation,
        highest_evidence=raw.get("highest_evidence") if evidence else None,
        episode_avg_prediction_error=_number(raw.get("episode_avg_prediction_error"))
        if evidence
        else None,
        possible_object_poses=_poses(raw.get("possible_object_poses")),
        possible_object_locations=_vectors(raw.get("possible_object_locations")),
        goal_states_attempted=_int(raw.get("goal_states_attempted")) or 0,
        goal_state_achieved=_int(raw.get("goal_state_achieved")) or 0,
        monty_steps=_int(raw.get("monty_steps")) or 0,
        monty_matching_steps=_int(raw.get("monty_matching_steps")) or 0,
        episode_seed=_int(raw.get("episode_seed"), None),
        primary_target_object=str(raw.get("primary_target_object", context.target)),
        primary_target_position=_vector(raw.get("primary_target_position"))
        or context.target_position,
        primary_target_rotation_euler=_vector(raw.get("primary_target_rotation_euler"))
        or context.euler(),
        primary_target_rotation_quat=context.target_rotation,
        primary_target_scale=_number(raw.get("primary_target_scale")) or context.target_scale,
        stepwise_target_object=_text(raw.get("stepwise_target_object")),
        possible_matches=(),
    )


class MontyReportAggregator(Aggregator):
    """Score each episode with the statistics Monty reported for it (see the module docstring).

    An episode without a report (the stats handler was not in Monty's logging config) scores
    nothing, with one warning.
    """

    def __init__(self, *, stream: str = STATS_STREAM) -> None:
        super().__init__(stream=stream)
        self._report: MontyEpisodeReported | None = None
        self._totals = {mode: Totals() for mode in MODES}
        self._warned = False

    @receives(MontyEpisodeReported)
    def _on_report(self, event: MontyEpisodeReported) -> None:
        self._report = event

    def score_episode(self, context: EpisodeContext) -> list[StatEvent]:
        report, self._report = self._report, None
        if report is None:
            if not self._warned:
                self._warned = True
                _logger.warning(
                    "episode %d: Monty reported no statistics (is the stats handler in "
                    "Monty's logging config?)",
                    context.episode,
                )
            return []
        data = nonfinite_json.loads(report.lm_stats)
        stamp = max(report.timestamp, context.timestamp)
        modules = [module_stats(lm_id, raw, context, stamp) for lm_id, raw in data.items()]
        first = data[next(iter(data))] if data else {}
        episode = episode_stats(
            context,
            modules,
            monty_steps=_int(first.get("monty_steps")) or 0,
            monty_matching_steps=_int(first.get("monty_matching_steps")) or 0,
            stamp=stamp,
        )
        totals = self._totals[context.mode]
        totals.add(episode, modules)
        return [*modules, episode, totals.overall(context, stamp)]
