"""GogglesTransform: stat events become goggles_io scalars, histograms and a table."""

from __future__ import annotations

import goggles_io
from experiment_telemetry.stats import (
    EpisodeStats,
    LearningModuleEpisodeStats,
    MetricWindowStats,
    OverallStats,
)
from experiment_telemetry.transforms import GogglesTransform
from goggles_io.testing import MemoryHandler
from runtime_telemetry import get_telemetry

stats_stream = get_telemetry("experiment_telemetry.stats")


def emit_episode(episode: int, lms: int = 2) -> None:
    for i in range(lms):
        stats_stream.emit(
            LearningModuleEpisodeStats(
                mode="eval", epoch=0, episode=episode, target="mug", lm_id=f"lm_{i}",
                primary_performance="correct", rotation_error=float(i), num_steps=3 + i,
            )
        )  # fmt: skip
    stats_stream.emit(
        EpisodeStats(mode="eval", epoch=0, episode=episode, target="mug", performance="correct",
                     num_learning_modules=lms, num_steps=4, terminal_step=None, run_time_s=0.5)
    )  # fmt: skip
    stats_stream.emit(
        OverallStats(
            mode="eval", epoch=0, episode=episode, num_episodes=1, percent_correct=100.0,
            percent_confused=0.0, percent_no_match=0.0, percent_time_out=0.0,
            percent_pose_time_out=0.0, percent_correct_mlh=0.0, percent_used_mlh_after_timeout=0.0,
            avg_rotation_error=None, avg_num_lm_steps=3.5, avg_episode_run_time=0.5,
        )
    )  # fmt: skip


def memory() -> MemoryHandler:
    handler = MemoryHandler(name="mem")
    goggles_io.attach(handler, scopes=["experiment"])
    return handler


class TestGogglesTransform:
    def test_overall_episode_and_module_scalars_keyed_by_episode(self) -> None:
        """overall/*, episode/* and lm/* scalars all carry the episode as their step."""
        handler = memory()
        transform = GogglesTransform().attach()
        emit_episode(7)
        goggles_io.flush()

        metrics = {name: (value, step) for name, value, step in handler.metrics()}

        assert (100.0, 7) == metrics["overall/eval_percent_correct"]
        assert (1.0, 7) == metrics["episode/correct"]
        assert (0.0, 7) == metrics["episode/confused"]
        assert (4, 7) == metrics["lm/lm_1/num_steps"]
        assert "overall/eval_avg_rotation_error" not in metrics  # None is not a number
        transform.close()

    def test_histograms_only_with_several_modules(self) -> None:
        """A histogram across modules is logged for two modules, not for one."""
        handler = memory()
        transform = GogglesTransform().attach()
        emit_episode(0, lms=1)
        emit_episode(1, lms=2)
        goggles_io.flush()

        hists = [(e.extra["name"], e.step) for e in handler.of_kind("histogram")]

        assert [("episode/lm_num_steps", 1), ("episode/lm_rotation_error", 1)] == hists
        transform.close()

    def test_episode_table_logged_on_close(self) -> None:
        """close() logs one table with a row per episode."""
        handler = memory()
        transform = GogglesTransform().attach()
        emit_episode(0)
        emit_episode(1)
        transform.close()
        goggles_io.flush()

        (table,) = handler.of_kind("table")

        assert [0, 1] == [row[0] for row in table.payload["data"]]
        assert "lm_0=correct lm_1=correct" == table.payload["data"][0][-1]

    def test_window_means_logged_at_source_step_without_episodes(self) -> None:
        """Window means of a run with no episodes are logged at the source's step, not step 0."""
        handler = memory()
        transform = GogglesTransform().attach()
        for step in (200, 400):
            stats_stream.emit(
                MetricWindowStats(source="learner", cadence="diagnostic", step=step, count=1,
                                  mean={"q_mean": 1.0}, last={"q_mean": 1.0})
            )  # fmt: skip
        goggles_io.flush()

        assert [200, 400] == [e.step for e in handler.of_kind("metric")]
        transform.close()

    def test_window_means_plotted_against_source_step(self) -> None:
        """A metric window's means are pushed with the source step as their x value."""
        handler = memory()
        transform = GogglesTransform().attach()
        stats_stream.emit(
            MetricWindowStats(source="sac", cadence="diagnostic", step=999, count=2,
                              mean={"policy_loss": 0.5}, last={"policy_loss": 0.4})
        )  # fmt: skip
        goggles_io.flush()

        (event,) = handler.of_kind("metric")

        assert ({"diagnostic/sac/policy_loss": 0.5}, 999, "sac_step") == (
            event.payload, event.extra["x"], event.extra["x_axis"],
        )  # fmt: skip
        transform.close()
