"""A lossy link for the worker tests: the worker's forwarder loses chosen chunks, every time.

A fault injector, as netem is for a network: ``lossy_toy_runtime`` is a runtime factory (built
in the worker, after its ``EventForwarder`` is attached) that puts a ``LossyLink`` between the
forwarder and the goggles bus. The link drops every chunk whose place in its episode (its first
event's sequence number over the chunk size) is ``drop_every - 1`` modulo ``drop_every``, so
the loss is the same on every run and on whichever worker an episode lands: no timing decides
it. End markers always pass, so the experiment knows what each episode sent.
"""

from __future__ import annotations

import logging
from typing import Any

from toy_runtime import ToyRuntime

from experiment_telemetry.workers.forwarder import EventForwarder


class LossyLink:
    """Stands in for the forwarder's ``emit``: loses the chosen chunks, passes the rest on."""

    def __init__(self, emit: Any, chunk_size: int, drop_every: int) -> None:
        self._emit = emit
        self._chunk_size = chunk_size
        self._drop_every = drop_every

    def __call__(self, event: Any) -> None:
        extra = event.extra or {}
        if "c" in extra and (extra["n"] // self._chunk_size) % self._drop_every == (
            self._drop_every - 1
        ):
            return  # lost on the way: the worker still counts it as sent
        self._emit(event)


def lossy_toy_runtime(*, drop_every: int, **kwargs: Any) -> ToyRuntime:
    """A ``ToyRuntime`` whose worker loses every ``drop_every``-th chunk of each episode."""
    (forwarder,) = [
        h for h in logging.getLogger("telemetry").handlers if isinstance(h, EventForwarder)
    ]
    forwarder._emit = LossyLink(forwarder._emit, forwarder.batch_size, drop_every)
    return ToyRuntime(**kwargs)
