"""Log N scalar events (step 0..N-1) into the host's JSONL sink, then finish; argv: path n [tag]."""

from __future__ import annotations

import sys

from _setup import attach_sink, use_socket

import goggles_io as gg

path, n = sys.argv[1], int(sys.argv[2])
use_socket()
attach_sink(path)
log = gg.get_logger("producer", with_metrics=True)
for i in range(n):
    log.scalar("x", float(i), step=i)
report = gg.finish(timeout=60)
print("timed_out", report.timed_out, flush=True)
