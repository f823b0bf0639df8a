"""``GogglesTransform``: stat events to goggles_io logger calls, with Monty's W&B keys.

Per episode: ``episode/<stat>`` scalars (Monty's ``episode/*``), ``<lm_id>/episode/<stat>`` per
module, and, when the episode has more than one module, Monty's six histograms
(``episode/rotation_error_per_lm``, ``steps_per_lm``, ``steps_per_lm_indv_ts``,
``symmetry_evidence_per_lm``, ``lm_performances``, ``avg_prediction_error_dist``), empty ones
included as Monty logs them (``wandb.Histogram([])``), except the prediction errors'; per mode's
totals: ``overall/<stat>`` (Monty's keys carry no mode; both modes write them, at the run-wide
episode as step: D11, D12). None and NaN values are left out. An ``episode_stats`` table (ours)
is logged on ``close()``. Every goggles handler on the scope receives them: ``CsvHandler`` for
``metrics.csv``, ``WandBHandler`` for W&B, any other sink attached there; the harness always
attaches this transform. Window stats of the metrics aggregator become
``<cadence>/<source>/<metric>`` means, logged at (and plotted against) the source's step.

``WandbTransform`` is its old name, kept as an alias (the transform never was W&B-only).
"""

from __future__ import annotations

import math
from typing import Any

import goggles_io
from experiment_telemetry.stats import (
    VERDICTS,
    EpisodeStats,
    LearningModuleEpisodeStats,
    MetricWindowStats,
    OverallStats,
)
from experiment_telemetry.transforms.base import Transform
from runtime_telemetry import receives

__all__ = [
    "EPISODE_KEYS",
    "OVERALL_KEYS",
    "PERFORMANCE_CODES",
    "TABLE_COLUMNS",
    "GogglesTransform",
    "WandbTransform",
]

TABLE_COLUMNS = (
    "episode",
    "epoch",
    "mode",
    "target",
    "performance",
    "lm_steps",
    "mean_lm_steps_to_indv_ts",
    "run_time",
    "modules",
)
EPISODE_KEYS = (
    "correct", "no_match", "confused", "correct_mlh", "confused_mlh", "pose_time_out",
    "time_out", "consistent_child_obj", "consistent_child_or_parent", "used_mlh_after_time_out",
    "rotation_error", "lm_steps", "monty_steps", "monty_matching_steps",
    "mean_lm_steps_to_indv_ts", "run_time", "symmetry_evidence", "goal_states_attempted",
    "goal_state_success_rate", "avg_prediction_error",
)  # fmt: skip
"""``EpisodeStats`` fields logged as ``episode/<name>`` (Monty G415-455)."""
OVERALL_KEYS = (
    "percent_correct", "percent_no_match", "percent_confused", "percent_correct_mlh",
    "percent_confused_mlh", "percent_pose_time_out", "percent_time_out",
    "percent_used_mlh_after_timeout", "avg_rotation_error", "avg_num_lm_steps",
    "avg_num_monty_steps", "avg_num_monty_matching_steps", "avg_prediction_error",
    "percent_consistent_child_obj", "percent_correct_child_or_parent", "run_time",
    "avg_episode_run_time", "num_episodes", "percent_correct_per_lm", "percent_confused_per_lm",
    "percent_patch_off_object_per_lm", "percent_no_label_per_lm", "percent_pose_time_out_per_lm",
    "percent_time_out_per_lm", "percent_consistent_child_obj_per_lm", "percent_no_match_per_lm",
)  # fmt: skip
"""``OverallStats`` fields logged as ``overall/<name>`` (Monty G337-477)."""
PERFORMANCE_CODES = {verdict: code for code, verdict in enumerate(sorted(VERDICTS))}
"""``episode/lm_performances`` values: each verdict's alphabetical index (Monty's LabelEncoder)."""


