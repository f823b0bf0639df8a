"""Starting a process that outlives its spawner: the dedicated host, the leftovers deliverer.

Both run ``python -m <module>`` in a session of their own (a Ctrl-C of ours does not reach it),
with our ``sys.path`` and without ``WANDB_SERVICE``: wandb sets it in a process that started a run
to point at that process's own W&B service, which dies with it. Their lines go to
``GOGGLES_HOST_LOG`` when set, else to our stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
from subprocess import DEVNULL
from typing import Any

__all__ = ["spawn_detached"]


def spawn_detached(module_args: list[str], log: str | None) -> subprocess.Popen[bytes]:
    """``python -m *module_args`` in a new session, stdin/stdout closed, stderr to ``log``."""
    env = dict(os.environ)
    env.pop("WANDB_SERVICE", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if isinstance(p, str) and p)
    stderr: Any = open(log, "ab") if log else None
    argv = [sys.executable, "-m", *module_args]
    try:
        # Popen closes every other fd by default (close_fds), so the child holds no lock of ours.
        return subprocess.Popen(
            argv, stdin=DEVNULL, stdout=DEVNULL, stderr=stderr, env=env, start_new_session=True
        )
    finally:
        if stderr is not None:
            stderr.close()
