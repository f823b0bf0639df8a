"""``ConsoleTransform``: one readable line per episode and a summary table at the end.

Lines go out as goggles_io ``text`` events, so any goggles handler can show them;
``PlainTextHandler`` prints just the text (no time/level prefix), which suits tables.
"""

from __future__ import annotations

import logging
import math
import sys
from typing import Any, ClassVar

import goggles_io
from experiment_telemetry.stats import (
    EpisodeStats,
    LearningModuleEpisodeStats,
    MetricAlert,
    OverallStats,
)
from experiment_telemetry.transforms.base import Transform
from goggles_io.handlers.base import BaseHandler, register_handler
from runtime_telemetry import receives

__all__ = ["ConsoleTransform", "PlainTextHandler", "format_overall_table"]

_COLUMNS = (
    ("mode", "mode", "{}"),
    ("episodes", "num_episodes", "{}"),
    ("correct%", "percent_correct", "{:.1f}"),
    ("confused%", "percent_confused", "{:.1f}"),
    ("no_match%", "percent_no_match", "{:.1f}"),
    ("time_out%", "percent_time_out", "{:.1f}"),
    ("pose_t/o%", "percent_pose_time_out", "{:.1f}"),
    ("mlh_ok%", "percent_correct_mlh", "{:.1f}"),
    ("mlh_bad%", "percent_confused_mlh", "{:.1f}"),
    ("used_mlh%", "percent_used_mlh_after_timeout", "{:.1f}"),
    ("rot_err°", "avg_rotation_error", "{:.2f}"),
    ("lm_steps", "avg_num_lm_steps", "{:.1f}"),
    ("run_s", "avg_episode_run_time", "{:.4f}"),
)


def format_overall_table(overall: list[OverallStats]) -> str:
    """A fixed-width text table, one row per mode's latest ``OverallStats``."""
    rows = [[title for title, _, _ in _COLUMNS]]
    for stats in overall:
        row = []
        for _, field, fmt in _COLUMNS:
            value = getattr(stats, field)
            missing = value is None or (isinstance(value, float) and math.isnan(value))
            row.append("-" if missing else fmt.format(value))
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


@register_handler
class PlainTextHandler(BaseHandler):
    """Print the payload of goggles ``text`` events as is, on stdout or stderr."""

    capabilities: ClassVar[frozenset[goggles_io.Kind]] = frozenset({goggles_io.Kind.TEXT})
    default_name: ClassVar[str] = "plain_text"

    def __init__(
        self, name: str | None = None, level: int = logging.NOTSET, *, stream: str = "stdout"
    ) -> None:
        super().__init__(name=name, level=level)
        if stream not in ("stdout", "stderr"):
            msg = f"stream must be 'stdout' or 'stderr' (got {stream!r})."
            raise ValueError(msg)
        self.stream = stream

    def config(self) -> dict[str, Any]:
        return {**super().config(), "stream": self.stream}

    def handle(self, event: goggles_io.Event) -> None:
        from tqdm import tqdm  # a core dependency; imported on first use

        # tqdm.write clears an active progress bar (the harness's) and redraws it after the
        # line, so lines never land in the middle of the bar.
        out = sys.stdout if self.stream == "stdout" else sys.stderr
        tqdm.write(str(event.payload), file=out)

    def flush(self) -> None:
        (sys.stdout if self.stream == "stdout" else sys.stderr).flush()


class ConsoleTransform(Transform):
    """Log a line per ``EpisodeStats`` and per ``MetricAlert``; on ``close()``, the summary table.

    Args:
        scope: goggles_io scope of the text events (attach a console handler to it).
        name: goggles_io logger name.
    """

    def __init__(self, *, scope: str = "experiment", name: str = "experiment_telemetry") -> None:
        super().__init__()
        self.logger: Any = goggles_io.get_logger(name, scope=scope, with_metrics=True)
        self._modules: list[str] = []
        self._overall: dict[str, OverallStats] = {}
        self._last_episode = 0

    @receives(LearningModuleEpisodeStats)
    def _on_module(self, stats: LearningModuleEpisodeStats) -> None:
        self._modules.append(f"{stats.lm_id}={stats.primary_performance}")

    @receives(EpisodeStats)
    def _on_episode(self, stats: EpisodeStats) -> None:
        modules, self._modules = self._modules, []
        self._last_episode = stats.episode
        line = (
            f"{stats.mode:<5} epoch {stats.epoch} episode {stats.episode:>3}  "
            f"target={stats.target:<10} verdict={stats.performance or 'none':<20} "
            f"steps={stats.lm_steps:<3} {' '.join(modules)}"
        )
        self.logger.text(line.rstrip(), step=stats.episode, name="episode")

    @receives(MetricAlert)
    def _on_alert(self, alert: MetricAlert) -> None:
        # Keyed by the latest episode, like every other line: the source's step is in the text.
        self.logger.text(
            f"ALERT {alert.severity.upper():<7} {alert.message}",
            step=self._last_episode,
            name="alert",
        )

    @receives(OverallStats)
    def _on_overall(self, stats: OverallStats) -> None:
        self._overall[stats.mode] = stats  # the latest totals; nothing is summed here

    def summary(self) -> str:
        """The summary table of the latest totals per mode ('' before any episode)."""
        if not self._overall:
            return ""
        return format_overall_table([self._overall[m] for m in sorted(self._overall)])

    def close(self) -> None:
        """Log the summary table once, then detach."""
        table = self.summary()
        if table and not getattr(self, "_summarised", False):
            self._summarised = True
            self.logger.text("\n" + table, step=self._last_episode, name="summary")
        super().close()
