"""Whether the process that left a file behind is still alive (pid, and its start time).

The shared-memory segments and the spool folders carry their owner's pid in their name; the
next start removes those whose owner is gone. The start time guards against a reused pid.
"""

from __future__ import annotations

import os

__all__ = ["pid_alive", "start_time"]


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one of another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_time(pid: int) -> str | None:
    """The process's start time (clock ticks since boot) from ``/proc``; ``None`` if unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    return stat.rsplit(b")", 1)[-1].split()[19].decode()
