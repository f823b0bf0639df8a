"""Real Monty runs, shared by the session: each MuJoCo test experiment once with the adapter on
and once without (Monty's own ``basic_info_monty_runs`` logging), run by Monty's docs' ``run.py``
in a subprocess, on first use.

Monty is an optional install (docs/monty.md). Where it is missing these tests skip with the
reason, except in CI (``CI=true``), where ``.ci/run`` installs it: there a missing Monty fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from monty_support import EXPERIMENTS, VOTING, VOTING_OVERRIDES, need_monty
from support import start, stop

HERE = Path(__file__).parent

ADAPTER = ("logging=split_telemetry", "+telemetry=split_telemetry", "+step_hook=split_telemetry")
WITHOUT = ("logging=basic_info_monty_runs",)
RUN_TIMEOUT_S = 600.0


@dataclass
class MontyRun:
    """One finished Monty run: Monty's folder and, with the adapter, this project's run."""

    experiment: str
    adapter: bool
    monty_dir: Path
    """``$MONTY_LOGS/projects/monty_runs/<run_name>``: Monty's CSVs."""
    stdout: str
    wall_s: float
    plain_count: int | None = None
    """Records the plain handler on ``telemetry.tbp.monty`` received."""
    runs: list[Path] = field(default_factory=list)
    """This project's run folders inside ``monty_dir`` (one with the adapter)."""

    @property
    def run_dir(self) -> Path:
        assert len(self.runs) == 1, f"expected one run of ours in {self.monty_dir}: {self.runs}"
        return self.runs[0]


def monty_env(logs: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        MUJOCO_GL="egl",
        WANDB_MODE="disabled",
        MONTY_LOGS=str(logs),
        MONTY_MODELS=str(logs / "models"),
        MONTY_DATA=str(logs / "data"),
        WANDB_DIR=str(logs / "wandb"),
        HYDRA_FULL_ERROR="1",
    )
    env.pop("GOGGLES_TRANSPORT", None)  # the adapter's default (in-process), as for a user
    return env


def run_monty(root: Path, experiment: str, adapter: bool, name: str) -> MontyRun:
    """Run ``experiment`` by Monty's docs' ``run.py`` (plus the plain handler) and wait."""
    logs = root / name
    count_file = root / f"{name}.plain.json"
    env = monty_env(logs)
    env["PLAIN_HANDLER_COUNT"] = str(count_file)
    extra = VOTING_OVERRIDES if experiment == VOTING else ()
    argv = [sys.executable, str(HERE / "run_monty.py"), f"experiment={experiment}", *extra,
            *(ADAPTER if adapter else WITHOUT), f"experiment.config.logging.run_name={name}"]  # fmt: skip
    began = time.monotonic()
    proc = start(
        argv, env=env, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        out, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        stop(proc)
    wall = time.monotonic() - began
    assert proc.returncode == 0, f"Monty exited {proc.returncode}:\n{out[-6000:]}"
    monty_dir = logs / "projects" / "monty_runs" / name
    runs = sorted(p for p in monty_dir.iterdir() if (p / "run.kv").is_file())
    plain = json.loads(count_file.read_text())["count"] if count_file.is_file() else None
    return MontyRun(experiment, adapter, monty_dir, out, wall, plain, runs)


class MontyRuns:
    """Each (experiment, adapter) run once per session, on first use."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._done: dict[tuple[str, bool], MontyRun] = {}

    def get(self, experiment: str, adapter: bool) -> MontyRun:
        key = (experiment, adapter)
        if key not in self._done:
            name = experiment.rsplit("/", 1)[-1] + ("_adapter" if adapter else "_plain")
            self._done[key] = run_monty(self.root, experiment, adapter, name)
        return self._done[key]


@pytest.fixture(scope="session")
def monty_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MontyRuns]:
    need_monty()
    yield MontyRuns(tmp_path_factory.mktemp("monty"))


@pytest.fixture(params=EXPERIMENTS, ids=("evidence", "feature_pred"))
def experiment(request: pytest.FixtureRequest) -> str:
    return str(request.param)
