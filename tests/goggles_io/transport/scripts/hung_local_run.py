"""A run whose only handler is defined in this script (an in-process lane) and hangs.

argv: root gate scalars when. The handler takes nothing until ``gate`` exists (at most 120 s),
so ``finish()`` gives up on it (``GOGGLES_FINISH_STALL``). ``when`` is ``inside`` (``gg.finish()``
in the ``with RunContext`` block) or ``exit`` (no call: the finish at interpreter exit). Prints
the run folder and, for ``inside``, the report's ``missing`` as JSON.
"""

from __future__ import annotations

import json
import os
import sys
import time

import goggles_io as gg
from goggles_io.runs import RunContext


class HungSink(gg.BaseHandler):
    """Takes nothing until the gate file exists: a sink that hangs."""

    def __init__(self, gate: str) -> None:
        super().__init__(name="hung")
        self.gate = gate

    def handle(self, event: gg.Event) -> None:
        deadline = time.monotonic() + 120.0
        while not os.path.exists(self.gate) and time.monotonic() < deadline:
            time.sleep(0.02)


root, gate, scalars, when = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
missing = None
with RunContext("losses", "hung_local_run.py", "hung", root=root) as run:
    gg.attach(HungSink(gate), scopes=["global"])
    log = gg.get_logger("hung", with_metrics=True)
    for i in range(scalars):
        log.scalar("x", float(i), step=i)
    if when == "inside":
        missing = gg.finish().missing
print(json.dumps({"run_dir": str(run.dir), "missing": missing}), flush=True)
