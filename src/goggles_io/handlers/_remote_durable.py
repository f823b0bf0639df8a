"""When a remote sink's take counts: once the collector stored its points, or its outbox holds them.

The socket host acknowledges a batch to its producer when every handler's lane settled it; a
lane asks a handler that has ``when_durable(callback)`` to call back once what it took is safe
(ADR 0069). For ``RemoteHandler`` that is when the collector stored the points queued so far:
until then a host's death makes the producer send the batch again, and the collector skips what
it already holds by producer sequence. So that a slow or absent collector never holds every
producer's batches (and so every other sink), points still unstored after ``after_s`` are
written to the handler's outbox (:mod:`~goggles_io.handlers._remote_outbox`) and count as safe:
the handler the next host rebuilds sends them first.

Positions are counts of points accepted into the delivery pipe, in order; ``done()`` (from the
pipe: acknowledged or counted lost, excluding refusals) says how far the collector got.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from goggles_io._delivery.policy import read_delivery_policy
from goggles_io._delivery.spool_space import default_spool_root
from goggles_io._util.ticks import next_tick
from goggles_io.handlers._remote_outbox import Outbox, SavedPoint, outbox_path
from goggles_io.handlers._sender import Message

__all__ = ["OUTBOX_AFTER_S", "DurablePoints", "resend_messages", "run_outbox", "saved_points"]

OUTBOX_AFTER_S = 0.5  # how long the host's acknowledgement waits for the collector
_TICK_S = 0.05


def run_outbox(name: str, url: str, run_id: str) -> Outbox:
    """The outbox of handler ``name`` sending run ``run_id`` to ``url``: in the spool root
    (``GOGGLES_SPOOL_DIR``), within the spool budget (``GOGGLES_SPOOL_BYTES``)."""
    policy = read_delivery_policy()
    root = Path(policy.spool_dir) if policy.spool_dir else default_spool_root()
    return Outbox(outbox_path(root, url, run_id, name), f"remote [{name}]", policy.spool_bytes)


def resend_messages(saved: list[SavedPoint], path: str, size: int) -> list[Message]:
    """Points recovered from an outbox as points messages of ``size`` points at most, numbered
    from 1 (the handler numbers its own after them)."""
    messages: list[Message] = []
    for at in range(0, len(saved), size):
        points = [
            (at + i + 1, name, value, step, when, producer, pseq, part)
            for i, (producer, pseq, part, name, value, step, when) in enumerate(
                saved[at : at + size]
            )
        ]
        messages.append(("points", path, {"points": points}, len(points)))
    return messages


def saved_points(message: Message) -> list[SavedPoint]:
    """A points message's points as the outbox keeps them (without the run's seq)."""
    return [[p[5], p[6], p[7], p[1], p[2], p[3], p[4]] for p in message[2]["points"]]


class DurablePoints:
    """Which accepted points are safe (stored, or in the outbox), and the callbacks waiting.

    Args:
        done: points accepted so far that the collector stored (or that were counted lost).
        outbox: where points go that the collector has not stored ``after_s`` after a callback
            began waiting for them.
        after_s: how long a callback waits for the collector before the outbox is written.
    """

    def __init__(self, done: Callable[[], int], outbox: Outbox | None, after_s: float) -> None:
        self._done = done
        self.outbox = outbox
        self.after_s = after_s
        self.accepted = 0  # points accepted into the pipe
        self.saved = 0  # position up to which the outbox holds them
        self._unsaved: deque[tuple[int, Message]] = deque()  # (end position, message)
        self._waiting: deque[tuple[int, float, Callable[[], Any]]] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def accepted_message(self, message: Message) -> None:
        """``message`` went into the pipe (the handler's lock held: in order)."""
        n = message[3]
        if not n:
            return
        with self._cond:
            self.accepted += n
            if self.outbox is not None:
                self._unsaved.append((self.accepted, message))

    def recovered(self, n: int) -> None:
        """The first ``n`` accepted points came from the outbox: it holds them already."""
        with self._cond:
            self.saved = max(self.saved, n)
            while self._unsaved and self._unsaved[0][0] <= n:
                self._unsaved.popleft()

    def when_durable(self, callback: Callable[[], Any]) -> None:
        """Call ``callback`` once every point accepted so far is stored or in the outbox."""
        with self._cond:
            target = self.accepted
            if self._closed or target <= max(self.saved, self._done()):
                fire = True
            else:
                fire = False
                self._waiting.append((target, time.monotonic(), callback))
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="goggles-remote-durable", daemon=True
                    )
                    self._thread.start()
                self._cond.notify()
        if fire:
            callback()

    def check(self) -> None:
        """The collector stored more (the pipe's worker, after each batch): call back whom it
        satisfies, and remove the outbox once it holds nothing unstored."""
        self._step(time.monotonic(), save=False)

    def _run(self) -> None:
        while True:
            with self._cond:
                if not next_tick(self._cond, lambda: self._closed, self._waiting, _TICK_S):
                    return
            self._step(time.monotonic(), save=True)

    def _step(self, now: float, *, save: bool) -> None:
        ready: list[Callable[[], Any]] = []
        with self._cond:
            done = self._done()
            unsaved = self._unsaved
            while unsaved and unsaved[0][0] <= done:
                unsaved.popleft()
            if save and self._waiting and now - self._waiting[0][1] >= self.after_s:
                self._save()
            safe = max(done, self.saved)
            waiting = self._waiting
            while waiting and waiting[0][0] <= safe:
                ready.append(waiting.popleft()[2])
            outbox = self.outbox
            if outbox is not None and outbox.holds and done >= self.saved:
                outbox.clear()
        for callback in ready:
            callback()

    def _save(self) -> None:
        """Write every accepted point not stored nor saved yet (the condition held)."""
        outbox = self.outbox
        if outbox is None or not self._unsaved:
            return
        messages = list(self._unsaved)
        points = [p for _, message in messages for p in saved_points(message)]
        if outbox.append(points):
            self.saved = messages[-1][0]
            self._unsaved.clear()

    def close(self) -> None:
        """The handler closed: call back everyone (what the collector did not get is counted
        lost by the pipe), remove the outbox, stop the thread."""
        with self._cond:
            self._closed = True
            ready = [entry[2] for entry in self._waiting]
            self._waiting.clear()
            self._unsaved.clear()
            self._cond.notify_all()
            outbox = self.outbox
            if outbox is not None:
                outbox.clear()
        for callback in ready:
            callback()
