"""One handler lane's exact tally: every event offered is delivered, dropped or failed, once.

A close that gives up on a slow handler used to count what was queued as dropped while the
worker went on handling it, so a run reported ``delivered=131036, dropped=69863`` for 200,000
events (issue 29). Here :meth:`LaneTally.give_up` takes what is not handled at that moment as
``not handled in time`` and freezes the tally: what the abandoned worker does afterwards is not
counted (the lane stops it from counting, and a re-opened lane starts from the frozen numbers).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping

import attrs

from goggles_io._bus.transport import HandlerStats

__all__ = ["NOT_HANDLED_IN_TIME", "LaneTally"]

NOT_HANDLED_IN_TIME = "not handled in time"


class LaneTally:
    """Counts of one lane; ``offered == delivered + dropped + failed + pending()``.

    ``offered`` and ``dropped`` change on producer threads (the host offers from one thread per
    connection) and so under the lock; ``delivered``, ``failed`` and ``errors`` only on the
    lane's worker (or the one caller of a synchronous lane). A logger's scalar rows are counted
    without the lock, one at a time (:attr:`offer_one`: one step of a C counter, atomic under the
    GIL), and read under it: ``offered`` is the locked count plus the counter's steps less the
    steps readers took.
    """

    __slots__ = (
        "_counted",
        "_lock",
        "_reads",
        "_steps",
        "delivered",
        "dropped",
        "errors",
        "failed",
        "frozen",
        "given_up",
        "offer_one",
    )

    def __init__(self) -> None:
        self._counted = 0  # events offered to the lane through offer(), ever
        self._steps = itertools.count()  # one step per offer_one() and per read of ``offered``
        self._reads = 0  # steps taken by readers (under the lock)
        # One more event entered the lane: no lock, no Python frame (a logger's scalar row).
        self.offer_one: Callable[[], object] = self._steps.__next__
        self.delivered = 0  # events the handler took without raising
        self.dropped = 0  # events the lane refused (queue full, open failed, not handled in time)
        self.failed = 0  # events the handler raised on
        self.errors = 0  # exceptions: failed events, and failed calls, flushes and closes
        self.given_up = 0  # of ``dropped``: not handled when a close gave up waiting
        self.frozen: HandlerStats | None = None
        self._lock = threading.Lock()

    def offer(self, n: int = 1) -> None:
        """``n`` events entered the lane."""
        with self._lock:
            self._counted += n

    @property
    def offered(self) -> int:
        """Events offered to the lane, ever."""
        with self._lock:
            return self._offered_locked()

    def _offered_locked(self) -> int:
        # Every step of the counter is a producer's (offer_one) or a reader's, and readers
        # count theirs under the lock: the producers' steps are the rest.
        steps = next(self._steps) - self._reads
        self._reads += 1
        return self._counted + steps

    def drop(self, n: int = 1) -> None:
        """``n`` offered events were refused."""
        with self._lock:
            self.dropped += n

    def after_fork(self) -> None:
        """In a forked child: a fresh lock (another thread may have held the parent's)."""
        self._lock = threading.Lock()

    def lose(self, n: int, *, not_in_time: bool = False) -> None:
        """``n`` offered events were lost on the way (the lane's pipe counted them); nothing
        once a give-up froze the tally (it counted them already)."""
        with self._lock:
            if self.frozen is None:
                self.dropped += n
                if not_in_time:
                    self.given_up += n

    def taken(self) -> int:
        """Events settled so far (delivered, dropped or failed): grows while the lane progresses."""
        return self.delivered + self.dropped + self.failed

    def pending(self) -> int:
        """Events offered and not settled yet."""
        return max(self.offered - self.taken(), 0)

    def give_up(self, losses: Mapping[str, int]) -> int:
        """Count what is pending as ``not handled in time`` and freeze the tally; return it."""
        with self._lock:
            if self.frozen is not None:
                return 0
            # One read of each count: the worker may still add to them while this runs.
            delivered, failed, dropped = self.delivered, self.failed, self.dropped
            pending = max(self._offered_locked() - delivered - failed - dropped, 0)
            self.dropped += pending
            self.given_up += pending
            self.frozen = HandlerStats(
                delivered=delivered,
                dropped=dropped + pending,
                errors=self.errors,
                losses=dict(losses),
                failed=failed,
                logged=delivered + dropped + pending + failed,
                not_in_time=self.given_up,
            )
            return pending

    def reopen(self) -> None:
        """The lane starts again: continue from the frozen numbers (a stale worker's are lost)."""
        with self._lock:
            frozen, self.frozen = self.frozen, None
            if frozen is not None:
                # ``offered`` is the frozen count again: the rows counted so far are in it.
                self._counted += (frozen.logged or 0) - self._offered_locked()
                self.delivered, self.dropped = frozen.delivered, frozen.dropped
                self.failed, self.errors = frozen.failed, frozen.errors

    def stats(self, losses: Mapping[str, int]) -> HandlerStats:
        """The tally now (the frozen one after a give-up, with the handler's latest losses)."""
        frozen = self.frozen
        if frozen is not None:
            return attrs.evolve(frozen, losses=dict(losses))
        with self._lock:
            return self._snapshot(losses)

    def _snapshot(self, losses: Mapping[str, int]) -> HandlerStats:
        # Reads ``offered`` last: a list offered while it reads is then only counted as pending.
        delivered, failed, dropped = self.delivered, self.failed, self.dropped
        return HandlerStats(
            delivered=delivered,
            dropped=dropped,
            errors=self.errors,
            losses=dict(losses),
            failed=failed,
            logged=max(self._offered_locked(), delivered + dropped + failed),
            not_in_time=self.given_up,
        )
