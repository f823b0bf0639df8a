"""``ScalarFront``: scalar rows laid end to end before a pipe (ADR 0088): the socket client's, and
an asynchronous handler lane's in-process.

Why: a row put in a pipe is a tuple that lives until it is taken (the host acknowledged it; a
lane's handler got it), and every young collection in the meantime scans its 15 slots: in a
settled burst to a dedicated host the collector took 0.20-0.22 us an event of the producer's
~1.2, and the sender's transposition of the rows held one iterator per row. Here a scalar's values go onto one list instead (the tuple
the log call built dies at once: no object per event waits), and the list goes into the pipe as
one :class:`~goggles_io._event.rows.RowRun` of up to ``cap`` rows, whose columns the sender
takes with one slice each.

When the gathered rows go into the pipe (a *seal*), always in the order they were put:

* the producer whose row finds the front full seals it (then adds its row);
* whoever puts anything else (another kind of row, a handler operation, ``flush``, ``finish``)
  seals first, so nothing overtakes a scalar put before it;
* the pipe's worker, once it lingered and found nothing to batch (``Pipe.refill``): a lone
  scalar still goes within the linger, as a lone row did.

Concurrency: producers only append (``list.extend`` of a tuple: one C call under the GIL); a seal
copies the whole list and deletes that many values from its head (one C call each), under a lock
only sealers take, so rows appended meanwhile stay, in order. Budget: at most ``cap`` rows wait
here outside the pipe's byte budget (``cap`` x 15 slots of references: 123 KiB at 1,024). A run
the pipe cannot take whole (spilling, full, not started, closed) goes in row by row, each
spilled, blocked or dropped and counted as a lone row always was; the worker's seal never blocks
(it puts the run back at the head and leaves it for the next seal).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from goggles_io._delivery.pipe import Pipe
from goggles_io._event.rows import (
    EVENT_OVERHEAD_BYTES,
    METRIC_ENTRY_BYTES,
    SLOTS,
    Row,
    RowRun,
    run_rows,
)

__all__ = ["SCALAR_ROW_BYTES", "ScalarFront", "run_extra"]

SCALAR_ROW_BYTES = EVENT_OVERHEAD_BYTES + METRIC_ENTRY_BYTES
"""What a one-value metric row counts against the pipe's budget (``rows.nbytes`` of one)."""

MAX_RUN_ROWS = 1024  # the client's batch: a run is framed as one batch


def run_extra(items: list[Any]) -> int:
    """The units beyond one per item of a pipe's ``items`` (a run's rows but one): the pipe's
    ``run_extra``."""
    return sum(len(item) // SLOTS - 1 for item in items if type(item) is RowRun)


class ScalarFront:
    """One-value metric rows gathered end to end for ``pipe`` (a run at most ``cap`` rows).

    ``put``: how a lone row goes into the pipe (default ``pipe.put``; a lane's ``put_one``,
    which counts it offered); ``on_run``: told how many rows a run holds before they go into the
    pipe, whole or row by row (a lane counts them offered: its worker may take them at once)."""

    def __init__(
        self,
        pipe: Pipe[Any],
        max_items: int,
        *,
        put: Callable[[Row, int], bool] | None = None,
        on_run: Callable[[int], object] | None = None,
    ) -> None:
        self._pipe = pipe
        self._put = pipe.put if put is None else put
        self._on_run = on_run
        # A run counts its rows against the pipe's max_items: an eighth of it at most, so a small
        # queue (GOGGLES_QUEUE_SIZE) still bounds what waits here and fills in several runs.
        self.cap = max(1, min(MAX_RUN_ROWS, max_items // 8))
        self._cap_values = self.cap * SLOTS
        self._values: list[Any] = []
        self._extend = self._values.extend
        self._lock = threading.Lock()

    def put(self, row: Row, size: int) -> bool:
        """Gather one-value metric ``row`` (``size``: :data:`SCALAR_ROW_BYTES`, counted when
        sealed); ``False`` only when the pipe dropped it (counted there)."""
        if len(self._values) < self._cap_values:
            self._extend(row)
            if self._pipe.sleeping:
                self._pipe.nudge()
            return True
        return self._put_full(row, size)

    def _put_full(self, row: Row, size: int) -> bool:
        self.seal()
        if len(self._values) < self._cap_values:
            self._extend(row)
            return True
        return self._put(row, size)  # refilled meanwhile by other threads: goes alone

    def put_other(self, row: Row, size: int) -> bool:
        """Put any other row in the pipe, after the scalars gathered before it."""
        if self._values:
            self.seal()
        return self._put(row, size)

    def seal(self, *, force: bool = False) -> None:
        """Put every row gathered so far in the pipe, in order (row by row where the pipe
        cannot take them as one run: spilled, blocked or dropped and counted as rows).
        ``force``: the pipe closes; the rows go in past its budget, to be counted there (kept
        for later or not delivered) with everything else it holds."""
        if force:
            self.close()
        if not self._values:
            return
        with self._lock:
            run = self._take()
            if run is None:
                return
            n = len(run) // SLOTS
            if self._on_run is not None:
                self._on_run(n)
            if force or not self._pipe.put_run(run, n * SCALAR_ROW_BYTES, n):
                put = self._pipe.put  # counted already: each row delivered or lost there
                for row in run_rows(run):
                    put(row, SCALAR_ROW_BYTES, force=force)

    def refill(self) -> bool:
        """The pipe's worker found nothing to batch: seal without blocking; whether a run went
        (a run the pipe cannot take whole goes back to the head, for the next seal)."""
        if not self._values or not self._lock.acquire(blocking=False):
            return False
        try:
            run = self._take()
            if run is None:
                return False
            n = len(run) // SLOTS
            if self._pipe.put_run(run, n * SCALAR_ROW_BYTES, n):
                if self._on_run is not None:
                    self._on_run(n)  # after: the worker that took it is this thread
                return True
            self._values[0:0] = run  # rows appended meanwhile stay behind it
            return False
        finally:
            self._lock.release()

    def _take(self) -> RowRun | None:
        """Every whole row gathered now, removed from the head (under the lock)."""
        values = self._values
        run = RowRun(values)  # one C call: producers' appends are whole rows
        if not run:
            return None
        del values[: len(run)]
        return run

    def close(self) -> None:
        """The pipe closes: from now on a put goes to it row by row (and is counted there)."""
        self._cap_values = 0

    def __len__(self) -> int:
        """Rows gathered and not sealed yet."""
        return len(self._values) // SLOTS
