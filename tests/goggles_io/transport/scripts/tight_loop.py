"""A training loop's metrics, tight: ``per_step`` ``logger.scalar`` calls per step for ``steps``
steps into a LocalStorageHandler in a RunContext, then ``gg.finish()`` with default settings.

argv: root steps per_step. Prints JSON: the run directory, the FinishReport (client losses,
the storage handler's delivered/dropped/errors/losses, totals, ``timed_out``) and the loop's
and finish's times. Leaving the ``with`` block writes ``run.kv``'s final status.
"""

from __future__ import annotations

import sys
import time

from report_line import print_report

import goggles_io as gg
from goggles_io.handlers.storage import LocalStorageHandler
from goggles_io.runs import RunContext, register_run

root, steps, per_step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
names = [f"m{k}" for k in range(per_step)]
with RunContext(project="accept", driver=__file__, slug="tight", root=root) as run:
    storage = LocalStorageHandler(run.dir, name="storage")
    gg.attach(storage, scopes=["global"])
    register_run(run, storage)
    log = gg.get_logger("tight", with_metrics=True)
    start = time.perf_counter()
    for step in range(steps):
        for name in names:
            log.scalar(name, float(step), step=step)
    loop_s = time.perf_counter() - start
    report = gg.finish()
    finish_s = time.perf_counter() - start - loop_s
print_report(
    report, "storage", run_dir=str(run.dir), loop_s=round(loop_s, 3), finish_s=round(finish_s, 3)
)