def _number(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


class GogglesTransform(Transform):
    """Map stat events to ``scalar``/``push``/``histogram``/``table`` calls on a goggles logger.

    Args:
        scope: goggles_io scope (``WandBHandler`` makes one W&B run per scope).
        name: goggles_io logger name.
    """

    def __init__(self, *, scope: str = "experiment", name: str = "experiment_telemetry") -> None:
        super().__init__()
        self.logger: Any = goggles_io.get_logger(name, scope=scope, with_metrics=True)
        self._modules: list[LearningModuleEpisodeStats] = []
        self._rows: list[list[Any]] = []
        self._last_episode = 0
        self._declared: set[str] = set()

    @receives(LearningModuleEpisodeStats)
    def _on_module(self, s: LearningModuleEpisodeStats) -> None:
        self._modules.append(s)

    @receives(EpisodeStats)
    def _on_episode(self, s: EpisodeStats) -> None:
        modules, self._modules = self._modules, []
        self._last_episode = s.episode
        values: dict[str, Any] = {
            f"episode/{name}": getattr(s, name)
            for name in EPISODE_KEYS
            if _number(getattr(s, name))
        }
        for m in modules:
            per_lm = {
                "steps_to_individual_ts": m.individual_ts_reached_at_step,
                "individual_ts_rotation_error": m.individual_ts_rotation_error,
                "avg_prediction_error": m.episode_avg_prediction_error,
            }
            values.update({f"{m.lm_id}/episode/{k}": v for k, v in per_lm.items() if _number(v)})
        self.logger.push(values, step=s.episode)
        if len(modules) > 1:
            self._histograms(modules, s.episode)
        self._rows.append(
            [
                s.episode,
                s.epoch,
                s.mode,
                s.target,
                s.performance,
                s.lm_steps,
                s.mean_lm_steps_to_indv_ts,
                s.run_time,
                " ".join(f"{m.lm_id}={m.primary_performance}" for m in modules),
            ]
        )

    def _histograms(self, modules: list[LearningModuleEpisodeStats], step: int) -> None:
        errors = [m.rotation_error for m in modules if m.rotation_error is not None]
        reached = [m.individual_ts_reached_at_step for m in modules]
        predictions = [m.episode_avg_prediction_error for m in modules]
        histograms = {
            "episode/rotation_error_per_lm": errors or [-1.0],
            "episode/steps_per_lm": [m.num_steps for m in modules],
            "episode/steps_per_lm_indv_ts": [r for r in reached if r is not None],
            "episode/symmetry_evidence_per_lm": [m.symmetry_evidence for m in modules],
            "episode/lm_performances": [
                PERFORMANCE_CODES[m.primary_performance]
                for m in modules
                if m.primary_performance is not None
            ],
        }
        valid = [p for p in predictions if _number(p)]
        if valid:  # Monty skips this one alone when it would be empty (G507-512)
            histograms["episode/avg_prediction_error_dist"] = valid
        for name, values in histograms.items():  # the others even when empty, as Monty logs them
            self.logger.histogram(values, step=step, name=name)

    @receives(OverallStats)
    def _on_overall(self, s: OverallStats) -> None:
        values = {
            f"overall/{name}": getattr(s, name)
            for name in OVERALL_KEYS
            if _number(getattr(s, name))
        }
        self.logger.push(values, step=s.episode)

    @receives(MetricWindowStats)
    def _on_window(self, s: MetricWindowStats) -> None:
        # Logged at the source's step, which is also the declared x-axis (W&B plots against
        # ``<source>_step``). Keying them by the latest episode put every row of a run without
        # episodes (a training loop) at step 0: vertical-line charts and "last step 0".
        values = {f"{s.cadence}/{s.source}/{k}": v for k, v in s.mean.items()}
        for name in values.keys() - self._declared:
            self._declared.add(name)
            self.logger.set_x_axis(name, f"{s.source}_step")
        if values:
            self.logger.push(values, step=s.step, x=s.step)

    def close(self) -> None:
        """Log the per-episode table once, then detach."""
        with self.lock:
            rows, self._rows = self._rows, []
        if rows:
            self.logger.table(
                list(TABLE_COLUMNS), rows, step=self._last_episode, name="episode_stats"
            )
        super().close()


WandbTransform = GogglesTransform
"""The old name of ``GogglesTransform`` (kept so existing imports keep working)."""
