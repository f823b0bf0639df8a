"""The lifecycle states a run directory's ``run.kv`` names, and its heartbeat period."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULT_HEARTBEAT_S", "RunStatus", "lost_events", "shown_status"]

DEFAULT_HEARTBEAT_S = 5.0


class RunStatus:
    """Lifecycle states as written in ``run.kv`` (``crashed`` is derived, never written)."""

    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    CRASHED = "crashed"


def lost_events(info: Mapping[str, Any]) -> int:
    """``lost`` of ``run.kv``: events logged and never delivered (0 when absent or damaged)."""
    try:
        return max(int(str(info.get("lost", 0) or 0)), 0)
    except ValueError:
        return 0


def shown_status(info: Mapping[str, Any]) -> str:
    """A run's status as every tool shows it: ``done (lost 120)`` when it lost events.

    ``run.kv`` keeps ``status=done`` (the run ended normally; scripts that look for ``done``
    still find it) and says ``lost=120`` beside it; no tool shows such a run as a plain ``done``.
    """
    status = str(info.get("status", "?"))
    lost = lost_events(info)
    return f"{status} (lost {lost})" if lost else status
