"""The producer of the exactly-once chaos test: a run whose host is SIGKILLed while it logs.

argv: root scalars images [collector_url [wandb]]. A ``RunContext`` under ``root`` with a
``LocalStorageHandler`` ("storage"), a ``CsvHandler`` ("csv") and the custom ``SequencedSink``
("custom", writing ``custom.jsonl`` in the run folder), all host-side; with a collector URL
also a ``RemoteHandler`` ("remote", its run id the run's), with ``wandb`` a ``WandBHandler``
("wandb", offline, writing under the run folder); prints ``{"run_dir", "resume_id"}`` and
``ready``, then
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
url = sys.argv[4] if len(sys.argv) > 4 else ""
with_wandb = len(sys.argv) > 5 and sys.argv[5] == "wandb"
every = scalars // images
with RunContext(project="chaos", driver=__file__, slug="exactly-once", root=root) as run:
    from sequenced_sink import SequencedSink

    storage = LocalStorageHandler(run.dir, name="storage")
    table = CsvHandler(run.dir, name="csv")
    custom = SequencedSink(str(run.dir / "custom.jsonl"), name="custom")
    handlers: list[gg.BaseHandler] = [storage, table, custom]
    if url:
        from goggles_io.handlers.remote import RemoteHandler

        handlers.append(RemoteHandler(url, name="remote", buffer_size=500))
    resume_id = ""
    if with_wandb:
        from goggles_io.handlers.wandb import WandBHandler

        w = WandBHandler(project="chaos", run_name="chaos", mode="offline", dir=str(run.dir))
        resume_id = getattr(w, "resume_id", "")  # "": before ADR 0070
        handlers.append(w)
    for handler in handlers:
        gg.attach(handler, scopes=["global"])
    register_run(run, *handlers)
    log = gg.get_logger("chaos", with_metrics=True)
    gg.flush(120)  # the host runs and has the handlers
    print(
        json.dumps({"run_dir": str(run.dir), "run_id": run.id, "resume_id": resume_id}), flush=True
    )
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
