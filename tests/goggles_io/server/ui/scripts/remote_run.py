"""Helper program for test_remote_liveness: a run logged to a collector, then killed or finished.

Usage: remote_run.py URL ROOT MODE. ``ROOT`` ``-`` means a bare ``RemoteHandler``; otherwise a
``RunContext`` under ``ROOT`` with a ``LocalStorageHandler`` in its folder, as documented. 600
points of ``loss`` spread over about half a second; then the run id is printed and, with MODE
``hang``, the program waits to be SIGKILLed (no finish), with ``finish`` it finishes.
"""

from __future__ import annotations

import sys
import time

import goggles_io as gg
from goggles_io.handlers.remote import RemoteHandler
from goggles_io.runs import RunContext, register_run


def main() -> None:
    url, root, mode = sys.argv[1:4]
    remote = RemoteHandler(name="remote", server_url=url, buffer_size=50)
    run = None
    if root != "-":
        run = RunContext(project="p", driver=__file__, slug="remote", root=root)
        gg.attach(gg.LocalStorageHandler(run.dir))
    gg.attach(remote)
    if run is not None:
        register_run(run, remote)
    logger = gg.get_logger("remote_run", with_metrics=True)
    for step in range(600):
        logger.scalar("loss", 1.0 / (step + 1), step=step)
        if step % 10 == 0:
            time.sleep(0.008)
    gg.flush()
    print(run.id if run is not None else remote.run_id, flush=True)
    if mode == "hang":
        time.sleep(600)
    gg.finish()
    if run is not None:
        run.close()


if __name__ == "__main__":
    main()
