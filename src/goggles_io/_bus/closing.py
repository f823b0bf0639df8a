"""robo-goggles 0.3.6's ``EventBus.shutdown``: every handler closed at once, none waited past
the deadline.

Each lane is closed (delivered, flushed, closed) on a daemon thread of its own, so one slow
``close()`` does not hold up the others; the caller waits for them all up to ``timeout_s`` in
all. A ``close()`` that hangs beyond it is left running on its thread (Python cannot interrupt
it), and one line on stderr names it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from goggles_io._bus.lane import Lane
from goggles_io._util.report import report

__all__ = ["close_in_parallel"]


def close_in_parallel(lanes: Sequence[Lane], timeout_s: float | None) -> list[str]:
    """Close ``lanes`` concurrently; the names of those still closing when time ran out."""
    threads = []
    for lane in lanes:
        thread = threading.Thread(
            target=lane.close,
            args=(timeout_s,),
            name=f"goggles_io:close:{lane.name}",
            daemon=True,
        )
        thread.start()
        threads.append((lane.name, thread))
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    late = []
    for name, thread in threads:
        thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            late.append(name)
    if late:
        report(
            f"shutdown: handlers {late!r} did not finish close() within {timeout_s:g} s; "
            "left closing in the background"
        )
    return late
