"""Monty's episode and overall statistics over the module stats (``BasicGraphMatchingLogger``).

``episode_stats`` is Monty's ``episode/*`` part of ``get_formatted_overall_stats`` (G415-455)
for one episode; ``Totals`` keeps one mode's running sums (``update_overall_stats``, G239-302)
and formats ``overall/*`` (G329-477). Departures D3, D4, D6-D8 are in
``docs/experiment_telemetry.md``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.stats import (
    VERDICTS,
    EpisodeStats,
    LearningModuleEpisodeStats,
    OverallStats,
)

__all__ = ["NO_VERDICT", "Totals", "episode_stats", "episode_verdict"]

NO_VERDICT = "none"
"""The count key of episodes and modules without a verdict."""
_RANK = {verdict: rank for rank, verdict in enumerate(VERDICTS)}
_PARENT_OR_CHILD = frozenset({"consistent_child_obj", "correct", "correct_mlh"})
_PER_LM = ("patch_off_object", "no_label", "pose_time_out", "time_out", "consistent_child_obj", "no_match")  # fmt: skip


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def episode_verdict(modules: Sequence[LearningModuleEpisodeStats]) -> str | None:
    """The strongest module verdict (Monty G287-295); None when no module has one."""
    verdicts = [m.primary_performance for m in modules if m.primary_performance is not None]
    return max(verdicts, key=_RANK.__getitem__) if verdicts else None


def episode_stats(
    context: EpisodeContext,
    modules: Sequence[LearningModuleEpisodeStats],
    *,
    monty_steps: int,
    monty_matching_steps: int,
    stamp: float,
) -> EpisodeStats:
    """Monty's ``episode/*`` values for one episode (flags 0 without a verdict: D3, D4)."""
    v = episode_verdict(modules)
    errors = [m.rotation_error for m in modules if m.rotation_error is not None]
    reached = [m.individual_ts_reached_at_step for m in modules]
    attempted = sum(m.goal_states_attempted for m in modules)
    achieved = sum(m.goal_state_achieved for m in modules)
    predictions = [
        m.episode_avg_prediction_error
        for m in modules
        if m.episode_avg_prediction_error is not None and not math.isnan(m.episode_avg_prediction_error)
    ]  # fmt: skip
    return EpisodeStats(
        timestamp=stamp,
        mode=context.mode,
        epoch=context.epoch,
        episode=context.episode,
        target=context.target,
        performance=v,
        num_learning_modules=len(modules),
        correct=int(v in ("correct", "correct_mlh")),
        no_match=int(v == "no_match"),
        confused=int(v in ("confused", "confused_mlh")),
        correct_mlh=int(v == "correct_mlh"),
        confused_mlh=int(v == "confused_mlh"),
        pose_time_out=int(v == "pose_time_out"),
        time_out=int(v == "time_out"),
        consistent_child_obj=int(v == "consistent_child_obj"),
        consistent_child_or_parent=int(v in _PARENT_OR_CHILD),
        used_mlh_after_time_out=int(v in ("correct_mlh", "confused_mlh")),
        rotation_error=_mean(errors) if errors else -1.0,
        lm_steps=max((m.num_steps for m in modules), default=0),
        monty_steps=monty_steps,
        monty_matching_steps=monty_matching_steps,
        mean_lm_steps_to_indv_ts=_mean([r for r in reached if r is not None]),
        run_time=max((m.time for m in modules), default=0.0),
        symmetry_evidence=_mean([m.symmetry_evidence for m in modules]),
        goal_states_attempted=attempted,
        goal_state_success_rate=achieved / attempted if attempted else 0.0,
        avg_prediction_error=_mean(predictions),
    )


class Totals:
    """One mode's running sums, from which every ``overall/*`` value is a ratio."""

    def __init__(self) -> None:
        self.episodes = 0
        self.lm_episodes = 0
        self.episode_verdicts: Counter[str] = Counter()
        self.lm_verdicts: Counter[str] = Counter()
        self.parent_or_child = 0
        self.rotation_sum = 0.0
        self.rotation_count = 0
        self.lm_steps = 0
        self.monty_steps = 0
        self.monty_matching_steps = 0
        self.prediction_sum = 0.0
        self.prediction_count = 0
        self.run_time = 0.0

    def add(self, episode: EpisodeStats, modules: Sequence[LearningModuleEpisodeStats]) -> None:
        """Count one scored episode (Monty's per-module appends happen once per module)."""
        self.episodes += 1
        self.episode_verdicts[episode.performance or NO_VERDICT] += 1
        for m in modules:
            self.lm_episodes += 1
            self.lm_verdicts[m.primary_performance or NO_VERDICT] += 1
            self.parent_or_child += m.primary_performance in _PARENT_OR_CHILD
            if m.rotation_error is not None:
                self.rotation_sum += m.rotation_error
                self.rotation_count += 1
            self.lm_steps += m.num_steps
            self.monty_steps += m.monty_steps
            self.monty_matching_steps += m.monty_matching_steps
            self.run_time += m.time
            error = m.episode_avg_prediction_error
            if error is not None and not math.isnan(error):  # D7: NaN does not poison the mean
                self.prediction_sum += error
                self.prediction_count += 1

    def overall(self, context: EpisodeContext, stamp: float) -> OverallStats:
        """Monty's ``overall/*`` after the episodes counted so far."""
        v, per_lm, n, lms = self.episode_verdicts, self.lm_verdicts, self.episodes, self.lm_episodes

        def percent(*names: str) -> float:
            return 100.0 * sum(v[name] for name in names) / n if n else 0.0

        def percent_lm(*names: str) -> float:
            return 100.0 * sum(per_lm[name] for name in names) / lms if lms else 0.0

        def ratio(total: float, count: int) -> float:
            return total / count if count else math.nan

        return OverallStats(
            timestamp=stamp,
            mode=context.mode,
            epoch=context.epoch,
            episode=context.episode,
            num_episodes=n,
            percent_correct=percent("correct", "correct_mlh"),
            percent_no_match=percent("no_match"),
            percent_confused=percent("confused", "confused_mlh"),
            percent_correct_mlh=percent("correct_mlh"),
            percent_confused_mlh=percent("confused_mlh"),
            percent_pose_time_out=percent("pose_time_out"),
            percent_time_out=percent("time_out"),
            percent_used_mlh_after_timeout=percent("correct_mlh", "confused_mlh"),
            percent_consistent_child_obj=percent("consistent_child_obj"),
            percent_correct_child_or_parent=100.0 * self.parent_or_child / lms if lms else 0.0,
            avg_rotation_error=ratio(self.rotation_sum, self.rotation_count),
            avg_num_lm_steps=ratio(self.lm_steps, lms),
            avg_num_monty_steps=ratio(self.monty_steps, lms),
            avg_num_monty_matching_steps=ratio(self.monty_matching_steps, lms),
            avg_prediction_error=ratio(self.prediction_sum, self.prediction_count),
            run_time=self.run_time * n / lms if lms else 0.0,  # Monty: sum / modules per episode
            avg_episode_run_time=ratio(self.run_time, lms),
            percent_correct_per_lm=percent_lm("correct", "correct_mlh"),
            percent_confused_per_lm=percent_lm("confused", "confused_mlh"),
            **{f"percent_{name}_per_lm": percent_lm(name) for name in _PER_LM},
            num_lm_episodes=lms,
            episode_verdicts=dict(sorted(v.items())),
            lm_verdicts=dict(sorted(per_lm.items())),
        )
