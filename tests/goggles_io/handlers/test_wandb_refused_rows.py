"""A row W&B refuses (``run.log`` raises) is lost and counted, and the ledger never claims it.

Rows go to W&B at flush after the ledger recorded, for each row, the events in it and the row's
index in W&B's transaction log (ADR 0070). A refused row takes no index: the rows after it land
one index earlier than recorded. Before this was handled, a rebuilt handler (the next host's)
took the refused row as kept and the last row as lost, and logged that row a second time.
Read back from W&B's own files (real wandb, offline).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from goggles_io import Event, Kind
from goggles_io.handlers.wandb import WandBHandler
from wandb_reader import read_resumed_history

pytest.importorskip("wandb")

_RESUME = "refusedrows"


def _event(step: int) -> Event:
    """The event the socket host numbers ``step + 1`` for producer ``p1``."""
    return Event(
        kind=Kind.METRIC,
        scope="global",
        payload={"x": float(step)},
        step=step,
        producer="p1",
        seq=step + 1,
    )


def _handler(root: Path) -> WandBHandler:
    handler = WandBHandler(project="p", mode="offline", dir=str(root), resume_id=_RESUME)
    handler.open()
    return handler


@pytest.mark.parametrize(
    ("refused", "expected"),
    [(2, [0, 1, 3, 4, 5, 6]), (5, [0, 1, 2, 3, 4, 5, 6])],
    ids=["a middle row", "the last row"],
)
def test_a_rebuilt_handler_neither_repeats_nor_claims_a_refused_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refused: int, expected: list[int]
) -> None:
    """Steps 0..5 in one flush, W&B refuses step ``refused``; a handler rebuilt from the same
    spec (as after a host's death) gets steps 0..6 again. W&B holds every step once. The refused
    step stays lost (counted) when a later row of its producer was kept (the marks are a
    high-water mark); as the last row it was never claimed, so the next host logs it."""
    monkeypatch.setenv("WANDB_SILENT", "true")
    first = _handler(tmp_path)
    for step in range(6):
        first.handle(_event(step))
    state = first._runs["global"]
    real_log = state.run.log

    def log(row: dict[str, object], *args: object, **kwargs: object) -> object:
        if row.get("step") == refused:
            raise RuntimeError("W&B refused this row")
        return real_log(row, *args, **kwargs)

    state.run.log = log
    first.flush()
    written = threading.Event()
    first.when_durable(written.set)
    assert written.wait(60), "W&B wrote the rows into its transaction log"
    state.run.log = real_log
    assert {"log_failed": 1} == first.losses()
    # Stands for the host's death once W&B wrote the rows: the run ends, the ledger stays as
    # the flush left it (close() writes nothing to it).
    first.close()

    second = _handler(tmp_path)
    for step in range(7):  # sent again, and one more
        second.handle(_event(step))
    second.close()

    steps = [row["step"] for row in read_resumed_history(tmp_path, _RESUME, expect=2)]
    assert expected == steps
    assert {} == second.losses()
