"""The watchers' demo: each scenario's failure raises its alert live, in the run's files, on
replay, in ``telemetry runs``/``show``, on the console and in the offline W&B run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiment_telemetry.cli import main
from experiment_telemetry.demo.watch import SCENARIOS, run_watch_demo
from experiment_telemetry.replay import read_log, read_stats, replay_run
from experiment_telemetry.stats import MetricAlert
from wandb_reader import read_offline_runs

EXPECTED = {
    "value-explosion": ("value_explosion", "q_mean"),
    "return-collapse": ("collapse", "episode_return"),
    "loss-without-return": ("divergence", "episode_return"),
    "train-steps-stall": ("counter_stall", "train_steps"),
    "silence": ("silence", "critic_loss"),
    "non-finite": ("non_finite", "critic_loss"),
}
ONSET_STEP = 60 * 20  # episode 60, 20 learner steps per episode


class TestScenarios:
    @pytest.mark.parametrize("scenario", SCENARIOS)
    def test_each_failure_raises_its_alert_and_replays(self, scenario: str, tmp_path: Path) -> None:
        """The scenario's alert fires once, after the onset, is in alerts.jsonl, and replay matches."""
        result = run_watch_demo(scenario, tmp_path, console=False, progress=False)
        alerts = [s for s in result.stats if isinstance(s, MetricAlert)]

        assert [EXPECTED[scenario]] == [(a.check, a.metric) for a in alerts]
        assert scenario == "loss-without-return" or alerts[0].step >= ONSET_STEP
        assert alerts == list(read_log(result.run_dir / "alerts.jsonl"))
        assert read_stats(result.run_dir) == replay_run(result.run_dir)

    def test_healthy_run_raises_nothing(self, tmp_path: Path) -> None:
        """The same loop without a failure gives no alert (the trainer's ``none``)."""
        from experiment_telemetry.demo import watch

        experiment = watch.WatchDemoExperiment(
            "value-explosion", root=tmp_path, console=False, progress=False
        )
        experiment.trainer.failure = "none"
        result = experiment.run()

        assert [] == [s for s in result.stats if isinstance(s, MetricAlert)]


class TestAlertsReachTheUser:
    def test_console_line_and_runs_and_show(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An ALERT line is printed live; runs shows the count; show lists the alert."""
        result = run_watch_demo("non-finite", tmp_path, progress=False)
        live = capsys.readouterr().out

        assert "ALERT ERROR   non_finite in learner/critic_loss at step 1201: value is nan" in live
        assert 0 == main(["runs", str(tmp_path)])
        header, row = capsys.readouterr().out.splitlines()[:2]
        assert "1" == row[header.index("ALERTS") :].split()[0]
        assert 0 == main(["show", str(result.run_dir)])
        shown = capsys.readouterr().out
        assert "alerts: 1" in shown and "[error] non_finite in learner/critic_loss" in shown

    def test_wandb_alert_in_the_offline_run_rate_limited(self, tmp_path: Path) -> None:
        """With wandb on, the alert is recorded by real offline wandb, once per metric and check."""
        pytest.importorskip("wandb")
        result = run_watch_demo("non-finite", tmp_path, console=False, progress=False, wandb=True)

        runs = read_offline_runs(result.run_dir)
        (run,) = runs.values()
        assert [("non_finite: learner/critic_loss", "ERROR")] == [
            (a["title"], a["level"]) for a in run["alerts"]
        ]


@pytest.mark.slow
class TestDemoCommand:
    def test_scenario_flag_prints_the_alert(self, tmp_path: Path) -> None:
        """telemetry demo --scenario value-explosion prints the alert and where it is stored."""
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        out = subprocess.run(
            [sys.executable, "-m", "experiment_telemetry", "demo", "--scenario", "value-explosion",
             "--root", str(tmp_path), "--no-wandb"],
            capture_output=True, text=True, timeout=120, check=False, env=env,
        )  # fmt: skip

        assert 0 == out.returncode, out.stderr
        assert "ALERT ERROR   value_explosion in learner/q_mean" in out.stdout
        assert "1 alert(s) in" in out.stdout
