"""What became of a pipe's units: delivered, or lost by reason; and waits on that progress.

Every acknowledgement and every counted loss is *progress*: ``finish()`` waits while there is
some (a stall deadline, not a total one), and can be woken early (Ctrl-C, a new deadline).
Shares its owner's lock, so what is left and what progressed are read in one step.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["Tally"]


class Tally:
    """Delivered units, lost units by reason, and a progress counter to wait on."""

    def __init__(self, lock: threading.Lock, on_loss: Callable[[str, int, str], object]) -> None:
        self.delivered = 0
        self.losses: dict[str, int] = {}
        self.progress = 0
        self._changed = threading.Condition(lock)
        self._on_loss = on_loss

    def delivered_locked(self, units: int) -> None:
        """``units`` were acknowledged (the owner's lock held)."""
        self.delivered += units
        self.progress += 1
        self._changed.notify_all()

    def lose_locked(self, reason: str, units: int, detail: str = "") -> None:
        """``units`` are lost for ``reason`` (the owner's lock held); the first is said."""
        if units <= 0:
            return
        self.losses[reason] = self.losses.get(reason, 0) + units
        self.progress += 1
        self._changed.notify_all()
        self._on_loss(reason, units, detail)

    def set_aside_locked(self, reason: str, units: int) -> None:
        """``units`` left this owner's hands without being lost (``kept for later``)."""
        if units > 0:
            self.losses[reason] = self.losses.get(reason, 0) + units
            self.progress += 1
            self._changed.notify_all()

    def wake_locked(self) -> None:
        """End the current waits now."""
        self.progress += 1
        self._changed.notify_all()

    def wait_locked(self, timeout_s: float) -> bool:
        """Wait (the owner's lock held) until progress or ``timeout_s``; whether it came."""
        seen = self.progress
        self._changed.wait(timeout_s)
        return self.progress != seen

    def drain_locked(
        self, left: Callable[[], int], stall_s: float, timeout_s: float | None
    ) -> bool:
        """Wait while ``left()`` and progress comes at least every ``stall_s`` (at most
        ``timeout_s`` in all); ``True`` once nothing is left."""
        start = last = time.monotonic()
        seen = self.progress
        while left():
            now = time.monotonic()
            if self.progress != seen:
                seen, last = self.progress, now
            if now - last >= stall_s or (timeout_s is not None and now - start >= timeout_s):
                return False
            self._changed.wait(min(0.05, stall_s))
        return True
