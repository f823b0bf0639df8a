"""Open a RunContext under `with`, print its directory, then wait to be signalled or killed."""

from __future__ import annotations

import sys
import threading

from goggles_io.runs import RunContext

with RunContext(project="p", driver=__file__, slug="sig", root=sys.argv[1], heartbeat_s=0.2) as run:
    print(run.dir, flush=True)
    threading.Event().wait(60)
