"""The producer of the exactly-once chaos test: a run whose host is SIGKILLed while it logs.

argv: root scalars images. A ``RunContext`` under ``root`` with a ``LocalStorageHandler``
("storage"), a ``CsvHandler`` ("csv") and the custom ``SequencedSink`` ("custom", writing
``custom.jsonl`` in the run folder), all host-side; prints ``{"run_dir"}`` and ``ready``, then
on ``go`` logs ``scalars`` scalars ``x`` (step = index, value = index) with one of ``images``
1 MiB images (step = image index) after every ``scalars // images`` scalars, calls
``gg.finish()`` and prints the FinishReport as JSON: per handler ``[delivered, dropped,
errors, logged, losses]``, the transport's losses, totals.
"""

from __future__ import annotations

import json
import sys
import time

from recording_sink import make_image

import goggles_io as gg
from goggles_io.handlers.csv import CsvHandler
from goggles_io.handlers.storage import LocalStorageHandler
from goggles_io.runs import RunContext, register_run

root, scalars, images = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
every = scalars // images
with RunContext(project="chaos", driver=__file__, slug="exactly-once", root=root) as run:
    from sequenced_sink import SequencedSink

    storage = LocalStorageHandler(run.dir, name="storage")
    table = CsvHandler(run.dir, name="csv")
    custom = SequencedSink(str(run.dir / "custom.jsonl"), name="custom")
    for handler in (storage, table, custom):
        gg.attach(handler, scopes=["global"])
    register_run(run, storage, table)
    log = gg.get_logger("chaos", with_metrics=True)
    gg.flush(120)  # the host runs and has the handlers
    print(json.dumps({"run_dir": str(run.dir)}), flush=True)
    print("ready", flush=True)
    sys.stdin.readline()
    start = time.perf_counter()
    for i in range(scalars):
        log.scalar("x", float(i), step=i)
        if i % every == every - 1:
            log.image(make_image(i // every), name="img", step=i // every)
    loop_s = time.perf_counter() - start
    report = gg.finish()
    finish_s = time.perf_counter() - start - loop_s
handlers = {
    name: [s.delivered, s.dropped, s.errors, s.logged, dict(s.losses)]
    for name, s in report.handlers.items()
}
line = {
    "handlers": handlers,
    "transport": dict(report.transport.losses),
    "dropped": report.dropped,
    "missing": report.missing,
    "timed_out": report.timed_out,
    "loop_s": round(loop_s, 3),
    "finish_s": round(finish_s, 3),
}
print(json.dumps(line), flush=True)
