"""CsvTransform: Monty's train_stats.csv / eval_stats.csv, one row per module per episode.

``H<line>`` names a line of Monty's ``monty_handlers.py``, ``L<line>`` of its
``logging_utils.py`` (the reference in ``../shared/reference/tbp.monty/``). The expected
headers were checked against pandas' ``DataFrame.from_dict(orient="index").to_csv`` on rows
with Monty's key order.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from experiment_telemetry.exceptions import ExperimentValueError
from experiment_telemetry.stats import EpisodeStats, LearningModuleEpisodeStats
from experiment_telemetry.transforms import CsvTransform
from experiment_telemetry.transforms.csv import monty_columns, render_cell
from runtime_telemetry import get_telemetry

stats_stream = get_telemetry("experiment_telemetry.stats")

EVIDENCE_HEADER = (
    ",primary_performance,stepwise_performance,num_steps,rotation_error,result,most_likely_object,"
    "primary_target_object,stepwise_target_object,highest_evidence,time,symmetry_evidence,"
    "monty_steps,monty_matching_steps,individual_ts_performance,individual_ts_reached_at_step,"
    "primary_target_position,primary_target_rotation_euler,most_likely_rotation,"
    "num_possible_matches,detected_location,detected_rotation,detected_scale,location_rel_body,"
    "detected_path,individual_ts_rotation_error,mean_objects_per_graph,mean_graphs_per_object,"
    "TFNP,possible_match_sources,most_likely_location,episode_avg_prediction_error,"
    "goal_states_attempted,goal_state_achieved,episode_seed,primary_target_rotation_quat,"
    "primary_target_scale,lm_id"
).split(",")
POSE_HEADER = (
    ",primary_performance,stepwise_performance,num_steps,rotation_error,result,"
    "primary_target_object,stepwise_target_object,time,symmetry_evidence,monty_steps,"
    "monty_matching_steps,primary_target_position,primary_target_rotation_euler,"
    "num_possible_matches,detected_location,detected_rotation,detected_scale,location_rel_body,"
    "detected_path,individual_ts_reached_at_step,individual_ts_performance,"
    "individual_ts_rotation_error,mean_objects_per_graph,mean_graphs_per_object,TFNP,"
    "possible_match_sources,possible_object_poses,possible_object_locations,"
    "goal_states_attempted,goal_state_achieved,episode_seed,primary_target_rotation_quat,"
    "primary_target_scale,lm_id"
).split(",")
_MIXED_TAIL = [
    "goal_states_attempted", "goal_state_achieved", "episode_seed",
    "primary_target_rotation_quat", "primary_target_scale",
]  # fmt: skip


def module_stats(mode: str, episode: int, lm: str, **kw: object) -> LearningModuleEpisodeStats:
    return LearningModuleEpisodeStats(
        mode=mode, epoch=0, episode=episode, lm_id=lm, primary_performance="correct",
        primary_target_object="mug", **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def end_episode(mode: str, episode: int) -> None:
    stats_stream.emit(
        EpisodeStats(mode=mode, epoch=0, episode=episode, target="mug", performance="correct",
                     num_learning_modules=1)
    )  # fmt: skip


def rows(path: Path) -> list[list[str]]:
    return list(csv.reader(path.open(encoding="utf-8")))


class TestHeader:
    def test_H244_evidence_run_header_is_montys(self) -> None:
        """A run of evidence modules has Monty's 38 columns, in Monty's order."""
        assert (38, EVIDENCE_HEADER) == (len(EVIDENCE_HEADER), monty_columns([True, True]))

    def test_H265_pose_run_header(self) -> None:
        """A run without evidence modules has Monty's 35 columns."""
        assert (35, POSE_HEADER) == (len(POSE_HEADER), monty_columns([False]))

    def test_H244_mixed_run_header_evidence_first(self) -> None:
        """Evidence module first: the pose columns come after the tail, before lm_id (40)."""
        expected = [*EVIDENCE_HEADER[:30], "most_likely_location", "episode_avg_prediction_error",
                    *_MIXED_TAIL, "possible_object_poses", "possible_object_locations", "lm_id"]  # fmt: skip

        assert (40, expected) == (len(expected), monty_columns([True, False]))

    def test_H244_mixed_run_header_pose_first(self) -> None:
        """Pose module first: the pose columns come before the tail, the evidence ones after."""
        expected = [*EVIDENCE_HEADER[:30], "possible_object_poses", "possible_object_locations",
                    *_MIXED_TAIL, "most_likely_location", "episode_avg_prediction_error", "lm_id"]  # fmt: skip

        assert expected == monty_columns([False, True])


