"""examples/04, 05, 09 and 10 with the default (socket) transport, served by a foreign host."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wandb_reader import read_offline_runs

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def run_example(name: str, cwd: Path) -> str:
    """Run an example with the default transport and no WANDB_* of ours; return its stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "TELEMETRY_"))}
    env.pop("GOGGLES_TRANSPORT", None)  # the default: a dedicated host on GOGGLES_SOCKET
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert 0 == done.returncode, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.mark.slow
class TestExamplesOverHost:
    def test_example_04_writes_where_it_says_with_config(self, foreign_host, tmp_path) -> None:
        """04 writes its offline run under the printed dir, with constructor and later config."""
        output = run_example("04_wandb.py", tmp_path)
        run = read_offline_runs(tmp_path)["run_1"]

        assert f"written under {tmp_path}/wandb" in output
        wanted = {"optimizer": "adam", "lr": 3e-4, "batch_size": 64, "scope": "global"}
        assert wanted == {k: run["config"][k] for k in wanted}
        assert list(range(100)) == [row["step"] for row in run["history"] if "loss" in row]

    def test_example_05_one_run_per_scope(self, foreign_host, tmp_path) -> None:
        """05 writes one run per episode plus the global run, all in one group, under cwd."""
        output = run_example("05_wandb_multiple_runs.py", tmp_path)
        runs = read_offline_runs(tmp_path, expect=4)

        assert f"under {tmp_path}/wandb" in output
        assert {"run-episode_0", "run-episode_1", "run-episode_2"} <= runs.keys()
        assert {"multiple_runs"} == {r["group"] for r in runs.values()}

    def test_example_09_custom_axis(self, foreign_host, tmp_path) -> None:
        """09 plots joint_angle against sim_time_s, written under cwd."""
        run_example("09_custom_step_axis.py", tmp_path)
        run = read_offline_runs(tmp_path)["custom_axis"]

        assert "sim_time_s" == run["axes"]["joint_angle"]

    def test_example_10_streams_every_point(self, foreign_host, tmp_path) -> None:
        """10 reaches its collector: done, 100 points, its config; the key is never printed."""
        output = run_example("10_remote.py", tmp_path)

        assert "status=done, 100 points" in output
        assert "'seed': 0" in output
        assert "example-key" not in output + foreign_host.stderr()
