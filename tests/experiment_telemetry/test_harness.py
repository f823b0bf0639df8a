"""Experiment: the run lifecycle, including failures that must lose nothing."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest

from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.exceptions import ExperimentValueError
from experiment_telemetry.harness import Experiment
from experiment_telemetry.replay import read_log, read_stats
from goggles_io.runs import read_kv
from runtime_telemetry import get_telemetry
from runtime_telemetry.events import LearningModuleObjectRecognized, LearningModuleStep

runtime = get_telemetry("tests.runtime.lm")


class Toy(Experiment):
    """Two episodes per epoch; ``fail_at`` raises inside that episode after one event."""

    def __init__(
        self, tmp: Path, fail_at: int | None = None, error: type[BaseException] = RuntimeError
    ) -> None:
        super().__init__(root=tmp, num_epochs=2, console=False, progress=False, slug="toy")
        self.fail_at, self.error = fail_at, error
        self.calls: list[str] = []

    def episodes(self, epoch: int) -> Iterator[EpisodeContext]:
        for i in range(2):
            yield EpisodeContext(mode="train", epoch=epoch, episode=2 * epoch + i, target="mug")

    def pre_episode(self, context: EpisodeContext) -> None:
        self.calls.append(f"pre{context.episode}")

    def run_episode(self, context: EpisodeContext) -> None:
        runtime.emit(LearningModuleStep(lm_id="lm_0", step=1, possible_matches=("g0",)))
        if context.episode == self.fail_at:
            raise self.error("boom")
        runtime.emit(
            LearningModuleObjectRecognized(
                lm_id="lm_0", step=1, graph_id="g0", location=(0, 0, 0), rotation=(1, 0, 0, 0)
            )
        )

    def post_epoch(self, epoch: int) -> None:
        self.calls.append(f"epoch{epoch}")


def only_run(root: Path) -> Path:
    (run_dir,) = [p for p in root.iterdir() if p.is_dir()]
    return run_dir


class TestLifecycle:
    def test_hooks_run_in_order(self, tmp_path: Path) -> None:
        """pre_episode per episode, post_epoch after each epoch."""
        toy = Toy(tmp_path)
        toy.run()

        assert ["pre0", "pre1", "epoch0", "pre2", "pre3", "epoch1"] == toy.calls

    def test_finished_run_is_done_with_all_files(self, tmp_path: Path) -> None:
        """A normal run writes status=done, config, logs, CSVs and metrics."""
        result = Toy(tmp_path).run()

        assert "done" == read_kv(result.run_dir / "run.kv")["status"]
        assert {
            "runtime_events",
            "stats",
            "train_stats",
            "metrics.csv",
            "config.yaml",
            "run.kv",
        } <= set(result.files)
        assert 4 * 3 == len(read_stats(result.run_dir)) == len(result.stats)

    def test_exception_marks_failed_and_keeps_what_was_emitted(self, tmp_path: Path) -> None:
        """An exception in episode 2 propagates; the run is failed and episodes 0-1 plus the
        partial episode's event are on disk."""
        with pytest.raises(RuntimeError, match="boom"):
            Toy(tmp_path, fail_at=2).run()
        run_dir = only_run(tmp_path)

        rows = list(csv.DictReader((run_dir / "train_stats.csv").open()))
        log = list(read_log(run_dir))

        assert "failed" == read_kv(run_dir / "run.kv")["status"]
        assert ["LM_0", "LM_0"] == [
            r[""] for r in rows
        ]  # Monty's CSV: a row per module per episode
        assert 6 == len(read_stats(run_dir))
        assert isinstance(log[-1], LearningModuleStep)
        assert 2 == sum(isinstance(e, EpisodeContext) for e in log)

    def test_ctrl_c_marks_interrupted(self, tmp_path: Path) -> None:
        """KeyboardInterrupt closes the run as interrupted and propagates."""
        with pytest.raises(KeyboardInterrupt):
            Toy(tmp_path, fail_at=1, error=KeyboardInterrupt).run()

        assert "interrupted" == read_kv(only_run(tmp_path) / "run.kv")["status"]

    def test_subscribers_are_detached_afterwards(self, tmp_path: Path) -> None:
        """After the run no aggregator, transform or recorder is left on the telemetry loggers."""
        import logging

        before = list(logging.getLogger("telemetry").handlers)
        Toy(tmp_path).run()

        assert before == logging.getLogger("telemetry").handlers
        assert [] == logging.getLogger("telemetry.experiment_telemetry.stats").handlers

    def test_bad_epochs_refused(self, tmp_path: Path) -> None:
        """num_epochs < 1 raises ExperimentValueError naming it."""
        with pytest.raises(ExperimentValueError, match="num_epochs must be an int >= 1"):
            Experiment(root=tmp_path, num_epochs=0)
