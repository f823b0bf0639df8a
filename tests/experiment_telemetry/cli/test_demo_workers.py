"""``telemetry demo --workers 2`` writes what ``telemetry demo`` writes, but for wall-clock times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

_WALL_CLOCK = ("timestamp", "time", "run_time", "avg_episode_run_time")
"""Fields that hold (or are computed from) the time an event was made: they differ per run."""


def _demo(root: Path, socket_dir: str, *extra: str) -> Path:
    env = {
        **os.environ,
        "GOGGLES_SOCKET": str(Path(socket_dir) / "bus.sock"),
        "GOGGLES_HOST_IDLE_TIMEOUT": "0.5",
    }
    env.pop("GOGGLES_TRANSPORT", None)
    args = ["demo", "--root", str(root), "--seed", "0", "--no-wandb", *extra]
    out = subprocess.run(
        [sys.executable, "-m", "experiment_telemetry", *args],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip
    assert 0 == out.returncode, out.stderr
    (run_dir,) = root.iterdir()
    return run_dir


def _lines(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for key in _WALL_CLOCK:
            row.pop(key, None)
        rows.append(row)
    return rows


class TestDemoWorkers:
    def test_workers_write_the_same_stats_and_events_as_one_process(self, tmp_path: Path) -> None:
        """--workers 2 --seed 0 and --seed 0 give equal stats.jsonl and runtime_events.jsonl
        (timestamps aside), and telemetry replay reproduces the workers' run."""
        with tempfile.TemporaryDirectory(prefix="gg-demo-") as socket_dir:
            alone = _demo(tmp_path / "one", socket_dir)
            workers = _demo(tmp_path / "two", socket_dir, "--workers", "2")
        replay = subprocess.run(
            [sys.executable, "-m", "experiment_telemetry", "replay", str(workers)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        stats = _lines(workers / "stats.jsonl")

        assert 39 == sum(row["kind"] == "episode_stats" for row in stats)
        assert _lines(alone / "stats.jsonl") == stats
        assert _lines(alone / "runtime_events.jsonl") == _lines(workers / "runtime_events.jsonl")
        assert 0 == replay.returncode and "identical to the" in replay.stdout
