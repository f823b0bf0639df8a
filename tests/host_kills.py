"""SIGKILL the dedicated host of a test's bus, and only the host.

The election lock file names its holder, and for a moment also a producer that probes the lock
before it spawns a host: a test that kills whatever pid the file names may kill the producer
(it did, in the remote sink's chaos test). :func:`kill_host` kills a pid only once its command
line is the host's.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

from support import wait_until

__all__ = ["alive", "is_host", "kill_host"]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError, IndexError):  # ESRCH if it ends while read
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    return False


def is_host(pid: int | None) -> bool:
    """Whether ``pid`` runs ``python -m goggles_io._transport.host``."""
    with contextlib.suppress(OSError):
        return b"goggles_io._transport.host" in Path(f"/proc/{pid}/cmdline").read_bytes()
    return False


def kill_host(bus: Any, killed: list[int]) -> int:
    """SIGKILL the host serving ``bus`` now (not one killed before); wait until it is gone."""
    pid = wait_until(
        lambda: (p := bus.host_pid()) not in (None, *killed) and is_host(p) and p,
        timeout_s=120,
        what="a live host to kill",
    )
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not alive(pid), timeout_s=30, what=f"host {pid} gone")
    return int(pid)
