"""When an episode in flight is complete, and the ``EpisodeOutcome`` it becomes.

An episode is complete when its worker said ``ran`` (its end marker is queued) and the end
marker arrived through the subscription; or, if the marker itself was dropped, once the worker
said ``done`` (after flushing its goggles client, so the host holds every event) and
``Subscription.sync`` fetched what the host routed; what never arrived is counted (ADR 0075:
the worker runs its next episode while it flushes). A worker whose pipe closes mid-episode
(killed, crashed) makes that episode *lost*; the others go on. An episode whose end marker
did not come within ``flush_timeout_s`` of its worker's ``done`` while events it sent are
missing (over a broker; locally, when none came) is *undelivered*: reported, never scored
from what happened to arrive. Over a broker, once one episode is undelivered and nothing at
all arrived since, the next ones are undelivered without another wait.

Kept apart from the pool's dispatching (``pool.py``): this is only the decision, made under
the pool's condition, from what the worker said and what the ``EpisodeInbox`` holds.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from experiment_telemetry.workers.channel import WorkerChannel
from experiment_telemetry.workers.inbox import EpisodeInbox
from experiment_telemetry.workers.outcomes import EpisodeOutcome, EpisodeTask
from experiment_telemetry.workers.pause import CollectorPause

__all__ = ["AGAIN", "RERUN", "EpisodeCompletion", "Slot"]

AGAIN = object()
"""``EpisodeCompletion.settle``: look again at once (a sync just fetched what the host held)."""
RERUN = object()
"""``EpisodeCompletion.settle``: run the episode again on another worker (its worker died after
``ran``, before its flush and before its end marker came: its events may have died with it)."""


class Slot:
    """An episode of the plan, from submission to outcome."""

    __slots__ = (
        "deadline", "done", "done_at", "lost", "orphaned", "ran", "synced", "task", "worker",
    )  # fmt: skip

    def __init__(self, task: EpisodeTask) -> None:
        self.task = task
        self.reset()

    def reset(self) -> None:
        """Back to not dispatched (to run again)."""
        self.worker: WorkerChannel | None = None
        self.ran: dict[str, Any] | None = None
        """The worker's ``ran`` reply: the episode ran, its end marker is queued."""
        self.done: dict[str, Any] | None = None
        """Its ``done`` reply: the worker's goggles client flushed after the episode."""
        self.done_at = 0.0
        self.lost = False
        self.orphaned = False
        """Its worker died after ``ran`` and before ``done``."""
        self.synced = False
        self.deadline: float | None = None


class EpisodeCompletion:
    """Settles the plan's head episode: its outcome once complete, else when to look again.

    Args:
        inbox: where the episodes' events arrive.
        cond: the pool's condition, which also guards ``inbox``.
        flush_timeout_s: bound of the wait for a complete episode's events after its
            worker's ``done`` (past it, the episode is undelivered).
        pause: held from an episode's decode on (ADR 0084); whoever takes the outcome releases
            it once done with the outcome's events.
    """

    def __init__(
        self,
        inbox: EpisodeInbox,
        cond: threading.Condition,
        flush_timeout_s: float,
        pause: CollectorPause | None = None,
    ) -> None:
        self._inbox = inbox
        self._pause = pause
        self._cond = cond
        self.flush_timeout_s = flush_timeout_s
        self._silent_at: int | None = None  # inbox arrivals when an episode went undelivered

    def settle(self, slot: Slot) -> EpisodeOutcome | object | None:
        """The head slot's outcome once it is complete, ``AGAIN`` to look again at once,
        else None (wait for a change)."""
        inbox = self._inbox
        worker = slot.worker
        episode = slot.task.context.episode
        with self._cond:
            if worker is None:
                return None
            if slot.orphaned and slot.task.learns and not inbox.ended(worker.index, episode):
                slot.lost = True  # its memory died with the learner: lost, as mid-episode
            if slot.lost:
                inbox.discard(worker.index, episode)
                return EpisodeOutcome(
                    slot.task, worker.index, worker.pid, 0.0, lost=True,
                    returncode=worker.proc.returncode,
                )  # fmt: skip
            done = slot.done
            complete = inbox.ended(worker.index, episode)
            if done is None:
                if slot.ran is None:
                    return None
                if complete:
                    done = slot.ran
                elif not slot.orphaned:
                    return None  # wait for the end marker, or for the flush
                else:
                    # It depends only on the shared memory and its arguments: run it again
                    # rather than score what happened to arrive (a dead worker costs one episode).
                    inbox.discard(worker.index, episode)
                    return RERUN
        if not complete and not slot.synced:
            slot.synced = True
            # The worker flushed before saying done, so the host holds the rest: sync fetches it.
            inbox.sync(self.flush_timeout_s)
            if inbox.remote:
                # Only the end marker tells: wait for it, bounded, from the worker's done (so
                # the waits of the episodes in flight overlap); none if the broker went silent.
                silent = self._silent_at is not None and self._silent_at == inbox.arrivals
                slot.deadline = slot.done_at + (0.0 if silent else self.flush_timeout_s)
            elif not done.get("flushed"):
                slot.deadline = time.monotonic() + self.flush_timeout_s
            return AGAIN
        if not complete and slot.deadline is not None and time.monotonic() < slot.deadline:
            return None
        sent = int(done["sent"])
        with self._cond:
            received = inbox.received(worker.index, episode)
            if not complete and received < sent and (inbox.remote or received == 0):
                inbox.discard(worker.index, episode)
                if inbox.remote:
                    self._silent_at = inbox.arrivals
                return EpisodeOutcome(
                    slot.task, worker.index, worker.pid, float(done["start"]),
                    missing=sent - received, error=done.get("error"), undelivered=True,
                    arrived=received,
                )  # fmt: skip
            arrived = inbox.take(worker.index, episode)
        if self._pause is not None:
            self._pause.hold()  # the decoded events live until the outcome is scored (ADR 0084)
        events = arrived.decode()  # here, not on the subscription's reader thread
        missing = max(0, sent - (len(events) - arrived.loose))
        return EpisodeOutcome(
            slot.task, worker.index, worker.pid, float(done["start"]), events=events,
            missing=missing, error=done.get("error"),
        )  # fmt: skip
