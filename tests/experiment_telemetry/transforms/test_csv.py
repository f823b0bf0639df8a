"""CsvTransform: one row per learning module per episode, in <mode>_stats.csv."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from experiment_telemetry.exceptions import ExperimentValueError
from experiment_telemetry.stats import EpisodeStats, LearningModuleEpisodeStats
from experiment_telemetry.transforms import CsvTransform
from experiment_telemetry.transforms.csv import COLUMNS
from runtime_telemetry import get_telemetry

stats_stream = get_telemetry("experiment_telemetry.stats")


def module_stats(mode: str, episode: int, lm: str, **kw: object) -> LearningModuleEpisodeStats:
    return LearningModuleEpisodeStats(
        mode=mode,
        epoch=0,
        episode=episode,
        target="mug",
        lm_id=lm,
        primary_performance="correct",
        **kw,  # type: ignore[arg-type]
    )


class TestCsvTransform:
    def test_one_row_per_module_per_episode_by_mode(self, tmp_path: Path) -> None:
        """Module stats land in their mode's file, one row each, under one header."""
        transform = CsvTransform(tmp_path).attach()
        stats_stream.emit(module_stats("train", 0, "lm_0"))
        stats_stream.emit(module_stats("train", 0, "lm_1"))
        stats_stream.emit(
            module_stats(
                "eval", 1, "lm_0", rotation_error=1.25, detected_rotation=(1.0, 0.0, 0.0, 0.0)
            )
        )
        stats_stream.emit(
            EpisodeStats(mode="eval", epoch=0, episode=1, target="mug", performance="correct",
                         num_learning_modules=1, num_steps=3, terminal_step=3, run_time_s=0.1)
        )  # fmt: skip
        transform.close()

        train = list(csv.DictReader((tmp_path / "train_stats.csv").open()))
        evals = list(csv.DictReader((tmp_path / "eval_stats.csv").open()))

        assert (["lm_0", "lm_1"], 1) == ([r["lm_id"] for r in train], len(evals))
        assert ("1.25", "1.0 0.0 0.0 0.0", "") == (
            evals[0]["rotation_error"], evals[0]["detected_rotation"], evals[0]["detected_object"],
        )  # fmt: skip

    def test_header_is_the_stat_fields(self, tmp_path: Path) -> None:
        """The header lists the stat's fields without the timestamp."""
        transform = CsvTransform(tmp_path).attach()
        stats_stream.emit(module_stats("eval", 0, "lm_0"))
        transform.close()

        header = (tmp_path / "eval_stats.csv").read_text().splitlines()[0].split(",")

        assert list(COLUMNS) == header

    def test_rows_are_on_disk_before_close(self, tmp_path: Path) -> None:
        """Each row is flushed when written, so a crash keeps finished episodes."""
        transform = CsvTransform(tmp_path).attach()
        stats_stream.emit(module_stats("eval", 0, "lm_0"))

        assert 2 == len((tmp_path / "eval_stats.csv").read_text().splitlines())
        transform.close()

    def test_bad_directory_refused(self) -> None:
        """A non-path directory raises, naming the parameter."""
        with pytest.raises(ExperimentValueError, match="directory must be a non-empty path"):
            CsvTransform(42)  # type: ignore[arg-type]
