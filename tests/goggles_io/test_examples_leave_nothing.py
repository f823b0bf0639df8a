"""Every goggles_io example runs to exit 0 under the default (dedicated host) transport and leaves
nothing behind in the system temp dir but the per-user socket folder it reuses."""

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

pytestmark = pytest.mark.slow


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")}
    env.update(TMPDIR=str(tmp), PYTHONPATH=str(SRC), WANDB_MODE="offline", WANDB_SILENT="true")
    env.pop("XDG_RUNTIME_DIR", None)
    return env


def _leftovers(tmp: Path) -> list[str]:
    socket_dir = f"goggles_io-{os.getuid()}"
    return sorted(p.name for p in tmp.iterdir() if p.name != socket_dir)


@pytest.mark.parametrize("script", SCRIPTS)
def test_example_runs_and_leaves_no_temp_files(script: str, tmp_path: Path) -> None:
    """The example exits 0; its temp dir (TMPDIR) holds nothing new afterwards."""
    tmp = tmp_path / "tmp"
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
    wait_until(lambda: not _leftovers(tmp), timeout_s=20, what=f"{_leftovers(tmp)} removed")
