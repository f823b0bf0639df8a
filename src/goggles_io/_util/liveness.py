"""Whether the process that left a file behind is still alive (pid, and its start time).

The shared-memory segments and the spool folders carry their owner's pid in their name; the
next start removes those whose owner is gone. The start time guards against a reused pid. The
collector checks a run's sending process the same way (:func:`process_gone`) when it runs on the
same machine.
"""

from __future__ import annotations

import functools
import os
import socket
from typing import Any

__all__ = ["pid_alive", "proc_stat", "process_gone", "process_identity", "start_time"]


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
    stat = proc_stat(pid)
    return None if stat is None else stat[1]


def proc_stat(pid: int) -> tuple[bool, str] | None:
    """``(exited, start time)`` from ``/proc/<pid>/stat``; ``None`` if it cannot be read.

    ``exited``: a zombie, not yet reaped by its parent (its pid still answers ``kill(pid, 0)``).
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[-1].split()
    except OSError:
        return None
    return fields[0] in (b"Z", b"X"), fields[19].decode()


@functools.lru_cache(maxsize=1)
def _machine() -> str | None:
    """This kernel's boot and pid namespace: where two processes' pids mean the same thing."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            boot = fh.read().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return None
    return f"{boot}/{namespace}"


def process_identity() -> dict[str, Any]:
    """This process as another one on the machine can check it: host, machine, pid, start."""
    pid = os.getpid()
    return {
        "host": socket.gethostname(),
        "machine": _machine(),
        "pid": pid,
        "start": start_time(pid),
    }


def process_gone(identity: Any) -> bool:
    """Whether the process ``identity`` (from :func:`process_identity`) surely exited.

    Only a process of this kernel and pid namespace (or, without ``/proc``, of this host name)
    is looked at; a pid alive with another start time was reused. Anything else, a malformed
    identity included, is not known to be gone.
    """
    if not isinstance(identity, dict):
        return False
    pid, machine = identity.get("pid"), _machine()
    if type(pid) is not int or not 0 < pid < 2**31:
        return False
    if machine is not None:
        if identity.get("machine") != machine:
            return False
        if not pid_alive(pid):
            return True
        stat = proc_stat(pid)
        if stat is None:
            return not pid_alive(pid)
        exited, started_now = stat
        if exited:
            return True
        started = identity.get("start")
        return started is not None and started_now != started
    same_host = identity.get("machine") is None and identity.get("host") == socket.gethostname()
    return same_host and not pid_alive(pid)
