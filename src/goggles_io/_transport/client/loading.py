"""The sender's imports, made on its own thread: ``attach()`` and the first log calls never wait
on the codec (numpy, cattrs), the election or the pools (ADR 0025); a fork waits for them to end.
"""

from __future__ import annotations

import os
import threading

__all__ = ["load_modules", "loading_modules"]

# The codec (numpy, cattrs), the election and the pools are imported by the pipe's worker, so
# attach() and the first log calls never wait on them (ADR 0025). A fork while that import runs
# would leave the child with half-imported modules: the fork waits for it to end (bounded).
_LOADING = threading.Event()
_LOADED = threading.Event()


def loading_modules() -> None:
    """Say that a worker is about to import (called before it starts)."""
    if not _LOADED.is_set():
        _LOADING.set()


def load_modules() -> None:
    """Import what the worker needs; idempotent."""
    if _LOADED.is_set():
        return
    try:
        import goggles_io._event.codec
        import goggles_io._transport.client.batching
        import goggles_io._transport.client.election
        import goggles_io._transport.shm  # noqa: F401
    finally:
        _LOADED.set()


def _before_fork() -> None:
    if _LOADING.is_set() and not _LOADED.is_set():
        _LOADED.wait(10.0)


os.register_at_fork(before=_before_fork)
