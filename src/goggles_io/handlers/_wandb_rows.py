"""A ``WandBHandler``'s runs and their rows: ids that every host resumes, rows handed in order.

Kept apart from :mod:`goggles_io.handlers.wandb` (which turns events into W&B values): which W&B
run a scope's events go to (its id made from the handler's ``resume_id``, ADR 0070), the rows
committed and not yet handed to W&B with the marks of their events, the ledger that records
those marks before the rows are handed (:mod:`~goggles_io.handlers._wandb_ledger`), and when
the host may acknowledge them (once W&B wrote them into its transaction log).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from goggles_io._event.records import Event
from goggles_io.handlers._wandb_ledger import DurableRows, Ledger
from goggles_io.handlers.sequences import Sequences

__all__ = ["FLUSH_ROWS", "Rows", "RunState", "run_id_of"]

FLUSH_ROWS = 1000  # rows committed before they are handed to W&B without waiting for flush()


class RunState:
    """One W&B run: the row being assembled for its current step and the rows committed and not
    yet handed to W&B, each with the marks of its events (``{producer: last seq}``)."""

    __slots__ = ("axes", "handed", "last_step", "log", "marks", "ready", "row", "row_step", "run")

    def __init__(self, run: Any, log: str | None) -> None:
        self.run = run
        self.log = log  # its transaction log (None: W&B keeps none, e.g. disabled)
        self.row: dict[str, Any] = {}
        self.marks: dict[str, int] = {}
        self.row_step: int | None = None
        self.ready: list[tuple[dict[str, Any], dict[str, int]]] = []
        self.handed = 0  # rows handed to W&B (in this transaction log)
        self.last_step = -1
        self.axes: set[str] = set()

    def note(self, event: Event) -> None:
        """``event`` went into the current row."""
        if event.producer:
            self.marks[event.producer] = event.seq

    def commit(self, step_key: str) -> bool:
        """The current row is complete: it waits, with its marks, to be handed to W&B; whether
        enough rows wait that they should be handed now."""
        if not self.row:
            return False
        row, step = self.row, self.row_step if self.row_step is not None else 0
        self.row, marks, self.marks = {}, self.marks, {}
        row[step_key] = step
        self.last_step = step
        self.ready.append((row, marks))
        return len(self.ready) >= FLUSH_ROWS


def run_id_of(resume_id: str, scope: str, global_scope: str) -> str:
    """The W&B run id of ``scope``: ``resume_id``, then ``-<scope>`` for another scope (its
    characters kept where W&B allows them, else a hash)."""
    if scope == global_scope:
        return resume_id
    slug = re.sub(r"[^A-Za-z0-9_-]", "_", scope)[:32]
    if slug != scope:
        slug += "-" + hashlib.sha256(scope.encode()).hexdigest()[:8]
    return f"{resume_id}-{slug}"


class Rows:
    """Which events the runs hold, and handing committed rows to W&B after the ledger.

    Args:
        owner: who, for messages (``WandBHandler 'wandb'``).
        failed: called with the exception when ``run.log`` raises on a row (counted there).
    """

    def __init__(self, owner: str, failed: Callable[[Exception], object]) -> None:
        self.owner = owner
        self._failed = failed
        self.ledger: Ledger | None = None
        self.seqs = Sequences()
        self.durable = DurableRows(owner)

    def open(self, folder: str, resume_id: str, name: str) -> None:
        """Read which events the runs of ``resume_id`` hold (after a host's death: the rows W&B
        wrote of those the ledger lists); they are skipped when sent again."""
        if self.ledger is None:
            digest = hashlib.sha256(name.encode()).hexdigest()[:8]
            path = Path(folder) / "wandb" / f"goggles-{resume_id}-{digest}.seq"
            self.ledger = Ledger(path, self.owner)
            self.seqs = Sequences(self.ledger.recover())

    def hand(self, state: RunState) -> None:
        """Record the committed rows' marks in the ledger, then hand the rows to W&B."""
        ready, state.ready = state.ready, []
        if not ready:
            return
        ledger = self.ledger if state.log is not None else None
        while ready:
            if ledger is not None and state.log is not None:
                ledger.intend(state.log, state.handed, [marks for _, marks in ready])
            ready = self._log(state, ready)
        if state.log is not None:
            self.durable.handed(state.log, state.handed)

    def _log(
        self, state: RunState, rows: list[tuple[dict[str, Any], dict[str, int]]]
    ) -> list[tuple[dict[str, Any], dict[str, int]]]:
        """Hand ``rows`` to W&B up to one it refuses; the rows after that one (each lands an
        index earlier than the ledger says, so they are recorded again first)."""
        for i, (row, _) in enumerate(rows):
            try:
                state.run.log(row)
            except Exception as exc:  # a W&B failure loses this row, counted; the run goes on
                self._failed(exc)
                if self.ledger is not None and state.log is not None:
                    self.ledger.refused(state.log, state.handed)  # never claimed as kept
                return rows[i + 1 :]
            state.handed += 1
        return []

    def fold(self) -> None:
        """Keep the ledger small (the rows W&B wrote fold into one line)."""
        if self.ledger is not None:
            self.ledger.fold(self.durable.written())

    def close(self) -> None:
        """The runs are finished: call back every waiting acknowledgement; start afresh."""
        self.durable.close()
        self.durable = DurableRows(self.owner)
        if self.ledger is not None:
            self.ledger.close()
            self.ledger = None
        self.seqs = Sequences()
