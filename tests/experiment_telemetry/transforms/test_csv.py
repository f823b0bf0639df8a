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


def written(tmp_path: Path, *modules: LearningModuleEpisodeStats) -> list[dict[str, str]]:
    """The CSV rows of one eval episode made of ``modules``, as column -> cell."""
    transform = CsvTransform(tmp_path).attach()
    for module in modules:
        stats_stream.emit(module)
    end_episode("eval", modules[0].episode)
    transform.close()
    header, *body = rows(tmp_path / "eval_stats.csv")
    return [dict(zip(header, row, strict=True)) for row in body]


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


class TestNumberText:
    """Numbers are written as pandas writes the dtype it gives their column in the episode's
    DataFrame (L1007 ``from_dict(orient="index")``, H288 ``to_csv``)."""

    def test_L1007_int_column_with_a_missing_value_is_float(self, tmp_path: Path) -> None:
        """Two modules, one first conclusion at step 1 and one without: Monty writes 1.0 and an
        empty cell (its column is float64); alone, the same module's 1 stays 1."""
        both = written(tmp_path / "two",
                       module_stats("eval", 0, "lm_0", individual_ts_reached_at_step=1),
                       module_stats("eval", 0, "lm_1", individual_ts_reached_at_step=None))  # fmt: skip
        alone = written(
            tmp_path / "one", module_stats("eval", 0, "lm_0", individual_ts_reached_at_step=1)
        )

        assert (["1.0", ""], ["1"]) == (
            [r["individual_ts_reached_at_step"] for r in both],
            [r["individual_ts_reached_at_step"] for r in alone],
        )

    def test_H288_float_columns_write_whole_numbers_with_point_zero(self, tmp_path: Path) -> None:
        """Columns Monty holds as floats write 1.0 even when our value is the int 1; int columns
        without a missing value write 1."""
        (row,) = written(tmp_path, module_stats("eval", 0, "lm_0", detected_scale=1, rotation_error=60,
                                                time=2, num_steps=1, symmetry_evidence=0))  # fmt: skip

        assert ("1.0", "60.0", "2.0", "1", "0") == (
            row["detected_scale"], row["rotation_error"], row["time"], row["num_steps"],
            row["symmetry_evidence"],
        )  # fmt: skip

    def test_L788_no_hypothesis_evidence_is_montys_int_zero(self, tmp_path: Path) -> None:
        """An evidence module without a hypothesis has Monty's int 0 (written 0); beside a module
        with evidence 2.5 the column is float and it is written 0.0."""
        alone = written(
            tmp_path / "one",
            module_stats("eval", 0, "lm_0", evidence_based=True, highest_evidence=0),
        )
        both = written(tmp_path / "two",
                       module_stats("eval", 0, "lm_0", evidence_based=True, highest_evidence=0),
                       module_stats("eval", 0, "lm_1", evidence_based=True, highest_evidence=2.5))  # fmt: skip

        assert (["0"], ["0.0", "2.5"]) == (
            [r["highest_evidence"] for r in alone],
            [r["highest_evidence"] for r in both],
        )

    def test_H288_numbers_equal_pandas_on_montys_values(self, tmp_path: Path) -> None:
        """For a mixed episode (evidence module recognised, pose module without a conclusion,
        evidence module without a hypothesis), every numeric column's text equals what pandas
        writes for the values Monty holds there."""
        pd = pytest.importorskip("pandas")
        np = pytest.importorskip("numpy")
        montys = {  # the values Monty's get_stats_per_lm holds, per module
            "LM_0": {"num_steps": 4, "rotation_error": np.float64(5.0), "num_possible_matches": 1,
                     "detected_scale": np.concatenate([[0, 0, 0], [0.0, 0.0, 5.0], [1]])[6],
                     "symmetry_evidence": 0, "individual_ts_reached_at_step": 3,
                     "individual_ts_rotation_error": np.float64(5.0), "time": np.float64(2.0),
                     "mean_objects_per_graph": np.float64(1.0), "highest_evidence": np.float64(7.0),
                     "episode_avg_prediction_error": np.float64(0.5), "goal_states_attempted": 0,
                     "goal_state_achieved": np.sum([]), "monty_steps": 9, "episode_seed": 11,
                     "primary_target_scale": 1.0},
            "LM_1": {"num_steps": 2, "rotation_error": None, "num_possible_matches": 2,
                     "detected_scale": None, "symmetry_evidence": 0,
                     "individual_ts_reached_at_step": None, "individual_ts_rotation_error": None,
                     "time": np.float64(1.0), "mean_objects_per_graph": np.float64(1.0),
                     "goal_states_attempted": 1, "goal_state_achieved": np.sum([True]),
                     "monty_steps": 9, "episode_seed": 11, "primary_target_scale": 1.0},
            "LM_2": {"num_steps": 1, "rotation_error": None, "num_possible_matches": 2,
                     "detected_scale": None, "symmetry_evidence": 0,
                     "individual_ts_reached_at_step": None, "individual_ts_rotation_error": None,
                     "time": np.float64(0.0), "mean_objects_per_graph": np.float64(1.0),
                     "highest_evidence": 0, "episode_avg_prediction_error": np.mean([np.nan]),
                     "goal_states_attempted": 0, "goal_state_achieved": np.sum([]),
                     "monty_steps": 9, "episode_seed": 11, "primary_target_scale": 1.0},
        }  # fmt: skip
        ours = [
            module_stats("eval", 0, "lm_0", evidence_based=True, num_steps=4, rotation_error=5.0,
                         num_possible_matches=1, detected_scale=1.0, individual_ts_reached_at_step=3,
                         individual_ts_rotation_error=5.0, time=2.0, mean_objects_per_graph=1.0,
                         highest_evidence=7.0, episode_avg_prediction_error=0.5, monty_steps=9,
                         episode_seed=11),
            module_stats("eval", 0, "lm_1", num_steps=2, num_possible_matches=2, time=1.0,
                         mean_objects_per_graph=1.0, goal_states_attempted=1, goal_state_achieved=1,
                         monty_steps=9, episode_seed=11),
            module_stats("eval", 0, "lm_2", evidence_based=True, num_steps=1, num_possible_matches=2,
                         time=0.0, mean_objects_per_graph=1.0, highest_evidence=0,
                         episode_avg_prediction_error=math.nan, monty_steps=9, episode_seed=11),
        ]  # fmt: skip
        frame = pd.DataFrame.from_dict(montys, orient="index")
        pandas_rows = list(csv.reader(frame.to_csv().splitlines()))
        expected = [dict(zip(pandas_rows[0], row, strict=True)) for row in pandas_rows[1:]]

        got = written(tmp_path, *ours)

        assert expected == [{c: row[c] for c in pandas_rows[0]} for row in got]


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
