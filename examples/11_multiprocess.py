"""Several worker processes logging into one run through one host.

Each worker attaches the same ``LocalStorageHandler`` name: the first registration wins, so all
events land in one ``log.jsonl``. Run: ``python examples/11_multiprocess.py``.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import shutil
import tempfile
from pathlib import Path

# Spawned workers re-import this module: share the run directory through the environment.
_OWN_DIR = "EXAMPLE_11_DIR" not in os.environ
if _OWN_DIR:
    os.environ["EXAMPLE_11_DIR"] = tempfile.mkdtemp(prefix="gg-example-11-")
RUN_DIR = Path(os.environ["EXAMPLE_11_DIR"])
os.environ.setdefault("GOGGLES_SOCKET", str(RUN_DIR / "bus.sock"))

import goggles_io as gg

STORAGE = "examples.multiprocess.storage"
WORKERS, STEPS = 4, 1000


def worker(rank: int) -> None:
    """Log STEPS scalars tagged with this worker's rank, then finish (the host keeps serving)."""
    gg.attach(gg.LocalStorageHandler(RUN_DIR / "run", name=STORAGE), scopes=["global"])
    logger = gg.get_logger(f"examples.worker{rank}", with_metrics=True)
    for step in range(STEPS):
        logger.scalar(f"worker{rank}/reward", rank * STEPS + step, step=step)
    gg.finish()


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=worker, args=(rank,)) for rank in range(WORKERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    rows = [
        json.loads(line)
        for path in (RUN_DIR / "run").glob("**/*.jsonl")
        for line in path.read_text().splitlines()
    ]
    pids = {r.get("pid") for r in rows}
    print(f"{len(rows)} events from {len(pids)} worker processes in {RUN_DIR / 'run'}")
    if _OWN_DIR:
        shutil.rmtree(RUN_DIR, ignore_errors=True)  # the example leaves nothing behind