class TestCsvTransform:
    def test_H287_header_once_rows_appended_per_episode(self, tmp_path: Path) -> None:
        """Each mode's file has one header and a row per module per episode."""
        transform = CsvTransform(tmp_path).attach()
        for episode in range(2):
            stats_stream.emit(module_stats("train", episode, "lm_0"))
            stats_stream.emit(module_stats("train", episode, "lm_1"))
            end_episode("train", episode)
        stats_stream.emit(module_stats("eval", 2, "lm_0"))
        end_episode("eval", 2)
        transform.close()

        assert (5, 2) == (
            len(rows(tmp_path / "train_stats.csv")),
            len(rows(tmp_path / "eval_stats.csv")),
        )

    def test_L1010_index_column_and_lm_id(self, tmp_path: Path) -> None:
        """The first cell is the module's index LM_<i>, the last its lm_id."""
        transform = CsvTransform(tmp_path).attach()
        stats_stream.emit(module_stats("eval", 0, "patch_a"))
        stats_stream.emit(module_stats("eval", 0, "patch_b"))
        end_episode("eval", 0)
        transform.close()

        assert [["LM_0", "patch_a"], ["LM_1", "patch_b"]] == [
            [r[0], r[-1]] for r in rows(tmp_path / "eval_stats.csv")[1:]
        ]

    def test_rows_wait_for_their_episode(self, tmp_path: Path) -> None:
        """Module rows are written when their episode's stats arrive, all together."""
        transform = CsvTransform(tmp_path).attach()
        stats_stream.emit(module_stats("eval", 0, "lm_0"))
        before = (tmp_path / "eval_stats.csv").exists()
        end_episode("eval", 0)

        assert (False, 2) == (before, len(rows(tmp_path / "eval_stats.csv")))
        transform.close()

    def test_rows_without_episode_are_written_on_close(self, tmp_path: Path) -> None:
        """close() writes rows whose episode never ended rather than dropping them."""
        transform = CsvTransform(tmp_path).attach()
        stats_stream.emit(module_stats("eval", 0, "lm_0"))
        transform.close()

        assert 2 == len(rows(tmp_path / "eval_stats.csv"))

    def test_cells_render_as_monty_csv(self, tmp_path: Path) -> None:
        """A time-out's result is a list, vectors are bracketed, None and NaN are empty."""
        transform = CsvTransform(tmp_path).attach()
        stats_stream.emit(module_stats("eval", 0, "lm_0", evidence_based=True, result=("g0", "g1"),
                                       location_rel_body=(0.5, 0.0, -1.0), rotation_error=None))  # fmt: skip
        end_episode("eval", 0)
        transform.close()
        header, row = rows(tmp_path / "eval_stats.csv")
        cells = dict(zip(header, row, strict=True))

        assert ("['g0', 'g1']", "[0.5 0.0 -1.0]", "", "") == (
            cells["result"], cells["location_rel_body"], cells["rotation_error"], cells["mean_objects_per_graph"]
        )  # fmt: skip

    def test_bad_directory_refused(self) -> None:
        """A non-path directory raises, naming the parameter."""
        with pytest.raises(ExperimentValueError, match="directory must be a non-empty path"):
            CsvTransform(42)  # type: ignore[arg-type]


class TestRenderCell:
    @pytest.mark.parametrize(
        ("value", "text"),
        [
            (None, ""),
            (math.nan, ""),
            (True, "True"),
            (3, "3"),
            (0.1, "0.1"),
            ("graph_1", "graph_1"),
            (("g0",), "['g0']"),
            ((1.0, 2.5, -3.0), "[1.0 2.5 -3.0]"),
            (((1.0, 2.0, 3.0), (4.0, 5.0, 6.0)), "[[1.0 2.0 3.0] [4.0 5.0 6.0]]"),
        ],
    )
    def test_cell_rendering(self, value: object, text: str) -> None:
        """Each kind of value renders as Monty's CSV shows it (vectors: D10)."""
        assert text == render_cell(value)
