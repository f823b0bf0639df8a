"""A run with a hung host-side sink and a handler of the script's own (an in-process lane).

argv: root gate scalars. ``GatedSink`` (host-side, takes nothing until ``gate`` exists) and
``Counting`` (defined here, so it runs in this process, fed by the host) on ``global``. Logs
``scalars`` scalars and finishes inside the run; prints the run folder, the report's
``missing``, the transport's tally and the in-process handler's stats as JSON, and how many
events that handler actually got.
"""

from __future__ import annotations

import json
import sys

from gated_sink import GatedSink

import goggles_io as gg
from goggles_io.runs import RunContext


class Counting(gg.BaseHandler):
    """Counts what it is given."""

    def __init__(self) -> None:
        super().__init__(name="local")
        self.seen = 0

    def handle(self, event: gg.Event) -> None:
        self.seen += 1


root, gate, scalars = sys.argv[1], sys.argv[2], int(sys.argv[3])
counting = Counting()
with RunContext("losses", "mixed_run.py", "mixed", root=root) as run:
    gg.attach(GatedSink(str(run.dir / "gated.jsonl"), gate), scopes=["global"])
    gg.attach(counting, scopes=["global"])
    log = gg.get_logger("mixed", with_metrics=True)
    for i in range(scalars):
        log.scalar("x", float(i), step=i)
    report = gg.finish()
local = report.handlers["local"]
print(
    json.dumps(
        {
            "run_dir": str(run.dir),
            "missing": report.missing,
            "transport": dict(report.transport.losses),
            "local": [local.delivered, local.dropped, local.not_in_time, local.logged],
            "seen": counting.seen,
        }
    ),
    flush=True,
)
