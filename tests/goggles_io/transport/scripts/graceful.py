"""Log until SIGINT, then log 200 final events inside the graceful shutdown; argv: path ready_file."""

from __future__ import annotations

import sys

from _setup import attach_sink, use_socket

import goggles_io as gg

path, ready_file = sys.argv[1], sys.argv[2]
use_socket()
attach_sink(path)
log = gg.get_logger("graceful", with_metrics=True)
with gg.GracefulShutdown() as shutdown:
    i = 0
    while not shutdown.requested:
        log.scalar("work", float(i), step=i)
        i += 1
        if i == 100:
            gg.flush(timeout_s=30)
            open(ready_file, "w").close()
        if i % 100 == 0:
            gg.flush(timeout_s=0.05)
    final = gg.get_logger("graceful", scope="global.final", with_metrics=True)
    for j in range(200):
        final.scalar("final", float(j), step=j)
gg.finish(timeout=30)
print("done", flush=True)
