"""GogglesTransform: stat events become goggles_io scalars, histograms and a table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import attrs
import pytest

import goggles_io
from experiment_telemetry.stats import (
    EpisodeStats,
    LearningModuleEpisodeStats,
    MetricWindowStats,
    OverallStats,
)
from experiment_telemetry.transforms import GogglesTransform
from experiment_telemetry.transforms.goggles import PERFORMANCE_CODES
from goggles_io.testing import MemoryHandler
from runtime_telemetry import get_telemetry
from wandb_reader import read_offline_runs

stats_stream = get_telemetry("experiment_telemetry.stats")


def overall(**kw: object) -> OverallStats:
    """An OverallStats with every percentage and average 0 unless given."""
    names = [f.name for f in attrs.fields(OverallStats) if f.name.startswith(("percent_", "avg_"))]
    values: dict[str, object] = {n: 0.0 for n in names}
    values.update(kw)
    return OverallStats(mode="eval", epoch=0, episode=0, num_episodes=1, run_time=0.0, **values)  # type: ignore[arg-type]


def emit_episode(episode: int, lms: int = 2) -> None:
    for i in range(lms):
        stats_stream.emit(
            LearningModuleEpisodeStats(
                mode="eval", epoch=0, episode=episode, lm_id=f"lm_{i}", evidence_based=i == 0,
                primary_performance="correct", rotation_error=float(i), num_steps=3 + i,
                individual_ts_reached_at_step=2 + i, symmetry_evidence=i,
                episode_avg_prediction_error=0.25 if i == 0 else None,
            )
        )  # fmt: skip
    stats_stream.emit(
        EpisodeStats(mode="eval", epoch=0, episode=episode, target="mug", performance="correct",
                     num_learning_modules=lms, correct=1, lm_steps=3 + lms - 1)
    )  # fmt: skip
    stats_stream.emit(
        attrs.evolve(overall(percent_correct=100.0, avg_rotation_error=math.nan), episode=episode)
    )


def emit_undecided_episode(episode: int) -> None:
    """Two modules, neither concluded nor given a verdict (Monty: no terminal state)."""
    for i in range(2):
        stats_stream.emit(
            LearningModuleEpisodeStats(
                mode="eval", epoch=0, episode=episode, lm_id=f"lm_{i}", evidence_based=True,
                primary_performance=None, num_steps=4, symmetry_evidence=0,
                episode_avg_prediction_error=math.nan,
            )
        )  # fmt: skip
    stats_stream.emit(
        EpisodeStats(mode="eval", epoch=0, episode=episode, target="mug", performance=None,
                     num_learning_modules=2)
    )  # fmt: skip


def memory() -> MemoryHandler:
    handler = MemoryHandler(name="mem")
    goggles_io.attach(handler, scopes=["experiment"])
    return handler


class TestGogglesTransform:
    def test_monty_overall_episode_and_module_keys_keyed_by_episode(self) -> None:
        """overall/*, episode/* and <lm>/episode/* carry Monty's names and the episode as step."""
        handler = memory()
        transform = GogglesTransform().attach()
        emit_episode(7)
        goggles_io.flush()

        metrics = {name: (value, step) for name, value, step in handler.metrics()}

        assert (100.0, 7) == metrics["overall/percent_correct"]
        assert ((1, 7), (0, 7), (-1.0, 7)) == (
            metrics["episode/correct"], metrics["episode/confused"], metrics["episode/rotation_error"]
        )  # fmt: skip
        assert ((3, 7), (0.25, 7)) == (
            metrics["lm_1/episode/steps_to_individual_ts"], metrics["lm_0/episode/avg_prediction_error"]
        )  # fmt: skip
        assert "overall/avg_rotation_error" not in metrics  # NaN is left out
        assert "lm_1/episode/avg_prediction_error" not in metrics  # not an evidence module
        transform.close()

    def test_G492_histograms_only_with_several_modules(self) -> None:
        """Monty's per-module histograms are logged for two modules, not for one."""
        handler = memory()
        transform = GogglesTransform().attach()
        emit_episode(0, lms=1)
        emit_episode(1, lms=2)
        goggles_io.flush()

        hists = {e.extra["name"]: e.step for e in handler.of_kind("histogram")}

        assert {
            "episode/rotation_error_per_lm": 1,
            "episode/steps_per_lm": 1,
            "episode/steps_per_lm_indv_ts": 1,
            "episode/symmetry_evidence_per_lm": 1,
            "episode/lm_performances": 1,
            "episode/avg_prediction_error_dist": 1,
        } == hists
        transform.close()

    def test_G497_G503_empty_histograms_logged_as_monty_does(self) -> None:
        """With several modules and none concluded, Monty still logs steps_per_lm_indv_ts and
        lm_performances (empty); only avg_prediction_error_dist is skipped when empty (G507)."""
        handler = memory()
        transform = GogglesTransform().attach()
        emit_undecided_episode(3)
        goggles_io.flush()

        hists = {e.extra["name"]: list(e.payload) for e in handler.of_kind("histogram")}

        assert {
            "episode/rotation_error_per_lm": [-1.0],
            "episode/steps_per_lm": [4, 4],
            "episode/steps_per_lm_indv_ts": [],
            "episode/symmetry_evidence_per_lm": [0, 0],
            "episode/lm_performances": [],
        } == hists
        transform.close()

    def test_G497_G503_empty_histograms_in_a_real_offline_wandb_run(self, tmp_path: Path) -> None:
        """A real offline W&B run holds the empty histograms as Monty's wandb.Histogram([])."""
        wandb = pytest.importorskip("wandb")
        handler = goggles_io.WandBHandler(
            project="t", run_name="empty-hists", dir=str(tmp_path), mode="offline", name="wb"
        )
        goggles_io.attach(handler, scopes=["experiment"])
        transform = GogglesTransform().attach()
        emit_undecided_episode(3)
        transform.close()
        goggles_io.finish()

        (run,) = read_offline_runs(tmp_path).values()
        logged = {k: v for row in run["history"] for k, v in row.items()}

        def histogram(key: str) -> dict[str, object]:  # W&B stores its fields as key/<field>
            return {k[len(key) + 1 :]: v for k, v in logged.items() if k.startswith(key + "/")}

        montys = json.loads(json.dumps(wandb.Histogram([]).to_json()))

        assert (montys, montys) == (
            histogram("episode/steps_per_lm_indv_ts"), histogram("episode/lm_performances")
        )  # fmt: skip
        assert {} == histogram("episode/avg_prediction_error_dist")

    def test_G503_lm_performances_alphabetical_codes(self) -> None:
        """episode/lm_performances holds each verdict's alphabetical index (correct: 3)."""
        handler = memory()
        transform = GogglesTransform().attach()
        emit_episode(0, lms=2)
        goggles_io.flush()

        (event,) = [
            e for e in handler.of_kind("histogram") if e.extra["name"] == "episode/lm_performances"
        ]

        assert [3, 3] == [int(v) for v in event.payload]
        transform.close()

    def test_performance_codes_follow_the_alphabet(self) -> None:
        """The codes are Monty's LabelEncoder order over the ten verdicts."""
        assert [
            "confused", "confused_mlh", "consistent_child_obj", "correct", "correct_mlh",
            "no_label", "no_match", "patch_off_object", "pose_time_out", "time_out",
        ] == sorted(PERFORMANCE_CODES, key=PERFORMANCE_CODES.__getitem__)  # fmt: skip

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
