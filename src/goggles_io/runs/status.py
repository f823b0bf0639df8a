"""The lifecycle states a run directory's ``run.kv`` names, and its heartbeat period."""

from __future__ import annotations

__all__ = ["DEFAULT_HEARTBEAT_S", "RunStatus"]

DEFAULT_HEARTBEAT_S = 5.0


class RunStatus:
    """Lifecycle states as written in ``run.kv`` (``crashed`` is derived, never written)."""

    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    CRASHED = "crashed"
