"""The demo: every verdict occurs, and replaying its event log reproduces its stats exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiment_telemetry.demo.experiment import run_demo
from experiment_telemetry.harness import RunResult
from experiment_telemetry.replay import read_log, read_stats, replay_run
from experiment_telemetry.stats import VERDICTS, LearningModuleEpisodeStats, OverallStats
from runtime_telemetry.events import (
    LearningModuleReset,
    LearningModuleStep,
    LearningModuleVotesReceived,
)
from wandb_reader import read_offline_runs


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    # monkeypatch is function-scoped; a context keeps the setting from leaking to later modules.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GOGGLES_TRANSPORT", "inprocess")
        return run_demo(
            tmp_path_factory.mktemp("runs"), seed=0, wandb=False, console=False, progress=False
        )


class TestDemo:
    def test_every_verdict_but_consistent_child_appears(self, demo_run: RunResult) -> None:
        """Across the demo's episodes, the modules earn nine verdicts. Not consistent_child_obj:
        Monty's rule compares the most likely graph id with the child labels, and the demo's
        modules name their graphs graph_<n> (the rule's own tests cover it)."""
        seen = {
            s.primary_performance
            for s in demo_run.stats
            if isinstance(s, LearningModuleEpisodeStats)
        }

        assert set(VERDICTS) - {"consistent_child_obj"} == seen

    def test_demo_emits_every_new_runtime_event(self, demo_run: RunResult) -> None:
        """The demo's runtime emits resets, system steps, goal states, withdrawals and vote
        rounds."""
        kinds = {type(s).__name__ for s in read_log(demo_run.run_dir)}

        assert {
            "LearningModuleReset",
            "SensorimotorStep",
            "LearningModuleGoalStateAttempted",
            "LearningModuleConclusionWithdrawn",
            "LearningModuleVotesReceived",
        } <= kinds

    def test_votes_narrow_matches_between_inputs(self, demo_run: RunResult) -> None:
        """Some vote rounds leave a module fewer matches than its last input did (Monty's
        receive_votes in a step without input), which only the vote-round event reports."""
        last: dict[str, tuple[str, ...]] = {}
        narrowed = 0
        for event in read_log(demo_run.run_dir):
            if isinstance(event, LearningModuleReset):
                last.pop(event.lm_id, None)
            elif isinstance(event, LearningModuleStep | LearningModuleVotesReceived):
                before = last.get(event.lm_id)
                by_votes = isinstance(event, LearningModuleVotesReceived) and before is not None
                narrowed += by_votes and len(event.possible_matches) < len(before or ())
                last[event.lm_id] = event.possible_matches

        assert narrowed > 0

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


class TestDemoWandb:
    def test_offline_run_reads_back_config_and_summary(self, tmp_path: Path) -> None:
        """The demo's offline W&B run holds the recorded config, the final overall stats and
        the per-episode table."""
        pytest.importorskip("wandb")
        run = run_demo(tmp_path, num_epochs=1, wandb=True, console=False, progress=False)
        last_eval = [s for s in run.stats if isinstance(s, OverallStats) and s.mode == "eval"][-1]

        (wandb_run,) = read_offline_runs(run.run_dir).values()
        summary = wandb_run["summary"]

        assert (1, 12) == (wandb_run["config"]["num_epochs"], wandb_run["config"]["demo.max_steps"])
        assert last_eval.percent_correct == pytest.approx(summary["overall/percent_correct"])
        assert last_eval.num_episodes == summary["overall/num_episodes"]
        assert 13 == summary["episode_stats/nrows"]
