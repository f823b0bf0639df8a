"""The guide's synthetic runs: each failure raises its alert through the default watchers, a
healthy run none, and a recorded run replays to exactly the alerts it raised live."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from experiment_telemetry.aggregators.standard import make_watches
from experiment_telemetry.aggregators.watch import WatchAggregator
from experiment_telemetry.context import NO_LABEL, EpisodeContext
from experiment_telemetry.demo.guide_runs import ALGORITHMS, EXPECTED, GuideRun, make_run
from experiment_telemetry.harness import Experiment
from experiment_telemetry.replay import read_stats, replay_run
from experiment_telemetry.stats import MetricAlert
from runtime_telemetry import get_telemetry
from runtime_telemetry.events.metrics import MetricsBundle

_telemetry = get_telemetry("tests.guide_runs")
_BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "watchers.py"
_PER_EPISODE = 100  # bundles per harness episode


def fed(run: GuideRun) -> list[MetricAlert]:
    """The alerts of the default watchers fed ``run`` directly (the benchmark's path)."""
    agg = WatchAggregator(make_watches({}))
    alerts: list[MetricAlert] = []
    agg.add_listener(alerts.append)  # type: ignore[arg-type]
    for source, step, values in run.points:
        agg.feed(MetricsBundle(source=source, step=step, values=values))
    return alerts


class GuideRunExperiment(Experiment):
    """A harness run that emits a ``GuideRun``'s bundles, ``_PER_EPISODE`` per episode."""

    def __init__(self, run: GuideRun, root: Path) -> None:
        super().__init__(
            root=root,
            num_epochs=1,
            config={"recognition.enabled": False},
            slug=f"guide-{run.algorithm}-{run.failure}",
            console=False,
            wandb=False,
            progress=False,
        )
        self.guide_run = run

    def total_episodes(self) -> int:
        return -(-len(self.guide_run.points) // _PER_EPISODE)

    def episodes(self, epoch: int) -> Iterator[EpisodeContext]:
        for episode in range(self.total_episodes()):
            yield EpisodeContext(mode="train", epoch=epoch, episode=episode, target=NO_LABEL)

    def run_episode(self, context: EpisodeContext) -> None:
        first = context.episode * _PER_EPISODE
        for source, step, values in self.guide_run.points[first : first + _PER_EPISODE]:
            _telemetry.emit(MetricsBundle(source=source, step=step, values=values))


class TestGuideRuns:
    @pytest.mark.parametrize("failure", list(EXPECTED))
    def test_each_failure_raises_its_alert_after_the_onset(self, failure: str) -> None:
        """The failure's check names one of its metrics after the onset; nothing fires before."""
        run = make_run(7, "DQN" if failure == "value_explosion" else "SAC", failure)
        alerts = fed(run)

        assert run.onset is not None
        assert [] == [a.message for a in alerts if a.step <= run.onset]
        first = alerts[0]
        assert (EXPECTED[failure], True) == (first.check, first.metric in run.metrics)

    @pytest.mark.parametrize("algorithm", ALGORITHMS)
    def test_healthy_runs_raise_nothing(self, algorithm: str) -> None:
        """Healthy runs of each algorithm's shapes give no alert."""
        assert [] == [a.message for a in fed(make_run(7, algorithm))]

    def test_same_seed_same_run(self) -> None:
        """A run is a function of (seed, algorithm, failure)."""
        assert make_run(3, "PPO", "silence").points == make_run(3, "PPO", "silence").points

    def test_unknown_names_raise(self) -> None:
        """An unknown algorithm or failure, or a Q failure for PPO, is a ValueError naming it."""
        with pytest.raises(ValueError, match="'A2C'"):
            make_run(0, "A2C")
        with pytest.raises(ValueError, match="PPO logs no Q value"):
            make_run(0, "PPO", "value_explosion")


class TestReplay:
    @pytest.mark.parametrize(
        ("algorithm", "failure"), [("SAC", "loss_without_return"), ("DQN", "value_explosion")]
    )
    def test_recorded_run_replays_to_the_live_alerts(
        self, algorithm: str, failure: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Live through the harness, replayed from its event log and fed directly: one set of
        alerts (check, metric, step, message)."""
        monkeypatch.setenv("GOGGLES_TRANSPORT", "inprocess")
        run = make_run(7, algorithm, failure)
        result = GuideRunExperiment(run, tmp_path).run()

        live = [s for s in result.stats if isinstance(s, MetricAlert)]
        replayed = [s for s in replay_run(result.run_dir) if isinstance(s, MetricAlert)]

        assert live == [s for s in read_stats(result.run_dir) if isinstance(s, MetricAlert)]
        assert live == replayed
        key = [(a.check, a.metric, a.step, a.message) for a in live]
        assert key == [(a.check, a.metric, a.step, a.message) for a in fed(run)]
        assert EXPECTED[failure] in {a.check for a in live}


class TestBenchmark:
    def bench(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        return subprocess.run(
            [sys.executable, str(_BENCHMARK), *args],
            capture_output=True, text=True, timeout=300, check=False, env=env,
        )  # fmt: skip

    def test_prints_one_row_per_check(self) -> None:
        """A small seed range prints the table: a row per check and the healthy total."""
        out = self.bench("--seeds", "0:2", "--failing", "1", "--show-false", "0")

        assert 0 == out.returncode, out.stderr
        rows = [
            line.split("|")[1].strip() for line in out.stdout.splitlines() if line.startswith("| ")
        ]
        assert ["watcher (check)", *EXPECTED.values(), "any"] == rows

    @pytest.mark.parametrize("seeds", ["5", "5:2", "a:b"])
    def test_bad_seed_range_is_a_usage_error(self, seeds: str) -> None:
        """--seeds that is not FIRST:LAST with FIRST < LAST exits 2 naming the value."""
        out = self.bench("--seeds", seeds)

        assert (2, True) == (out.returncode, repr(seeds) in out.stderr)
