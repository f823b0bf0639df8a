"""Log scalars in a loop until ``stop_file`` exists, then finish; argv: path stop_file."""

from __future__ import annotations

import os
import sys

from _setup import attach_sink, use_socket

import goggles_io as gg

path, stop_file = sys.argv[1], sys.argv[2]
use_socket()
attach_sink(path)
log = gg.get_logger("steady", with_metrics=True)
i = 0
while not os.path.exists(stop_file):
    log.scalar("x", float(i), step=i)
    i += 1
    if i % 200 == 0:
        gg.flush(timeout_s=0.05)  # pace the loop; never blocks for long
gg.finish(timeout=30)
print("logged", i, flush=True)
