"""``collector_paused``: no cyclic collections while a batch of short-lived objects is alive.

Why (ADRs 0052, 0085): where we build a batch of objects at once (a chunk of parsed JSON lines,
the events of a broker read) and hold them together until a handler is done with them, every
young collection meanwhile traverses them and promotes them, and the promotions set off the
middle and full collections that traverse the whole heap: 0.2-0.5 us an object. Such batches hold
no reference cycles, so reference counts free them when the batch is done. The pause lasts one
batch; cycles made meanwhile (by any thread) are collected at the first collection after it.
What the pause found it leaves: a collector that was off stays off.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the cyclic collector for the ``with`` block; enable it again if it was on."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
