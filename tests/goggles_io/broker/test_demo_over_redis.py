"""The demo's runtime in two worker "machines" that reach the experiment only through Redis
gives the same stats as the one-process demo with the same seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

_WALL_CLOCK = ("timestamp", "time", "run_time", "avg_episode_run_time")


def _demo(root: Path, socket_dir: str, *extra: str) -> Path:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")}
    env.update(GOGGLES_SOCKET=str(Path(socket_dir) / "bus.sock"), GOGGLES_HOST_IDLE_TIMEOUT="0.5")
    args = ["demo", "--root", str(root), "--seed", "0", "--no-wandb", *extra]
    out = subprocess.run(
        [sys.executable, "-m", "experiment_telemetry", *args],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip
    assert 0 == out.returncode, out.stderr[-3000:]
    (run_dir,) = root.iterdir()
    return run_dir


def _stats(run_dir: Path) -> list[dict[str, Any]]:
    rows = []
    for line in (run_dir / "stats.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for key in _WALL_CLOCK:
            row.pop(key, None)
        rows.append(row)
    return rows


def test_workers_through_redis_give_the_one_process_stats(redis_server, tmp_path: Path) -> None:
    """`demo --workers 2 --broker URL` (workers on their own host) == `demo` (one process)."""
    with tempfile.TemporaryDirectory(prefix="gg-demo-") as socket_dir:
        alone = _demo(tmp_path / "one", socket_dir)
        remote = _demo(tmp_path / "two", socket_dir, "--workers", "2", "--broker", redis_server.url)
    added = redis_server.client().info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)

    assert _stats(alone) == _stats(remote)
    assert added > 0  # the workers' events did go through Redis (the producers' XADD script)


def test_four_broker_demos_leave_nothing_in_redis(redis_server, tmp_path: Path) -> None:
    """Four `demo --workers 2 --broker URL` runs: Redis then holds no key of any of them
    (handled entries trimmed, the run's keys deleted by whoever ended last, and the
    experiment's own events never written to a stream nobody reads)."""
    client = redis_server.client()
    with tempfile.TemporaryDirectory(prefix="gg-demo-") as socket_dir:
        for i in range(4):
            _demo(tmp_path / str(i), socket_dir, "--workers", "2", "--broker", redis_server.url)
    xadds = client.info("commandstats").get("cmdstat_xadd", {}).get("calls", 0)
    left = [k.decode() for k in client.keys("*")]

    assert xadds >= 4  # every run went through Redis
    assert [] == left


def test_broker_needs_workers_and_a_redis_url(tmp_path: Path) -> None:
    """--broker without --workers, or with an http:// URL: one line, exit 2."""
    for extra in (
        ["--broker", "redis://127.0.0.1:1/0"],
        ["--workers", "1", "--broker", "http://x"],
    ):
        out = subprocess.run(
            [sys.executable, "-m", "experiment_telemetry", "demo", "--root", str(tmp_path), *extra],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert (2, 1) == (out.returncode, len(out.stderr.strip().splitlines())), out.stderr
