"""Every goggles_io example runs to exit 0 under the default (dedicated host) transport, prints
or writes what it says it does, and leaves nothing behind in the system temp dir but the
per-user socket folder it reuses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import wait_until

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SRC = Path(__file__).resolve().parents[2] / "src"
# runtime_only.py is the runtime package's example (tested there); 100 signals itself.
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py") if p.name != "runtime_only.py")
ARGS = {"100_interrupt.py": ["--self-signal"]}
# What each example says it shows, as text that appears in its output only when it did.
SAYS = {
    "01_basic_run.py": ["INFO     [global] examples.basic: Experiment started"],
    "02_multi_scope.py": ["[scope2] examples.basic.scope2: This will be logged only by"],
    "03_local_storage.py": ["trajectories/visualizations/particles_7.png",
                            "vector_fields/visualizations/vorticity_6.png", "images/custom_name_3.jpg",
                            "videos/gif_video_4.gif", "log.jsonl: 20 lines"],
    "04_wandb.py": ["W&B run written under"],
    "05_wandb_multiple_runs.py": ["4 W&B runs in group 'multiple_runs'"],
    "06_custom_handler.py": ["examples.custom_handler: [CUSTOM PREFIX] Hello, world!"],
    "07_images_and_histograms.py": ["image         step=10  images/sample_image_10.png shape=(64, 64, 3)",
                                    "trajectories  step=10  trajectories/paths_10.npy shape=(4, 20, 2)",
                                    "vector_field  step=10  vector_fields/flow_10.npy"],
    "08_dedicated_host.py": ["handlers run in a host subprocess"],
    "09_custom_step_axis.py": ["joint_angle vs sim_time_s"],
    "100_interrupt.py": ["SIGINT received: stopped cleanly"],
    "101_config.py": ["learning_rate =", "saved and re-loaded output.yaml"],
    "102_decorators.py": ["Trainer.train_step took", "raised ZeroDivisionError"],
    "103_history.py": ["shift == ring: True"],
    "104_filters.py": ["chain:"],
    "104b_filters_jit.py": ["jit + scan matches numpy"],
    "10_remote.py": ["status=done, 100 points"],
    "11_multiprocess.py": ["4000 events from 4 worker processes"],
    "12_from_wandb.py": ["summary: best_eval_return=", "run written to runs/"],
    "cleanrl_ppo.py": ["global_step=", "SPS:"],
    "own_experiment.py": ["run done:"],
}  # fmt: skip

pytestmark = pytest.mark.slow


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")}
    env.update(TMPDIR=str(tmp), PYTHONPATH=str(SRC), WANDB_MODE="offline", WANDB_SILENT="true")
    env.pop("XDG_RUNTIME_DIR", None)
    return env


def _leftovers(tmp: Path) -> list[str]:
    socket_dir = f"goggles_io-{os.getuid()}"
    return sorted(p.name for p in tmp.iterdir() if p.name != socket_dir)


def test_every_example_says_what_it_shows() -> None:
    """Each example has an entry in SAYS, so none can print nothing unnoticed."""
    assert SCRIPTS == sorted(SAYS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_example_runs_shows_what_it_says_and_leaves_no_temp_files(
    script: str, tmp_path: Path
) -> None:
    """The example exits 0, prints what it says, and its temp dir holds nothing new afterwards."""
    _run_and_check(script, tmp_path / "tmp")


def test_multiprocess_example_with_a_long_tmpdir(tmp_path: Path) -> None:
    """A TMPDIR 40 characters longer makes the example's socket path too long for AF_UNIX: the
    workers and the host meet on the short stand-in, and every event arrives."""
    tmp = tmp_path / ("t" * 39) / "tmp"
    tmp.parent.mkdir()
    assert len(str(tmp / "gg-example-11-xxxxxxxx" / "bus.sock")) > 107
    _run_and_check("11_multiprocess.py", tmp)


def _run_and_check(script: str, tmp: Path) -> None:
    tmp_path = tmp.parent
    tmp.mkdir()
    work = tmp_path / "cwd"
    work.mkdir()
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *ARGS.get(script, [])],
        cwd=work,
        env=_env(tmp),
        capture_output=True,
        text=True,
        timeout=240,
    )

    assert 0 == proc.returncode, proc.stderr[-3000:]
    assert [] == [text for text in SAYS[script] if text not in proc.stdout + proc.stderr]
    wait_until(lambda: not _leftovers(tmp), timeout_s=20, what=f"{_leftovers(tmp)} removed")
