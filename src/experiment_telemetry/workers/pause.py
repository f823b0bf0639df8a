"""``CollectorPause``: no cyclic collections while one episode's decoded events are alive.

Why (ADR 0084): the experiment process decodes a whole episode of forwarded rows into schema
objects at once (a thousand and more, each tracked by the cyclic collector) and holds them until
the episode is replayed and scored. Collected meanwhile, they set off young, middle and full
collections that traverse them again and again: 0.5-1.0 µs an event, a third of the experiment
process's CPU for the worker benchmark. Decoded events hold no cycles; reference counts free
them once the episode is scored. So the pool pauses the collector from an episode's decode until
the caller asks for the next outcome, and leaves it as it found it then: one episode's worth of
objects at most is held out of the collector's reach (the same bound as ADR 0052's chunk pause
in ``goggles_io.runs.lines``). A caller that had disabled the collector keeps it disabled.
"""

from __future__ import annotations

import gc

__all__ = ["CollectorPause"]


class CollectorPause:
    """Pause the cyclic collector (``hold``) and restore it (``release``); both idempotent."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held = False

    @property
    def held(self) -> bool:
        """Whether this pause disabled the collector and has not restored it yet."""
        return self._held

    def hold(self) -> None:
        """Disable the collector if it is enabled (and remember to enable it again)."""
        if not self._held and gc.isenabled():
            gc.disable()
            self._held = True

    def release(self) -> None:
        """Enable the collector again if ``hold`` disabled it."""
        if self._held:
            self._held = False
            gc.enable()
