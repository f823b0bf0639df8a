"""TensorBoard runs in the dashboard over real HTTP: old event files beside compat-writer runs,
every point (no reservoir), hyperparameters as config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("tensorboard")

from goggles_io.server.collector import Collector
from support import wait_until

ROOT = Path(__file__).resolve().parents[4]
POINTS = 5_000  # TensorBoard's EventAccumulator would keep 1,000 of them


def get(url: str) -> tuple[int, Any]:
    with urllib.request.urlopen(url, timeout=30) as reply:
        body = reply.read()
        kind = reply.headers.get("content-type", "")
        return reply.status, json.loads(body) if "json" in kind else body


def runs_of(server: Collector) -> dict[str, dict[str, Any]]:
    return {r["key"]: r for r in get(f"{server.url}/api/runs")[1]["runs"]}


def indexed(server: Collector, key: str, points: int) -> bool:
    run = runs_of(server).get(key)
    return run is not None and sum(run["metrics"].values()) >= points


def series(server: Collector, key: str, metric: str, **query: Any) -> dict[str, Any]:
    args = urllib.parse.urlencode({"run": key, "metric": metric, **query})
    return dict(get(f"{server.url}/api/series?{args}")[1]["series"].get(key, {}))


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A runs root with a tensorboard.summary.Writer run, a tensorboardX run (hyperparameters
    table) and a run of the CleanRL-shaped example through the compat writer."""
    from tensorboard.summary import Writer

    tensorboardx = pytest.importorskip("tensorboardX")
    runs = tmp_path_factory.mktemp("work") / "runs"
    writer = Writer(str(runs / "tb_writer"))
    for step in range(POINTS):
        writer.add_scalar("loss", 1.0 / (step + 1), step=step)
    writer.close()
    with tensorboardx.SummaryWriter(str(runs / "tbx_writer")) as tbx:
        tbx.add_text("hyperparameters", "|param|value|\n|-|-|\n|lr|0.001|")
        for step in range(POINTS):
            tbx.add_scalar("charts/episodic_return", float(step % 7), step)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")}
    subprocess.run([sys.executable, str(ROOT / "examples" / "cleanrl_ppo.py"), "--seed", "5",
                    "--total-timesteps", "2048"], cwd=runs.parent, check=True, timeout=240,
                   env={**env, "PYTHONPATH": os.pathsep.join(sys.path)}, capture_output=True)  # fmt: skip
    return runs


def test_tensorboard_runs_appear_beside_compat_runs_with_every_point(root: Path) -> None:
    """/api/runs lists the three runs; the event-file runs have all 5,000 points each, their
    layout is tensorboard and the table's hyperparameters are the config."""
    with Collector(run_dirs=[str(root)]) as server:
        wait_until(lambda: indexed(server, "dir:tb_writer", POINTS), timeout_s=120)
        wait_until(lambda: indexed(server, "dir:tbx_writer", POINTS), timeout_s=120)
        rows = runs_of(server)
        compat = next(r for r in rows.values() if r["run_id"].endswith(tuple("0123456789abcdef"))
                      and "Chain-v0" in r["run_id"])  # fmt: skip
        wait_until(lambda: indexed(server, compat["key"], 4 * 9), timeout_s=120)
        compat = runs_of(server)[compat["key"]]
        status, body = get(f"{server.url}/api/export?run=dir:tb_writer&metric=loss&format=csv")
        line = series(
            server, "dir:tbx_writer", "charts/episodic_return", x0=100, x1=199
        )  # +1 each side

    assert ({"loss": POINTS}, "tensorboard") == (
        rows["dir:tb_writer"]["metrics"],
        rows["dir:tb_writer"]["layout"],
    )
    assert {"charts/episodic_return": POINTS} == rows["dir:tbx_writer"]["metrics"]
    assert {"lr": 0.001} == rows["dir:tbx_writer"]["config"]
    assert (200, POINTS + 1) == (status, body.count(b"\n"))
    assert (list(range(99, 201)), "full") == ([int(x) for x in line["x"]], line["resolution"])
    assert ("done", 5, "tensorboard") == (
        compat["status"],
        compat["config"]["seed"],
        compat["group"],
    )
    assert {"charts/SPS", "losses/value_loss", "charts/episodic_return"} <= set(compat["metrics"])
