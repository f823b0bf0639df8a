"""``GogglesTransform``: stat events to goggles_io logger calls, keyed by episode.

``overall/<mode>_<stat>`` and ``episode/<stat>`` scalars, ``lm/<lm_id>/<stat>`` per module,
histograms across modules when an episode has more than one, and an ``episode_stats`` table
logged on ``close()``. Every goggles handler on the scope receives them: ``CsvHandler`` for
``metrics.csv``, ``WandBHandler`` for W&B, any other sink attached there; the harness always
attaches this transform. Window stats of the metrics aggregator become
``<cadence>/<source>/<metric>`` means, logged at (and plotted against) the source's step.

``WandbTransform`` is its old name, kept as an alias (the transform never was W&B-only).
"""

from __future__ import annotations

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

__all__ = ["TABLE_COLUMNS", "GogglesTransform", "WandbTransform"]

TABLE_COLUMNS = (
    "episode",
    "epoch",
    "mode",
    "target",
    "performance",
    "num_steps",
    "terminal_step",
    "run_time_s",
    "modules",
)
_OVERALL = (
    "num_episodes",
    "percent_correct",
    "percent_confused",
    "percent_no_match",
    "percent_time_out",
    "percent_pose_time_out",
    "percent_correct_mlh",
    "percent_used_mlh_after_timeout",
    "avg_rotation_error",
    "avg_num_lm_steps",
    "avg_episode_run_time",
)
_CORRECT = frozenset({"correct", "correct_mlh"})


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
        values: dict[str, float] = {
            f"lm/{s.lm_id}/num_steps": s.num_steps,
            f"lm/{s.lm_id}/correct": float(s.primary_performance in _CORRECT),
        }
        if s.rotation_error is not None:
            values[f"lm/{s.lm_id}/rotation_error"] = s.rotation_error
        self.logger.push(values, step=s.episode)

    @receives(EpisodeStats)
    def _on_episode(self, s: EpisodeStats) -> None:
        modules, self._modules = self._modules, []
        self._last_episode = s.episode
        values: dict[str, float] = {
            "episode/num_steps": s.num_steps,
            "episode/run_time_s": s.run_time_s,
            "episode/num_learning_modules": s.num_learning_modules,
            **{f"episode/{v}": float(s.performance == v) for v in VERDICTS},
        }
        if s.terminal_step is not None:
            values["episode/terminal_step"] = s.terminal_step
        self.logger.push(values, step=s.episode)
        if len(modules) > 1:
            self.logger.histogram(
                [m.num_steps for m in modules], step=s.episode, name="episode/lm_num_steps"
            )
            errors = [m.rotation_error for m in modules if m.rotation_error is not None]
            if len(errors) > 1:
                self.logger.histogram(errors, step=s.episode, name="episode/lm_rotation_error")
        self._rows.append(
            [
                s.episode,
                s.epoch,
                s.mode,
                s.target,
                s.performance,
                s.num_steps,
                -1 if s.terminal_step is None else s.terminal_step,
                s.run_time_s,
                " ".join(f"{m.lm_id}={m.primary_performance}" for m in modules),
            ]
        )

    @receives(OverallStats)
    def _on_overall(self, s: OverallStats) -> None:
        values = {
            f"overall/{s.mode}_{name}": getattr(s, name)
            for name in _OVERALL
            if getattr(s, name) is not None
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
