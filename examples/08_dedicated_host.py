"""Dedicated host subprocess for handlers (the default) -- and how to opt out.

By default the first process that logs spawns a host process that runs every handler; this
process is a client that only queues events. Set ``GOGGLES_DEDICATED_HOST=0`` to host in this
process instead (the first process to bind the socket hosts), or ``GOGGLES_TRANSPORT=inprocess``
for no socket at all. Run: ``python examples/08_dedicated_host.py``.
"""

from __future__ import annotations

import os
import shutil
import tempfile

# A per-project socket path, as the robo-goggles README recommends (normally set in .env).
_DIR = tempfile.mkdtemp(prefix="gg-example-08-")
os.environ.setdefault("GOGGLES_SOCKET", os.path.join(_DIR, "bus.sock"))

import goggles_io as gg

CONSOLE = "examples.dedicated_host.console"

gg.attach(gg.ConsoleHandler(name=CONSOLE, level=gg.INFO), scopes=["global"])
logger = gg.get_logger("examples.dedicated_host", with_metrics=True)
mode = (
    "in this process" if os.environ.get("GOGGLES_DEDICATED_HOST") == "0" else "in a host subprocess"
)
logger.info(f"pid {os.getpid()}: handlers run {mode}")
for step in range(5):
    logger.scalar("loss", 1.0 / (step + 1), step=step)
logger.info("done; finish() flushes the host (and prints a tally only if something was lost)")
gg.finish()
shutil.rmtree(_DIR, ignore_errors=True)  # the example leaves nothing in the temp dir
