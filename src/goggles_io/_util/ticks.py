"""The wait of a durability thread: asleep while nothing waits, one tick at a time while something does.

The W&B rows and the remote outbox each run such a thread: a caller's callback waits until its
events are durable, and the thread looks again every tick until no callback waits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sized

__all__ = ["next_tick"]


def next_tick(
    cond: threading.Condition, closed: Callable[[], bool], waiting: Sized, tick_s: float
) -> bool:
    """With ``cond`` held: sleep until ``waiting`` holds something, then for one tick more.

    Returns ``False`` once ``closed()`` (the thread ends), else ``True`` (time to look again).
    Whoever adds to ``waiting`` or closes notifies ``cond``.
    """
    while not closed():
        if waiting:
            cond.wait(tick_s)
            return True
        cond.wait()
    return False
