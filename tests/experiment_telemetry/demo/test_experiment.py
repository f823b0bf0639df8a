"""The demo: every verdict occurs, and replaying its event log reproduces its stats exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiment_telemetry.demo.experiment import run_demo
from experiment_telemetry.harness import RunResult
from experiment_telemetry.replay import read_stats, replay_run
from experiment_telemetry.stats import VERDICTS, LearningModuleEpisodeStats


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    import os

    os.environ.setdefault("GOGGLES_TRANSPORT", "inprocess")
    return run_demo(
        tmp_path_factory.mktemp("runs"), seed=0, wandb=False, console=False, progress=False
    )


class TestDemo:
    def test_every_verdict_kind_appears(self, demo_run: RunResult) -> None:
        """Across the demo's episodes, the modules earn all ten verdicts."""
        seen = {
            s.primary_performance
            for s in demo_run.stats
            if isinstance(s, LearningModuleEpisodeStats)
        }

        assert set(VERDICTS) == seen

    def test_replayed_stats_equal_live_stats(self, demo_run: RunResult) -> None:
        """Replaying the recorded events gives exactly the stats emitted live, timestamps included."""
        live = read_stats(demo_run.run_dir)

        assert demo_run.stats == live
        assert live == replay_run(demo_run.run_dir)

    def test_run_directory_holds_everything(self, demo_run: RunResult) -> None:
        """The run directory has the event log, both stats CSVs, the stat events and the config."""
        names = {p.name for p in Path(demo_run.run_dir).iterdir()}

        assert {
            "runtime_events.jsonl",
            "train_stats.csv",
            "eval_stats.csv",
            "stats.jsonl",
            "config.yaml",
        } <= names
