"""One run: a RunContext whose ``store`` is its own folder, and maybe a hung sink beside it.

argv: root gate scalars first_step. Starts a run under ``root``, attaches
``LocalStorageHandler(run.dir, name="store")`` and, unless ``gate`` is ``-``, a ``GatedSink``
writing ``<run dir>/gated.jsonl`` that takes nothing until ``gate`` exists. Logs ``scalars``
scalars (step = first_step + index), finishes inside the run, and prints the run folder and
the report as JSON.
"""

from __future__ import annotations

import json
import sys

from gated_sink import GatedSink

import goggles_io as gg
from goggles_io.runs import RunContext

root, gate = sys.argv[1], sys.argv[2]
scalars, first = int(sys.argv[3]), int(sys.argv[4])
with RunContext("leftovers", "run_producer.py", "run", root=root) as run:
    gg.attach(gg.LocalStorageHandler(run.dir, name="store"), scopes=["global"])
    if gate != "-":
        gg.attach(GatedSink(str(run.dir / "gated.jsonl"), gate), scopes=["global"])
    log = gg.get_logger("run", with_metrics=True)
    for i in range(first, first + scalars):
        log.scalar("x", float(i), step=i)
    report = gg.finish()
print(
    json.dumps(
        {
            "run_dir": str(run.dir),
            "transport": dict(report.transport.losses),
            "missing": report.missing,
            "timed_out": report.timed_out,
        }
    ),
    flush=True,
)
