"""``telemetry demo``, ``replay`` and ``plot`` from the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from experiment_telemetry.cli import main


@pytest.mark.slow
class TestDemoCommand:
    def test_demo_runs_and_says_where_everything_is(self, tmp_path: Path) -> None:
        """python -m experiment_telemetry demo writes a run and prints its files and next steps."""
        out = subprocess.run(
            [sys.executable, "-m", "experiment_telemetry", "demo", "--root", str(tmp_path), "--no-wandb"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

        assert 0 == out.returncode, out.stderr
        assert "verdict=" in out.stdout and "correct%" in out.stdout
        assert "run done:" in out.stdout and "eval_stats.csv" in out.stdout


class TestReplayAndPlotCommands:
    def test_replay_says_identical(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """telemetry replay on a demo run exits 0 and reports identical stats."""
        from experiment_telemetry.demo.experiment import run_demo

        run = run_demo(tmp_path, num_epochs=1, wandb=False, console=False, progress=False)

        assert 0 == main(["replay", str(run.run_dir)])
        assert "identical to the" in capsys.readouterr().out

    def test_replay_of_a_non_run_exits_2(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A directory without an event log exits 2 with the reason on stderr."""
        assert 2 == main(["replay", str(tmp_path)])
        assert "runtime_events.jsonl" in capsys.readouterr().err

    def test_plot_writes_a_png(self, tmp_path: Path) -> None:
        """telemetry plot draws the run's stats into a PNG file."""
        from experiment_telemetry.demo.experiment import run_demo

        run = run_demo(tmp_path, num_epochs=1, wandb=False, console=False, progress=False)
        image = tmp_path / "out.png"

        assert 0 == main(["plot", str(run.run_dir), "-o", str(image)])
        assert image.read_bytes().startswith(b"\x89PNG")

    def test_version_still_works(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--version prints the version and exits 0."""
        with pytest.raises(SystemExit) as exit_info:
            main(["--version"])

        assert 0 == exit_info.value.code
        assert capsys.readouterr().out.startswith("telemetry ")
