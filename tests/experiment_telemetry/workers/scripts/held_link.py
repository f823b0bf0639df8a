"""A held flush for the worker tests: a worker dies after an episode ran, before its flush.

A fault injector (as ``lossy_link`` is): ``held_toy_runtime`` is a runtime factory built in the
worker after its ``EventForwarder`` is attached. The first worker to run episode ``hold`` (it
creates ``pid_file`` exclusively, with its pid) keeps that episode's bus events to itself, as a
client queue that never drained would, and its flush after the episode never returns: the
worker has said ``ran`` and not ``done`` when the test SIGKILLs it (earlier episodes flush as
usual). Any later episode it is given waits for the kill too. Workers that find ``pid_file`` taken run every episode plainly.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from toy_runtime import ToyRuntime

import goggles_io
from experiment_telemetry.workers.forwarder import EventForwarder


class HeldToyRuntime(ToyRuntime):
    """A ``ToyRuntime`` whose worker may hold episode ``hold`` (see the module)."""

    def __init__(self, *, hold: int, pid_file: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hold = hold
        self.pid_file = pid_file
        self.holding = False
        self.ran: list[int | None] = []
        """Episodes run, in order; the flusher thread flushes after each, in the same order."""
        (forwarder,) = [
            h for h in logging.getLogger("telemetry").handlers if isinstance(h, EventForwarder)
        ]
        self.forwarder = forwarder
        emit, flush = forwarder._emit, goggles_io.flush

        def held_emit(event: Any) -> None:
            if not (self.holding and (event.extra or {}).get("e") == self.hold):
                emit(event)

        def held_flush(timeout_s: float | None = None) -> bool:
            episode = self.ran.pop(0) if self.ran else None
            if self.holding and episode == self.hold:
                with open(self.pid_file, "w") as out:  # the test kills us once it reads this
                    out.write(str(os.getpid()))
                threading.Event().wait(120)
            return flush(timeout_s)

        forwarder._emit = held_emit
        goggles_io.flush = held_flush  # the worker's flusher thread calls it after each episode

    def run_episode(self, *, seed: int, learn: bool) -> None:
        if self.holding:  # an episode after the held one: wait for the kill
            threading.Event().wait(120)
        if self.forwarder.episode == self.hold:
            try:
                os.close(os.open(self.pid_file + ".taken", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                self.holding = True
            except FileExistsError:
                pass
        self.ran.append(self.forwarder.episode)
        super().run_episode(seed=seed, learn=learn)


def held_toy_runtime(**kwargs: Any) -> HeldToyRuntime:
    """The factory the test's ``RuntimeSpec`` names."""
    return HeldToyRuntime(**kwargs)
